"""Mixed precision for TensorLoom scripts: what `precision = ...` means on this device.

    plan = resolve_precision("fp16", device)   # on a GPU: fp16 autocast and a GradScaler
    with autocast(plan, device):
        loss = loss_fn(model(x), y)

| requested | CUDA | CPU |
|---|---|---|
| `auto` (the default) | bf16 autocast if the GPU supports bf16, else fp32 | no autocast |
| `fp32` | no autocast | no autocast |
| `bf16` | bf16 autocast, no scaler | bf16 autocast |
| `fp16` | fp16 autocast + GradScaler | full precision and a warning |

CPU autocast runs bf16, not fp16, and bf16 is slower than fp32 on CPUs without
bf16 matrix units, so `fp16` on a CPU run falls back to fp32, and says so.

A GPU without bf16 support falls back from `bf16` to `fp16` + GradScaler, also with a warning.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class PrecisionPlan:
    """The autocast dtype (None: full precision), whether a GradScaler is needed, and why."""

    autocast_dtype: torch.dtype | None
    use_scaler: bool
    warning: str | None = None


def resolve_precision(
    requested: str, device: torch.device, bf16_supported: bool | None = None
) -> PrecisionPlan:
    """What `requested` means on `device`; `bf16_supported` (tests) overrides the GPU's answer."""
    if requested == "auto":
        requested = auto_precision(device, bf16_supported)
    if requested == "fp32":
        return PrecisionPlan(None, False)
    if device.type == "cpu":
        return _cpu_precision(requested)
    if bf16_supported is None:
        bf16_supported = torch.cuda.is_bf16_supported()
    if requested == "bf16" and not bf16_supported:
        warning = "warning: this GPU has no bf16 support; using fp16 autocast with a GradScaler"
        return PrecisionPlan(torch.float16, True, warning)
    if requested == "bf16":
        return PrecisionPlan(torch.bfloat16, False)
    return PrecisionPlan(torch.float16, True)


def auto_precision(device: torch.device, bf16_supported: bool | None = None) -> str:
    """`precision = auto`: bf16 on a CUDA GPU with bf16 support, fp32 anywhere else."""
    if device.type != "cuda":
        return "fp32"  # CPU autocast is slower than fp32 on CPUs without bf16 matrix units
    if bf16_supported is None:
        bf16_supported = torch.cuda.is_bf16_supported()
    return "bf16" if bf16_supported else "fp32"


def _cpu_precision(requested: str) -> PrecisionPlan:
    if requested == "bf16":
        return PrecisionPlan(torch.bfloat16, False)
    warning = "warning: `precision = fp16` needs a GPU; training on the CPU in fp32 instead"
    return PrecisionPlan(None, False, warning)


def autocast(
    plan: PrecisionPlan, device: torch.device, *, cache: bool = True
) -> contextlib.AbstractContextManager[object]:
    """The autocast region for the forward pass and loss, or nothing at full precision.

    `cache=False` inside a captured CUDA graph, as PyTorch's CUDA-graph notes ask.
    """
    if plan.autocast_dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=plan.autocast_dtype, cache_enabled=cache)


def make_grad_scaler(plan: PrecisionPlan, device: torch.device) -> torch.amp.GradScaler | None:
    return torch.amp.GradScaler(device.type) if plan.use_scaler else None
