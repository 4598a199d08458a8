"""Which of a dataset's fields an objective receives: by name, or the batch's (x, y).

    let pairs = load_dataset("digits-captions")    fields `image`, `text`, `label`
    fn clip_loss(net, image, text) -> Tensor:      receives `image` and `text` by name

    binding = bind_fields(["image", "text"], info)
    binding.fields     # ("image", "text"): each parameter's field
    binding.by_name    # True; False: (x, y) data, two parameters taken in order

An objective's parameters after its models name fields of the data. Data of (x, y)
(a named dataset, a .npz holding `x` and `y`) gives its two parameters the samples and
the targets in order, whatever they are called, as before fields had names; data of
named fields gives each parameter the field it names, and a name that is no field is
TL0440. `tensor_type` is a field's batched type, `[B, *shape]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from tensorloom.catalogue.datasets import DatasetInfo
from tensorloom.dialects import train
from tensorloom.dialects.nml import FuncOp
from tensorloom.passes.support.loss_functions import MetricProblem, metrics_of
from tensorloom.passes.support.model_env import CallValue, evaluate
from tensorloom.source import Span

XY = ("x", "y")


@dataclass(frozen=True, slots=True)
class Binding:
    """The fields an objective's batch parameters receive, or the first that names none."""

    fields: tuple[str, ...]
    by_name: bool
    unknown: int | None = None  # the index of a parameter that is no field of the data


def bind_fields(params: list[str], info: DatasetInfo | None) -> Binding:
    """`params` (an objective's, after its models) against the data's fields."""
    if info is None or info.fields is None:
        return Binding(XY, False)
    names = [f.name for f in info.fields]
    unknown = next((i for i, p in enumerate(params) if p not in names), None)
    positional = len(params) == 2 and all(n in names for n in XY)
    if positional and (unknown is not None or tuple(params) == XY):
        return Binding(XY, False)
    if unknown is not None:
        return Binding(tuple(params), True, unknown)
    return Binding(tuple(params), True)


def is_xy(info: DatasetInfo | None) -> bool:
    """Data a `loss` block can train on: samples and targets, `x` and `y`."""
    return info is None or info.fields is None or {"x", "y"} <= {f.name for f in info.fields}


def loop_fields(module: ModuleOp, loop: train.LoopOp, info: DatasetInfo | None) -> list[str]:
    """The fields a block's batches carry, in the data's order: those its objectives and
    metric functions name; [] for (x, y) batches."""
    if info is None or info.fields is None:
        return []
    models = len(loop.model_names())
    bindings = [bind_fields(f.names[models:], info) for f in loop_functions(module, loop)]
    if not any(b.by_name and b.unknown is None for b in bindings):
        return []
    # a function that takes (x, y) in order beside one that names fields: x and y go too
    named = {name for b in bindings if b.unknown is None for name in b.fields}
    return [f.name for f in info.fields if f.name in named]


def loop_functions(module: ModuleOp, loop: train.LoopOp) -> list[FuncOp]:
    """The top-level `fn`s a block of objectives calls with the batch: its objectives
    (`objective = f`, each `step f with ...`) and its metrics (`metrics = [f]`)."""
    functions = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, FuncOp)}
    names = [step.objective.root_reference.data for step in loop.steps()]
    objective = loop.setting("objective")
    value = evaluate(objective, {}) if objective is not None else None
    if isinstance(value, CallValue) and not value.args:
        value = value.name
    if isinstance(value, str):
        names.append(value)
    metrics = loop.setting("metrics")
    listed = metrics_of(metrics, list(functions)) if metrics is not None else []
    if not isinstance(listed, MetricProblem):
        names += [m.name for m in listed if m.kind == "function"]
    return [functions[n] for n in dict.fromkeys(names) if n in functions]


def field_listing(info: DatasetInfo) -> str:
    return ", ".join(f"`{f.name}`" for f in info.fields or ())


def parameter_span(func_span: Span, name: str, index: int) -> Span:
    """The span of `fn f(a, b, c)`'s parameter `index` (named `name`), read from the source
    file; the function's name where the file says otherwise (an editor's unsaved text)."""
    line = _line(func_span.file, func_span.line)
    if line is None:
        return func_span
    start = line.find("(", func_span.col - 1)
    if start < 0:
        return func_span
    close = line.find(")", start)
    params = line[start + 1 : close if close >= 0 else len(line)].split(",")
    if index >= len(params) or params[index].split(":")[0].strip() != name:
        return func_span
    col = start + 1 + sum(len(p) + 1 for p in params[:index])
    col += len(params[index]) - len(params[index].lstrip())
    return Span(func_span.file, func_span.line, col + 1, func_span.line, col + 1 + len(name))


def _lines(file: str) -> tuple[str, ...] | None:
    """The file's lines; read only when a diagnostic needs a parameter's column."""
    try:
        return tuple(Path(file).read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return None


def _line(file: str, number: int) -> str | None:
    lines = _lines(file)
    if lines is None or not 0 < number <= len(lines):
        return None
    return lines[number - 1]
