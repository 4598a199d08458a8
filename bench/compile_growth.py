"""Compile time against program size: N top-level `let`s, an N-element list, N-stage pipes.

    python bench/compile_growth.py                       # sizes 1,000, 10,000, 100,000
    python bench/compile_growth.py --sizes 1000,4000     # quicker

Issue 15 measured 100,000 top-level `let`s at 296 s and a 100,000-element list at
169 s: irgen looked each statement up in a list of the ops so far (quadratic). This
compiles each generated program in process, through every stage to the Python
text (`tlc compile`), and prints the time and the time per element: a flat
per-element column is linear growth. A chain of 10,000 pipe stages or `+` terms
also used to be a RecursionError; here it has to compile.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tensorloom.pipeline import compile_text, python_source  # noqa: E402


def lets(n: int) -> str:
    return "".join(f"let v{i} = {i}\n" for i in range(n)) + "print(v0)\n"


def long_list(n: int) -> str:
    return "let xs = [" + ", ".join(str(i) for i in range(n)) + "]\nprint(len(xs))\n"


def pipe(n: int) -> str:
    stages = " |> relu" * n
    return (
        "model Net:\n    layer fc = Linear(8, 8)\n"
        f"    fn forward(self, x: Tensor[B, 8]) -> Tensor:\n        return x |> self.fc{stages}\n"
    )


def terms(n: int) -> str:
    return "let x = " + " + ".join(["1"] * n) + "\nprint(x)\n"


PROGRAMS: dict[str, Callable[[int], str]] = {
    "top-level `let`s": lets,
    "list elements": long_list,
    "pipe stages": pipe,
    "`+` terms": terms,
}


def compile_seconds(text: str) -> float:
    start = time.perf_counter()
    result = compile_text(text, "growth.tl")
    if not result.ok or result.module is None:
        raise SystemExit(f"the generated program did not compile: {result.sink.errors()[:1]}")
    python_source(result.module, "growth.tl")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--only", default=None, help="one of: lets, list, pipe, terms")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    compile_seconds(lets(10))  # warm: imports and first-use costs are not growth
    print("| program | N | compile (s) | per element (µs) |")
    print("|---|---:|---:|---:|")
    for label, make in PROGRAMS.items():
        if args.only and args.only not in make.__name__:
            continue
        for n in sizes:
            seconds = compile_seconds(make(n))
            print(f"| {label} | {n:,} | {seconds:.2f} | {seconds / n * 1e6:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
