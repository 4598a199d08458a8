"""The MLP benchmark's captured training step, with each Adam implementation (GPU).

    python bench/prepare_gpu.py                                   # here
    python bench/captured_step.py bench/generated/mlp_tl_default.py   # GPU machine

Loads the emitted script's `MLP` and `GraphedStep`, captures forward, loss,
backward and Adam in one CUDA graph on 60,000 random samples (batch 128), and
prints per variant the epoch times (4 epochs), the kernels per step and their
GPU time (torch.profiler over 20 replays). Variants: Adam's capturable
`foreach` path and its fused kernel; and the fused one with 4 and 16 steps
captured per graph (`GraphedStep` over 4 or 16 batches at once), to see
whether graph launches still cost anything.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

SAMPLES, BATCH, EPOCHS = 60_000, 128, 4


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("mlp_emitted", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mlp_emitted"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def captured(emitted: ModuleType, x: torch.Tensor, y: torch.Tensor, k: int, **adam: Any) -> str:
    """Epoch times, and kernels and GPU time per step, with `k` steps per graph replay."""
    model = emitted.MLP().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, **adam)
    loss_fn = torch.nn.CrossEntropyLoss()

    def steps(xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """`k` training steps on `k` consecutive batches of `xb`, `yb`; their summed loss."""
        losses = []
        for j in range(k):
            batch = slice(j * BATCH, (j + 1) * BATCH)
            loss = loss_fn(model(xb[batch]), yb[batch])
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        return sum(losses[1:], losses[0])  # one step: its loss, no extra kernel

    rows = k * BATCH
    graphed = emitted.GraphedStep(steps, x, y, batch_size=rows, model=model, optimizer=optimizer)
    replays = SAMPLES // rows
    times = []
    for _ in range(EPOCHS):
        order = torch.randperm(SAMPLES, device="cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(replays):
            graphed.replay(order[i * rows : (i + 1) * rows])
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(20):
            graphed.replay(order[i * rows : (i + 1) * rows])
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    per_step = 20 * k
    gpu_us = sum(e.device_time for e in kernels) / per_step
    return (f"epochs {_seconds(times)}, {len(kernels) / per_step:.0f} kernels and "
            f"{gpu_us:.0f} us per step")  # fmt: skip


def _seconds(times: list[float]) -> str:
    return "[" + ", ".join(f"{t:.4f}" for t in times) + "] s"


def main() -> None:
    emitted = load(Path(sys.argv[1]))
    torch.manual_seed(0)
    x = torch.randn(SAMPLES, 784, device="cuda")
    y = torch.randint(0, 10, (SAMPLES,), device="cuda")
    print("Adam foreach, capturable:", captured(emitted, x, y, 1, capturable=True))
    print("Adam fused, capturable:", captured(emitted, x, y, 1, fused=True, capturable=True))
    for k in (4, 16):
        print(f"Adam fused, {k} steps per graph:",
              captured(emitted, x, y, k, fused=True, capturable=True))  # fmt: skip


if __name__ == "__main__":
    main()
