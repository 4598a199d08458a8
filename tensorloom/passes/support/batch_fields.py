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

import re
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from tensorloom.catalogue.datasets import DatasetInfo
from tensorloom.dialects import train
from tensorloom.dialects.nml import FuncOp, InstanceOp
from tensorloom.passes.support.loss_functions import MetricProblem, metrics_of
from tensorloom.passes.support.model_env import (
    CallValue,
    evaluate,
    forward_of,
    lookup_symbol,
    models_of,
)
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


@dataclass(frozen=True, slots=True)
class LossFields:
    """A `loss` block over named fields: the fields its model's forward takes (its
    parameters' names), and the one its loss compares the output with.

        train net on pairs:           fn forward(self, image, text)  ->  inputs ("image", "text")
            loss = CrossEntropy
            target = label            (the default: `label`, else `y`)  ->  target "label"
    """

    inputs: tuple[str, ...]
    target: str
    unknown: int | None = None  # the index of a forward parameter that is no field
    target_known: bool = True  # False: `target` (or its default) names no field

    def batch(self, info: DatasetInfo) -> list[str]:
        """The fields each batch carries, in the data's order."""
        taken = {*self.inputs, self.target}
        return [f.name for f in info.fields or () if f.name in taken]


DEFAULT_TARGETS = ("label", "y")


def loss_fields(
    info: DatasetInfo | None, params: list[str], target: str | None
) -> LossFields | None:
    """How a `loss` block's batches reach its model and loss: by field, or None for (x, y)
    (the samples into a forward of one input, the targets into the loss). Data of named
    fields without `x` and `y`, a `target = FIELD` key, or a forward whose two or more
    parameters all name fields, go by field."""
    if info is None or info.fields is None:
        return None
    names = [f.name for f in info.fields]
    by_name = len(params) > 1 and all(p in names for p in params)
    if is_xy(info) and target is None and not by_name:
        return None
    chosen = target or next((t for t in DEFAULT_TARGETS if t in names), DEFAULT_TARGETS[0])
    unknown = next((i for i, p in enumerate(params) if p not in names), None)
    return LossFields(tuple(params), chosen, unknown, chosen in names)


def target_key(loop: train.LoopOp) -> str | None:
    """`target = label`: the field the block names, or None where it names none."""
    attr = loop.setting("target")
    value = evaluate(attr, {}) if attr is not None else None
    if isinstance(value, CallValue) and not value.args and not value.kwargs:
        value = value.name
    return value if isinstance(value, str) else None


def forward_params(module: ModuleOp, loop: train.LoopOp) -> list[str] | None:
    """The parameters of the forward of the block's model, `self` left out."""
    instance = lookup_symbol(module, loop.model, InstanceOp)
    model = models_of(module).get(instance.model.root_reference.data) if instance else None
    forward = forward_of(model) if model is not None else None
    return [a.data for a in forward.arg_names.data] if forward is not None else None


def block_loss_fields(
    module: ModuleOp, loop: train.LoopOp, info: DatasetInfo | None
) -> LossFields | None:
    """`loss_fields` of a one-model `loss` block (None for a block of objectives)."""
    params = forward_params(module, loop)
    if loop.runs_objectives() or params is None:
        return None
    return loss_fields(info, params, target_key(loop))


def loop_fields(module: ModuleOp, loop: train.LoopOp, info: DatasetInfo | None) -> list[str]:
    """The fields a block's batches carry, in the data's order: those its objectives and
    metric functions name, or its forward and its loss; [] for (x, y) batches."""
    if info is None or info.fields is None:
        return []
    if not loop.runs_objectives():
        fields = block_loss_fields(module, loop, info)
        return fields.batch(info) if fields is not None else []
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


def named_parameter_span(func_span: Span, name: str) -> Span:
    """The span of parameter `name` in `fn forward(self, image: Tensor[B, 64], text)`, on
    the line the function starts; the function's span where the line does not hold it."""
    line = _line(func_span.file, func_span.line)
    start = line.find("(", func_span.col - 1) if line is not None else -1
    if line is None or start < 0:
        return func_span
    found = re.search(rf"(?<![\w.]){re.escape(name)}\b", line[start:])
    if found is None:
        return func_span
    col = start + found.start() + 1
    return Span(func_span.file, func_span.line, col, func_span.line, col + len(name))


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
