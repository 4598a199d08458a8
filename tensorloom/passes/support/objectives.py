"""Objectives: top-level `fn`s that get a train block's models and the batch, for `check-train`.

    fn d_loss(G, D, x, y) -> Tensor:             `G`, `D`: the block's models, in its order
        let fake = detach(G(randn(...)))         `x`, `y`: the batch's inputs and targets
        return bce_with_logits(D(fake), ...)

    train (G, D) on data:
        step d_loss with Adam(D, lr=2e-4)        checked here: the objective against the
        step g_loss with Adam(G, lr=2e-4)        models and the data, each optimizer's models

An objective's leading parameters are the block's models, by position (`train (G, D)`:
the first is `G`, the second `D`; `train net on data`: one), and its last two the
batch's inputs and targets. Calling a model parameter (`nml.model_call`) follows that
instance's forward, so the body is shape-inferred against the data like a forward, and
what it returns must be a scalar (TL0414). The inferred types are written into the
function only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue, TypeAttribute

from tensorloom.catalogue.datasets import DataField, DatasetInfo
from tensorloom.catalogue.layers.parameter import PARAMETER
from tensorloom.catalogue.train_keys import TRAIN_KEYS
from tensorloom.diagnostics.core import Diagnostic, DiagnosticSink, Label, did_you_mean
from tensorloom.diagnostics.ir import current_sink, report, reporting, span_at, span_of
from tensorloom.dialects import train
from tensorloom.dialects.nml import (
    CallAttr,
    CallOp,
    FuncOp,
    InstanceOp,
    ModelCallOp,
    ModelOp,
    NoneType,
    RefOp,
    ReturnOp,
    TensorType,
    TupleType,
)
from tensorloom.passes.shape_inference import BATCH, Inference, nml_any, settle_types
from tensorloom.passes.support.batch_fields import bind_fields, field_listing, parameter_span
from tensorloom.passes.support.loss_functions import BatchTypes, functions_of, scalar_result
from tensorloom.passes.support.model_env import (
    CallValue,
    Env,
    bind_layer,
    evaluate,
    instance_env,
    layers_of,
    models_of,
)
from tensorloom.passes.support.param_groups import ParamArg, param_arg, selection_models

# Settings a block of `step` lines does not take (each key's record says, `TrainKey.steps`):
# each step names its own optimizer and objective, and the other parts of the one-model loop
# are not built for several optimizers yet.
STEP_EXCLUSIVE = tuple(k.name for k in TRAIN_KEYS if k.steps == "named_by_steps")
NOT_WITH_STEPS = tuple(k.name for k in TRAIN_KEYS if k.steps == "not_yet")

PER_OPTIMIZER = tuple(k.name for k in TRAIN_KEYS if k.steps == "per_optimizer")
"""Keys an optimizer of a step takes besides torch's arguments, as the block-level keys
(`AdamW(rest, lr=3e-3, lr_schedule=cosine(warmup_steps=100), grad_clip=1.0)`); the block's
own, when set, hold for every optimizer that sets none."""


@dataclass(frozen=True, slots=True)
class StepOptimizer:
    """One optimizer of a step: `Muon(hidden, lr=0.02)`, evaluated."""

    name: str
    args: tuple[ParamArg, ...]  # what it updates: models, groups, selections
    kwargs: tuple[tuple[str, object], ...]
    loc: Attribute | None
    models: tuple[str, ...]  # the models its parameters belong to

    def whole_models(self) -> list[str]:
        """The arguments that are a whole model (`Adam(D)`), not a group of one."""
        return [a.selection.data for a in self.args if isinstance(a.selection, StringAttr)
                and "." not in a.selection.data and "[" not in a.selection.data]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Step:
    """One `step NAME with Opt(M1, k=v), Opt2(group, ...)` line, evaluated."""

    op: train.StepOp
    objective: str
    optimizers: tuple[StepOptimizer, ...]

    @property
    def optimizer(self) -> str:
        """The first optimizer's name (`Adam`)."""
        return self.optimizers[0].name

    @property
    def kwargs(self) -> tuple[tuple[str, object], ...]:
        return self.optimizers[0].kwargs

    @property
    def models(self) -> tuple[str, ...]:
        """The models whose parameters the step updates, in order of mention."""
        return tuple(dict.fromkeys(m for o in self.optimizers for m in o.models))


def step_of(op: train.StepOp, groups: Mapping[str, Attribute] | None = None) -> Step | None:
    """The step's parts, or None when an optimizer is not a call (reported by the caller).
    `groups` are the block's `group` lines' values, by name."""
    groups = groups or {}
    optimizers: list[StepOptimizer] = []
    for call, loc in zip(op.optimizer_calls(), op.optimizer_locs(), strict=False):
        optimizer = optimizer_of(call, loc, groups)
        if optimizer is None:
            return None
        optimizers.append(optimizer)
    return Step(op, op.objective.root_reference.data, tuple(optimizers))


def optimizer_set(attr: Attribute | None) -> list[Attribute] | None:
    """A one-model block's `optimizer` over parameter groups: `(Muon(hidden, lr=0.02),
    AdamW(rest, lr=3e-3))`, or one optimizer whose positional arguments are selections
    (`Muon(hidden)`); None for a plain `Adam(lr=1e-3)` (or `Adam(1e-3)`, `lr` by position)."""
    if isinstance(attr, ArrayAttr) and attr.data:
        return list(attr.data) if all(isinstance(a, CallAttr) for a in attr.data) else None
    if isinstance(attr, CallAttr) and any(_selects(a) for a in attr.args.data):
        return [attr]
    return None


def _selects(arg: Attribute) -> bool:
    value = evaluate(arg, {})
    return not isinstance(value, int | float) or isinstance(value, bool)


def optimizer_of(
    call: Attribute, loc: Attribute | None, groups: Mapping[str, Attribute]
) -> StepOptimizer | None:
    """One optimizer call, its positional arguments read as selections."""
    if isinstance(call, StringAttr):  # `with Adam`: no arguments
        return StepOptimizer(call.data, (), (), loc, ())
    if not isinstance(call, CallAttr):
        return None
    kwargs = evaluate(CallAttr.get("_", [], dict(call.kwargs.data)), {})
    if not isinstance(kwargs, CallValue):
        return None
    args = tuple(param_arg(a) for a in call.args.data)
    models = tuple(dict.fromkeys(m for a in args for m in selection_models(a.selection, groups)))
    return StepOptimizer(call.callee.data, args, tuple(kwargs.kwargs), loc, models)


def frozen_names(op: train.SetOp) -> list[str]:
    """`freeze = [T]` in a block of `step` lines: the models it names (empty for a value
    that is not a list, which check-train reports)."""
    if not isinstance(op.value, ArrayAttr):
        return []
    names: list[str] = []
    for item in op.value.data:
        if isinstance(item, CallAttr) and not item.args.data and not item.kwargs.data:
            names.append(item.callee.data)  # `[T]`: a capitalised name reads as a call
        elif isinstance(item, StringAttr):
            names.append(item.data)
    return names


def objective_named(module: ModuleOp, name: str, loc: Attribute | None, role: str) -> FuncOp | None:
    """The top-level `fn` a block names as an objective; TL0418 (with did-you-mean) if none."""
    functions = functions_of(module)
    if name in functions:
        return functions[name]
    span = span_of(loc) if loc is not None else None
    if span is not None:
        guess = did_you_mean(name, list(functions))
        help_text = (
            f"did you mean `{guess}`?"
            if guess
            else f"write `fn {name}(net, x, y) -> Tensor:` returning the scalar to minimise"
        )
        message = f"unknown objective `{name}`: no top-level `fn` of that name ({role})"
        report(Diagnostic.error("TL0418", message, Label(span), help=help_text))
    return None


def check_objective(
    module: ModuleOp,
    func: FuncOp,
    models: Sequence[str],
    batch: BatchTypes,
    where: Attribute | None,
    info: DatasetInfo | None = None,
    role: str = "objective",
    carries: Sequence[train.CarryOp] = (),
    offered: Sequence[train.CarryOp] = (),
    start: Sequence[Attribute] | None = None,
) -> None:
    """Infer `func` with its model parameters bound to `models`, the batch's types after
    them (x, y; or the fields of `info` its parameters name) and then the carried values';
    it must return a scalar, or `(scalar, *carried)` when the block carries values (a
    metric: a scalar; `offered`, the values a metric that takes the batch alone could take;
    `start`, what a later step receives from the step before it, else their initial values)."""
    batch_names = func.names[len(models) : len(func.names) - len(carries)]
    binding = bind_fields(batch_names, info)
    if not binding.by_name and len(func.names) != len(models) + 2 + len(carries):
        _wrong_arity(func, models, where, role, carries, offered)
        return
    if binding.unknown is not None:
        assert info is not None
        _unknown_field(func, len(models) + binding.unknown, info, where, role)
        return
    if any(isinstance(op, RefOp | CallOp) for op in func.walk()):
        return  # an undefined name or function: check-scopes reported it
    batch_args: list[Attribute] = [batch.inputs, batch.targets]
    if binding.by_name and info is not None:
        fields = [info.field_named(name) for name in binding.fields]
        batch_args = [tensor_type(f) for f in fields if f is not None]
    if carries and role == "metric":
        _check_carried_metric(module, func, models, batch_args, carries)
        return
    if carries:
        _check_carrying(module, func, models, batch_args, carries, start)
        return
    inference, result, _ = _infer(module, func, models, batch_args)
    settle_types(inference)
    scalar_result(func, result, inference.unifier, role)


def _infer(
    module: ModuleOp, func: FuncOp, models: Sequence[str], given: Sequence[Attribute]
) -> tuple[Inference, Attribute, bool]:
    """One inference of `func`: its models bound, `given` as the types after them; and
    whether it found errors (reported once each: an error inside a model that
    shape-inference reported for the model's instance is not said again)."""
    inference = Inference({})
    args = func.body.block.args
    for arg, name in zip(args, models, strict=False):
        bound = _bound(module, name)
        if bound is not None:
            inference.bound_models[arg] = bound
    model = ModelOp(f"<objective {func.sym_name.data}>")
    arg_types = [args[i].type for i in range(len(models))] + list(given)
    found = DiagnosticSink()
    with reporting(found):
        result = inference.run(model, func, {}, arg_types)
    current_sink().extend_new(found.diagnostics)  # shape-inference said the model's own
    return inference, result, found.has_errors


# --- carried values ---------------------------------------------------------------------------


def _check_carrying(
    module: ModuleOp,
    func: FuncOp,
    models: Sequence[str],
    batch: Sequence[Attribute],
    carries: Sequence[train.CarryOp],
    start: Sequence[Attribute] | None = None,
) -> None:
    """The objective of a block that carries values, inferred twice: at an epoch's first batch
    (each carried parameter its initial value, `none`, or `start`: what an earlier step of
    the batch returned), then at the next (each the type the first returned for it), which
    must return the same types: the carried values' types are then fixed, and written on
    their `train.carry` ops."""
    first = list(start) if start is not None else [initial_type(module, op) for op in carries]
    inference, result, failed = _infer(module, func, models, [*batch, *first])
    if failed:  # the first batch's errors, reported: stop there
        settle_types(inference)
        return
    returned = _returned(func, result, inference, carries)
    if returned is None:
        settle_types(inference)
        return
    settled = [inference.resolved_type(t) for t in returned]
    sink = DiagnosticSink()
    with reporting(sink):  # the next batch's problems are said as one, at the return
        again, result, _ = _infer(module, func, models, [*batch, *settled])
    settle_types(again)
    if sink.has_errors:
        _not_taken_back(func, carries, settled, inference, sink)
        return
    later = _returned(func, result, again, carries)
    for i, (op, before, after) in enumerate(zip(carries, settled, later or (), strict=False)):
        if inference.format_type(before) != again.format_type(after):
            _changes_type(func, op, 1 + i, (before, after), (inference, again))
            return
    for op, carried in zip(carries, settled, strict=True):
        if op.init is not None and isinstance(carried, TypeAttribute):  # else reported
            op.carried = carried


def _check_carried_metric(
    module: ModuleOp,
    func: FuncOp,
    models: Sequence[str],
    batch: Sequence[Attribute],
    carries: Sequence[train.CarryOp],
) -> None:
    """A metric `fn` that takes the carried values after the batch, as the objective does:
    at an epoch's first batch their initial values, then the types the objective returns
    for them (its check wrote them on the `train.carry` ops); a scalar for each."""
    given: list[Attribute] = [
        op.carried if op.carried is not None else NoneType() for op in carries
    ]
    firsts: list[Attribute] = [initial_type(module, op) for op in carries]
    errors = len(current_sink().errors())
    for carried in (firsts, given) if given != firsts else (firsts,):
        inference, result, failed = _infer(module, func, models, [*batch, *carried])
        settle_types(inference)
        if failed:  # said once, at the first batch's form
            return
        scalar_result(func, result, inference.unifier, "metric")
        if len(current_sink().errors()) > errors:
            return


def takes_carried(func: FuncOp, models: Sequence[str], carries: Sequence[object]) -> bool:
    """Whether a metric `fn` takes the block's carried values after its models and the
    batch, as the objective does (`fn acc(net, x, y, state)`), rather than the batch alone."""
    return bool(carries) and len(func.names) == len(models) + 2 + len(carries)


def initial_paths(init: Attribute | None) -> list[str] | None:
    """A learned initial value's parameters as written, `net.h0` or `(net.h0, net.c0)`:
    their paths; None for `none` or anything else."""
    if isinstance(init, StringAttr):
        return [init.data]
    if (
        isinstance(init, ArrayAttr)
        and init.data
        and all(isinstance(e, StringAttr) for e in init.data)
    ):
        return [e.data for e in init.data]  # type: ignore[union-attr]
    return None


def parameter_type(module: ModuleOp, path: str) -> TensorType | None:
    """The type of the `Parameter` that `path` (`net.h0`) names: a layer of the instance's
    model class; None when it names no such parameter."""
    instance, _, name = path.partition(".")
    bound = _bound(module, instance)
    if bound is None or not name or "." in name:
        return None
    _, model, env = bound
    layer = layers_of(model).get(name)
    if layer is None or layer.kind.data != PARAMETER:
        return None
    spec = bind_layer(layer, env)
    if spec is None:
        return None
    return TensorType.from_dims(spec.spec.param_shapes(spec)[""])


def layer_kind(module: ModuleOp, instance: str, name: str) -> str | None:
    """The kind of the layer `name` of the instance's model (`LSTM`), None if none."""
    bound = _bound(module, instance)
    layer = layers_of(bound[1]).get(name) if bound is not None else None
    return layer.kind.data if layer is not None else None


def initial_type(module: ModuleOp, op: train.CarryOp) -> Attribute:
    """What an epoch's first batch receives for `op`: `none`, or its parameters' types (a
    tuple of them for `(net.h0, net.c0)`)."""
    paths = initial_paths(op.init)
    if paths is None:
        return NoneType()
    types = [parameter_type(module, p) or nml_any() for p in paths]  # else TL0465
    return types[0] if isinstance(op.init, StringAttr) else TupleType.of(types)


def _returned(
    func: FuncOp, result: Attribute, inference: Inference, carries: Sequence[train.CarryOp]
) -> list[Attribute] | None:
    """The carried values' types in `(loss, *carried)`, the loss checked as a scalar; TL0446
    when the objective returns something else."""
    wanted = len(carries) + 1
    elements = result.types if isinstance(result, TupleType) else (result,)
    if len(elements) != wanted:
        _not_returned(func, carries, len(elements))
        return None
    scalar_result(func, elements[0], inference.unifier, "objective")
    carried = list(elements[1:])
    for i, (op, kind) in enumerate(zip(carries, carried, strict=True)):
        if isinstance(kind, NoneType):
            _stays_none(func, op, 1 + i)
            return None
    return carried


def _return_span(func: FuncOp, index: int | None = None) -> Label:
    """The objective's `return` value (its `index`-th element), else the function."""
    last = func.body.block.last_op
    if not isinstance(last, ReturnOp) or not last.values:
        return Label(span_at(func))
    owner = last.values[0].owner
    whole = (span_of(owner) if isinstance(owner, Operation) else None) or span_at(last)
    if index is None or not isinstance(owner, Operation) or len(owner.operands) <= index:
        return Label(whole)
    element = owner.operands[index].owner
    part = span_of(element) if isinstance(element, Operation) else None
    inside = part is not None and (part.line, part.col) >= (whole.line, whole.col) and (
        part.end_line, part.end_col) <= (whole.end_line, whole.end_col)  # fmt: skip
    return Label(part if inside and part is not None else whole)


def _carried_names(carries: Sequence[train.CarryOp]) -> str:
    return ", ".join(op.var.data for op in carries)


def _not_returned(func: FuncOp, carries: Sequence[train.CarryOp], count: int) -> None:
    name = func.sym_name.data
    names = _carried_names(carries)
    plural = "s" * (len(carries) != 1)
    message = (
        f"the objective `{name}` never returns the carried value{plural} `{names}`: it returns "
        f"{count} value{'s' * (count != 1)}, not the loss and {len(carries)} carried"
    )
    help_text = (
        f"return the loss, then the value{plural} for the next batch: `return (loss, {names})`"
    )
    secondary = [Label(s, "carried here") for s in [span_of(carries[0])] if s]
    report(Diagnostic.error("TL0446", message, _return_span(func), secondary=secondary,
                            help=help_text))  # fmt: skip


def _stays_none(func: FuncOp, op: train.CarryOp, index: int) -> None:
    var = op.var.data
    message = (
        f"the objective `{func.sym_name.data}` returns `none` for the carried value `{var}`: "
        "the next batch would start from `none` again"
    )
    help_text = (
        f"return the state a recurrent layer gives, as in `let (out, {var}) = lstm(x, {var})`"
    )
    report(Diagnostic.error("TL0446", message, _return_span(func, index), help=help_text))


def _not_taken_back(
    func: FuncOp,
    carries: Sequence[train.CarryOp],
    settled: Sequence[Attribute],
    inference: Inference,
    sink: DiagnosticSink,
) -> None:
    """The next batch cannot take what the first returned: TL0447 at the return, the problem
    the next batch's inference found as a note."""
    shown = ", ".join(f"`{op.var.data}`: {inference.format_type(t)}"
                      for op, t in zip(carries, settled, strict=True))  # fmt: skip
    problem = sink.errors()[0]
    where = problem.primary.span
    message = (
        f"the objective `{func.sym_name.data}` returns a carried value its next batch cannot take "
        f"({shown})"
    )
    note = f"with it, line {where.line}: {problem.message}"
    help_text = "return the value in the form the objective takes it, as the layer returned it"
    where = _return_span(func, 1 if len(carries) == 1 else None)
    report(Diagnostic.error("TL0447", message, where, notes=[note], help=help_text))


def _changes_type(
    func: FuncOp,
    op: train.CarryOp,
    index: int,
    types: tuple[Attribute, Attribute],
    inferences: tuple[Inference, Inference],
) -> None:
    var = op.var.data
    was, became = inferences[0].format_type(types[0]), inferences[1].format_type(types[1])
    message = (
        f"the carried value `{var}` changes type from one batch to the next: {was}, then {became}"
    )
    help_text = "a carried value keeps one type: return it as the objective received it"
    report(Diagnostic.error("TL0447", message, _return_span(func, index), help=help_text))


def check_sampler(module: ModuleOp, func: FuncOp, models: Sequence[str],
                  where: Attribute | None) -> None:  # fmt: skip
    """`samples = sample`: `fn sample(G, D) -> Tensor` takes the block's models and returns
    images `[N, C, H, W]` with 1 or 3 channels (TL0460 for its parameters, TL0461 for what
    it returns)."""
    if len(func.names) != len(models):
        _sampler_arity(func, models, where)
        return
    if any(isinstance(op, RefOp | CallOp) for op in func.walk()):
        return  # an undefined name or function: check-scopes reported it
    inference = Inference({})
    inference.unifier.rigid.clear()  # no data loader: `G(randn([64, 16]))` picks the count
    args = func.body.block.args
    for arg, name in zip(args, models, strict=False):
        bound = _bound(module, name)
        if bound is not None:
            inference.bound_models[arg] = bound
    model = ModelOp(f"<samples {func.sym_name.data}>")
    result = inference.run(model, func, {}, [a.type for a in args])
    settle_types(inference)
    problem = _image_problem(result, inference)
    if problem is not None:
        _sampler_result(func, problem)


def _image_problem(result: Attribute, inference: Inference) -> str | None:
    """Why `result` is not a batch of images `[N, C, H, W]` with C 1 or 3, or None."""
    if not isinstance(result, TensorType) or result.dims is None:
        return None if isinstance(result, TensorType) else f"got `{result}`"
    shape = inference.unifier.format_shape(result.dims)
    if len(result.dims) != 4:
        return f"got a tensor of shape {shape}"
    channels = (inference.unifier.resolve_shape(result.dims) or (None, None))[1]
    if isinstance(channels, int) and channels not in (1, 3):
        return f"got {channels} channels ({shape}): a PNG holds 1 (grey) or 3 (RGB)"
    return None


def _sampler_result(func: FuncOp, problem: str) -> None:
    last = func.body.block.last_op
    span = span_of(func)
    if isinstance(last, ReturnOp) and last.values:
        owner = last.values[0].owner
        span = (span_of(owner) if isinstance(owner, Operation) else None) or span_at(last)
    if span is None:
        return
    name = func.sym_name.data
    message = f"the samples of `{name}` must be images [N, C, H, W], {problem}"
    help_text = "return `[N, 1, H, W]` or `[N, 3, H, W]`, as in `x.view(64, 1, 8, 8)`"
    report(Diagnostic.error("TL0461", message, Label(span), help=help_text))


def _sampler_arity(func: FuncOp, models: Sequence[str], where: Attribute | None) -> None:
    span = span_of(func)
    if span is None:
        return
    name, count = func.sym_name.data, len(func.names)
    message = (
        f"`{name}` takes {count} parameter{'s' * (count != 1)}, but `samples` passes "
        f"{len(models)}: the block's model{'s' * (len(models) != 1)}"
    )
    secondary = [Label(s, "named here") for s in [span_of(where)] if s] if where else []
    help_text = f"write `fn {name}({', '.join(models)}) -> Tensor:`"
    report(Diagnostic.error("TL0460", message, Label(span), secondary=secondary, help=help_text))


def _bound(module: ModuleOp, name: str) -> tuple[str, ModelOp, Env] | None:
    instance = next(
        (o for o in module.body.block.walk() if isinstance(o, InstanceOp)
         and o.sym_name.data == name), None,
    )  # fmt: skip
    if instance is None:
        return None
    model = models_of(module).get(instance.model.root_reference.data)
    if model is None:
        return None
    return name, model, instance_env(instance, model)


def tensor_type(field: DataField) -> TensorType:
    """One batch of `field`: `[B, *shape]`, int64 or float; unranked where the shape is not
    known at check time (`fields=` of a file that is not there, or a .pt)."""
    if field.shape is None:
        return TensorType.unranked()
    element = i64 if field.dtype == "i64" else TensorType.unranked().element_type
    return TensorType.from_dims((BATCH, *field.shape), element)


def _unknown_field(
    func: FuncOp, index: int, info: DatasetInfo, where: Attribute | None, role: str
) -> None:
    """TL0440: an objective's parameter that names no field of the data."""
    name = func.names[index]
    span = span_of(func)
    if span is None:
        return
    span = parameter_span(span, name, index)
    data = f"`{info.name}`"
    guess = did_you_mean(name, [f.name for f in info.fields or ()])
    help_text = f"did you mean `{guess}`?" if guess else f"its fields: {field_listing(info)}"
    message = (
        f"`{name}` is not a field of {data}: the {role} `{func.sym_name.data}` receives the "
        f"batch's fields by name"
    )
    secondary = [Label(s, "named here") for s in [span_of(where)] if s] if where else []
    report(Diagnostic.error("TL0440", message, Label(span), secondary=secondary, help=help_text))


def _wrong_arity(
    func: FuncOp,
    models: Sequence[str],
    where: Attribute | None,
    role: str = "objective",
    carries: Sequence[train.CarryOp] = (),
    offered: Sequence[train.CarryOp] = (),
) -> None:
    span = span_of(func)
    if span is None:
        return
    name = func.sym_name.data
    carried = [op.var.data for op in carries]
    wanted = ", ".join([*models, "x", "y", *carried])
    count = len(func.names)
    passed = len(models) + 2 + len(carried)
    parts = f"its model{'s' * (len(models) != 1)} and the batch"
    if carried:
        listed = ", ".join(f"`{c}`" for c in carried)
        parts = f"its model{'s' * (len(models) != 1)}, the batch and the carried {listed}"
    message = (
        f"the {role} `{name}` takes {count} parameter{'s' * (count != 1)}, but the train "
        f"block passes {passed}: {parts}"
    )
    secondary = [Label(s, "named here") for s in [span_of(where)] if s] if where else []
    returns = " -> Tensor" if not carried else ""
    help_text = f"write `fn {name}({wanted}){returns}:`"
    if role == "metric" and offered:  # it may take the carried values, or the batch alone
        listed = ", ".join(op.var.data for op in offered)
        message = (
            f"the metric `{name}` takes {count} parameter{'s' * (count != 1)}, but the train "
            f"block passes {passed} or {passed + len(offered)}: {parts}, then the carried "
            f"`{listed}` if it takes {'it' if len(offered) == 1 else 'them'}"
        )
        help_text = (
            f"write `fn {name}({wanted}) -> Tensor:`, or `fn {name}({wanted}, {listed}) -> "
            "Tensor:` to take the values the batch starts from"
        )
    report(Diagnostic.error("TL0419", message, Label(span), secondary=secondary, help=help_text))


def calls_model(func: FuncOp, index: int) -> bool:
    """Whether the objective calls its `index`-th parameter (a model) anywhere."""
    arg: SSAValue = func.body.block.args[index]
    return any(isinstance(op, ModelCallOp) and op.model == arg for op in func.walk())
