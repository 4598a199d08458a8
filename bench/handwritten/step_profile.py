"""What a training step spends on the host: torch.profiler over a few steps, summarised.

`StepProfile` is started and stepped by a training loop (bench/handwritten/transformer_lm.py
with `--profile-steps`, an emitted script through bench/run_emitted.py's `--profile-steps`);
`summary()` gives, per step, the host's wall time under the profiler, the kernel launches,
the compiled-graph calls and the ten ops with the most host time of their own. The GPU
suite records it beside the run's timing: a step that is bound by the host (small models
under torch.compile's default mode) is as fast as these launches and calls are cheap.

`profile_kernels` is the GPU side (bench/handwritten/gpt2_train.py `--profile-steps`): the
kernels' time per step by what they are (matmul, attention, inductor's fused kernels, the
optimizer, ...), so a GPU-bound step shows where its milliseconds go.
"""

from __future__ import annotations

import time
from typing import Any

import torch

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC")
# What a kernel's name says it is, first match wins (lower-case substrings): attention before
# matmuls (cuDNN's attention kernels are generated GEMMs), inductor's matmul templates
# (`triton_tem_`) before its other Triton kernels.
KERNEL_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("attention", ("sdpa", "flash", "fmha", "attention", "attn")),
    ("matmul", ("gemm", "nvjet", "cutlass", "xmma", "triton_tem_", "matmul", "splitk")),
    ("optimizer", ("multi_tensor", "adam", "foreach")),
    ("triton (inductor's fused elementwise and reductions)", ("triton_",)),
    ("memcpy/memset", ("memcpy", "memset")),
    (
        "aten elementwise/reduction",
        (
            "elementwise",
            "reduce",
            "vectorized",
            "cross_entropy",
            "softmax",
            "layer_norm",
            "embedding",
            "index",
        ),
    ),
)


def kernel_category(name: str) -> str:
    """The category of a GPU kernel by its name (KERNEL_CATEGORIES), else "other"."""
    low = name.lower()
    for category, words in KERNEL_CATEGORIES:
        if any(word in low for word in words):
            return category
    return "other"


def kernel_breakdown(kernels: list[tuple[str, int, float]], steps: int,
                     top: int = 30) -> dict[str, Any]:  # fmt: skip
    """Per step: the GPU time of `kernels` ((name, calls, total microseconds) each) in all,
    by category, and the `top` kernels with the most time."""
    total_us = sum(us for _, _, us in kernels)
    by_category: dict[str, float] = {}
    for name, _, us in kernels:
        category = kernel_category(name)
        by_category[category] = by_category.get(category, 0.0) + us / steps / 1000
    ranked = sorted(kernels, key=lambda k: k[2], reverse=True)[:top]
    return {
        "steps": steps,
        "gpu_kernel_ms_per_step": total_us / steps / 1000,
        "ms_per_step_by_category": dict(sorted(by_category.items(), key=lambda kv: -kv[1])),
        "top_kernels": [
            {"kernel": name[:120], "category": kernel_category(name),
             "calls_per_step": calls / steps, "ms_per_step": us / steps / 1000}
            for name, calls, us in ranked
        ],
    }  # fmt: skip


def profile_kernels(run_steps: Any, steps: int) -> dict[str, Any]:
    """Run `run_steps(steps)` under torch.profiler (CUDA activity) and break the GPU
    kernels' time down (`kernel_breakdown`); the wall time per step under the profiler too."""
    synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        started = time.perf_counter()
        run_steps(steps)
        synchronize()
        wall_s = time.perf_counter() - started
    kernels = gpu_kernels(prof.key_averages())
    return {"wall_ms_per_step": 1000 * wall_s / steps, **kernel_breakdown(kernels, steps)}


def gpu_kernels(events: Any) -> list[tuple[str, int, float]]:
    """(name, calls, microseconds) of the GPU's own events: kernels, copies and sets. A
    `record_function` range on the GPU's timeline (`Optimizer.step#AdamW.step`: the
    optimizer's kernels once more) has a host event of the same name, so it is left out."""
    cuda = torch.autograd.DeviceType.CUDA
    host = {e.key for e in events if e.device_type != cuda}
    return [
        (e.key, e.count, e.self_device_time_total)
        for e in events
        if e.device_type == cuda and e.self_device_time_total > 0 and e.key not in host
    ]


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class StepProfile:
    """Profiles `steps` training steps after `after` steps: call `step()` once per step."""

    def __init__(self, after: int, steps: int) -> None:
        self.after, self.steps, self.seen = after, steps, 0
        self.profiler: torch.profiler.profile | None = None
        self.started = 0.0
        self.wall_s: float | None = None

    def step(self) -> None:
        self.seen += 1
        if self.steps <= 0 or self.wall_s is not None:
            return
        if self.seen == self.after:
            synchronize()
            activities = [torch.profiler.ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self.profiler = torch.profiler.profile(activities=activities)
            self.profiler.__enter__()
            self.started = time.perf_counter()
        elif self.profiler is not None and self.seen == self.after + self.steps:
            synchronize()
            self.wall_s = time.perf_counter() - self.started
            self.profiler.__exit__(None, None, None)

    def summary(self) -> dict[str, Any] | None:
        if self.profiler is None or self.wall_s is None:
            return None
        events = self.profiler.key_averages()
        n = self.steps
        launches = sum(e.count for e in events if e.key in LAUNCHES)
        graphs = sum(e.count for e in events if e.key.startswith("Torch-Compiled Region"))
        # the kernels' own events (a host op's device time is its kernels', counted again)
        cuda = torch.autograd.DeviceType.CUDA
        gpu_us = sum(e.self_device_time_total for e in events if e.device_type == cuda) / n
        top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:10]
        top_ops = [
            {"op": e.key[:80], "calls_per_step": e.count / n,
             "self_host_ms_per_step": e.self_cpu_time_total / n / 1000}
            for e in top
        ]  # fmt: skip
        return {
            "steps": n,
            "host_ms_per_step": 1000 * self.wall_s / n,
            "kernel_launches_per_step": launches / n,
            "compiled_region_calls_per_step": graphs / n,
            "gpu_kernel_ms_per_step": gpu_us / 1000,
            "top_host_ops": top_ops,
        }
