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
from xdsl.ir import Attribute, SSAValue

from tensorloom.diagnostics.core import Diagnostic, Label, did_you_mean
from tensorloom.diagnostics.ir import report, span_of
from tensorloom.dialects import train
from tensorloom.dialects.nml import (
    CallAttr,
    CallOp,
    FuncOp,
    InstanceOp,
    ModelCallOp,
    ModelOp,
    RefOp,
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
) -> None:
    """Infer `func` with its model parameters bound to `models` and the batch's types after
    them; it must take len(models) + 2 parameters and return a scalar."""
    if len(func.names) != len(models) + 2:
        _wrong_arity(func, models, where)
        return
    if any(isinstance(op, RefOp | CallOp) for op in func.walk()):
        return  # an undefined name or function: check-scopes reported it
    inference = Inference({})
    args = func.body.block.args
    for arg, name in zip(args, models, strict=False):
        bound = _bound(module, name)
        if bound is not None:
            inference.bound_models[arg] = bound
    model = ModelOp(f"<objective {func.sym_name.data}>")
    flow = ModelFlow(func.sym_name.data, func.sym_name.data, [], "")
    arg_types = [args[i].type for i in range(len(models))] + [batch.inputs, batch.targets]
    result = inference.run(model, func, {}, arg_types, flow)
    inference.inferred = {func: inference.inferred.get(func, {})}  # the models keep theirs
    write_back_types(inference)
    scalar_result(func, result, inference.unifier, "objective")


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


def _wrong_arity(func: FuncOp, models: Sequence[str], where: Attribute | None) -> None:
    span = span_of(func)
    if span is None:
        return
    name = func.sym_name.data
    wanted = ", ".join([*models, "x", "y"])
    count = len(func.names)
    message = (
        f"the objective `{name}` takes {count} parameter{'s' * (count != 1)}, but the train "
        f"block passes {len(models) + 2}: its model{'s' * (len(models) != 1)} and the batch"
    )
    secondary = [Label(s, "named here") for s in [span_of(where)] if s] if where else []
    help_text = f"write `fn {name}({wanted}) -> Tensor:`"
    report(Diagnostic.error("TL0419", message, Label(span), secondary=secondary, help=help_text))


def calls_model(func: FuncOp, index: int) -> bool:
    """Whether the objective calls its `index`-th parameter (a model) anywhere."""
    arg: SSAValue = func.body.block.args[index]
    return any(isinstance(op, ModelCallOp) and op.model == arg for op in func.walk())
