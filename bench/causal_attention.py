"""Causal attention as TensorLoom emits it against `nn.MultiheadAttention`, on a GPU.

    python bench/causal_attention.py [--device cuda] [--batch 8] [--seq 1024] [--d 768] [--heads 12]

`MultiHeadAttention(d, h, causal=true)` is emitted as the runtime's `SelfAttention`
(tensorloom/backends/runtime/attention.py, loaded here by path: the script needs torch
only, so it runs on a machine without TensorLoom). Given `nn.MultiheadAttention`'s
weights it must compute the same output under a causal mask; it must run under
PyTorch's flash-attention backend alone (`sdpa_kernel(SDPBackend.FLASH_ATTENTION)`
raises when flash cannot run); and one forward and backward of each is timed in bf16,
the median of 20 steps after 5 warm-ups, with CUDA events (wall clock on the CPU).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

RUNTIME = Path(__file__).resolve().parents[1] / "tensorloom/backends/runtime/attention.py"


def runtime() -> ModuleType:
    spec = importlib.util.spec_from_file_location("attention", RUNTIME)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def step_ms(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, steps: int = 20) -> float:
    """Median milliseconds of one forward and backward, after 5 warm-ups."""
    times: list[float] = []
    for i in range(5 + steps):
        if x.is_cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x).float().sum().backward()
            end.record()
            torch.cuda.synchronize()
            elapsed = start.elapsed_time(end)
        else:
            began = time.perf_counter()
            fn(x).float().sum().backward()
            elapsed = (time.perf_counter() - began) * 1000
        if i >= 5:
            times.append(elapsed)
    return statistics.median(times)


def flash_only(device: str) -> AbstractContextManager[object]:
    if device != "cuda":
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--d", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    args = parser.parse_args(argv)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    torch.manual_seed(0)
    ours = runtime().SelfAttention(args.d, args.heads).to(args.device, dtype)
    ref = nn.MultiheadAttention(args.d, args.heads, batch_first=True).to(args.device, dtype)
    with torch.no_grad():
        ours.c_attn.weight.copy_(ref.in_proj_weight)
        ours.c_attn.bias.copy_(ref.in_proj_bias)
        ours.c_proj.weight.copy_(ref.out_proj.weight)
        ours.c_proj.bias.copy_(ref.out_proj.bias)
    x = torch.randn(args.batch, args.seq, args.d, device=args.device, dtype=dtype)
    x.requires_grad_(True)
    mask = nn.Transformer.generate_square_subsequent_mask(args.seq, device=args.device, dtype=dtype)

    def reference(z: torch.Tensor) -> torch.Tensor:
        return ref(z, z, z, attn_mask=mask, is_causal=True, need_weights=False)[0]

    with torch.no_grad():
        diff = (ours(x) - reference(x)).abs().max().item()
    with flash_only(args.device):
        flash = step_ms(ours, x)
    result = {
        "max_abs_diff": diff,
        "self_attention_flash_only_ms": flash,
        "self_attention_ms": step_ms(ours, x),
        "multihead_attention_causal_mask_ms": step_ms(reference, x),
    }
    for key, value in result.items():
        print(f"{key}: {value:.4f}")
    print(f"torch {torch.__version__}, {args.device}")
    return result


if __name__ == "__main__":
    main()
