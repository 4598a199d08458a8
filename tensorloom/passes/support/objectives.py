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
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.catalogue.datasets import DataField, DatasetInfo
from tensorloom.diagnostics.core import Diagnostic, Label, did_you_mean
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects import train
from tensorloom.dialects.nml import (
    CallAttr,
    CallOp,
    FuncOp,
    InstanceOp,
    ModelCallOp,
    ModelOp,
    RefOp,
    ReturnOp,
    TensorType,
)
from tensorloom.passes.shape_inference import BATCH, Inference, ModelFlow, write_back_types
from tensorloom.passes.support.batch_fields import bind_fields, field_listing, parameter_span
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
    "grad_accum", "accumulate_steps",
    "early_stopping", "keep_best", "eval_every", "metrics", "activation_checkpointing",
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
) -> None:
    """Infer `func` with its model parameters bound to `models` and the batch's types after
    them (x, y; or the fields of `info` its parameters name); it must return a scalar."""
    binding = bind_fields(func.names[len(models) :], info)
    if not binding.by_name and len(func.names) != len(models) + 2:
        _wrong_arity(func, models, where, role)
        return
    if binding.unknown is not None:
        assert info is not None
        _unknown_field(func, len(models) + binding.unknown, info, where, role)
        return
    if any(isinstance(op, RefOp | CallOp) for op in func.walk()):
        return  # an undefined name or function: check-scopes reported it
    batch_args = [batch.inputs, batch.targets]
    if binding.by_name and info is not None:
        fields = [info.field_named(name) for name in binding.fields]
        batch_args = [tensor_type(f) for f in fields if f is not None]
    inference = Inference({})
    args = func.body.block.args
    for arg, name in zip(args, models, strict=False):
        bound = _bound(module, name)
        if bound is not None:
            inference.bound_models[arg] = bound
    model = ModelOp(f"<objective {func.sym_name.data}>")
    flow = ModelFlow(func.sym_name.data, func.sym_name.data, [], "")
    arg_types = [args[i].type for i in range(len(models))] + batch_args
    result = inference.run(model, func, {}, arg_types, flow)
    inference.inferred = {func: inference.inferred.get(func, {})}  # the models keep theirs
    write_back_types(inference)
    scalar_result(func, result, inference.unifier, role)


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
    flow = ModelFlow(func.sym_name.data, func.sym_name.data, [], "")
    result = inference.run(model, func, {}, [a.type for a in args], flow)
    inference.inferred = {func: inference.inferred.get(func, {})}
    write_back_types(inference)
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
    func: FuncOp, models: Sequence[str], where: Attribute | None, role: str = "objective"
) -> None:
    span = span_of(func)
    if span is None:
        return
    name = func.sym_name.data
    wanted = ", ".join([*models, "x", "y"])
    count = len(func.names)
    message = (
        f"the {role} `{name}` takes {count} parameter{'s' * (count != 1)}, but the train "
        f"block passes {len(models) + 2}: its model{'s' * (len(models) != 1)} and the batch"
    )
    secondary = [Label(s, "named here") for s in [span_of(where)] if s] if where else []
    help_text = f"write `fn {name}({wanted}) -> Tensor:`"
    report(Diagnostic.error("TL0419", message, Label(span), secondary=secondary, help=help_text))


def calls_model(func: FuncOp, index: int) -> bool:
    """Whether the objective calls its `index`-th parameter (a model) anywhere."""
    arg: SSAValue = func.body.block.args[index]
    return any(isinstance(op, ModelCallOp) and op.model == arg for op in func.walk())
