"""The MLP benchmark's captured training step, with each Adam implementation (GPU).

    python bench/prepare_gpu.py                                   # here
    python bench/captured_step.py bench/generated/mlp_tl_default.py   # GPU machine

Loads the emitted script's `MLP` and `GraphedStep`, captures forward, loss,
backward and Adam in one CUDA graph on 60,000 random samples (batch 128), and
prints per variant the epoch times (4 epochs), the kernels per step and their
GPU time (torch.profiler over 20 replays). Variants: Adam's capturable
`foreach` path and its fused kernel; and the fused one with 4 and 16 steps
captured per graph, to see whether graph launches still cost anything.
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


def one_step_per_graph(emitted: ModuleType, x: torch.Tensor, y: torch.Tensor, **adam: Any) -> str:
    model = emitted.MLP().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, **adam)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        return loss

    graphed = emitted.GraphedStep(step, x, y, batch_size=BATCH, model=model, optimizer=optimizer)
    steps = SAMPLES // BATCH
    times = []
    for _ in range(EPOCHS):
        order = torch.randperm(SAMPLES, device="cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(steps):
            graphed.replay(order[i * BATCH : (i + 1) * BATCH])
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(20):
            graphed.replay(order[i * BATCH : (i + 1) * BATCH])
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    gpu_us = sum(e.device_time for e in kernels) / 20
    return f"epochs {_seconds(times)}, {len(kernels) / 20:.0f} kernels and {gpu_us:.0f} us per step"


def steps_per_graph(emitted: ModuleType, x: torch.Tensor, y: torch.Tensor, k: int) -> str:
    model = emitted.MLP().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True, capturable=True)
    loss_fn = torch.nn.CrossEntropyLoss()
    idx = torch.zeros(k, BATCH, dtype=torch.long, device="cuda")

    def body() -> None:
        for j in range(k):
            loss_fn(model(x[idx[j]]), y[idx[j]]).backward()
            optimizer.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        body()
    times = []
    for _ in range(EPOCHS):
        order = torch.randperm(SAMPLES, device="cuda")[: SAMPLES // (k * BATCH) * k * BATCH]
        batches = order.view(-1, k, BATCH)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for group in batches:
            idx.copy_(group)
            graph.replay()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return f"epochs {_seconds(times)}"


def _seconds(times: list[float]) -> str:
    return "[" + ", ".join(f"{t:.4f}" for t in times) + "] s"


def main() -> None:
    emitted = load(Path(sys.argv[1]))
    torch.manual_seed(0)
    x = torch.randn(SAMPLES, 784, device="cuda")
    y = torch.randint(0, 10, (SAMPLES,), device="cuda")
    print("Adam foreach, capturable:", one_step_per_graph(emitted, x, y, capturable=True))
    print("Adam fused, capturable:", one_step_per_graph(emitted, x, y, fused=True, capturable=True))
    for k in (4, 16):
        print(f"Adam fused, {k} steps per graph:", steps_per_graph(emitted, x, y, k))


if __name__ == "__main__":
    main()
