"""The run-time choices of emitted scripts: `precision = auto` and whole-step CUDA graph capture."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tensorloom.backends.runtime.amp import resolve_precision
from tensorloom.backends.runtime.graphs import (
    SMALL_MODEL_PARAMS,
    optimizer_modes,
    restore_optimizer_modes,
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
    args = argparse.Namespace(no_cuda_graph=options["no_cuda_graph"])
    ctx = script.DistContext(0, 0, 1, options["device"])
    assert script._whole_step_graph(model, loader, scaler, args, ctx) is captured


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
