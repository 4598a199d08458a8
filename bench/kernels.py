"""GPU speed of TensorLoom-compiled Triton kernels against PyTorch.

    python bench/kernels.py                 # on a CUDA machine: the tables below
    TRITON_INTERPRET=1 python bench/kernels.py --smoke   # a CPU smoke run, tiny sizes

Compiles examples/vector_add.tl, examples/kernels/bias_gelu.tl and
examples/kernels/fused_layernorm.tl with TensorLoom, imports the printed Python,
checks each result against PyTorch, then times:

1. `vector_add_launcher(x, y)` vs `torch.add(x, y, out=z)`: 3 x 4 bytes an element;
2. `bias_gelu_launcher(x, b)` (one pass, autotuned) vs `F.gelu(x + b)`: 2 x 4 bytes;
3. LayerNorm forward + backward at [B*T, d], d in 768..4096, bf16 activations and
   fp32 weights: the kernels (`layer_norm_apply`, autograd runs `layer_norm_bwd`)
   vs `F.layer_norm` eager and vs torch.compile's code for the same function;
   GB/s counts the 5 activation tensors the op must move (x, y forward; x, dy, dx
   backward);
4. a training step (bf16 autocast, AdamW) of a 4-layer pre-norm transformer at
   d=1024 whose LayerNorms are the kernel or `nn.LayerNorm`, eager and compiled;
5. the losses of 100 steps of that training with each LayerNorm, and their largest
   relative gap (the kernels' run should match PyTorch's to bf16 tolerance).

Prints markdown tables. Times are medians from `triton.testing.do_bench` on CUDA (the
autotuners have chosen before timing starts), wall-clock medians elsewhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tensorloom.backends.python_printer import print_python  # noqa: E402
from tensorloom.pipeline import compile_text  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


def compile_example(relative: str, workdir: Path) -> ModuleType:
    """The Python module TensorLoom prints for an example."""
    path = ROOT / relative
    result = compile_text(path.read_text(), relative, until="torch")
    if result.module is None or result.sink.has_errors:
        raise SystemExit(f"{relative} did not compile: {[d.message for d in result.sink]}")
    out = workdir / f"{path.stem}_tl.py"
    out.write_text(print_python(result.module))
    spec = importlib.util.spec_from_file_location(out.stem, out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[out.stem] = module  # the script's dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    if CUDA:
        import triton.testing

        fn()  # autotune and compile before timing
        torch.cuda.synchronize()
        return float(triton.testing.do_bench(fn, warmup=25, rep=max(repeats, 1) * 100))
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def row(name: str, ms: float, nbytes: int, baseline_ms: float) -> str:
    gbps = nbytes / (ms * 1e-3) / 1e9
    return f"| {name} | {ms:.3f} | {gbps:,.0f} | {baseline_ms / ms:.2f}x |"


# ------------------------------------------------------------- elementwise kernels


def bench_vector_add(module: ModuleType, n: int, repeats: int) -> list[str]:
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    z = torch.empty_like(x)
    torch.testing.assert_close(module.vector_add_launcher(x, y), x + y)
    nbytes = 3 * 4 * n
    torch_ms = median_ms(lambda: torch.add(x, y, out=z), repeats)
    tl_ms = median_ms(lambda: module.vector_add_launcher(x, y, z=z), repeats)
    return [
        row("torch.add", torch_ms, nbytes, torch_ms),
        row("TensorLoom vector_add_launcher", tl_ms, nbytes, torch_ms),
    ]


def bench_bias_gelu(module: ModuleType, n: int, repeats: int) -> list[str]:
    cols = 4096 if n >= 4096 * 16 else 64
    rows = n // cols
    x, b = torch.randn(rows, cols, device=DEVICE), torch.randn(cols, device=DEVICE)
    out = torch.empty_like(x)
    torch.testing.assert_close(module.bias_gelu_launcher(x, b), F.gelu(x + b))
    nbytes = 2 * 4 * rows * cols
    torch_ms = median_ms(lambda: F.gelu(x + b), repeats)
    tl_ms = median_ms(lambda: module.bias_gelu_launcher(x, b, out=out), repeats)
    return [
        row("torch F.gelu(x + b), unfused", torch_ms, nbytes, torch_ms),
        row("TensorLoom bias_gelu_launcher (autotuned)", tl_ms, nbytes, torch_ms),
    ]


# ----------------------------------------------------------------------- LayerNorm


def torch_layer_norm(x: Any, w: Any, b: Any, eps: float = 1e-5) -> Any:
    """PyTorch's LayerNorm of bf16 activations with fp32 weights: the weights cast to the
    activations' dtype (F.layer_norm takes one dtype), its fastest eager form."""
    return F.layer_norm(x, (x.shape[-1],), w.to(x.dtype), b.to(x.dtype), eps)


def forward_backward(
    norm: Callable[..., Any], x: Any, w: Any, b: Any, dy: Any
) -> Callable[[], None]:
    def step() -> None:
        for tensor in (x, w, b):
            tensor.grad = None
        norm(x, w, b).backward(dy)

    return step


def bench_layer_norm(module: ModuleType, rows: int, widths: list[int], repeats: int) -> list[str]:
    ours = lambda x, w, b: module.layer_norm_apply(x, w, b, 1e-5)  # noqa: E731
    compiled = torch.compile(torch_layer_norm)
    lines: list[str] = []
    for d in widths:
        dtype = torch.bfloat16 if CUDA else torch.float32
        x = torch.randn(rows, d, device=DEVICE, dtype=dtype, requires_grad=True)
        w = torch.rand(d, device=DEVICE, requires_grad=True)
        b = torch.randn(d, device=DEVICE, requires_grad=True)
        dy = torch.randn_like(x)
        check_layer_norm(ours, x, w, b, dy)
        nbytes = 5 * rows * d * x.element_size()
        eager_ms = median_ms(forward_backward(torch_layer_norm, x, w, b, dy), repeats)
        compiled_ms = median_ms(forward_backward(compiled, x, w, b, dy), repeats)
        ours_ms = median_ms(forward_backward(ours, x, w, b, dy), repeats)
        shape = f"[{rows}, {d}]"
        lines += [
            row(f"{shape} F.layer_norm eager", eager_ms, nbytes, compiled_ms),
            row(f"{shape} F.layer_norm torch.compile", compiled_ms, nbytes, compiled_ms),
            row(f"{shape} TensorLoom layer_norm kernels", ours_ms, nbytes, compiled_ms),
        ]
    return lines


def check_layer_norm(ours: Callable[..., Any], x: Any, w: Any, b: Any, dy: Any) -> None:
    """The kernels' output and gradients against F.layer_norm's, before timing them."""
    results = []
    for norm in (ours, torch_layer_norm):
        leaves = [t.detach().clone().requires_grad_() for t in (x, w, b)]
        out = norm(*leaves)
        results.append([out, *torch.autograd.grad(out, leaves, dy)])
    tolerance = 5e-2 if x.dtype == torch.bfloat16 else 1e-4
    for got, want in zip(*results, strict=True):
        torch.testing.assert_close(got.float(), want.float(), rtol=tolerance, atol=tolerance)


# ---------------------------------------------------------------------- model step


class KernelNorm(nn.LayerNorm):
    """`nn.LayerNorm`'s weights, normalized by the TensorLoom kernels."""

    kernels: ModuleType

    def forward(self, x: Any) -> Any:
        flat = x.reshape(-1, x.shape[-1])
        return self.kernels.layer_norm_apply(flat, self.weight, self.bias, self.eps).view_as(x)


class Block(nn.Module):
    def __init__(self, d: int, heads: int, norm: type[nn.LayerNorm]) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = norm(d), norm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: Any) -> Any:
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False, is_causal=False)[0]
        return x + self.mlp(self.ln_2(x))


def bench_model_step(
    module: ModuleType, batch: int, length: int, d: int, layers: int, repeats: int
) -> list[str]:
    KernelNorm.kernels = module
    lines: list[str] = []
    baseline = 0.0
    for compiled in (False, True):
        for name, norm in (("nn.LayerNorm", nn.LayerNorm), ("TensorLoom kernels", KernelNorm)):
            torch.manual_seed(0)
            model = nn.Sequential(*[Block(d, 8, norm) for _ in range(layers)]).to(DEVICE)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            forward = torch.compile(model) if compiled else model
            x = torch.randn(batch, length, d, device=DEVICE)

            def step(forward: Any = forward, optimizer: Any = optimizer, x: Any = x) -> None:
                with torch.autocast(DEVICE, dtype=torch.bfloat16):
                    loss = forward(x).float().pow(2).mean()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)

            ms = median_ms(step, repeats)
            baseline = baseline or ms
            mode = "torch.compile" if compiled else "eager"
            lines.append(f"| {mode} | {name} | {ms:.2f} | {baseline / ms:.2f}x |")
    return lines


def bench_loss_agreement(
    module: ModuleType, batch: int, length: int, d: int, layers: int, steps: int
) -> list[str]:
    """The same training run (seed, data, bf16 autocast, AdamW) with the kernels and
    with `nn.LayerNorm`: the losses every few steps and their largest relative gap."""
    KernelNorm.kernels = module
    runs: list[list[float]] = []
    for norm in (nn.LayerNorm, KernelNorm):
        torch.manual_seed(0)
        model = nn.Sequential(*[Block(d, 8, norm) for _ in range(layers)]).to(DEVICE)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        generator = torch.Generator(device=DEVICE).manual_seed(1)
        losses: list[float] = []
        for _ in range(steps):
            x = torch.randn(batch, length, d, device=DEVICE, generator=generator)
            with torch.autocast(DEVICE, dtype=torch.bfloat16):
                loss = (model(x).float() - x.flip(-1)).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
        runs.append(losses)
    every = max(steps // 5, 1)
    lines = [
        f"| {i + 1} | {a:.5f} | {b:.5f} | {abs(a - b) / abs(a):.2e} |"
        for i, (a, b) in enumerate(zip(*runs, strict=True))
        if (i + 1) % every == 0
    ]
    gap = max(abs(a - b) / abs(a) for a, b in zip(*runs, strict=True))
    return [*lines, f"| largest relative gap | | | {gap:.2e} |"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=2**28)
    parser.add_argument("--rows", type=int, default=8 * 1024, help="B*T of the LayerNorm rows")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for a CPU run")
    args = parser.parse_args()
    widths = [768, 1024, 2048, 4096]
    batch, length, d, layers = 8, 1024, 1024, 4
    if args.smoke:
        args.elements, args.rows, args.repeats = 4096, 64, 1
        widths, batch, length, d, layers = [96], 2, 16, 64, 1
    with tempfile.TemporaryDirectory() as workdir:
        vector_add = compile_example("examples/vector_add.tl", Path(workdir))
        bias_gelu = compile_example("examples/kernels/bias_gelu.tl", Path(workdir))
        layernorm = compile_example("examples/kernels/fused_layernorm.tl", Path(workdir))
        name = torch.cuda.get_device_name() if CUDA else "cpu (Triton's interpreter)"
        interpret = os.environ.get("TRITON_INTERPRET", "0")
        print(f"{name}; torch {torch.__version__}; TRITON_INTERPRET={interpret}\n")
        print(f"{args.elements} float32 elements\n")
        print("| kernel | median ms | GB/s | speed-up vs torch |")
        print("|---|---|---|---|")
        for line in bench_vector_add(vector_add, args.elements, args.repeats):
            print(line)
        for line in bench_bias_gelu(bias_gelu, args.elements, args.repeats):
            print(line)
        print("\nLayerNorm forward + backward (bf16 activations, fp32 weights)\n")
        print("| op | median ms | GB/s | speed-up vs torch.compile |")
        print("|---|---|---|---|")
        for line in bench_layer_norm(layernorm, args.rows, widths, args.repeats):
            print(line)
        print(
            f"\nTraining step, {layers} pre-norm blocks, [{batch}, {length}, {d}], bf16 autocast\n"
        )
        print("| mode | LayerNorm | median ms | speed-up vs eager nn.LayerNorm |")
        print("|---|---|---|---|")
        for line in bench_model_step(layernorm, batch, length, d, layers, args.repeats):
            print(line)
        steps = 5 if args.smoke else 100
        print(f"\nLoss of the same run, {steps} steps: nn.LayerNorm vs the kernels (eager)\n")
        print("| step | nn.LayerNorm | TensorLoom kernels | relative gap |")
        print("|---|---|---|---|")
        for line in bench_loss_agreement(layernorm, batch, length, d, layers, steps):
            print(line)


if __name__ == "__main__":
    main()
