"""The run-time choices of emitted scripts: `precision = auto` and whole-step CUDA graph capture."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tensorloom.backends.runtime.amp import auto_precision, resolve_precision
from tensorloom.backends.runtime.graphs import (
    SMALL_MODEL_PARAMS,
    StepGraphConditions,
    optimizer_modes,
    restore_optimizer_modes,
    step_graph_blocker,
)

CUDA, CPU = torch.device("cuda", 0), torch.device("cpu")


@pytest.mark.parametrize(
    ("device", "bf16", "expected"),
    [(CUDA, True, "bf16"), (CUDA, False, "fp32"), (CPU, True, "fp32"), (CPU, False, "fp32")],
)
def test_auto_precision(device: torch.device, bf16: bool, expected: str) -> None:
    assert auto_precision(device, bf16_supported=bf16) == expected


def test_auto_resolves_to_bf16_autocast_without_scaler_on_a_bf16_gpu() -> None:
    plan = resolve_precision("auto", CUDA, bf16_supported=True)
    assert (plan.autocast_dtype, plan.use_scaler, plan.warning) == (torch.bfloat16, False, None)
    assert resolve_precision("auto", CPU).autocast_dtype is None
    assert resolve_precision("auto", CUDA, bf16_supported=False).autocast_dtype is None


def test_explicit_precision_overrides_auto() -> None:
    assert resolve_precision("fp32", CUDA, bf16_supported=True).autocast_dtype is None
    fp16 = resolve_precision("fp16", CUDA, bf16_supported=True)
    assert (fp16.autocast_dtype, fp16.use_scaler) == (torch.float16, True)


ELIGIBLE = StepGraphConditions(
    device_type="cuda", resident=True, drop_last=True, use_scaler=False, distributed=False,
    grad_accum=1, grad_clip=False, scheduler=False, params=218_058,
)  # fmt: skip


def test_small_resident_cuda_run_captures_its_step() -> None:
    assert step_graph_blocker(ELIGIBLE) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"device_type": "cpu"}, "not a CUDA device"),
        ({"resident": False}, "the dataset is not resident on the device"),
        ({"drop_last": False}, "batches of different sizes"),
        ({"use_scaler": True}, "fp16 needs a GradScaler"),
        ({"distributed": True}, "DistributedDataParallel"),
        ({"grad_accum": 4}, "gradient accumulation"),
        ({"grad_clip": True}, "gradient clipping"),
        ({"scheduler": True}, "an lr schedule"),
        ({"params": SMALL_MODEL_PARAMS + 1}, f"more than {SMALL_MODEL_PARAMS:,} parameters"),
        ({"disabled": True}, "--no-cuda-graph"),
    ],
)
def test_each_condition_blocks_capture(change: dict[str, object], reason: str) -> None:
    assert step_graph_blocker(replace(ELIGIBLE, **change)) == reason  # type: ignore[arg-type]


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
