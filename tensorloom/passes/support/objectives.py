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

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue, TypeAttribute

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
    TupleType,
)
from tensorloom.passes.shape_inference import Inference, ModelFlow, write_back_types
from tensorloom.passes.support.loss_functions import BatchTypes, functions_of, scalar_result
from tensorloom.passes.support.model_env import (
    CallValue,
    Env,
    evaluate,
    instance_env,
    models_of,
)
from tensorloom.passes.support.param_groups import ParamArg, param_arg, selection_models

# Settings a block of `step` lines does not take: each step names its own optimizer and
# objective, and these parts of the one-model loop are not built for several optimizers.
STEP_EXCLUSIVE = ("optimizer", "loss", "objective")
NOT_WITH_STEPS = (
    "distributed", "grad_accum", "accumulate_steps",
    "ema", "early_stopping", "keep_best", "eval_every", "metrics", "activation_checkpointing",
    "log_every", "val_every", "decay_groups",
)  # fmt: skip


PER_OPTIMIZER = ("lr_schedule", "grad_clip")
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
        optimizer = _optimizer_of(call, loc, groups)
        if optimizer is None:
            return None
        optimizers.append(optimizer)
    return Step(op, op.objective.root_reference.data, tuple(optimizers))


def _optimizer_of(
    call: Attribute, loc: Attribute | None, groups: Mapping[str, Attribute]
) -> StepOptimizer | None:
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
    carries: Sequence[train.CarryOp] = (),
) -> None:
    """Infer `func` with its model parameters bound to `models`, the batch's types after
    them and then the carried values'; it must take len(models) + 2 + len(carries)
    parameters and return a scalar, or `(scalar, *carried)` when the block carries values."""
    if len(func.names) != len(models) + 2 + len(carries):
        _wrong_arity(func, models, where, carries)
        return
    if any(isinstance(op, RefOp | CallOp) for op in func.walk()):
        return  # an undefined name or function: check-scopes reported it
    given = [batch.inputs, batch.targets]
    if carries:
        _check_carrying(module, func, models, given, carries)
        return
    inference, result = _infer(module, func, models, given)
    write_back_types(inference)
    scalar_result(func, result, inference.unifier, "objective")


def _infer(
    module: ModuleOp, func: FuncOp, models: Sequence[str], given: Sequence[Attribute]
) -> tuple[Inference, Attribute]:
    """One inference of `func`: its models bound, `given` as the types after them."""
    inference = Inference({})
    args = func.body.block.args
    for arg, name in zip(args, models, strict=False):
        bound = _bound(module, name)
        if bound is not None:
            inference.bound_models[arg] = bound
    model = ModelOp(f"<objective {func.sym_name.data}>")
    flow = ModelFlow(func.sym_name.data, func.sym_name.data, [], "")
    arg_types = [args[i].type for i in range(len(models))] + list(given)
    result = inference.run(model, func, {}, arg_types, flow)
    inference.inferred = {func: inference.inferred.get(func, {})}  # the models keep theirs
    return inference, result


# --- carried values ---------------------------------------------------------------------------


def _check_carrying(
    module: ModuleOp,
    func: FuncOp,
    models: Sequence[str],
    batch: Sequence[Attribute],
    carries: Sequence[train.CarryOp],
) -> None:
    """The objective of a block that carries values, inferred twice: at an epoch's first batch
    (each carried parameter its initial value, `none`), then at the next (each the type the
    first returned for it), which must return the same types: the carried values' types are
    then fixed, and written on their `train.carry` ops."""
    first = [NoneType() for _ in carries]
    errors = len(current_sink().errors())
    inference, result = _infer(module, func, models, [*batch, *first])
    if len(current_sink().errors()) > errors:  # the first batch's errors, reported: stop there
        write_back_types(inference)
        return
    returned = _returned(func, result, inference, carries)
    if returned is None:
        write_back_types(inference)
        return
    settled = [inference.resolved_type(t) for t in returned]
    sink = DiagnosticSink()
    with reporting(sink):  # the next batch's problems are said as one, at the return
        again, result = _infer(module, func, models, [*batch, *settled])
    if sink.has_errors:
        _not_taken_back(func, carries, settled, inference, sink)
        return
    write_back_types(again)
    later = _returned(func, result, again, carries)
    for i, (op, before, after) in enumerate(zip(carries, settled, later or (), strict=False)):
        if inference.format_type(before) != again.format_type(after):
            _changes_type(func, op, 1 + i, (before, after), (inference, again))
            return
    for op, carried in zip(carries, settled, strict=True):
        if op.init is not None and isinstance(carried, TypeAttribute):  # else reported
            op.carried = carried


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


def _wrong_arity(
    func: FuncOp,
    models: Sequence[str],
    where: Attribute | None,
    carries: Sequence[train.CarryOp] = (),
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
        f"the objective `{name}` takes {count} parameter{'s' * (count != 1)}, but the train "
        f"block passes {passed}: {parts}"
    )
    secondary = [Label(s, "named here") for s in [span_of(where)] if s] if where else []
    help_text = (
        f"write `fn {name}({wanted}):`" if carried else f"write `fn {name}({wanted}) -> Tensor:`"
    )
    report(Diagnostic.error("TL0419", message, Label(span), secondary=secondary, help=help_text))


def calls_model(func: FuncOp, index: int) -> bool:
    """Whether the objective calls its `index`-th parameter (a model) anywhere."""
    arg: SSAValue = func.body.block.args[index]
    return any(isinstance(op, ModelCallOp) and op.model == arg for op in func.walk())
