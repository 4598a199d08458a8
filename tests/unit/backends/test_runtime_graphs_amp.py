"""The run-time choices of emitted scripts: `precision = auto` and whole-step CUDA graph capture."""

from __future__ import annotations

import importlib.util
import sys
from functools import partial
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tensorloom.backends.runtime.amp import resolve_precision
from tensorloom.backends.runtime.graphs import (
    SMALL_MODEL_PARAMS,
    StepFn,
    optimizer_modes,
    restore_optimizer_modes,
    training_step,
)

CUDA, CPU = torch.device("cuda", 0), torch.device("cpu")


@pytest.mark.parametrize(
    ("device", "bf16", "expected"),
    [(CUDA, True, torch.bfloat16), (CUDA, False, None), (CPU, True, None), (CPU, False, None)],
)
def test_auto_precision(device: torch.device, bf16: bool, expected: torch.dtype | None) -> None:
    assert resolve_precision("auto", device, bf16_supported=bf16).autocast_dtype == expected


def test_fp16_on_the_cpu_warns_and_bf16_without_gpu_support_takes_fp16() -> None:
    cpu = resolve_precision("fp16", CPU)
    assert (cpu.autocast_dtype, cpu.use_scaler) == (None, False) and cpu.warning is not None
    assert resolve_precision("bf16", CPU).autocast_dtype == torch.bfloat16
    old_gpu = resolve_precision("bf16", CUDA, bf16_supported=False)
    assert (old_gpu.autocast_dtype, old_gpu.use_scaler) == (torch.float16, True)
    assert old_gpu.warning is not None


def test_auto_resolves_to_bf16_autocast_without_scaler_on_a_bf16_gpu() -> None:
    plan = resolve_precision("auto", CUDA, bf16_supported=True)
    assert (plan.autocast_dtype, plan.use_scaler, plan.warning) == (torch.bfloat16, False, None)
    assert resolve_precision("auto", CPU).autocast_dtype is None
    assert resolve_precision("auto", CUDA, bf16_supported=False).autocast_dtype is None


def test_explicit_precision_overrides_auto() -> None:
    assert resolve_precision("fp32", CUDA, bf16_supported=True).autocast_dtype is None
    fp16 = resolve_precision("fp16", CUDA, bf16_supported=True)
    assert (fp16.autocast_dtype, fp16.use_scaler) == (torch.float16, True)


def _mnist_script() -> ModuleType:
    """The golden emitted mnist script, imported (importing it runs nothing)."""
    path = Path(__file__).resolve().parents[2] / "e2e" / "reference" / "mnist.py"
    spec = importlib.util.spec_from_file_location("mnist_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("change", "captured"),
    [
        ({}, True),
        ({"device": CPU}, False),
        ({"no_cuda_graph": True}, False),
        ({"scaler": True}, False),
        ({"resident": False}, False),
        ({"params": SMALL_MODEL_PARAMS + 1}, False),
    ],
)
def test_a_small_resident_cuda_run_without_a_scaler_captures_its_step(
    change: dict[str, object], captured: bool
) -> None:
    script = _mnist_script()
    options = {"device": CUDA, "no_cuda_graph": False, "scaler": False, "resident": True,
               "params": 218_058, **change}  # fmt: skip
    model = torch.nn.Linear(1, int(options["params"]), bias=False, device="meta")  # type: ignore[call-overload]
    x, y = torch.zeros(4, 1), torch.zeros(4, dtype=torch.long)
    loader = script.DeviceLoader(x, y, batch_size=2, device=CPU) if options["resident"] else None
    scaler = object() if options["scaler"] else None
    allowed = not options["no_cuda_graph"]
    decided = script.captures_whole_step(model, loader, scaler, options["device"], allowed=allowed)
    assert decided is captured


def test_resume_keeps_this_runs_optimizer_flags_and_moves_steps() -> None:
    model = torch.nn.Linear(3, 2)
    saved = torch.optim.Adam(model.parameters(), lr=0.1, capturable=False)
    model(torch.randn(4, 3)).sum().backward()
    saved.step()
    state = saved.state_dict()
    state["param_groups"][0]["capturable"] = True  # as a run that captured would save it
    fresh = torch.optim.Adam(model.parameters(), lr=0.1)
    modes = optimizer_modes(fresh)
    fresh.load_state_dict(state)
    restore_optimizer_modes(fresh, modes)
    assert fresh.param_groups[0]["capturable"] is False
    steps = [fresh.state[p]["step"] for p in model.parameters()]
    assert [(s.device.type, float(s)) for s in steps] == [("cpu", 1.0), ("cpu", 1.0)]
    fresh.step()  # a capturable flag left on would fail here on the CPU
    assert float(fresh.state[next(iter(model.parameters()))]["step"]) == 2.0


def test_the_captured_step_is_forward_backward_and_optimizer_step_in_its_region() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    expected = torch.nn.Linear(3, 1)
    expected.load_state_dict(model.state_dict())
    dtypes: list[torch.dtype] = []

    class Loss(torch.nn.Module):
        def forward(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
            out = model(xb)
            dtypes.append(out.dtype)
            return (out.float() - yb).square().mean()

    xb, yb = torch.randn(4, 3), torch.randn(4, 1)
    region = partial(torch.autocast, "cpu", torch.bfloat16)
    loss = training_step(Loss(), torch.optim.SGD(model.parameters(), lr=0.5), region)(xb, yb)
    with torch.autocast("cpu", torch.bfloat16):
        out = expected(xb)
    (out.float() - yb).square().mean().backward()
    torch.optim.SGD(expected.parameters(), lr=0.5).step()
    assert dtypes == [torch.bfloat16] and loss.dtype == torch.float32
    assert torch.allclose(model.weight, expected.weight)


class _EagerGraph:
    """GraphedStep's interface without CUDA: each replay runs the step eagerly."""

    def __init__(self, step: StepFn, x: torch.Tensor, y: torch.Tensor, *, batch_size: int,
                 model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:  # fmt: skip
        self.step, self.x, self.y, self.optimizer = step, x, y, optimizer
        self.loss_sum = torch.zeros(())

    def replay(self, idx: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)  # a replay's backward writes fresh grads
        self.loss_sum += self.step(self.x[idx], self.y[idx]).detach()

    def take_loss_sum(self) -> torch.Tensor:
        total, self.loss_sum = self.loss_sum, torch.zeros(())
        return total


def test_the_graphed_epoch_trains_as_the_eager_epoch_does() -> None:
    script = _mnist_script()
    script.GraphedStep = _EagerGraph  # the emitted epoch, on the CPU
    losses = []
    for whole_step in (False, True):
        args = script.parse_args(["--device", "cpu", "--epochs", "1"])
        trainer = script.build_trainer(args, script.DistContext(0, 0, 1, CPU))
        trainer.whole_step = whole_step
        loss, batches = script.train_one_epoch(trainer, 0, None)
        assert batches == trainer.step == len(trainer.train_loader)
        losses.append(loss.item())
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
