"""`tlc graph` and `tlc plot`: a picture of a model, and of a training run.

    $ tlc graph examples/train_transformer.tl -o model.svg     # or .png, .pdf
    $ tlc graph examples/mnist.tl --format dot                 # Graphviz source on stdout
    $ tlc plot run/metrics.jsonl -o curves.png
    $ tlc plot baseline.jsonl tensorloom.jsonl --x wall_s -o curves.png   # two runs, one picture

`tlc graph` checks the file (errors are reported as `tlc check` reports them,
exit 1), builds the model's dataflow graph (analysis/graph.py, networkx) and
renders it with Graphviz's `dot`; without `dot` it says so and offers
`--format dot`. `tlc plot` reads the JSON lines an emitted script writes with
`--metrics` and draws loss and accuracy per epoch (matplotlib). Both import
their libraries only when they run.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensorloom.tools.guard import EXIT_OK, EXIT_USER_ERROR

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from tensorloom.pipeline import Compilation

PICTURE_FORMATS = ("svg", "png", "pdf")
# What `pip install 'tensorloom[pictures]'` brings; without one, a command says so.
PICTURE_PACKAGES = ("networkx", "matplotlib")
GRAPH_FORMATS = (*PICTURE_FORMATS, "dot")


def _error(message: str, help: str | None = None) -> int:
    sys.stderr.write(f"error: {message}\n")
    if help:
        sys.stderr.write(f"  = help: {help}\n")
    return EXIT_USER_ERROR


def _missing(command: str, error: ModuleNotFoundError) -> int:
    """A user error naming the package `command` needs and the extra that installs it;
    any other missing module is re-raised (a bug, reported as one)."""
    package = (error.name or "").partition(".")[0]
    if package not in PICTURE_PACKAGES:
        raise error
    return _error(f"`{command}` needs `{package}`, which is not installed",
                  "pip install 'tensorloom[pictures]'")  # fmt: skip


def graph_format(output: Path | None, fmt: str | None) -> str | None:
    """The format asked for: `--format`, else the output's suffix, else dot (to stdout)."""
    if fmt is not None:
        return fmt
    if output is None:
        return "dot"
    suffix = output.suffix.lstrip(".").lower()
    return "dot" if suffix == "gv" else suffix if suffix in GRAPH_FORMATS else None


def run_graph(file: Path, output: Path | None, fmt: str | None, model: str | None) -> int:
    """The `tlc graph` command; its exit status."""
    from tensorloom.analysis.profile import compile_for_info
    from tensorloom.tools.common import emit_diagnostics

    chosen = graph_format(output, fmt)
    if chosen is None:
        return _error(
            f"cannot tell the picture format from `{output}`",
            "name the output `.svg`, `.png`, `.pdf` or `.dot`, or pass `--format`",
        )
    result = compile_for_info(file, {})
    emit_diagnostics(result.sink, result.sources)
    if not result.ok or result.module is None:
        return EXIT_USER_ERROR
    try:
        return _draw(result, model, chosen, output)
    except ModuleNotFoundError as error:
        return _missing("tlc graph", error)


def _draw(result: Compilation, model: str | None, fmt: str, output: Path | None) -> int:
    from tensorloom.analysis import graph

    assert result.module is not None
    name = model or _default_model(result)
    if name is None:
        return _error(f"`{result.path}` declares no model to draw")
    try:
        source = graph.to_dot(graph.model_graph(result.module, name))
    except graph.GraphError as problem:
        return _error(str(problem))
    if fmt == "dot":
        return _write(output, source.encode())
    if not graph.dot_available():
        return _error(
            f"drawing a .{fmt} needs Graphviz's `dot` program, which is not installed",
            "install Graphviz (`apt-get install graphviz`, `brew install graphviz`), "
            "or write the Graphviz source with `--format dot`",
        )
    try:
        picture = graph.render(source, fmt)
    except graph.GraphError as problem:
        return _error(str(problem))
    return _write(output, picture)


def _default_model(result: Compilation) -> str | None:
    """The first instance (the first a train loop trains), else the last model the file
    itself declares."""
    from tensorloom.analysis.flows import flows as flows_of

    assert result.module is not None
    flows = flows_of(result.module)
    if flows:
        return str(flows[0].name)
    root = result.root
    models = root.models() if root is not None else []
    return models[-1].name if models else None


def _write(output: Path | None, data: bytes) -> int:
    if output is None:
        sys.stdout.buffer.write(data)
        return EXIT_OK
    try:
        output.write_bytes(data)
    except OSError as problem:
        return _error(f"cannot write `{output}`: {(problem.strerror or str(problem)).lower()}")
    sys.stderr.write(f"wrote {output}\n")
    return EXIT_OK


# ------------------------------------------------------------------ tlc plot


@dataclass
class Curves:
    """The series of a metrics file: the x values (epoch numbers, or another key's values)
    and each metric's values."""

    epochs: list[float] = field(default_factory=list)
    series: dict[str, list[float]] = field(default_factory=dict)
    positions: dict[str, list[float]] = field(default_factory=dict)  # each series' x values
    label: str = ""


LOSS_KEYS = ("train_loss", "val_loss")
ACCURACY_KEYS = ("train_accuracy", "val_accuracy")
EPOCH = "epoch"


def read_metrics(path: Path, x: str = EPOCH) -> Curves | str:
    """The curves of a `--metrics` JSONL file, or what is wrong with it.

    Against `epoch` every line must be an epoch's record; against another key (`--x
    wall_s`, `--x step`) the lines without that number are skipped (a run's header, a
    plan), so a curve that bench/speedrun writes plots as it is."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as problem:
        reason = getattr(problem, "strerror", None) or str(problem)
        return f"cannot read `{path}`: {reason.lower()}"
    curves = Curves(label=path.stem)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = _record(line)
        if x == EPOCH and (record is None or not isinstance(record.get(EPOCH), int)):
            return f"{path}:{number}: not a metrics record (a JSON object with an `epoch`)"
        if record is None:
            return f"{path}:{number}: not a JSON object"
        if not _is_number(record.get(x)):
            continue
        curves.epochs.append(record[x])
        for key in (*LOSS_KEYS, *ACCURACY_KEYS):
            if key in record:
                value = record[key]
                curves.series.setdefault(key, []).append(math.nan if value is None else value)
                curves.positions.setdefault(key, []).append(record[x])
    if not curves.epochs:
        return f"`{path}` holds no epochs" if x == EPOCH else f"`{path}` holds no `{x}` values"
    return curves


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _record(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def plot_curves(curves: Curves | Sequence[Curves], x: str = EPOCH) -> Figure:
    """Loss (train and validation) and, when recorded, accuracy against `x`; several files'
    curves share the panels, each labelled with its file's name."""
    from matplotlib.figure import Figure

    runs = [curves] if isinstance(curves, Curves) else list(curves)
    recorded = {key for run in runs for key in run.series}
    panels = [keys for keys in (LOSS_KEYS, ACCURACY_KEYS) if recorded & set(keys)]
    figure = Figure(figsize=(6.4, 3.2 * len(panels)), layout="constrained")
    axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, keys in zip(axes, panels, strict=True):
        for run in runs:
            for key in (k for k in keys if k in run.series):
                name = key.replace("_", " ")
                label = f"{run.label}: {name}" if len(runs) > 1 else name
                ax.plot(run.positions[key], run.series[key], marker="o", label=label)
        ax.set_ylabel("loss" if keys is LOSS_KEYS else "accuracy")
        ax.grid(alpha=0.3)
        ax.legend()
    axes[-1].set_xlabel(AXIS_NAMES.get(x, x))
    return figure


def _points(n: int) -> str:
    return f"{n} point" if n == 1 else f"{n} points"


AXIS_NAMES = {"wall_s": "wall-clock seconds", "step": "step", "tokens": "tokens"}


def run_plot(metrics: Path | Sequence[Path], output: Path, x: str = EPOCH) -> int:
    """The `tlc plot` command; its exit status."""
    suffix = output.suffix.lstrip(".").lower()
    if suffix not in PICTURE_FORMATS:
        return _error(f"cannot tell the picture format from `{output}`",
                      "name the output `.png`, `.svg` or `.pdf`")  # fmt: skip
    runs: list[Curves] = []
    for path in [metrics] if isinstance(metrics, Path) else metrics:
        curves = read_metrics(path, x)
        if isinstance(curves, str):
            return _error(curves, "pass the file a script wrote with `--metrics PATH`")
        runs.append(curves)
    try:
        figure = plot_curves(runs, x)
    except ModuleNotFoundError as error:
        return _missing("tlc plot", error)
    try:
        figure.savefig(output, format=suffix)
    except OSError as problem:
        return _error(f"cannot write `{output}`: {(problem.strerror or str(problem)).lower()}")
    what = f"{len(runs[0].epochs)} epochs" if x == EPOCH and len(runs) == 1 else (
        ", ".join(f"{run.label} ({_points(len(run.epochs))})" for run in runs)
    )  # fmt: skip
    sys.stderr.write(f"wrote {output}: {what}\n")
    return EXIT_OK
