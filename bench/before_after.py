"""`tlc check` of the examples by two trees of TensorLoom, interleaved in one run.

    python bench/before_after.py --before /tmp/tl-before [--runs 9]

For each example both trees have, runs `python -m tensorloom.tools.tlc check FILE`
with PYTHONPATH set to each tree in turn (before, after, before, after, ...): the
compiler itself, not the `tlc` launcher that replays cached results. It
prints the median CPU time (user + system of the child process, which a loaded
machine disturbs far less than wall time) and the median wall time of each.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(tree: Path, example: Path) -> tuple[float, float, int]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tensorloom.tools.tlc", "check", example.name],
        cwd=example.parent, env=env, capture_output=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu * 1000, wall * 1000, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    names = sorted(
        p.name
        for p in (ROOT / "examples").glob("*.tl")
        if (args.before / "examples" / p.name).exists()
    )
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    head = [
        "example",
        "before CPU (ms)",
        "after CPU (ms)",
        "after/before",
        "before wall",
        "after wall",
    ]
    print("| " + " | ".join(head) + " |")
    print("|---|---:|---:|---:|---:|---:|")
    totals = [0.0, 0.0]
    for name in names:
        samples: dict[str, list[tuple[float, float, int]]] = {"before": [], "after": []}
        for _ in range(args.runs):
            samples["before"].append(timed(args.before, args.before / "examples" / name))
            samples["after"].append(timed(ROOT, ROOT / "examples" / name))
        cpu = {k: statistics.median(s[0] for s in v) for k, v in samples.items()}
        wall = {k: statistics.median(s[1] for s in v) for k, v in samples.items()}
        codes = {k: {s[2] for s in v} for k, v in samples.items()}
        note = "" if codes["before"] == codes["after"] else f" (exit {codes})"
        totals[0] += cpu["before"]
        totals[1] += cpu["after"]
        print(
            f"| {name}{note} | {cpu['before']:.0f} | {cpu['after']:.0f} | "
            f"{cpu['after'] / cpu['before']:.2f} | {wall['before']:.0f} | {wall['after']:.0f} |"
        )
    print(f"| all | {totals[0]:.0f} | {totals[1]:.0f} | {totals[1] / totals[0]:.2f} | | |")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
