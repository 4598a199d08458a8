"""runtime/distributed.py's launch environment and `gradient_sync`, and runtime/sharded.py's
checkpoint folders.

The sharded save and load run here in one process, in a process group of one
(gloo on an in-process store, as a `python script.py` FSDP run has); the 2-rank
saves and their resumption on one rank are tests/e2e/test_distributed.py's.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from tensorloom.backends.runtime.distributed import (
    LaunchError,
    gradient_sync,
    launch_environment,
    setup_distributed,
    teardown_distributed,
)
from tensorloom.backends.runtime.recipe import ModelEMA
from tensorloom.backends.runtime.sharded import (
    COMPLETE_MARKER,
    ShardedCheckpointError,
    complete_checkpoints,
    fsdp_units,
    gathered_parameters,
    load_sharded_checkpoint,
    load_sharded_weights,
    resolve_sharded_checkpoint,
    save_sharded_checkpoint,
    save_sharded_state,
    shard_model,
    whole_model,
)


def test_launch_environment_reads_torchrun_variables() -> None:
    assert launch_environment({}) == (0, 0, 1)
    env = {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8"}  # node 2 of 4, 2 per node
    assert launch_environment(env) == (5, 1, 8)
    with pytest.raises(LaunchError, match="RANK=4, LOCAL_RANK=0, WORLD_SIZE=2 do not fit"):
        launch_environment({"RANK": "4", "WORLD_SIZE": "2"})
    with pytest.raises(LaunchError, match="WORLD_SIZE='two' is not a number"):
        launch_environment({"WORLD_SIZE": "two"})


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Linear(4, 8)
        self.h = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(2))
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for block in self.h:
            x = torch.relu(block(x))
        return self.head(x)


def test_fsdp_units_expand_layer_lists() -> None:
    net = Net()
    assert fsdp_units(net, ["h"]) == list(net.h)
    assert fsdp_units(net, ["head"]) == [net.head]


@pytest.fixture
def group(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR"):
        monkeypatch.delenv(name, raising=False)
    ctx = setup_distributed("cpu", group_of_one=True)
    assert dist.is_initialized() and ctx.world_size == 1
    yield
    teardown_distributed()


def _step(net: torch.nn.Module, optimizer: torch.optim.Optimizer) -> float:
    torch.manual_seed(1)
    loss = net(torch.randn(5, 4)).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()


def _trained(seed: int = 0) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    net = shard_model(Net(), ["h"])
    optimizer = torch.optim.AdamW(net.parameters(), lr=0.01)
    return net, optimizer


@pytest.mark.usefixtures("group")
def test_a_sharded_save_resumes_the_same_numbers(tmp_path: Path) -> None:
    net, optimizer = _trained()
    _step(net, optimizer)
    with gradient_sync(net, sync=False):
        pass  # an FSDP module is told, not wrapped
    folder = save_sharded_checkpoint(tmp_path, keep=2, epoch=1, model=net, optimizer=optimizer,
                                     step=1)  # fmt: skip
    assert json.loads((folder / COMPLETE_MARKER).read_text()) == {
        "epoch": 1, "step": 1, "world_size": 1
    }  # fmt: skip
    expected = _step(net, optimizer)

    other, other_optimizer = _trained(seed=7)  # other weights, fresh optimizer state
    state = load_sharded_checkpoint(tmp_path, model=other, optimizer=other_optimizer)
    assert (state["epoch"], state["step"]) == (1, 1)
    assert _step(other, other_optimizer) == pytest.approx(expected, abs=1e-7)
    with gathered_parameters(other), torch.no_grad():
        assert other(torch.zeros(2, 4)).shape == (2, 3)  # whole weights: no all-gathers


@pytest.mark.usefixtures("group")
def test_only_complete_saves_count_and_old_ones_go(tmp_path: Path) -> None:
    net, optimizer = _trained()
    for epoch in (1, 2, 3):
        save_sharded_checkpoint(tmp_path, keep=2, epoch=epoch, model=net, optimizer=optimizer,
                                step=epoch)  # fmt: skip
    assert [p.name for p in complete_checkpoints(tmp_path)] == ["epoch-0002", "epoch-0003"]
    (tmp_path / "epoch-0003" / COMPLETE_MARKER).unlink()  # a save cut off before its marker
    assert resolve_sharded_checkpoint(tmp_path).name == "epoch-0002"
    with pytest.raises(ShardedCheckpointError, match="incomplete save"):
        resolve_sharded_checkpoint(tmp_path / "epoch-0003")


@pytest.mark.usefixtures("group")
def test_last_and_best_are_replaced_whole_and_resume_takes_the_furthest(tmp_path: Path) -> None:
    net, optimizer = _trained()
    save_sharded_checkpoint(tmp_path, keep=2, epoch=1, model=net, optimizer=optimizer, step=4)
    carry = {"carry": {"loss_sum": torch.tensor(2.5), "batches": 3}}
    for step in (6, 7):  # an interrupted epoch's save, then the next one over it
        save_sharded_state(tmp_path / "last", epoch=1, model=net, optimizer=optimizer,
                           step=step, extra=carry)  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-0001", "last"]  # no .partial
    assert resolve_sharded_checkpoint(tmp_path).name == "last"  # step 7 beats epoch 1's 4
    state = load_sharded_checkpoint(tmp_path, model=net, optimizer=optimizer)
    assert state["step"] == 7 and state["extra"]["carry"]["batches"] == 3
    save_sharded_checkpoint(tmp_path, keep=2, epoch=2, model=net, optimizer=optimizer, step=9)
    assert resolve_sharded_checkpoint(tmp_path).name == "epoch-0002"


@pytest.mark.usefixtures("group")
def test_a_sharded_ema_averages_as_the_plain_one_and_is_saved_beside_the_model(
    tmp_path: Path,
) -> None:
    net, optimizer = _trained()
    plain = Net()
    plain.load_state_dict(whole_model(net, Net()).state_dict())  # type: ignore[union-attr]
    sharded_ema = ModelEMA(net, 0.5, copy=shard_model(Net(), ["h"]))
    plain_ema = ModelEMA(plain, 0.5)
    plain_optimizer = torch.optim.AdamW(plain.parameters(), lr=0.01)
    for _ in range(3):
        _step(net, optimizer)
        _step(plain, plain_optimizer)
        sharded_ema.update(net)
        plain_ema.update(plain)
    averaged = whole_model(sharded_ema.module, Net())
    assert averaged is not None
    for key, value in plain_ema.module.state_dict().items():
        assert torch.allclose(averaged.state_dict()[key], value, atol=1e-6), key
    assert sharded_ema.state_dict() == {"n_averaged": 3, "sharded": True}  # weights: DCP's

    save_sharded_checkpoint(tmp_path, keep=1, epoch=1, model=net, optimizer=optimizer, step=3,
                            ema=sharded_ema.module)  # fmt: skip
    other, other_ema = shard_model(Net(), ["h"]), shard_model(Net(), ["h"])
    load_sharded_weights(tmp_path, model=other, ema=other_ema)
    loaded = whole_model(other_ema, Net())
    assert loaded is not None
    for key, value in averaged.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key

    weights = tmp_path / "plain.pt"  # what --consolidate writes: a plain state dict
    torch.save({f"_orig_mod.{k}": v for k, v in plain.state_dict().items()}, weights)
    load_sharded_weights(weights, model=other)
    with torch.no_grad():
        x = torch.randn(2, 4)
        assert torch.allclose(other(x), plain(x), atol=1e-6)
    (tmp_path / "bad.pt").write_bytes(b"not torch")
    with pytest.raises(ShardedCheckpointError, match="not a readable weights file"):
        load_sharded_weights(tmp_path / "bad.pt", model=other)


def test_resolve_rejects_what_it_cannot_resume(tmp_path: Path) -> None:
    with pytest.raises(ShardedCheckpointError, match="no such checkpoint folder"):
        resolve_sharded_checkpoint(tmp_path / "missing")
    (tmp_path / "last.pt").write_bytes(b"x")
    with pytest.raises(ShardedCheckpointError, match="single-file checkpoint"):
        resolve_sharded_checkpoint(tmp_path / "last.pt")
    with pytest.raises(ShardedCheckpointError, match="holds no complete sharded checkpoint"):
        resolve_sharded_checkpoint(tmp_path)


def test_a_plain_module_or_the_last_micro_batch_enters_nothing() -> None:
    model = torch.nn.Linear(2, 1)
    assert isinstance(gradient_sync(model, sync=False), contextlib.nullcontext)
    assert isinstance(gradient_sync(model, sync=True), contextlib.nullcontext)


@pytest.mark.usefixtures("group")
def test_ddp_skips_the_sync_until_the_last_micro_batch() -> None:
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
    with gradient_sync(model, sync=False):
        assert model.require_backward_grad_sync is False  # inside DDP's no_sync()
    assert model.require_backward_grad_sync is True
    assert isinstance(gradient_sync(model, sync=True), contextlib.nullcontext)


_EXIT_SCRIPT = """
import sys
from tensorloom.backends.runtime.distributed import (
    exit_process, setup_distributed, teardown_distributed)
joined = sys.argv[1] == "group"
setup_distributed("cpu", group_of_one=joined)
teardown_distributed()
with open(sys.argv[2], "w") as f:
    f.write("saved")
print("done", flush=False)
print("to stderr", file=sys.stderr, flush=False)
exit_process(3)
"""


@pytest.mark.parametrize("how", ["group", "alone"])
def test_exit_process_keeps_the_code_and_the_output(tmp_path: Path, how: str) -> None:
    """A process that joined a group leaves at once (torch's gloo can abort in the
    interpreter's teardown); one that did not exits as `sys.exit` does. Either way the
    exit code, buffered output and written files are what `main` left."""
    import subprocess
    import sys

    script, written = tmp_path / "exit.py", tmp_path / "file.txt"
    script.write_text(_EXIT_SCRIPT)
    done = subprocess.run([sys.executable, str(script), how, str(written)], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stdout == "done\n"
    assert done.stderr.endswith("to stderr\n")
    assert written.read_text() == "saved"
