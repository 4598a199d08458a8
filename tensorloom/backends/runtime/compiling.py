"""torch.compile for TensorLoom scripts: a run compiles only when it repays the compile.

    steps = total_train_steps(args.epochs, len(train_loader), args.max_steps)
    compile_it = should_compile("auto", "max-autotune-no-cudagraphs", device, steps=steps,
                                batch_loss=BatchLoss(model), loader=train_loader)
    # prints `compile: off (auto: 250 steps x 5.8 ms eager; compiling saves ~1.0 s, less
    # than its ~13 s)`
    train_model = maybe_compile(BatchLoss(model), compile_it, "max-autotune-no-cudagraphs")

Compiling costs seconds before the first step (COMPILE_SECONDS, measured for a small
model on an H200) and makes each step cheaper (COMPILED_STEP_SHARE of an eager step's
time). `--compile auto` times a few eager forward-backward passes of the batch's loss and
compiles only if the run's planned steps would save more than the compile costs; the
first line of the script's output says which way it went, and why.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable

import torch
from torch import nn

COMPILE_SECONDS = 13.0  # torch.compile of a small model on an H200 (insert_compile.py)
COMPILED_STEP_SHARE = 0.3  # a compiled step's time over an eager one's

Region = Callable[[], contextlib.AbstractContextManager[object]]
"""What a forward runs in: `partial(autocast, plan, device)` (runtime/amp.py), or nothing."""


def should_compile(
    choice: str, mode: str | None, device: torch.device, *, steps: int, batch_loss: nn.Module,
    loader: Iterable[tuple[torch.Tensor, torch.Tensor]], region: Region = contextlib.nullcontext,
    announce: bool = True, captured: bool = False,
) -> bool:  # fmt: skip
    """Whether to `torch.compile` on CUDA, as `--compile` (`choice`) asks; `mode` None is
    `compile = false`. `auto` compiles when `steps` would save more than COMPILE_SECONDS,
    timing `batch_loss` (`forward(xb, yb)` is the batch's loss) in `region()`. Says which
    way it went and why when `announce` (rank 0). A step `captured` whole in one CUDA graph
    (runtime/graphs.py) is not compiled: it already runs as one graph launch."""
    if captured:
        return _said(False, "the whole step is one CUDA graph", announce)
    if mode is None or choice == "off" or device.type != "cuda":
        why = "no CUDA device" if device.type != "cuda" else f"--compile {choice}"
        return _said(False, "`compile = false`" if mode is None else why, announce)
    if choice == "on":
        return _said(True, "`--compile on`, or `compile` in the train block", announce)
    eager = eager_step_seconds(batch_loss, loader, device, region=region)
    worth, estimate = compile_pays(steps, eager)
    return _said(worth, f"auto: {estimate}", announce)


def compile_pays(steps: int, eager_seconds: float) -> tuple[bool, str]:
    """Whether `steps` eager steps of `eager_seconds` save more than the compile costs; why."""
    saved = steps * eager_seconds * (1 - COMPILED_STEP_SHARE)
    worth = saved >= COMPILE_SECONDS
    estimate = f"{steps} steps x {eager_seconds * 1e3:.1f} ms eager; compiling saves ~{saved:.1f} s"
    return worth, f"{estimate}, {'more' if worth else 'less'} than its ~{COMPILE_SECONDS:.0f} s"


def _said(worth: bool, why: str, announce: bool) -> bool:
    if announce:
        print(f"compile: {'on' if worth else 'off'} ({why})", flush=True)
    return worth


def maybe_compile(module: nn.Module, compile_it: bool, mode: str | None) -> nn.Module:
    if not compile_it:
        return module
    return torch.compile(module, mode=mode)  # type: ignore[return-value]


def eager_step_seconds(
    batch_loss: nn.Module, loader: Iterable[tuple[torch.Tensor, torch.Tensor]],
    device: torch.device, *, region: Region = contextlib.nullcontext, runs: int = 3,
) -> float:  # fmt: skip
    """One eager forward-backward's time on `loader`'s first batch; leaves no trace (RNG,
    gradients and buffers such as BatchNorm's statistics are as they were)."""
    xb, yb = next(iter(loader))
    buffers = [b.detach().clone() for b in batch_loss.buffers()]
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        start = time.perf_counter()
        for run in range(runs + 1):
            if run == 1:  # the first is untimed: lazy set-up, caches
                _synchronize(device)
                start = time.perf_counter()
            with region():
                loss = batch_loss(xb, yb)
            loss.backward()
        _synchronize(device)
        elapsed = (time.perf_counter() - start) / runs
    batch_loss.zero_grad(set_to_none=True)
    with torch.no_grad():
        for buffer, saved in zip(batch_loss.buffers(), buffers, strict=True):
            buffer.copy_(saved)
    return elapsed


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
