"""GPU bandwidth of TensorLoom-compiled Triton kernels against torch.

    python bench/kernels.py            # on a CUDA machine: 2^28 float32 elements
    TRITON_INTERPRET=1 python bench/kernels.py --elements 4096 --repeats 1   # a CPU smoke run

Compiles examples/vector_add.tl (the README's kernel) and
examples/kernels/bias_gelu.tl with TensorLoom, imports the printed Python, checks
each launcher's result against torch, then times:

- `vector_add_launcher(x, y)` vs `torch.add(x, y, out=z)`, counting 3 x 4 bytes
  per element (two reads, one write);
- `bias_gelu_launcher(x, b)` (one pass) vs `F.gelu(x + b)` (two kernels), both
  counted as the 2 x 4 bytes per element the fused kernel must move.

Prints a markdown table. Times are medians from `triton.testing.do_bench`
on CUDA, or wall-clock medians elsewhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tensorloom.backends import print_triton  # noqa: E402, F401  (registers the handlers)
from tensorloom.backends.python_printer import print_python  # noqa: E402
from tensorloom.pipeline import compile_text  # noqa: E402


def compile_example(relative: str, workdir: Path) -> ModuleType:
    """The Python module TensorLoom prints for an example kernel."""
    path = ROOT / relative
    result = compile_text(path.read_text(), relative, until="torch")
    if result.module is None or result.sink.has_errors:
        raise SystemExit(f"{relative} did not compile: {[d.message for d in result.sink]}")
    out = workdir / f"{path.stem}_tl.py"
    out.write_text(print_python(result.module))
    spec = importlib.util.spec_from_file_location(out.stem, out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    if torch.cuda.is_available():
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=25, rep=max(repeats, 1) * 100))
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def row(name: str, ms: float, nbytes: int, baseline_ms: float) -> str:
    tbps = nbytes / (ms * 1e-3) / 1e12
    return f"| {name} | {ms:.3f} | {tbps:.2f} | {baseline_ms / ms:.2f}x |"


def bench_vector_add(module: ModuleType, n: int, device: str, repeats: int) -> list[str]:
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    z = torch.empty_like(x)
    torch.testing.assert_close(module.vector_add_launcher(x, y), x + y)
    nbytes = 3 * 4 * n
    torch_ms = median_ms(lambda: torch.add(x, y, out=z), repeats)
    tl_ms = median_ms(lambda: module.vector_add_launcher(x, y, z=z), repeats)
    return [
        row("torch.add", torch_ms, nbytes, torch_ms),
        row("TensorLoom vector_add_launcher", tl_ms, nbytes, torch_ms),
    ]


def bench_bias_gelu(module: ModuleType, n: int, device: str, repeats: int) -> list[str]:
    cols = 4096 if n >= 4096 * 16 else 64
    rows = n // cols
    x = torch.randn(rows, cols, device=device)
    b = torch.randn(cols, device=device)
    out = torch.empty_like(x)
    torch.testing.assert_close(module.bias_gelu_launcher(x, b), F.gelu(x + b))
    nbytes = 2 * 4 * rows * cols
    torch_ms = median_ms(lambda: F.gelu(x + b), repeats)
    lines = [row("torch F.gelu(x + b), unfused", torch_ms, nbytes, torch_ms)]
    for block_m, block_n in ((32, 32), (8, 256), (4, 1024)):
        ms = median_ms(
            lambda bm=block_m, bn=block_n: module.bias_gelu_launcher(
                x, b, out=out, BLOCK_M=bm, BLOCK_N=bn
            ),
            repeats,
        )
        lines.append(
            row(f"TensorLoom bias_gelu_launcher {block_m}x{block_n}", ms, nbytes, torch_ms)
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=2**28)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as workdir:
        vector_add = compile_example("examples/vector_add.tl", Path(workdir))
        bias_gelu = compile_example("examples/kernels/bias_gelu.tl", Path(workdir))
        name = torch.cuda.get_device_name() if device == "cuda" else "cpu (interpreter)"
        print(f"{args.elements} float32 elements on {name}; torch {torch.__version__}\n")
        print("| kernel | median ms | TB/s | speed-up vs torch |")
        print("|---|---|---|---|")
        for line in bench_vector_add(vector_add, args.elements, device, args.repeats):
            print(line)
        for line in bench_bias_gelu(bias_gelu, args.elements, device, args.repeats):
            print(line)


if __name__ == "__main__":
    main()
