"""Losses and metrics written in a `.tl`: a top-level `fn` checked against model and data.

    fn vae_loss(out, y) -> Tensor:              `out`: the model's output type, [B, 10]
        return cross_entropy(out, y) + ...      `y`: the dataset's targets, [B] (i64)

    train net on data:
        loss = vae_loss                         checked here, for `check-train`
        metrics = [accuracy, top_k(5), vae_loss]

A loss function takes `(out, y)` or `(out, x, y)`: the model's output, the batch's
inputs, the batch's targets. Its parameters get those types (from shape
inference of the model and from the dataset), then its body is shape-inferred
like a forward (a mistake in it is reported at its line), and what it returns
must be a scalar: a result with dimensions is an error at its `return`. The
inferred types are written into the function, so the IR after `check-train`
shows them. A metric function follows the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, IntegerType, ModuleOp, i64
from xdsl.ir import Attribute

from tensorloom.catalogue.datasets import DatasetInfo
from tensorloom.catalogue.shapes import Unifier
from tensorloom.catalogue.train_rules import Metric, MetricProblem, metric_of
from tensorloom.diagnostics.core import Diagnostic, Label
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects.nml import CallOp, FuncOp, ModelOp, RefOp, ReturnOp, TensorType
from tensorloom.passes.shape_inference import BATCH, Inference, settle_types
from tensorloom.passes.support.model_env import CallValue, evaluate

PARAMETER_FORMS = ("(out, y)", "(out, x, y)")


def functions_of(module: ModuleOp) -> dict[str, FuncOp]:
    """The module's top-level functions (losses, metrics), by name."""
    return {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, FuncOp)}


def function_named(module: ModuleOp, value: object) -> FuncOp | None:
    """The top-level function a setting's value (`loss = my_loss`) names, if any."""
    name = value.name if isinstance(value, CallValue) and not value.args else value
    return functions_of(module).get(name) if isinstance(name, str) else None


@dataclass(frozen=True, slots=True)
class BatchTypes:
    """What a loss function's parameters receive: the model's output, inputs, targets."""

    output: Attribute
    inputs: Attribute
    targets: Attribute

    def arguments(self, func: FuncOp) -> list[Attribute]:
        if len(func.names) == 3:
            return [self.output, self.inputs, self.targets]
        return [self.output, self.targets]


def batch_types(output: Attribute | None, info: DatasetInfo | None) -> BatchTypes:
    """The types of one batch, unknown (`[*]`) where the model or the data does not say."""
    unknown = TensorType.unranked()
    if info is None:
        return BatchTypes(output or unknown, unknown, unknown)
    inputs = unknown
    if info.sample_shape is not None:
        element = i64 if info.dtype == "i64" else unknown.element_type
        inputs = TensorType.from_dims((BATCH, *info.sample_shape), element)
    targets = unknown
    if info.target_shape is not None:
        element = i64 if info.target_dtype == "i64" else unknown.element_type
        targets = TensorType.from_dims((BATCH, *info.target_shape), element)
    return BatchTypes(output or unknown, inputs, targets)


def check_function(func: FuncOp, batch: BatchTypes, role: str) -> None:
    """Infer `func` on one batch's types; its result must be a scalar. `role`: "loss"..."""
    if len(func.names) not in (2, 3):
        _wrong_parameters(func, role)
        return
    if any(isinstance(op, RefOp | CallOp) for op in func.walk()):
        return  # an undefined name or function: check-scopes reported it
    inference = Inference({})
    model = ModelOp(f"<{role} {func.sym_name.data}>")
    result = inference.run(model, func, {}, batch.arguments(func))
    settle_types(inference)
    scalar_result(func, result, inference.unifier, role)


def _wrong_parameters(func: FuncOp, role: str) -> None:
    span = span_at(func)
    name = func.sym_name.data
    message = f"a {role} function takes {' or '.join(f'`{p}`' for p in PARAMETER_FORMS)}, "
    count = len(func.names)
    message += f"`{name}` takes {count} parameter{'' if count == 1 else 's'}"
    help_text = f"write `fn {name}(out, y) -> Tensor:` (the model's output, the targets)"
    report(Diagnostic.error("TL0413", message, Label(span), help=help_text))


def scalar_result(func: FuncOp, result: Attribute, unifier: Unifier, role: str) -> None:
    last = func.body.block.last_op
    span = span_at(last) if isinstance(last, ReturnOp) and last.values else span_at(func)
    if isinstance(last, ReturnOp) and last.values:
        span = span_of(last.values[0].owner) or span  # type: ignore[arg-type]
    name = func.sym_name.data
    if isinstance(result, TensorType) and result.dims is not None and result.dims:
        shape = unifier.format_shape(result.dims)
        message = f"the {role} `{name}` must return a scalar, got a tensor of shape {shape}"
        help_text = 'reduce it, as in `mean(...)`, or pass `reduction="mean"` to the loss'
        report(Diagnostic.error("TL0414", message, Label(span, f"this is {shape}"), help=help_text))
    elif not isinstance(result, TensorType) and not _is_number(result):
        message = f"the {role} `{name}` must return a scalar tensor, got `{result}`"
        report(Diagnostic.error("TL0414", message, Label(span)))


def _is_number(attr: Attribute) -> bool:
    return isinstance(attr, IntegerType) or attr.name in ("f64", "f32")


# --- metrics ---------------------------------------------------------------------------------


def metrics_of(attr: Attribute, functions: Sequence[str]) -> list[Metric] | MetricProblem:
    """The metrics a `metrics = [...]` value lists, or what is wrong with it."""
    if not isinstance(attr, ArrayAttr):
        return MetricProblem("`metrics` must be a list, as in `metrics = [accuracy, top_k(5)]`")
    metrics: list[Metric] = []
    for element in attr.data:
        metric = metric_of(evaluate(element, {}), functions)
        if isinstance(metric, MetricProblem):
            return metric
        metrics.append(metric)
    return metrics
