"""Cold `tlc check` (or `tlc compile`) of the examples by two trees of TensorLoom, interleaved.

    python bench/before_after.py --before /tmp/tl-before [--runs 9]
    python bench/before_after.py --before main --after HEAD --command compile

`--before` and `--after` are each a directory holding a TensorLoom tree or a git revision
of this repository (extracted with `git archive` into a temporary directory); `--after`
defaults to this tree. For each example both trees have, runs `python -m
tensorloom.tools.tlc check --no-cache FILE` (or `compile --no-cache FILE`, the script on
stdout) with PYTHONPATH set to each tree in turn (before, after, before, after, ...): the
compiler itself, never a cached result, each tree with a cache directory of its own for
the compiled dataclass code (tools/dataclass_code.py), filled by one untimed run first.
It prints the median CPU time (user + system of the child process, which a loaded
machine disturbs far less than wall time) and the median wall time of each.

Name revisions for both sides: a working tree against an extracted revision is not a
fair pair (on the 2-core machine, branch `archgraph`'s working tree against bb39a69
extracted measured 0.71 of the CPU; the same code extracted as a revision, 0.99: the
difference was the folders, not the code).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tree(spec: str, scratch: Path) -> Path:
    """The tree `spec` names: a directory as it is, else a git revision extracted to `scratch`."""
    if Path(spec).is_dir():
        return Path(spec).resolve()
    target = scratch / spec.replace("/", "_")
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", spec], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def timed(root: Path, example: Path, command: str, cache: Path) -> tuple[float, float, int]:
    env = dict(os.environ, PYTHONPATH=str(root), TENSORLOOM_CACHE_DIR=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tensorloom.tools.tlc", command, "--no-cache", example.name],
        cwd=example.parent, env=env, capture_output=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu * 1000, wall * 1000, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", required=True, help="a directory or a git revision")
    parser.add_argument("--after", default=str(ROOT), help="a directory or a git revision")
    parser.add_argument("--command", choices=("check", "compile"), default="check")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl-before-after-") as scratch:
        trees = {key: tree(spec, Path(scratch)) for key, spec in
                 (("before", args.before), ("after", args.after))}  # fmt: skip
        caches = {k: Path(scratch) / f"cache-{k}" for k in trees}
        compare(trees, caches, args.command, args.runs)


def compare(trees: dict[str, Path], caches: dict[str, Path], command: str, runs: int) -> None:
    names = sorted(
        p.name
        for p in (trees["after"] / "examples").glob("*.tl")
        if (trees["before"] / "examples" / p.name).exists()
    )
    print(f"`tlc {command} --no-cache`, {runs} runs each, interleaved")
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    head = ["example", "before CPU (ms)", "after CPU (ms)", "after/before", "before wall",
            "after wall"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|---|---:|---:|---:|---:|---:|")
    totals = [0.0, 0.0]
    for name in names:
        for key, root in trees.items():  # fills each tree's dataclass-code cache, untimed
            timed(root, root / "examples" / name, command, caches[key])
        samples: dict[str, list[tuple[float, float, int]]] = {"before": [], "after": []}
        for _ in range(runs):
            for key, root in trees.items():
                samples[key].append(timed(root, root / "examples" / name, command, caches[key]))
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
