"""runtime/compiling.py: whether a run compiles, and the eager step it times to decide."""

from __future__ import annotations

from functools import partial

import pytest
import torch
from torch import nn

from tensorloom.backends.runtime import compiling
from tensorloom.backends.runtime.compiling import (
    compile_pays,
    eager_step_seconds,
    maybe_compile,
    should_compile,
)

CUDA, CPU = torch.device("cuda", 0), torch.device("cpu")


class _BatchLoss(nn.Module):
    """As a script's `BatchLoss`: a batch's loss, through BatchNorm (buffers) and dropout (RNG)."""

    def __init__(self) -> None:
        super().__init__()
        self.model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5))
        self.dtypes: list[torch.dtype] = []

    def forward(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        out = self.model(xb)
        self.dtypes.append(out.dtype)
        return nn.functional.mse_loss(out.float(), yb)


def _batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 4, generator=generator), torch.randn(16, 8, generator=generator))]


def _timed(seconds: float) -> object:
    def timed(*_args: object, **_kwargs: object) -> float:
        return seconds

    return timed


def _decide(choice: str, mode: str | None, device: torch.device, **kwargs: object) -> bool:
    return should_compile(choice, mode, device, steps=1000, batch_loss=_BatchLoss(),
                          loader=_batches(), **kwargs)  # type: ignore[arg-type]  # fmt: skip


def test_the_compile_pays_when_the_steps_save_more_than_it_costs() -> None:
    # 1000 steps x 50 ms, 70% of it saved: 35 s against COMPILE_SECONDS (13 s)
    assert compile_pays(1000, 0.05) == (
        True, "1000 steps x 50.0 ms eager; compiling saves ~35.0 s, more than its ~13 s"
    )  # fmt: skip
    worth, estimate = compile_pays(250, 0.0058)
    assert not worth and estimate.endswith("saves ~1.0 s, less than its ~13 s")


@pytest.mark.parametrize(
    ("choice", "mode", "device", "line"),
    [
        ("auto", None, CUDA, "compile: off (`compile = false`)"),
        ("on", "default", CPU, "compile: off (no CUDA device)"),
        ("off", "default", CUDA, "compile: off (--compile off)"),
        ("on", "default", CUDA, "compile: on (`--compile on`, or `compile` in the train block)"),
    ],
)
def test_off_on_and_no_device_are_decided_without_timing(
    choice: str, mode: str | None, device: torch.device, line: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert _decide(choice, mode, device) is line.startswith("compile: on")
    assert capsys.readouterr().out == line + "\n"


def test_auto_on_cuda_compiles_when_the_timed_step_says_it_pays(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(compiling, "eager_step_seconds", _timed(0.05))
    assert _decide("auto", "default", CUDA) is True
    expected = "compile: on (auto: 1000 steps x 50.0 ms eager; compiling saves ~35.0 s, more"
    assert capsys.readouterr().out.startswith(expected)
    monkeypatch.setattr(compiling, "eager_step_seconds", _timed(0.001))
    assert _decide("auto", "default", CUDA, announce=False) is False
    assert capsys.readouterr().out == ""  # not rank 0: nothing printed


def test_the_timed_eager_step_leaves_no_trace() -> None:
    batch_loss = _BatchLoss()
    buffers = [b.clone() for b in batch_loss.buffers()]
    torch.manual_seed(7)
    seconds = eager_step_seconds(batch_loss, _batches(), CPU, runs=2)
    after = torch.rand(3)
    torch.manual_seed(7)
    assert torch.equal(after, torch.rand(3))  # the RNG as it was
    assert seconds > 0 and len(batch_loss.dtypes) == 3  # one untimed, two timed
    assert all(p.grad is None for p in batch_loss.parameters())
    for before, now in zip(buffers, batch_loss.buffers(), strict=True):
        assert torch.equal(before, now)  # BatchNorm's statistics too


def test_the_timed_step_runs_under_the_plans_autocast() -> None:
    batch_loss = _BatchLoss()
    region = partial(torch.autocast, "cpu", torch.bfloat16)
    eager_step_seconds(batch_loss, _batches(), CPU, region=region, runs=1)
    assert batch_loss.dtypes == [torch.bfloat16, torch.bfloat16]


def test_maybe_compile_wraps_only_when_asked() -> None:
    module = nn.Linear(2, 2)
    assert maybe_compile(module, False, "default") is module
    compiled = maybe_compile(module, True, "default")  # compiled lazily, at its first call
    assert compiled is not module and getattr(compiled, "_orig_mod", None) is module
