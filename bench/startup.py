"""Whole-process start-up of `tlc`: a cold `tlc check`, a cached one, and their floors.

    python bench/startup.py [--runs 20] [--orig-tlc /tmp/tl-orig/bin/tlc]

Runs each command `--runs` times, round-robin (one run of each command, then
the next round), so that a change in the machine's load affects every row
alike, and prints a markdown table of the minimum and median wall time, and of
the CPU time (user + system), which a loaded machine inflates less. The
program is the README's transformer (transformer.nml + train_transformer.tl,
from bench/compile_speed.py), checked in a temporary folder with a temporary
`$TENSORLOOM_CACHE_DIR`:

- `tlc check --no-cache`: the full check, every run (what a changed program costs);
  and the same with `TENSORLOOM_NO_DATACLASS_CACHE=1` (every dataclass's methods
  compiled anew, as before tools/dataclass_code.py);
- `tlc check`: a cache hit (tools/check_cache.py), after one untimed run filled it;
- `tlc compile --emit nml`: a cache hit too (the same cache, per stage);
- the floors: `python -c pass` and `python -S -c pass` (the interpreter, with and
  without site-packages' .pth hooks), `tlc --version` (click and the CLI), and
  the xDSL modules a check imports (builtin, passes, the pattern rewriter);
- the largest import of a cold check: xDSL with the nml dialect;
- with `--before-tlc`, another tree's cold `tlc check` (a change's before and
  after, measured in one run);
- with `--orig-tlc`, the original TensorLoom 0.1.1's `tlc check` of the same
  program (`pip install tensorloom==0.1.1` in a separate venv).

The load average before and after is printed, since a loaded machine inflates
every row.

`--scripts DIR` instead times emitted training scripts as whole processes, on the
GPU machine (bench/RESULTS.md, issue 16): DIR holds `mnist.py`, `digits_cnn.py`
(emitted by `tlc compile`) and `digits_mlp.py` (bench/handwritten/, examples/mnist.tl
written by hand). Rows: the floor (`import torch`, CUDA initialised, the digits loaded),
the hand-written script (10 epochs, 1 epoch), and each emitted script with its defaults,
`--epochs 1` and `--max-steps 1` (start-up to the first step, as a whole process), each
row's first output line (the compile decision) and last (the final epoch) kept:

    python bench/startup.py --scripts .devrun/emission --runs 2 --out results.md
    python bench/startup.py --scripts DIR --runs 1 --only floor --only "10 epochs" \
        --only "mnist.py, defaults"     # some rows only
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile_speed import README_TRAIN_TRANSFORMER, README_TRANSFORMER_NML

XDSL = "import xdsl.dialects.builtin, xdsl.passes, xdsl.pattern_rewriter"


def tlc() -> str:
    return str(Path(sys.executable).with_name("tlc"))


def commands(orig_tlc: Path | None, before_tlc: Path | None = None) -> dict[str, list[str]]:
    rows = {
        "`python -c pass`": [sys.executable, "-c", "pass"],
        "`python -S -c pass`": [sys.executable, "-S", "-c", "pass"],
        "`tlc --version`": [tlc(), "--version"],
        "`python -c 'import xdsl...'` (the xDSL a check uses)": [sys.executable, "-c", XDSL],
        "`python -c 'import tensorloom.dialects.nml'` (xDSL + nml)":
            [sys.executable, "-c", "import tensorloom.dialects.nml"],
        "`tlc check train_transformer.tl` (cache hit)": [tlc(), "check", "train_transformer.tl"],
        "`tlc check --no-cache train_transformer.tl`":
            [tlc(), "check", "--no-cache", "train_transformer.tl"],
        "`tlc check --no-cache ...`, dataclasses compiled anew (no tools/dataclass_code.py)":
            ["env", "TENSORLOOM_NO_DATACLASS_CACHE=1", tlc(), "check", "--no-cache",
             "train_transformer.tl"],
        "`tlc compile --emit nml train_transformer.tl` (cache hit)":
            [tlc(), "compile", "--emit", "nml", "train_transformer.tl"],
    }  # fmt: skip
    if before_tlc is not None:  # another tree's `tlc`: a change's before and after, one run
        rows["before: `tlc check --no-cache train_transformer.tl`"] = [
            str(before_tlc), "check", "--no-cache", "train_transformer.tl"]  # fmt: skip
    if orig_tlc is not None:
        rows["original 0.1.1 `tlc check train_transformer.tl`"] = [
            str(orig_tlc), "check", "train_transformer.tl"]  # fmt: skip
    return rows


CPU: dict[str, list[float]] = {}
"""Each command's CPU time per run (user + system, ms): less moved by the machine's load."""


def run_once(command: list[str], folder: Path, env: dict[str, str] | None = None) -> float:
    return _run_timed(command, folder, env)[0]


def _run_timed(
    command: list[str], folder: Path, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """Wall and CPU milliseconds (user + system, of the process and its children) of one run."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr.decode()}")
    cpu = (now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime) * 1000
    return elapsed, cpu


def measure(rows: dict[str, list[str]], runs: int, folder: Path) -> dict[str, list[float]]:
    # Untimed: fills the cache and the OS's file cache, and writes bytecode even
    # under PYTHONDONTWRITEBYTECODE, else every timed run recompiles edited modules.
    writes_bytecode = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for command in rows.values():
        run_once(command, folder, writes_bytecode)
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(runs):
        for name, command in rows.items():
            wall, cpu = _run_timed(command, folder)
            samples[name].append(wall)
            CPU.setdefault(name, []).append(cpu)
    return samples


def table(samples: dict[str, list[float]]) -> str:
    lines = [
        "| command | min (ms) | median (ms) | CPU min (ms) | CPU median (ms) |",
        "|---|---|---|---|---|",
    ]
    for name, times in samples.items():
        cpu = CPU.get(name, [float("nan")])
        lines.append(
            f"| {name} | {min(times):.0f} | {statistics.median(times):.0f} "
            f"| {min(cpu):.0f} | {statistics.median(cpu):.0f} |"
        )
    return "\n".join(lines)


FLOOR = (
    "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize(); "
    "from sklearn.datasets import load_digits; load_digits()"
)


OPTIMIZER = "; torch.optim.Adam([torch.zeros(1, requires_grad=True)])"


def script_commands(folder: Path) -> dict[str, list[str]]:
    py = sys.executable
    rows = {"floor: import torch, CUDA init, load digits": [py, "-c", FLOOR]}
    # Constructing any torch.optim optimizer imports torch._dynamo (torch/_compile.py's
    # _disable_dynamo): a cost every training script pays, hand-written ones too.
    rows["floor + an optimizer (imports torch._dynamo)"] = [py, "-c", FLOOR + OPTIMIZER]
    hand = str(folder / "digits_mlp.py")
    rows["hand-written digits MLP, 10 epochs"] = [py, hand]
    rows["hand-written digits MLP, 1 epoch"] = [py, hand, "--epochs", "1"]
    for name in ("mnist", "digits_cnn"):
        script = str(folder / f"{name}.py")
        rows[f"emitted {name}.py, defaults"] = [py, script]
        rows[f"emitted {name}.py --epochs 1"] = [py, script, "--epochs", "1"]
        rows[f"emitted {name}.py --max-steps 1"] = [py, script, "--max-steps", "1"]
    return rows


def run_script(command: list[str], folder: Path) -> tuple[float, str, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()] or ["(no output)"]
    if done.returncode != 0:
        lines = [f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"]
    return elapsed, lines[0], lines[-1]


def measure_scripts(folder: Path, runs: int, only: list[str] | None = None) -> str:
    rows = {name: command for name, command in script_commands(folder).items()
            if not only or any(word in name for word in only)}  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in rows}
    said: dict[str, tuple[str, str]] = {}
    for _ in range(runs):  # round-robin; the first round also fills the compile caches
        for name, command in rows.items():
            elapsed, first, last = run_script(command, folder)
            samples[name].append(elapsed)
            said[name] = (first, last)
    lines = ["| run | first round (s) | min (s) | median (s) | first line | last line |"]
    lines.append("|---|---|---|---|---|---|")
    for name, times in samples.items():
        first, last = said[name]
        lines.append(
            f"| {name} | {times[0]:.1f} | {min(times):.1f} "
            f"| {statistics.median(times):.1f} | {first} | {last} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Whole-process start-up of `tlc`.")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--orig-tlc", type=Path, default=None)
    parser.add_argument("--before-tlc", type=Path, default=None, help="another tree's tlc")
    parser.add_argument("--scripts", type=Path, default=None, help="time emitted scripts")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="with --scripts: only the rows whose name contains this",
    )
    args = parser.parse_args()
    if args.scripts is not None:
        text = measure_scripts(args.scripts.resolve(), args.runs, args.only)
        print(text)
        if args.out is not None:
            args.out.write_text(text + "\n")
        return
    orig = args.orig_tlc if args.orig_tlc is not None and args.orig_tlc.is_file() else None
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        (folder / "transformer.nml").write_text(README_TRANSFORMER_NML)
        (folder / "train_transformer.tl").write_text(README_TRAIN_TRANSFORMER)
        os.environ["TENSORLOOM_CACHE_DIR"] = str(folder / "cache")
        before = os.getloadavg()[0]
        samples = measure(commands(orig, args.before_tlc), args.runs, folder)
        after = os.getloadavg()[0]
    print(f"{args.runs} runs each, round-robin; load average {before:.1f} before, "
          f"{after:.1f} after; {os.cpu_count()} CPUs\n")  # fmt: skip
    print(table(samples))


if __name__ == "__main__":
    main()
