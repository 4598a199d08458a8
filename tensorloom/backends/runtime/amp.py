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
    """What `requested` means on `device` (the table above); `bf16_supported` (tests)
    overrides the GPU's answer."""
    cuda = device.type == "cuda"
    if cuda and bf16_supported is None:
        bf16_supported = torch.cuda.is_bf16_supported()
    if requested == "auto":  # CPU autocast is slower than fp32 without bf16 matrix units
        requested = "bf16" if cuda and bf16_supported else "fp32"
    if requested == "fp32":
        return PrecisionPlan(None, False)
    if requested == "bf16" and (bf16_supported or not cuda):
        return PrecisionPlan(torch.bfloat16, False)
    if not cuda:
        warning = "warning: `precision = fp16` needs a GPU; training on the CPU in fp32 instead"
        return PrecisionPlan(None, False, warning)
    if requested == "bf16":
        warning = "warning: this GPU has no bf16 support; using fp16 autocast with a GradScaler"
        return PrecisionPlan(torch.float16, True, warning)
    return PrecisionPlan(torch.float16, True)


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
