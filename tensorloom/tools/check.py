"""`tlc check FILE`: every static check, then each model's shape flow.

    $ tlc check mnist.tl
    net: Classifier  input [B, 64]
      fc1   Linear(64, 256)   [B, 256]   16,640
      -     relu              [B, 256]        0
      fc2   Linear(256, 10)   [B, 10]     2,570
      total parameters: 19,210

Exit status 0 when the file has no errors (warnings are printed and allowed),
1 otherwise. Every error in the file is reported, not only the first: the check
passes (`pipeline.CHECK_PASSES`) each leave valid IR, so all of them run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tensorloom.recursion import deep
from tensorloom.tools import check_cache
from tensorloom.tools.check_cache import Replay
from tensorloom.tools.guard import sink_status

# A cache hit replays the output without the compiler: xDSL and the passes load
# only when a file is really checked.
if TYPE_CHECKING:
    from tensorloom.catalogue.datasets import DatasetInfo
    from tensorloom.passes.shape_inference import ModelFlow
    from tensorloom.pipeline import Compilation


def check_file(
    path: Path, bindings: Mapping[str, int] | None = None
) -> tuple[Compilation, list[ModelFlow]]:
    """Run the front end and every check pass on `path`; the shape flows if it is clean.

    `bindings` (`-D T=2048`) fix symbolic dims for shape inference; they travel in
    the IR as the module's `tl.dims` attribute."""
    from tensorloom.passes.shape_inference import set_dim_bindings
    from tensorloom.pipeline import compile_file

    result = compile_file(path, until="irgen")
    if result.module is not None and bindings:
        set_dim_bindings(result.module, bindings)
    result = run_checks(result)
    return result, shape_flows(result)


def check_text(text: str, path: str) -> Compilation:
    """As `check_file` without the flows, for an editor's buffer (imports are read from disk).

    `tlc lsp` runs this on every edit; `shape_flows(result)` gives the flows on demand.
    """
    from tensorloom.pipeline import compile_text

    return run_checks(compile_text(text, path, until="irgen"))


def run_checks(result: Compilation) -> Compilation:
    """Every check pass, on IR fresh from irgen; the module keeps the inferred shapes."""
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.pipeline import CHECK_PASSES, make_context, run_passes

    if result.module is None or result.sink.has_errors:
        return result
    with reporting(result.sink):
        run_passes(make_context(), result.module, CHECK_PASSES, result.path, verify_each=False)
    return result


@deep
def shape_flows(result: Compilation) -> list[ModelFlow]:
    """Each instantiated model's shape flow, for a module that checked clean: read
    from the IR, where the `shape-inference` pass recorded it (`tl.flows`)."""
    from tensorloom.passes.shape_inference import flows_in

    if result.module is None or result.sink.has_errors:
        return []
    return flows_in(result.module)


def run_check(path: Path, fmt: str = "text", out: TextIO | None = None, *,
              use_cache: bool = False, looked_up: bool = False,
              bindings: Mapping[str, int] | None = None) -> int:  # fmt: skip
    """The `tlc check` command: print diagnostics and flows; the exit status.

    With `use_cache`, an unchanged program's output is replayed from
    tools/check_cache.py, and a fresh result is stored there. `looked_up`: the
    caller (tools/launcher.py) has already asked the cache and missed.
    """
    name, command = str(path), f"check --format {fmt}"
    command += "".join(f" -D {k}={v}" for k, v in sorted((bindings or {}).items()))
    replay = check_cache.lookup(name, command) if use_cache and not looked_up else None
    if replay is None:
        result, flows = check_file(path, bindings)
        replay = render_check(result, flows, fmt)
        if use_cache:
            store_result(name, command, result, replay)
    sys.stderr.write(replay.stderr)
    (out if out is not None else sys.stdout).write(replay.stdout)
    return replay.status


@deep
def render_check(result: Compilation, flows: list[ModelFlow], fmt: str) -> Replay:
    """What `tlc check` prints: JSON on stdout, or diagnostics on stderr and flows on stdout."""
    from tensorloom.diagnostics import render_text

    status = sink_status(result.sink)
    if fmt == "json":
        return Replay(json.dumps(_json(result, flows), indent=2) + "\n", "", status)
    if fmt in CI_FORMATS:
        return Replay(render_ci(result, fmt), "", status)
    color = check_cache.use_color(fmt)
    diagnostics = render_text.render_all(result.sink.sorted(), result.sources, color=color)
    return Replay(_flows_text(result, flows), diagnostics, status)


CI_FORMATS = ("github", "sarif")  # annotations for CI, on stdout (diagnostics/render_ci.py)


def render_ci(result: Compilation, fmt: str) -> str:
    """GitHub Actions' `::error file=...,line=...::` lines, or one SARIF 2.1.0 log."""
    from tensorloom import __version__
    from tensorloom.diagnostics import render_ci

    diagnostics = result.sink.sorted()
    if fmt == "github":
        return render_ci.render_github(diagnostics)
    return render_ci.render_sarif(diagnostics, __version__)


def store_result(name: str, command: str, result: Compilation, replay: Replay) -> None:
    """Cache the replay, keyed on the text of every file the compiler parsed.

    A program that reads a data file at check time is not cached: the file can change."""
    if _reads_data_files(result):
        return
    paths = [name] if result.program is None else [u.path for u in result.program.units()]
    texts = {p: source.text for p in paths if (source := result.sources.get(p)) is not None}
    if len(texts) == len(paths):
        check_cache.store(name, command, texts, replay, (d.code for d in result.sink))


def _reads_data_files(result: Compilation) -> bool:
    from tensorloom.catalogue.datasets import LM_SOURCES, is_file_source
    from tensorloom.dialects import train

    if result.module is None:
        return False
    sources = [
        op.source.data
        for op in result.module.walk()
        if isinstance(op, train.DatasetOp) and op.source is not None
    ]
    return any(is_file_source(s) or s in LM_SOURCES for s in sources)


def _json(result: Compilation, flows: list[ModelFlow]) -> dict[str, Any]:
    from tensorloom.diagnostics import render_json

    return {
        "ok": result.ok,
        "diagnostics": [render_json.to_dict(d) for d in result.sink.sorted()],
        "models": [flow_dict(flow) for flow in flows],
        "data": [
            {"name": n, "samples": a, "targets": t, "from": o}
            for n, a, t, o in dataset_rows(result)
        ],
        "carried": [{"name": n, "type": t, "start": s} for n, t, s in carried_rows(result)],
    }


def flow_dict(flow: ModelFlow) -> dict[str, Any]:
    return {
        "name": flow.name,
        "model": flow.model,
        "inputs": flow.inputs,
        "output": flow.output,
        "params": flow.params,
        "layers": [
            {"name": s.name, "op": s.op, "shape": s.shape, "params": s.params} for s in flow.steps
        ],
    }


def _flows_text(result: Compilation, flows: list[ModelFlow]) -> str:
    if not result.ok:
        return ""
    text = format_flows(flows) if flows else f"{result.path}: ok (no models)\n"
    for name, samples, targets, origin in dataset_rows(result):
        text += f"data {name}: {data_summary(samples, targets)}; from {origin}\n"
    for name, carried, start in carried_rows(result):
        text += f"carry {name}: {carried}, from `{start}` each epoch, detached between batches\n"
    return text


def carried_rows(result: Compilation) -> list[tuple[str, str, str]]:
    """Each value a train block carries between batches, the type check-train gave it, and
    what each epoch starts it from (`none`, or a learned `net.h0`)."""
    from tensorloom.dialects import train
    from tensorloom.passes.shape_inference import format_type
    from tensorloom.passes.support.objectives import initial_paths

    if result.module is None:
        return []
    rows: list[tuple[str, str, str]] = []
    for op in result.module.walk():
        if isinstance(op, train.CarryOp) and op.carried is not None:
            paths = initial_paths(op.init)
            start = "none" if paths is None else ", ".join(paths)
            if paths is not None and len(paths) > 1:
                start = f"({start})"
            rows.append((op.var.data, format_type(op.carried), start))
    return rows


def dataset_rows(result: Compilation) -> list[tuple[str, str, str, str]]:
    """Each dataset's shapes, and where they came from: (name, samples, targets, origin)."""
    from tensorloom.catalogue.data_files import DataCheck
    from tensorloom.catalogue.shapes import format_shape
    from tensorloom.dialects import train
    from tensorloom.passes.support.dataset_files import dataset_check

    if result.module is None:
        return []
    rows: list[tuple[str, str, str, str]] = []
    for op in result.module.walk():
        if not isinstance(op, train.DatasetOp):
            continue
        checked = dataset_check(op)
        if not isinstance(checked, DataCheck):
            continue
        info = checked.info
        if info.fields is not None and (info.sample_shape is None or len(info.fields) > 2):
            rows.append((op.sym_name.data, _fields_text(info), "", checked.origin))
            continue
        samples = "[*]" if info.sample_shape is None else format_shape(("B", *info.sample_shape))
        targets = "unknown"
        if info.target_shape is not None:
            kind = "floats" if info.target_dtype == "f32" else "class labels"
            classes = f", {info.num_classes} classes" if info.num_classes is not None else ""
            targets = f"{format_shape(('B', *info.target_shape))} {kind}{classes}"
        rows.append((op.sym_name.data, samples, targets, checked.origin))
    return rows


def _fields_text(info: DatasetInfo) -> str:
    """`image [B, 1, 8, 8], text [B, 4] int64, ...`: a dataset's named fields."""
    from tensorloom.catalogue.shapes import format_shape

    return ", ".join(
        f"{f.name} {'[*]' if f.shape is None else format_shape(('B', *f.shape))}"
        f"{' int64' if f.dtype == 'i64' and f.shape is not None else ''}"
        for f in info.fields or ()
    )


def data_summary(samples: str, targets: str) -> str:
    """`samples [B, 64], targets [B] class labels`, or `fields image [B, 1, 8, 8], ...`."""
    return f"fields {samples}" if not targets else f"samples {samples}, targets {targets}"


def format_flows(flows: list[ModelFlow]) -> str:
    """Each model's flow as an aligned table, one line per layer or op."""
    return "".join(_format_flow(flow) for flow in flows)


def _format_flow(flow: ModelFlow) -> str:
    title = flow.model if flow.name == flow.model else f"{flow.name}: {flow.model}"
    lines = [f"{title}  input {', '.join(flow.inputs) or '-'}"]
    rows = [
        (s.name or "-", s.op.removeprefix("nml."), s.shape, f"{s.params:,}") for s in flow.steps
    ]
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(4)]
    for name, op, shape, params in rows:
        cells = f"{name:<{widths[0]}}  {op:<{widths[1]}}  {shape:<{widths[2]}}"
        lines.append(f"  {cells}  {params:>{widths[3]}}")
    lines.append(f"  output {flow.output}, total parameters: {flow.params:,}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m tensorloom.tools.check FILE [--format json]` (what `tlc check` runs)."""
    import argparse

    parser = argparse.ArgumentParser(prog="tlc check")
    parser.add_argument("file", type=Path)
    parser.add_argument("--format", choices=("text", "json", *CI_FORMATS), default="text")
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args(argv)
    return run_check(args.file, args.format, use_cache=not args.no_cache)


if __name__ == "__main__":
    sys.exit(main())
