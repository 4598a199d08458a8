"""How long `tlc lsp` takes to re-check a document after one edit, in process (target: 50 ms).

    python bench/lsp_recheck.py [--runs 30]      # prints a markdown table

For each example, the server's own path is timed: `document.analyze` on the
edited text (the whole `tlc check` pipeline: parse, imports, irgen, the check
passes) and the conversion of its diagnostics to LSP's (`server.to_lsp`), after
one untimed check of the original text, as when a file is open and the user
types. The edit alternates between two versions of the text, so no run sees the
text of the run before: the value of `epochs` in a script (5 <-> 6), else a
comment appended to the last line. Wall time (perf_counter) and this process's
CPU time (process_time) are both reported, median and 90th percentile; on a
loaded machine the wall time includes waiting for a core, the CPU time does not.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tensorloom.tools.lsp.document import analyze  # noqa: E402
from tensorloom.tools.lsp.server import to_lsp  # noqa: E402

TARGET_MS = 50.0
EPOCHS = re.compile(r"^(\s+epochs\s*=\s*)(\d+)", re.M)


def edited(text: str, round_: int) -> str:
    """The text after the round's edit: `epochs` set to 5 or 6, else a comment changed."""
    if EPOCHS.search(text):
        return EPOCHS.sub(lambda m: f"{m.group(1)}{5 + round_ % 2}", text, count=1)
    return text.rstrip("\n") + f"  // edit {round_ % 2}\n"


def recheck(path: str, text: str) -> int:
    """What the server does on a change: analyze, then convert each diagnostic."""
    analysis = analyze(path, text)
    uri = Path(path).as_uri()
    return len([to_lsp(d, path, uri) for d in analysis.diagnostics])


def measure(path: Path, runs: int) -> tuple[list[float], list[float], int]:
    """Wall and CPU milliseconds of each re-check, and the diagnostics of the last."""
    text = path.read_text(encoding="utf-8")
    recheck(str(path), text)  # the document is open: the first check is not timed
    walls: list[float] = []
    cpus: list[float] = []
    found = 0
    for round_ in range(runs):
        version = edited(text, round_)
        wall, cpu = time.perf_counter(), time.process_time()
        found = recheck(str(path), version)
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    return walls, cpus, found


def p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    files = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "examples").glob("*.nml"))
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("\n| example | wall median (ms) | wall p90 (ms) | CPU median (ms) | diagnostics |")
    print("|---|---:|---:|---:|---:|")
    worst = 0.0
    for path in files:
        walls, cpus, found = measure(path, args.runs)
        worst = max(worst, statistics.median(walls))
        name = path.relative_to(ROOT)
        print(
            f"| {name} | {statistics.median(walls):.1f} | {p90(walls):.1f} "
            f"| {statistics.median(cpus):.1f} | {found} |"
        )
    verdict = "met" if worst <= TARGET_MS else "not met"
    print(f"\nslowest median: {worst:.1f} ms (target {TARGET_MS:.0f} ms: {verdict})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
