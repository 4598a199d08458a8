"""The runtime's checkpoints: atomic writes, plain state-dict keys, restored RNG."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from torch import nn

from tensorloom.backends.runtime import checkpoint
from tensorloom.backends.runtime.checkpoint import (
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
    save_epoch_checkpoint,
    strip_prefixes,
)


def _model_and_optimizer() -> tuple[nn.Module, torch.optim.Optimizer]:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(5, 3)).sum().backward()
    optimizer.step()
    return model, optimizer


def test_failed_write_leaves_the_previous_checkpoint_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, optimizer = _model_and_optimizer()
    path = tmp_path / "last.pt"
    save_checkpoint(path, model=model, optimizer=optimizer, epoch=1, step=10)
    before = path.read_bytes()

    def crash_mid_write(obj: object, f: object) -> None:
        f.write(b"half a checkpoint")  # type: ignore[attr-defined]
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.torch, "save", crash_mid_write)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, model=model, optimizer=optimizer, epoch=2, step=20)
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_wrapper_prefixes_are_stripped(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    wrapped = nn.Module()
    wrapped._orig_mod = model  # what torch.compile's OptimizedModule holds
    save_checkpoint(tmp_path / "c.pt", model=wrapped, optimizer=optimizer, epoch=1, step=1)
    state = torch.load(tmp_path / "c.pt", weights_only=True)
    assert set(state["model"]) == set(model.state_dict())
    assert strip_prefixes({"module._orig_mod.fc.weight": 1}) == {"fc.weight": 1}


def test_compiled_model_round_trip(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    compiled = torch.compile(model)
    save_checkpoint(tmp_path / "c.pt", model=compiled, optimizer=optimizer, epoch=3, step=7)
    fresh, fresh_optimizer = _model_and_optimizer()
    state = load_checkpoint(tmp_path / "c.pt", model=fresh, optimizer=fresh_optimizer)
    assert (state["epoch"], state["step"]) == (3, 7)
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        assert torch.equal(a, b)
    assert (
        fresh_optimizer.state_dict()["state"][0]["step"]
        == optimizer.state_dict()["state"][0]["step"]
    )


def test_rng_states_are_restored(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    random.seed(1)
    torch.manual_seed(2)
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, epoch=1, step=1)
    expected = (random.random(), torch.rand(3))
    random.seed(99)
    torch.manual_seed(99)
    load_checkpoint(tmp_path / "c.pt", model=model)
    actual = (random.random(), torch.rand(3))
    assert actual[0] == expected[0] and torch.equal(actual[1], expected[1])


def test_scaler_scheduler_and_extra_round_trip(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    scheduler.step()
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, scaler=scaler,
                    scheduler=scheduler, epoch=1, step=1, extra={"best": 0.5})  # fmt: skip
    fresh, fresh_optimizer = _model_and_optimizer()
    fresh_scheduler = torch.optim.lr_scheduler.StepLR(fresh_optimizer, step_size=1, gamma=0.5)
    fresh_scaler = torch.amp.GradScaler("cpu")
    state = load_checkpoint(tmp_path / "c.pt", model=fresh, optimizer=fresh_optimizer,
                            scaler=fresh_scaler, scheduler=fresh_scheduler)  # fmt: skip
    assert fresh_scheduler.get_last_lr() == scheduler.get_last_lr()
    assert fresh_scaler.state_dict()["scale"] == 1024.0
    assert state["extra"] == {"best": 0.5}


def test_epoch_checkpoints_rotate_and_last_points_at_newest(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    for epoch in range(1, 6):
        save_epoch_checkpoint(
            tmp_path, keep=2, epoch=epoch, model=model, optimizer=optimizer, step=epoch
        )
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["epoch-0004.pt", "epoch-0005.pt", "last.pt"]
    assert torch.load(tmp_path / "last.pt", weights_only=True)["epoch"] == 5


class Wide(nn.Module):
    def __init__(self, hidden: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(3, hidden)


class Other(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)


def _saved(tmp_path: Path, model: nn.Module) -> Path:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return save_checkpoint(tmp_path / "last.pt", model=model, optimizer=optimizer, epoch=1, step=1)


def _error(path: Path, model: nn.Module) -> str:
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path, model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def test_every_bad_checkpoint_is_one_line_naming_the_file(tmp_path: Path) -> None:
    good = _saved(tmp_path, Wide())
    data = good.read_bytes()
    cases = {
        "missing.pt": None,
        "empty.pt": b"",
        "truncated.pt": data[: len(data) // 2],
        "text.pt": b"epoch 3, loss 0.25\n",
    }
    expected = {
        "missing.pt": "no such checkpoint file",
        "empty.pt": "is empty",
        "truncated.pt": "truncated, or not written by torch.save",
        "text.pt": "truncated, or not written by torch.save",
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        assert expected[name] in _error(path, Wide())


def test_keys_models_and_sizes_are_checked(tmp_path: Path) -> None:
    good = _saved(tmp_path, Wide())
    state = torch.load(good, weights_only=True)
    del state["rng"], state["loader"]
    torch.save(state, tmp_path / "partial.pt")
    assert "`rng`, `loader` missing" in _error(tmp_path / "partial.pt", Wide())
    assert "holds a `Wide` model; this script trains `Other`" in _error(good, Other())
    assert "`fc.weight` is [4, 3] there, [8, 3] here" in _error(good, Wide(hidden=8))


def test_a_pickle_with_code_is_refused(tmp_path: Path) -> None:
    import pickle

    class Exploit:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (print, ("ran code",))

    path = tmp_path / "exploit.pt"
    with path.open("wb") as f:
        torch.save({"model": Exploit()}, f, pickle_module=pickle)
    assert "a pickle with code in it" in _error(path, Wide())


def test_flipped_bytes_in_a_tensor_fail_the_checksum(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    with torch.no_grad():
        model[0].weight.fill_(1.2345)  # a byte pattern to find in the file
    path = save_checkpoint(tmp_path / "last.pt", model=model, optimizer=optimizer, epoch=1, step=1)
    load_checkpoint(path, model=model, optimizer=optimizer)  # intact: loads
    data = bytearray(path.read_bytes())
    pattern = torch.tensor([1.2345] * 4).numpy().tobytes()
    at = data.find(pattern)
    assert at > 0
    for i in range(16):
        data[at + i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path, model=model, optimizer=optimizer)
    assert str(caught.value) == (
        f"{path}: its tensors do not match the checksum saved with them "
        "(the file was damaged or changed after it was written)"
    )


def test_checksum_covers_every_tensor_and_skips_itself() -> None:
    state = {"model": {"w": torch.ones(2)}, "extra": {"ema": {"w": torch.zeros(2)}}}
    first = checkpoint.tensor_checksum(state)
    assert checkpoint.tensor_checksum({**state, "checksum": "x"}) == first
    state["extra"]["ema"]["w"][0] = 1.0
    assert checkpoint.tensor_checksum(state) != first


def test_stale_temp_files_of_killed_writes_are_removed(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    save_checkpoint(tmp_path / "last.pt", model=model, optimizer=optimizer, epoch=1, step=1)
    stale = [tmp_path / ".last.pt.abc123.tmp", tmp_path / ".last.pt.link"]
    for path in stale:
        path.write_bytes(b"half")
    removed = checkpoint.clean_stale_temp_files(tmp_path)
    assert sorted(removed) == sorted(stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]
    assert checkpoint.clean_stale_temp_files(tmp_path / "absent") == []


def test_load_weights_takes_the_model_alone_and_checks_its_class(tmp_path: Path) -> None:
    model, optimizer = _model_and_optimizer()
    path = save_checkpoint(tmp_path / "w.pt", model=model, optimizer=optimizer, epoch=1, step=1,
                           extra={"recipe": {"ema": {"n": torch.tensor(3)}}})  # fmt: skip
    fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))

    class Ema:
        loaded: dict[str, torch.Tensor] | None = None

        def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
            self.loaded = state

    ema = Ema()
    checkpoint.load_weights(path, model=fresh, ema=ema)
    assert torch.equal(fresh[0].weight, model[0].weight)
    assert ema.loaded is not None and int(ema.loaded["n"]) == 3
    with pytest.raises(CheckpointError, match="holds a `Sequential` model; this script trains"):
        checkpoint.load_weights(path, model=nn.Linear(3, 4))
