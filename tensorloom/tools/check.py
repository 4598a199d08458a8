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
from pathlib import Path
from typing import Any, TextIO

from tensorloom.diagnostics import render_json
from tensorloom.diagnostics.ir import reporting
from tensorloom.passes.shape_inference import ModelFlow, infer_shapes
from tensorloom.pipeline import CHECK_PASSES, Compilation, compile_file, make_context, run_passes
from tensorloom.tools.common import emit_diagnostics


def check_file(path: Path) -> tuple[Compilation, list[ModelFlow]]:
    """Run the front end and every check pass on `path`; the shape flows if it is clean."""
    result = compile_file(path, until="irgen")
    module = result.module
    if module is None or result.sink.has_errors:
        return result, []
    with reporting(result.sink):
        run_passes(make_context(), module, CHECK_PASSES, result.path)
    if result.sink.has_errors:
        return result, []
    return result, infer_shapes(module, write_back=False, quiet=True)


def run_check(path: Path, fmt: str = "text", out: TextIO | None = None) -> int:
    """The `tlc check` command: print diagnostics and flows; the exit status."""
    stream = out if out is not None else sys.stdout
    result, flows = check_file(path)
    diagnostics = result.sink.sorted()
    if fmt == "json":
        stream.write(json.dumps(_json(result, flows), indent=2) + "\n")
        return 0 if result.ok else 1
    if diagnostics:
        emit_diagnostics(result.sink, result.sources)
    if result.ok:
        stream.write(format_flows(flows))
    return 0 if result.ok else 1


def _json(result: Compilation, flows: list[ModelFlow]) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "diagnostics": [render_json.to_dict(d) for d in result.sink.sorted()],
        "models": [flow_dict(flow) for flow in flows],
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
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    return run_check(args.file, args.format)


if __name__ == "__main__":
    sys.exit(main())
