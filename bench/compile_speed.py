"""Compiler speed on the CPU: whole-process `tlc`, time per pass, growth with size, imports.

    python bench/compile_speed.py [--runs 7] [--orig-tlc /tmp/tl-orig/bin/tlc] [--json out.json]

Prints markdown tables:

1. whole-process `tlc check` and `tlc compile` per example (median wall time of
   `--runs` subprocess runs), with the interpreter's own start-up and the
   compiler's import as floors;
2. the README's transformer program (transformer.nml + train_transformer.tl)
   checked by this compiler and by the original TensorLoom 0.1.1
   (`pip install tensorloom==0.1.1` in a separate venv; `--orig-tlc` names its `tlc`);
3. in-process time per pass (parse, imports, irgen, each registered pass, printer):
   the first, cold run and the median of the warm ones;
4. growth with program size: models of 10, 100 and 1,000 layers and files of
   100, 1,000 and 10,000 lines, with time per layer and per line (flat = linear);
5. what `python -X importtime` says dominates the import of `tlc`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PROGRAMS = ROOT / "bench" / "programs"

README_TRANSFORMER_NML = """\
@model TransformerBlock:
    @config:
        d_model = 512
        n_heads = 8
        dropout_rate = 0.1

    @layers:
        attention = MultiHeadAttention(d_model, n_heads)
        norm1     = LayerNorm(d_model)
        norm2     = LayerNorm(d_model)
        ff        = Linear(d_model, d_model)
        dropout   = Dropout(dropout_rate)

    @forward(x):
        let residual = x
        x = norm1(x)
        x = residual + dropout(attention(x))
        let residual2 = x
        x = norm2(x)
        x = residual2 + dropout(ff(x))
        return x
"""
README_TRAIN_TRANSFORMER = """\
// train_transformer.tl
import transformer.nml as CustomTransformer

// Override config parameters defined in transformer.nml
let net = CustomTransformer(d_model=256, n_heads=4)
let data = load_dataset()

train net on data:
    epochs = 15
    optimizer = Adam(lr=0.0001)
    loss = CrossEntropy
    precision = fp16
"""

Row = list[str]


# ---- helpers ---------------------------------------------------------------------------


def median_ms(samples: list[float]) -> float:
    return 1000.0 * statistics.median(samples)


def med_min(samples: list[float]) -> str:
    """`median (min)` in ms: the minimum is what a quiet machine gives."""
    return f"{median_ms(samples):.1f} ({1000 * min(samples):.1f})"


def table(header: list[str], rows: list[Row]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


ERRORS: list[str] = []  # the first error line of each command that failed, for a footnote


def wall_times(cmd: list[str], runs: int, cwd: Path | None = None) -> tuple[list[float], int]:
    """Wall seconds of `runs` runs of `cmd` (after one untimed run), and its exit code."""
    first = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    code = first.returncode
    if code != 0:
        lines = (first.stderr or first.stdout).strip().splitlines() or ["(no output)"]
        ERRORS.append(f"`{' '.join(Path(c).name for c in cmd[:2])} ...` exit {code}: {lines[0]}")
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
    return samples, code


def our_tlc() -> list[str]:
    beside = Path(sys.executable).with_name("tlc")
    return [str(beside)] if beside.is_file() else [shutil.which("tlc") or "tlc"]


def write_readme_programs(folder: Path) -> Path:
    (folder / "transformer.nml").write_text(README_TRANSFORMER_NML)
    path = folder / "train_transformer.tl"
    path.write_text(README_TRAIN_TRANSFORMER)
    return path


# ---- 1 and 2: whole process --------------------------------------------------------------


def example_files(readme: Path) -> list[Path]:
    found = sorted(EXAMPLES.rglob("*.tl")) + sorted(PROGRAMS.glob("*.tl"))
    return [readme, *found]


def display(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return f"README {path.name}"


def whole_process_rows(files: list[Path], runs: int, work: Path) -> list[Row]:
    """Each program checked and compiled afresh (`--no-cache`), and checked again unchanged."""
    tlc = our_tlc()
    rows: list[Row] = []
    for path in files:
        check, check_code = wall_times([*tlc, "check", "--no-cache", str(path)], runs)
        cached, _ = wall_times([*tlc, "check", str(path)], runs)
        out = work / f"{path.stem}.py"
        compile_cmd = [*tlc, "compile", "--no-cache", str(path), "-o", str(out)]
        comp, comp_code = wall_times(compile_cmd, runs)
        rows.append([display(path), med_min(check), med_min(cached), str(check_code),
                     med_min(comp), str(comp_code)])  # fmt: skip
    return rows


def floor_rows(runs: int) -> list[Row]:
    """What any `tlc` run pays before it reads a file."""
    cases = {
        "`python -c pass` (interpreter start-up)": [sys.executable, "-c", "pass"],
        "`import tensorloom.tools.tlc`": [sys.executable, "-c", "import tensorloom.tools.tlc"],
        "`tlc --version`": [*our_tlc(), "--version"],
    }
    return [[name, med_min(wall_times(cmd, runs)[0])] for name, cmd in cases.items()]


def original_rows(readme: Path, runs: int, orig_tlc: Path | None) -> list[Row]:
    tlc = our_tlc()
    cold, our_code = wall_times([*tlc, "check", "--no-cache", readme.name], runs, cwd=readme.parent)
    cached, _ = wall_times([*tlc, "check", readme.name], runs, cwd=readme.parent)
    rows = [
        ["this compiler (0.2.0), changed program (`--no-cache`)", med_min(cold), str(our_code)],
        ["this compiler (0.2.0), unchanged program (cache hit)", med_min(cached), str(our_code)],
    ]
    if orig_tlc is None or not orig_tlc.is_file():
        rows.append(["original TensorLoom 0.1.1", "not installed", "-"])
        return rows
    orig, orig_code = wall_times([str(orig_tlc), "check", readme.name], runs, cwd=readme.parent)
    rows.append(["original TensorLoom 0.1.1", med_min(orig), str(orig_code)])
    return rows


# ---- 3: per pass, in process --------------------------------------------------------------


def timed(times: dict[str, float], name: str, fn: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    value = fn()
    times[name] = times.get(name, 0.0) + time.perf_counter() - start
    return value


def pass_times_once(path: Path) -> dict[str, float]:
    """Seconds per step of one full compilation of `path`, as `tlc compile` runs it."""
    from tensorloom.diagnostics import DiagnosticSink
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.source import SourceMap

    times: dict[str, float] = {}
    sources, sink = SourceMap(), DiagnosticSink()
    with reporting(sink):
        _run_stages(path, sources, sink, times)
    return times


def _run_stages(path: Path, sources: Any, sink: Any, times: dict[str, float]) -> None:
    from tensorloom.frontend.imports import load_program
    from tensorloom.frontend.irgen import generate
    from tensorloom.frontend.parser import parse_file

    root = timed(times, "parse", lambda: parse_file(path, sources, sink))
    if root is None or sink.has_errors:
        return

    def parse_import(p: Path) -> Any:
        return parse_file(p, sources, sink)

    program = timed(times, "imports", lambda: load_program(root, parse_import))
    module = timed(times, "irgen", lambda: generate(program))
    if sink.has_errors:
        return
    if _run_passes(module, sink, times):
        _print_python(module, times)


def _run_passes(module: Any, sink: Any, times: dict[str, float]) -> bool:
    from tensorloom.passes import get_all_passes
    from tensorloom.pipeline import make_context, stages_until

    ctx = timed(times, "context", make_context)
    registered = get_all_passes()
    for stage in stages_until("torch"):
        for name in (n for n in stage.passes if n in registered):
            pass_class = timed(times, f"{name} (load)", registered[name])
            timed(times, name, lambda p=pass_class: p().apply(ctx, module))
            timed(times, "verify (all)", module.verify)
        if sink.has_errors:
            return False
    return True


def _print_python(module: Any, times: dict[str, float]) -> None:
    from tensorloom.pipeline import python_source

    try:
        timed(times, "python printer", lambda: python_source(module))
    except Exception as error:  # the printer may not handle every op yet: say so, keep going
        times["python printer (failed)"] = 0.0
        print(f"note: the python printer failed: {error!r}", file=sys.stderr)


def pass_rows(path: Path, runs: int) -> list[Row]:
    cold = pass_times_once(path)
    warm = [pass_times_once(path) for _ in range(runs)]
    rows: list[Row] = []
    for name, cold_s in cold.items():
        if name.endswith("(load)") and cold_s < 1e-4:
            continue
        warm_ms = median_ms([w.get(name, 0.0) for w in warm])
        rows.append([name, f"{1000 * cold_s:.2f}", f"{warm_ms:.2f}"])
    total_cold = 1000 * sum(cold.values())
    total_warm = median_ms([sum(w.values()) for w in warm])
    return [*rows, ["**total**", f"{total_cold:.2f}", f"{total_warm:.2f}"]]


# ---- 4: growth with size ------------------------------------------------------------------


def deep_model(layers: int) -> str:
    """One model of `layers` Linear(64, 64) layers applied in turn, trained on synthetic data."""
    decls = "".join(f"    layer l{i} = Linear(64, 64)\n" for i in range(layers))
    body = "".join(f"        x = relu(self.l{i}(x))\n" for i in range(layers))
    return (
        f"model Deep:\n{decls}\n    fn forward(self, x: Tensor[B, 64]) -> Tensor:\n{body}"
        "        return x\n\nlet net = Deep()\nlet data = load_dataset()\n\n"
        "train net on data:\n    epochs = 1\n    optimizer = Adam(lr=0.001)\n"
        "    loss = CrossEntropy\n"
    )


MODEL_TEMPLATE = """\
model M{i}:
    layer fc1 = Linear(32, 64)
    layer fc2 = Linear(64, 32)
    fn forward(self, x: Tensor[B, 32]) -> Tensor:
        let h = x |> self.fc1 |> relu
        return h |> self.fc2

"""


def many_models(lines: int) -> str:
    """About `lines` lines: small models one after another, then one trained."""
    tail = "let net = M0()\nlet data = load_dataset()\n\ntrain net on data:\n    epochs = 1\n"
    tail += "    optimizer = Adam(lr=0.001)\n    loss = MSE\n"
    per_model = MODEL_TEMPLATE.count("\n")
    count = max(1, (lines - tail.count("\n")) // per_model)
    return "".join(MODEL_TEMPLATE.format(i=i) for i in range(count)) + tail


def in_process_check(path: Path) -> tuple[float, bool]:
    from tensorloom.tools.check import check_file

    start = time.perf_counter()
    result, _ = check_file(path)
    return time.perf_counter() - start, result.ok


def scaling_rows(work: Path, runs: int, unit: str, sizes: list[int]) -> list[Row]:
    rows: list[Row] = []
    make = deep_model if unit == "layer" else many_models
    for size in sizes:
        path = work / f"scale_{unit}_{size}.tl"
        path.write_text(make(size))
        actual = size if unit == "layer" else path.read_text().count("\n")
        samples = [in_process_check(path) for _ in range(max(1, runs // 3))]
        best = min(s for s, _ in samples)  # least disturbed by other work on the machine
        rows.append([f"{actual:,} {unit}s", "ok" if samples[0][1] else "errors",
                     f"{1000 * best:.1f}", f"{1e6 * best / actual:.1f}"])  # fmt: skip
    return rows


# ---- 5: imports ---------------------------------------------------------------------------


def import_rows(readme: Path, top: int = 12) -> list[Row]:
    """The top-level imports of a cold `tlc check` by cumulative time (`-X importtime`)."""
    code = (
        "import sys; from tensorloom.tools.launcher import main; "
        f"sys.argv = ['tlc', 'check', '--no-cache', {str(readme)!r}]; main()"
    )
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                          capture_output=True, text=True, check=False)  # fmt: skip
    entries: list[tuple[int, str]] = []
    for line in proc.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2]
        if name.startswith(" ") and not name.startswith("  "):  # depth 0: one leading space
            entries.append((int(parts[1]), name.strip()))
    total = sum(us for us, _ in entries)
    entries.sort(reverse=True)
    rows = [
        [name, f"{us / 1000:.1f}", f"{100 * us / max(total, 1):.0f}%"] for us, name in entries[:top]
    ]
    return [*rows, ["**all imports**", f"{total / 1000:.1f}", "100%"]]


# ---- main ---------------------------------------------------------------------------------


def machine() -> str:
    """Cores, load and versions: figures on a busy machine are pessimistic, so say how busy."""
    import platform

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores, load average {load}; Python {platform.python_version()}; "
            f"tensorloom at {commit or '?'}")  # fmt: skip


def sections(args: argparse.Namespace, work: Path) -> dict[str, str]:
    readme = write_readme_programs(work)
    out: dict[str, str] = {}
    out["floors"] = table(["what", "median (min) ms"], floor_rows(args.runs))
    out["examples"] = table(
        [
            "program",
            "`tlc check --no-cache` median (min) ms",
            "`tlc check`, cache hit",
            "exit",
            "`tlc compile --no-cache -o` median (min) ms",
            "exit",
        ],
        whole_process_rows(example_files(readme), args.runs, work),
    )
    out["original"] = table(
        ["`tlc check` of the README transformer", "median (min) ms", "exit"],
        original_rows(readme, args.runs, args.orig_tlc),
    )
    for path in (readme, PROGRAMS / "transformer_lm.tl"):
        out[f"passes: {display(path)}"] = table(
            ["step", "cold ms", "warm median ms"], pass_rows(path, args.runs)
        )
    header = ["program", "check", "ms (best)", "us per unit"]
    out["layers"] = table(header, scaling_rows(work, args.runs, "layer", [10, 100, 1000]))
    out["lines"] = table(header, scaling_rows(work, args.runs, "line", [100, 1000, 10000]))
    out["imports"] = table(["top-level import", "cumulative ms", "share"], import_rows(readme))
    return out


TITLES = {
    "floors": "Start-up floors (whole process)",
    "examples": "Whole-process `tlc check` and `tlc compile` (median)",
    "original": "This compiler against the original TensorLoom 0.1.1",
    "layers": "Growth with model size (in-process `check_file`)",
    "lines": "Growth with file size (in-process `check_file`)",
    "imports": "What the import of `tlc check` spends its time on (`python -X importtime`)",
    "errors": "Commands that exited non-zero (first line of their output)",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--orig-tlc", type=Path, default=Path("/tmp/tl-orig/bin/tlc"))
    parser.add_argument("--json", type=Path, default=None, help="also write the tables here")
    args = parser.parse_args(argv)
    os.environ.setdefault("TENSORLOOM_NO_DOWNLOAD", "1")
    print(f"Machine: {machine()} at the start\n")
    with tempfile.TemporaryDirectory(prefix="tl-speed-") as tmp:
        out = sections(args, Path(tmp))
    print(f"Machine: {machine()} at the end\n")
    if ERRORS:
        out["errors"] = "\n".join(f"- {line}" for line in dict.fromkeys(ERRORS))
    for key, text in out.items():
        title = TITLES.get(key, f"In-process time per step, {key.removeprefix('passes: ')}")
        print(f"### {title}\n\n{text}\n")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
