"""Run pytest and lit, then print one line: `N passed, N failed` over both.

This is the project's test command (README, `make test`, `.ci/run`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_pytest() -> tuple[int, int]:
    workers = os.environ.get("TL_TEST_WORKERS", "2")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", workers, "tests"]
    out = _run(cmd)
    # pytest's summary, its last line naming a count (`2 failed, 2725 passed, ... in 928s`):
    # a failing test's own output may say "1 error" too
    summary = [line for line in out.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    last = summary[-1] if summary else ""
    passed = _count(r"(\d+) passed", last)
    failed = _count(r"(\d+) failed", last) + _count(r"(\d+) errors?\b", last)
    return passed, failed


def run_lit() -> tuple[int, int]:
    lit = Path(sys.executable).parent / "lit"
    out = _run([str(lit), "-sv", str(ROOT / "tests" / "lit")])
    passed = _count(r"Passed\s*:\s*(\d+)", out) + _count(r"Expectedly Failed\s*:\s*(\d+)", out)
    failed = _count(r"Failed\s*:\s*(\d+)", out) - _count(r"Expectedly Failed\s*:\s*(\d+)", out)
    failed += _count(r"Unresolved\s*:\s*(\d+)", out)
    failed += _count(r"Unexpectedly Passed\s*:\s*(\d+)", out)
    return passed, failed


def _run(cmd: list[str]) -> str:
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True, check=False)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.stdout + proc.stderr


def _count(pattern: str, text: str) -> int:
    matches = re.findall(pattern, text)
    return int(matches[-1]) if matches else 0


def main() -> int:
    py_pass, py_fail = run_pytest()
    lit_pass, lit_fail = run_lit()
    print(f"pytest: {py_pass} passed, {py_fail} failed; lit: {lit_pass} passed, {lit_fail} failed")
    print(f"{py_pass + lit_pass} passed, {py_fail + lit_fail} failed")
    return 0 if py_fail + lit_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
