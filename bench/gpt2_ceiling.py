"""The floor of a GPT-2 training step: its matmuls and attention alone, at the library's rates.

    python bench/gpt2_ceiling.py --out ceiling.json        # on the GPU machine

Every matmul of one GPT-2 training step (B=16, T=1024 by default: M = B*T rows) is timed
on its own, in bf16, in the layouts nanoGPT's step uses (the forward `x @ W.T`, the
backward `dy @ W` and `dy.T @ x`), each at the count it has in a step (12 blocks; the tied
head once); so is causal `scaled_dot_product_attention`'s forward and backward at the
step's shape (PyTorch's choice of kernel: cuDNN's on the H200). Their sum is the time a
step cannot go below with these kernels even if every other kernel (norms, GELU, the
residual adds, the loss's softmax, AdamW) cost nothing. Against a measured step it bounds
what fusing or removing the rest can gain: the hand-written compiled step's ms/step over
this floor is the largest speed-up left to everything that is not a matmul or attention.

Prints (and with `--out` writes) one JSON object: each matmul's shape, count, ms and
TFLOP/s, attention's ms, and the floor in ms per step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F


def linears(n_layer: int, n_embd: int, vocab: int) -> list[tuple[str, int, int, int]]:
    """(name, in features K, out features N, count per step) of GPT-2's linears."""
    return [
        ("c_attn", n_embd, 3 * n_embd, n_layer),
        ("attn.c_proj", n_embd, n_embd, n_layer),
        ("mlp.c_fc", n_embd, 4 * n_embd, n_layer),
        ("mlp.c_proj", 4 * n_embd, n_embd, n_layer),
        ("lm_head (tied)", n_embd, vocab, 1),
    ]


def timed(fn: Callable[[], Any], device: torch.device, repeats: int, warmup: int) -> float:
    """Seconds per call of `fn`, the mean of `repeats` calls after `warmup`."""
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        begin.record()
        for _ in range(repeats):
            fn()
        end.record()
        torch.cuda.synchronize()
        return begin.elapsed_time(end) / 1000 / repeats
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def matmul_rows(
    m: int, n_layer: int, n_embd: int, vocab: int, device: torch.device, dtype: torch.dtype,
    repeats: int, warmup: int,
) -> list[dict[str, Any]]:  # fmt: skip
    rows: list[dict[str, Any]] = []
    for name, k, n, count in linears(n_layer, n_embd, vocab):
        x = torch.randn(m, k, device=device, dtype=dtype)
        w = torch.randn(n, k, device=device, dtype=dtype)
        dy = torch.randn(m, n, device=device, dtype=dtype)
        passes: dict[str, Callable[[], Any]] = {
            "forward x @ W.T": lambda x=x, w=w: x @ w.t(),
            "backward dy @ W": lambda dy=dy, w=w: dy @ w,
            "backward dy.T @ x": lambda dy=dy, x=x: dy.t() @ x,
        }
        for label, fn in passes.items():
            seconds = timed(fn, device, repeats, warmup)
            flop = 2 * m * n * k
            rows.append({
                "linear": name, "pass": label, "m_n_k": [m, n, k], "count": count,
                "ms": 1000 * seconds, "tflops": flop / seconds / 1e12,
                "ms_per_step": 1000 * seconds * count,
            })  # fmt: skip
    return rows


def attention_ms(
    batch: int, block: int, n_head: int, n_embd: int, device: torch.device, dtype: torch.dtype,
    repeats: int, warmup: int,
) -> float:  # fmt: skip
    """Causal SDPA forward + backward at the step's shape, ms per layer."""
    shape = (batch, n_head, block, n_embd // n_head)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
               for _ in range(3))  # fmt: skip
    grad = torch.randn(shape, device=device, dtype=dtype)

    def step() -> None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(out, (q, k, v), grad)

    return 1000 * timed(step, device, repeats, warmup)


def ceiling(args: argparse.Namespace) -> dict[str, Any]:
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = True
    m = args.batch_size * args.block_size
    rows = matmul_rows(m, args.n_layer, args.n_embd, args.vocab, device, dtype,
                       args.repeats, args.warmup)  # fmt: skip
    attn = attention_ms(args.batch_size, args.block_size, args.n_head, args.n_embd, device,
                        dtype, args.repeats, args.warmup)  # fmt: skip
    matmul_ms = sum(r["ms_per_step"] for r in rows)
    matmul_flop = sum(2 * r["m_n_k"][0] * r["m_n_k"][1] * r["m_n_k"][2] * r["count"]
                      for r in rows)  # fmt: skip
    return {
        "kind": "gpt2_ceiling", "batch_size": args.batch_size, "block_size": args.block_size,
        "dtype": str(dtype).removeprefix("torch."), "matmuls": rows,
        "matmul_ms_per_step": matmul_ms,
        "matmul_tflops_mean": matmul_flop / (matmul_ms / 1000) / 1e12,
        "attention_ms_per_layer": attn, "attention_ms_per_step": attn * args.n_layer,
        "floor_ms_per_step": matmul_ms + attn * args.n_layer,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=1024)
    p.add_argument("--n-layer", type=int, default=12)
    p.add_argument("--n-head", type=int, default=12)
    p.add_argument("--n-embd", type=int, default=768)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    result = ceiling(args)
    text = json.dumps(result)
    if args.out is not None:
        args.out.write_text(text + "\n")
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
