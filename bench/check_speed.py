"""How fast the static checks are: shape inference per example, and `tlc check` by size.

    python bench/check_speed.py            # prints two markdown tables

1. In-process `shape-inference` on each example and README model (the IR built
   once, the pass timed alone; median of 50 runs). The original claimed "under
   3 ms"; this measures it.
2. The whole check (parse, irgen, every check pass) in process on generated
   MLPs of 10, 100 and 1,000 layers, and time per layer, which stays flat if the
   check grows linearly.
3. The parser alone on 1,000 and 10,000 lines of mixed statements (CPU seconds,
   median of 5), which also stays flat per line if parsing is linear.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xdsl.dialects.builtin import ModuleOp  # noqa: E402

from tensorloom.diagnostics.core import DiagnosticSink  # noqa: E402
from tensorloom.diagnostics.ir import reporting  # noqa: E402
from tensorloom.passes.shape_inference import infer_shapes, types_kept  # noqa: E402
from tensorloom.pipeline import compile_file, compile_text  # noqa: E402
from tensorloom.tools.check import check_file  # noqa: E402


def median_ms(run: object, repeat: int) -> float:
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def example_files() -> list[Path]:
    found = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "examples").glob("*.nml"))
    found += sorted((ROOT / "tests/lit/check/valid").glob("*.[tn]*"))
    return found


def shape_inference_table() -> str:
    rows = ["| program | shape-inference (ms, median of 50) |", "|---|---:|"]
    for path in example_files():
        result = compile_file(path, until="irgen")
        module = result.module
        if module is None:
            continue
        with reporting(DiagnosticSink()):
            ms = median_ms(lambda m=module: _again(m), 50)
        rows.append(f"| {path.relative_to(ROOT)} | {ms:.3f} |")
    return "\n".join(rows)


def _again(module: ModuleOp) -> None:
    """One inference of `module`, which leaves it as it was."""
    with types_kept(module):
        infer_shapes(module)


def generated(layers: int) -> str:
    lines = ["model Deep:"]
    lines += [f"    layer fc{i} = Linear(64, 64)" for i in range(layers)]
    lines.append("    fn forward(self, x: Tensor[B, 64]) -> Tensor:")
    lines += [f"        x = self.fc{i}(x) |> relu" for i in range(layers)]
    lines.append("        return x")
    lines.append("let net = Deep()")
    return "\n".join(lines) + "\n"


def growth_table() -> str:
    rows = ["| layers | tlc check in process (ms) | per layer (ms) |", "|---:|---:|---:|"]
    for layers in (10, 100, 1000):
        text = generated(layers)
        path = ROOT / "build" / f"deep_{layers}.tl"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        ms = median_ms(lambda p=path: check_file(p), 5 if layers == 1000 else 20)
        rows.append(f"| {layers} | {ms:.1f} | {ms / layers:.3f} |")
    return "\n".join(rows)


PARSE_BLOCK = (
    "model Net{i}:\n"
    "    layer fc = Linear(784, 10)\n"
    "    fn forward(self, x: Tensor[B, 784]) -> Tensor:\n"
    "        return x |> self.fc |> relu |> dropout(0.1)\n"
    "let net{i} = Net{i}()\n"
    "let y{i} = net{i}(x[:, 0] * 2 + 1e-4) ** 2\n"
    "train net{i} on data:\n"
    "    epochs = 10\n"
    "    optimizer = Adam(lr=0.001)\n"
    "    checkpoint every 5 epochs\n"
)


def parse_table() -> str:
    from tensorloom.frontend.parser import parse_text

    rows = ["| lines | parse, CPU (ms, median of 5) | per 1,000 lines (ms) |", "|---:|---:|---:|"]
    for blocks in (100, 1000):
        text = "".join(PARSE_BLOCK.format(i=i) for i in range(blocks))
        times = []
        for _ in range(5):
            start = time.process_time()
            parse_text(text, "bench.tl", DiagnosticSink())
            times.append((time.process_time() - start) * 1000)
        ms = statistics.median(times)
        lines = text.count("\n")
        rows.append(f"| {lines:,} | {ms:.0f} | {ms / lines * 1000:.0f} |")
    return "\n".join(rows)


def main() -> None:
    assert compile_text(generated(3), "g.tl", until="irgen").ok
    print(shape_inference_table())
    print()
    print(growth_table())
    print()
    print(parse_table())


if __name__ == "__main__":
    main()
