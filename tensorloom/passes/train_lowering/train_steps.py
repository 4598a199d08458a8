"""The script of a train block of `step` lines: several models, one optimizer per step.

    train (G, D) on data:                         def train_step(trainer, xb, yb):
        step d_loss with Adam(D, lr=2e-4)             G, D = trainer.G, trainer.D
        step g_loss with Adam(G, lr=2e-4)             # step d_loss with Adam(D, ...)
                                                      optimizer = trainer.optimizers["d_loss"]
                                                      optimizer.zero_grad(set_to_none=True)
                                                      with autocast(trainer.plan, device):
                                                          d_loss_value = d_loss(G, D, xb, yb)
                                                      step_optimizer(d_loss_value, optimizer, ...)
                                                      # step g_loss ...

Each batch runs the block's steps in order (zero_grad, objective, backward, step of that
optimizer), as pytorch/examples' dcgan/main.py does; runtime/steps.py holds what every
such program shares (the epoch, validation, checkpoints with every model and optimizer).
A model no step names is wrapped in `Frozen` (no_grad, eval mode). The sections reuse the
one-model script's data loaders (train_data.py) and its settings' names.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.dialects import py
from tensorloom.dialects.nml import CallAttr, ExprAttr
from tensorloom.passes.support.model_env import evaluate
from tensorloom.passes.support.param_groups import (
    SELECT,
    ParamArg,
    selection_groups,
    split_path,
)
from tensorloom.passes.support.py_builder import PyBuilder, Value
from tensorloom.passes.train_lowering.plan import ScriptPlan, data_description, program_name
from tensorloom.passes.train_lowering.train_data import build_loaders_ops, info_type, loader_type

DEFINES = ("Trainer", "build_trainer", "train_step", "objective_values", "train", "main",
           "parse_args", "seed_everything", "save", "resume")  # fmt: skip
"""The top-level names these sections take in the script."""


@dataclass(frozen=True, slots=True)
class ModelPlan:
    name: str  # the instance: `G`
    model_class: str  # `Generator`
    overrides: tuple[tuple[str, Attribute], ...]
    frozen: bool
    location: Attribute | None


@dataclass(frozen=True, slots=True)
class OptimizerPlan:
    key: str  # in `trainer.optimizers` and the checkpoint: `d_loss`, or `ce.Muon` of several
    optimizer: str  # the torch.optim class
    args: tuple[ParamArg, ...]  # what it updates: models, groups, selections
    kwargs: tuple[tuple[str, Value], ...]  # `lr` first, defaults filled in
    location: Attribute | None
    schedule: dict[str, Value] | None = None  # `{"name": "cosine", "warmup_steps": 100}`
    clip: float | None = None  # the bound of its parameters' gradient norm


@dataclass(frozen=True, slots=True)
class StepPlan:
    objective: str
    optimizers: tuple[OptimizerPlan, ...]  # one backward, then each steps
    models: tuple[str, ...]  # whose parameters the step updates
    location: Attribute | None


@dataclass(frozen=True, slots=True)
class StepsPlan:
    base: ScriptPlan  # the data, epochs, precision, seed, checkpoints: as one model's
    models: tuple[ModelPlan, ...]
    steps: tuple[StepPlan, ...]
    groups: tuple[tuple[str, Attribute], ...] = ()  # `group NAME = selection`, as written

    @property
    def compile_mode(self) -> str | None:
        """`compile` in the block: torch.compile's mode for the models the steps run (CUDA
        graphs left out: the optimizers step outside the compiled forward); no key: None."""
        mode = self.base.compile_mode
        if mode is None or self.base.compile_auto:
            return None
        return {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(
            mode, mode
        )

    @property
    def scheduled(self) -> list[OptimizerPlan]:
        """The optimizers with an `lr_schedule`, in the block's order."""
        return [o for s in self.steps for o in s.optimizers if o.schedule is not None]


def steps_sources(plan: StepsPlan) -> list[Operation]:
    """Every section after the models and objectives, in the script's order."""
    return [
        *_settings_ops(plan),
        *_parse_args_ops(plan),
        *_seed_ops(),
        *build_loaders_ops(plan.base),
        *_trainer_ops(plan),
        *_build_trainer_ops(plan),
        *_train_step_ops(plan),
        *_objective_values_ops(plan),
        *_save_ops(plan),
        *_train_ops(plan),
        *_main_ops(),
    ]


# --- settings and command line -------------------------------------------------------------


def _settings_ops(plan: StepsPlan) -> list[Operation]:
    b, base = PyBuilder(), plan.base
    b.comment("---- settings: the train block's values; the command line overrides some ----")
    b.assign("EPOCHS", b.const(base.epochs))
    b.assign("BATCH_SIZE", b.const(base.batch_size or 64))
    b.assign("PRECISION", b.const(base.precision if base.amp else "fp32"))
    every = base.checkpoint_every if base.checkpoint_unit == "epochs" else None
    b.assign("CHECKPOINT_EVERY", b.const(every), comment="epochs; unset: at the end")
    b.assign("GRAD_ACCUM", b.const(1), comment="each batch is one step of every optimizer")
    b.assign("SEED", b.const(base.seed))
    if plan.compile_mode is not None:
        b.assign("COMPILE_MODE", b.const(plan.compile_mode),
                 comment="`compile`: torch.compile's mode for the models, on CUDA")  # fmt: skip
    if base.dataset not in (None, "digits") or base.language_model_data:
        # the reader of a named dataset (`tokens`, `mnist`) takes its name
        b.assign("DATASET", b.const(base.dataset or ""), annotation=b.name("str"))
    b.assign("DATASET_OPTIONS", b.value(base.dataset_options),
             annotation=b.generic("dict", "str", "Any"))  # fmt: skip
    b.assign(
        "OBJECTIVES",
        b.value([s.objective for s in plan.steps]),
        comment="one step each, in this order",
    )
    if plan.scheduled:
        schedules = b.value({o.key: o.schedule for o in plan.scheduled})  # type: ignore[misc]
        b.assign("OPTIMIZER_SCHEDULES", schedules, comment="each optimizer's `lr_schedule`",
                 annotation=b.generic("dict", "str", b.generic("dict", "str", "Any")))  # fmt: skip
    return b.ops


def _argument(b: PyBuilder, flag: str, **kwargs: SSAValue) -> None:
    b.expr(b.method(b.name("parser"), "add_argument", b.const(flag), **kwargs))


def _parse_args_ops(plan: StepsPlan) -> list[Operation]:
    top, b = PyBuilder(), PyBuilder()
    top.comment("---- command line ----")
    models = ", ".join(m.name for m in plan.models)
    description = f"Train {models} on {data_description(plan.base)} (from {plan.base.source})."
    b.assign("parser", b.call("argparse.ArgumentParser", description=b.const(description)))
    _argument(b, "--epochs", type=b.name("int"), default=b.name("EPOCHS"))
    _argument(b, "--batch-size", type=b.name("int"), default=b.name("BATCH_SIZE"))
    _argument(b, "--max-steps", type=b.name("int"), default=b.const(None),
              help=b.const("stop after this many batches"))  # fmt: skip
    _argument(b, "--device", choices=b.value(("auto", "cpu", "cuda")), default=b.const("auto"))
    _argument(b, "--seed", type=b.name("int"), default=b.name("SEED"))
    _argument(b, "--metrics", default=b.const(None), help=b.const("a JSON line per epoch"))
    _argument(b, "--checkpoint-dir", default=b.const(f"checkpoints/{program_name(plan.base)}"))
    _argument(b, "--resume", default=b.const(None), help=b.const("a checkpoint to continue"))
    replace = "replace the checkpoints an earlier run left in --checkpoint-dir"
    _argument(b, "--overwrite", action=b.const("store_true"), help=b.const(replace))
    _argument(b, "--evaluate", default=b.const(None), metavar=b.const("CHECKPOINT"),
              help=b.const("the validation objectives of a checkpoint; no training"))  # fmt: skip
    _argument(b, "--data-root", default=b.const(None), help=b.const("where datasets live"))
    _argument(b, "--precision", choices=b.value(("auto", "fp32", "fp16", "bf16")),
              default=b.name("PRECISION"))  # fmt: skip
    b.ret(b.method(b.name("parser"), "parse_args", b.name("argv")))
    argv = top.optional(top.generic("list", "str"))
    namespace = top.name("argparse.Namespace")
    top.stmt(py.DefOp("parse_args", ["argv"], b.ops, defaults={"argv": top.const(None)},
                      annotations={"argv": argv}, returns=namespace))  # fmt: skip
    return top.ops


def _seed_ops() -> list[Operation]:
    top, b = PyBuilder(), PyBuilder()
    top.comment("---- setup ----")
    b.expr(b.call("random.seed", b.name("seed")))
    b.expr(b.call("torch.manual_seed", b.name("seed")))
    top.def_("seed_everything", [("seed", "int")], b, None)
    return top.ops


# --- the trainer -----------------------------------------------------------------------------


def _trainer_ops(plan: StepsPlan) -> list[Operation]:
    top, b = PyBuilder(), PyBuilder()
    b.expr(b.const("Every model, optimizer and scaler of the block, and where the run is."))
    b.assign("ctx", None, annotation=b.name("DistContext"))
    for model in plan.models:
        note = "frozen: no step updates it" if model.frozen else None
        b.assign(model.name, None, annotation=b.name("nn.Module"), comment=note)
    optimizers = b.generic("dict", "str", "torch.optim.Optimizer")
    b.assign("optimizers", None, annotation=optimizers, comment="by objective")
    scalers = b.generic("dict", "str", b.optional("torch.amp.GradScaler"))
    b.assign("scalers", None, annotation=scalers, comment="one per step")
    if plan.scheduled:
        kind = b.generic("dict", "str", "torch.optim.lr_scheduler.LRScheduler")
        b.assign("schedulers", None, annotation=kind, comment="each `lr_schedule`, by optimizer")
    b.assign("plan", None, annotation=b.name("PrecisionPlan"))
    b.assign("train_loader", None, annotation=loader_type(b, plan.base))
    b.assign("val_loader", None, annotation=loader_type(b, plan.base))
    b.assign("info", None, annotation=b.name(info_type(plan.base)))
    if plan.compile_mode is not None:
        b.assign("compiled", None, annotation=b.generic("dict", "str", "nn.Module"),
                 comment="the models as the steps run them: compiled on CUDA")  # fmt: skip
    b.assign("step", b.const(0), annotation=b.name("int"))
    b.assign("start_epoch", b.const(0), annotation=b.name("int"))
    carry = b.optional(b.generic("tuple", b.generic("dict", "str", "torch.Tensor"), "int"))
    b.assign("carry", b.const(None), annotation=carry,
             comment="resumed mid-epoch: (objective sums, batches)")  # fmt: skip
    top.stmt(py.ClassOp("Trainer", [], b.ops, decorators=[top.name("dataclass")]))
    return top.ops


def _model_call(b: PyBuilder, model: ModelPlan) -> SSAValue:
    from tensorloom.passes.train_lowering.train_loop import override_value

    overrides: dict[str, SSAValue] = {}
    for name, attr in model.overrides:
        value = override_value(attr)
        if value is not None:
            overrides[name] = b.value(value)  # type: ignore[arg-type]
    return b.call(model.model_class, **overrides)


def _build_trainer_ops(plan: StepsPlan) -> list[Operation]:
    top, b = PyBuilder(), PyBuilder()
    b.expr(b.call("seed_everything", b.path("args", "seed")))
    loaders = b.tuple_of(b.name("train_loader"), b.name("val_loader"), b.name("info"))
    b.assign(loaders, b.call("build_loaders", b.name("args"), b.name("ctx")))
    for model in plan.models:
        made = b.method(_model_call(b, model), "to", b.path("ctx", "device"))
        assign = py.AssignOp(b.name(model.name), made)
        if model.location is not None:
            assign.location = model.location  # type: ignore[assignment]
        b.stmt(assign)
    precision = b.call("resolve_precision", b.path("args", "precision"), b.path("ctx", "device"))
    b.assign("plan", precision)
    empty = b.value({})
    kind = b.generic("dict", "str", "torch.optim.Optimizer")
    b.assign("optimizers", empty, annotation=kind)
    _groups(b, plan)
    for step in plan.steps:
        for optimizer in step.optimizers:
            _optimizer(b, plan, step, optimizer)
    scalers = py.ComprehensionOp("dict", b.name("OBJECTIVES"), targets=1)
    name = scalers.body.block.args[0]
    name.name_hint = "name"
    inner = PyBuilder()
    inner.stmt(py.YieldOp([name, inner.call("make_grad_scaler", inner.name("plan"),
                                            inner.path("ctx", "device"))]))  # fmt: skip
    scalers.body.block.add_ops(inner.ops)
    b.assign("scalers", b.add(scalers))
    _schedulers(b, plan)
    for model in plan.models:
        if model.frozen:
            b.comment(f"`{model.name}` is in no step: run under no_grad, in eval mode")
            b.assign(model.name, b.call("Frozen", b.name(model.name)))
    compiled = [_compiled_models(b, plan)] if plan.compile_mode is not None else []
    scheduled = [b.name("schedulers")] if plan.scheduled else []
    fields = [b.name("ctx"), *(b.name(m.name) for m in plan.models), b.name("optimizers"),
              b.name("scalers"), *scheduled, b.name("plan"), b.name("train_loader"),
              b.name("val_loader"), b.name("info"), *compiled]  # fmt: skip
    b.ret(b.call("Trainer", *fields))
    params = [("args", "argparse.Namespace"), ("ctx", "DistContext")]
    top.def_("build_trainer", params, b, "Trainer")
    return top.ops


def _compiled_models(b: PyBuilder, plan: StepsPlan) -> SSAValue:
    """`{"net": maybe_compile(net, on_cuda, COMPILE_MODE)}`: what the steps and validation
    call; the trainer keeps the models themselves for the optimizers and checkpoints."""
    b.comment("`compile`: the steps and validation run the compiled models (on CUDA)")
    on_cuda = b.compare(b.path("ctx", "device", "type"), "==", b.const("cuda"))
    b.assign("on_cuda", on_cuda)
    entries = [(b.const(m.name), b.call("maybe_compile", b.name(m.name), b.name("on_cuda"),
                                        b.name("COMPILE_MODE"))) for m in plan.models]  # fmt: skip
    b.assign("compiled", b.add(py.DictOp(entries)))
    return b.name("compiled")


def _optimizer(b: PyBuilder, plan: StepsPlan, step: StepPlan, optimizer: OptimizerPlan) -> None:
    """`optimizers["ce.Muon"] = torch.optim.Muon(groups["hidden"], lr=0.02)`."""
    models = [_spelled(b, plan, a.selection) for a in optimizer.args]
    b.comment(f"`step {step.objective}`: {optimizer.optimizer} over {', '.join(models)}")
    params = _parameters(b, plan, optimizer)
    kwargs = {k: b.value(v) for k, v in optimizer.kwargs}
    made = b.call(f"torch.optim.{optimizer.optimizer}", params, **kwargs)
    assign = py.AssignOp(b.subscript(b.name("optimizers"), b.const(optimizer.key)), made)
    if optimizer.location is not None:
        assign.location = optimizer.location  # type: ignore[assignment]
    b.stmt(assign)


def _schedulers(b: PyBuilder, plan: StepsPlan) -> None:
    """`schedulers[name] = make_lr_scheduler(...)` for each of OPTIMIZER_SCHEDULES:
    runtime/recipe.py's LrSchedule as a LambdaLR of that optimizer, its decays spanning the
    run."""
    if not plan.scheduled:
        return
    b.comment(
        "each optimizer's `lr_schedule` (OPTIMIZER_SCHEDULES), stepped after each of its steps"
    )
    b.assign("steps_per_epoch", b.call("len", b.name("train_loader")))
    total = b.call("total_train_steps", b.path("args", "epochs"), b.name("steps_per_epoch"),
                   b.const(plan.base.recipe.max_steps))  # fmt: skip
    b.assign("total", total)
    empty = b.value({})
    kind = b.generic("dict", "str", "torch.optim.lr_scheduler.LRScheduler")
    b.assign("schedulers", empty, annotation=kind)
    loop = py.ForOp(b.method(b.name("OPTIMIZER_SCHEDULES"), "items"), targets=2)
    name, settings = loop.body.block.args
    name.name_hint, settings.name_hint = "name", "settings"
    each = PyBuilder()
    optimizer = each.subscript(each.name("optimizers"), name)
    each.assign("lr", each.subscript(each.attr(optimizer, "defaults"), each.const("lr")))
    each.assign("schedule", each.call(
        "lr_schedule_from", settings, steps_per_epoch=each.name("steps_per_epoch"),
        total_steps=each.name("total"), base_lr=each.name("lr")))  # fmt: skip
    made = each.call("make_lr_scheduler", each.subscript(each.name("optimizers"), name),
                     each.name("schedule"))  # fmt: skip
    each.assign(each.subscript(each.name("schedulers"), name), made)
    loop.body.block.add_ops(each.ops)
    b.stmt(loop)


def _spelled(b: PyBuilder, plan: StepsPlan, selection: Attribute) -> str:
    """An optimizer's argument as the block writes it, for the comment above it."""
    if isinstance(selection, StringAttr):
        return selection.data
    return "a selection"


def _parameters(b: PyBuilder, plan: StepsPlan, optimizer: OptimizerPlan) -> SSAValue:
    """`D.parameters()`, `[*G.parameters(), *E.parameters()]` for several models, a group's
    `ParamGroup`, or torch's param groups where an argument has options of its own:
    `[{"params": groups["rest"]}, {"params": groups["gains"], "weight_decay": 0.0}]`."""
    models = {m.name for m in plan.models}
    args = optimizer.args
    if all(_is_model(a.selection, models) and not a.options for a in args):
        names = [a.selection.data for a in args]  # type: ignore[attr-defined]
        if len(names) == 1:
            return b.method(b.name(names[0]), "parameters")
        starred = [b.add(py.UnaryOp("*", b.method(b.name(m), "parameters"))) for m in names]
        return b.add(py.ListOp(starred))
    if not any(a.options for a in args):
        if len(args) == 1:
            return _selection(b, plan, args[0].selection)
        starred = [b.add(py.UnaryOp("*", _selection(b, plan, a.selection))) for a in args]
        return b.add(py.ListOp(starred))
    entries: list[SSAValue] = []
    for arg in args:
        pairs = [(b.const("params"), _selection(b, plan, arg.selection))]
        pairs += [(b.const(k), b.value(v)) for k, v in arg.options]  # type: ignore[arg-type]
        entries.append(b.add(py.DictOp(pairs)))
    b.assign("param_groups", b.add(py.ListOp(entries)), comment="torch's per-group options")
    return b.name("param_groups")


def _is_model(selection: Attribute, models: set[str]) -> bool:
    return isinstance(selection, StringAttr) and selection.data in models


def _groups(b: PyBuilder, plan: StepsPlan) -> None:
    """`groups["hidden"] = parameter_group(net, "blocks", ndim=2)`: each `group` line, after
    the groups it names, selecting what `tlc check` resolved."""
    if not plan.groups:
        return
    b.comment("the parameter groups: each `group` line, as `tlc check` resolved it")
    empty = b.value({})
    b.assign("groups", empty, annotation=b.generic("dict", "str", "ParamGroup"))
    values = dict(plan.groups)
    done: list[str] = []
    for name, _ in plan.groups:
        _group(b, plan, name, values, done)


def _group(
    b: PyBuilder, plan: StepsPlan, name: str, values: dict[str, Attribute], done: list[str]
) -> None:
    if name in done:
        return
    done.append(name)
    for needed in selection_groups(values[name], values):
        _group(b, plan, needed, values, done)
    b.assign(b.subscript(b.name("groups"), b.const(name)), _selection(b, plan, values[name]))


def _selection(b: PyBuilder, plan: StepsPlan, selection: Attribute) -> SSAValue:
    """A selection as a `ParamGroup` expression: `groups["hidden"]`, `parameter_group(net)`,
    `parameter_group(net, "blocks", ndim=2)`, `a - b`."""
    groups = dict(plan.groups)
    match selection:
        case StringAttr(data=name) if name in groups:
            return b.subscript(b.name("groups"), b.const(name))
        case StringAttr(data=path):
            return _select(b, path, {})
        case CallAttr() if selection.callee.data == SELECT:
            options = {k: _plain(v) for k, v in selection.kwargs.data.items()}
            paths = [a.data for a in selection.args.data if isinstance(a, StringAttr)]
            parts = [_select(b, p, options) for p in paths]
            result = parts[0]
            for part in parts[1:]:
                result = b.binop("+", result, part)
            return result
        case ExprAttr():
            left, right = (_selection(b, plan, a) for a in selection.operands.data)
            return b.binop(selection.op.data, left, right)
        case _:
            raise AssertionError("check-train reports a selection it cannot resolve")


def _select(b: PyBuilder, path: str, options: dict[str, object]) -> SSAValue:
    model, rest = split_path(path)
    args = [b.name(model)] + ([b.const(rest)] if rest else [])
    kwargs = {k: b.value(v) for k, v in options.items() if v is not None}  # type: ignore[arg-type]
    return b.call("parameter_group", *args, **kwargs)


def _plain(attr: Attribute) -> object:
    value = evaluate(attr, {})
    return tuple(value) if isinstance(value, list) else value


# --- one batch -------------------------------------------------------------------------------


def _models_local(b: PyBuilder, plan: StepsPlan) -> list[SSAValue]:
    """`G, D = trainer.G, trainer.D`: the models the objectives take, in the block's order
    (`trainer.compiled["G"]`, ... under `compile`)."""
    names = [m.name for m in plan.models]
    compiled = plan.compile_mode is not None

    def model(n: str) -> SSAValue:
        if compiled:
            return b.subscript(b.path("trainer", "compiled"), b.const(n))
        return b.path("trainer", n)

    if len(names) == 1:
        b.assign(names[0], model(names[0]))
    else:
        b.assign(b.tuple_of(*(b.name(n) for n in names)), b.tuple_of(*(model(n) for n in names)))
    return [b.name(n) for n in names]


def _train_step_ops(plan: StepsPlan) -> list[Operation]:
    top, b = PyBuilder(), PyBuilder()
    top.comment("---- one batch: the block's steps, in order ----")
    b.expr(b.const("Each step of the train block on one batch, in order: zero the optimizer's "
                   "gradients,\ncompute the objective, backward, step that optimizer. Returns "
                   "each objective, detached.\n"))  # fmt: skip
    _models_local(b, plan)
    b.assign("device", b.path("trainer", "ctx", "device"))
    losses: list[tuple[str, str]] = []
    for step in plan.steps:
        _step(b, plan, step)
        losses.append((step.objective, f"{step.objective}_value"))
    b.stmt(py.AugAssignOp("+=", b.path("trainer", "step"), b.const(1)))
    entries = [(b.const(k), b.method(b.name(v), "detach")) for k, v in losses]
    b.ret(b.add(py.DictOp(entries)))
    params = [("trainer", "Trainer"), ("xb", "torch.Tensor"), ("yb", "torch.Tensor")]
    top.def_("train_step", params, b, top.generic("dict", "str", "torch.Tensor"))
    return top.ops


def _step(b: PyBuilder, plan: StepsPlan, step: StepPlan) -> None:
    """Zero the step's optimizers' gradients, the objective under autocast, backward and
    each optimizer's step (`step_optimizer`)."""
    written = ", ".join(f"{o.optimizer}(...)" for o in step.optimizers)
    if len(step.optimizers) == 1:
        written = f"{step.optimizers[0].optimizer}({', '.join(step.models)}, ...)"
    b.comment(f"step {step.objective} with {written}")
    keys = [b.subscript(b.path("trainer", "optimizers"), b.const(o.key)) for o in step.optimizers]
    if len(keys) == 1:
        b.assign("optimizer", keys[0])
        b.stmt(py.ExprOp(b.method(b.name("optimizer"), "zero_grad", set_to_none=b.const(True))))
    else:
        b.assign("optimizers", b.tuple_of(*keys))
        loop = py.ForOp(b.name("optimizers"))
        each = loop.body.block.args[0]
        each.name_hint = "optimizer"
        zero = PyBuilder()
        zero.stmt(py.ExprOp(zero.method(each, "zero_grad", set_to_none=zero.const(True))))
        loop.body.block.add_ops(zero.ops)
        b.stmt(loop)
    inner = PyBuilder()
    args = [inner.name(m.name) for m in plan.models] + [inner.name("xb"), inner.name("yb")]
    value = f"{step.objective}_value"
    assign = py.AssignOp(inner.name(value), inner.call(step.objective, *args))
    if step.location is not None:
        assign.location = step.location  # type: ignore[assignment]
    inner.stmt(assign)
    manager = b.call("autocast", b.path("trainer", "plan"), b.name("device"))
    b.stmt(py.WithOp(manager, inner.ops))
    scaler = b.subscript(b.path("trainer", "scalers"), b.const(step.objective))
    stepped = b.name("optimizer" if len(keys) == 1 else "optimizers")
    clips = [o.clip for o in step.optimizers]
    clip = {}
    if any(c is not None for c in clips):
        clip = {"clip": b.value(clips[0] if len(clips) == 1 else tuple(clips))}
    b.expr(b.call("step_optimizer", b.name(value), stepped, scaler, **clip))
    for optimizer in step.optimizers:
        if optimizer.schedule is not None:
            scheduler = b.subscript(b.path("trainer", "schedulers"), b.const(optimizer.key))
            b.expr(b.method(scheduler, "step"))


def _objective_values_ops(plan: StepsPlan) -> list[Operation]:
    top, b = PyBuilder(), PyBuilder()
    b.expr(b.const("Each objective on one validation batch, under autocast (no gradients)."))
    _models_local(b, plan)
    inner = PyBuilder()
    args = [inner.name(m.name) for m in plan.models] + [inner.name("xb"), inner.name("yb")]
    pairs = [(inner.const(f"val_{s.objective}"), inner.call(s.objective, *args))
             for s in plan.steps]  # fmt: skip
    inner.ret(inner.add(py.DictOp(pairs)))
    manager = b.call("autocast", b.path("trainer", "plan"), b.path("trainer", "ctx", "device"))
    b.stmt(py.WithOp(manager, inner.ops))
    params = [("trainer", "Trainer"), ("xb", "torch.Tensor"), ("yb", "torch.Tensor")]
    top.def_("objective_values", params, b, top.generic("dict", "str", "torch.Tensor"))
    return top.ops


# --- checkpoints and the run -----------------------------------------------------------------


def _parts(b: PyBuilder, plan: StepsPlan) -> SSAValue:
    """`{"G": trainer.G, "D": trainer.D}`."""
    return b.add(py.DictOp([(b.const(m.name), b.path("trainer", m.name)) for m in plan.models]))


def _save_ops(plan: StepsPlan) -> list[Operation]:
    top, save, resume = PyBuilder(), PyBuilder(), PyBuilder()
    top.comment("---- checkpoints: every model, optimizer and scaler ----")
    save.expr(save.const("`path` holds the run after `epoch` epochs (and a cut epoch's part)."))
    save.assign("models", _parts(save, plan))
    save.assign("extra", save.add(py.DictOp([(save.const("carry"),
                                                save.path("trainer", "carry"))])))  # fmt: skip
    save.expr(save.call(
        "save_models_checkpoint", save.name("path"), models=save.name("models"),
        optimizers=save.path("trainer", "optimizers"), scalers=save.path("trainer", "scalers"),
        epoch=save.name("epoch"), step=save.path("trainer", "step"),
        loader=save.path("trainer", "train_loader"), extra=save.name("extra"),
        **_scheduler_states(save, plan),
    ))  # fmt: skip
    params = [("trainer", "Trainer"), ("path", "str"), ("epoch", "int")]
    top.def_("save", params, save, None)
    resume.assign("models", _parts(resume, plan))
    state = resume.call(
        "load_models_checkpoint", resume.name("path"), models=resume.name("models"),
        optimizers=resume.path("trainer", "optimizers"),
        scalers=resume.path("trainer", "scalers"), loader=resume.path("trainer", "train_loader"),
        map_location=resume.path("trainer", "ctx", "device"), **_scheduler_states(resume, plan),
    )  # fmt: skip
    resume.assign("state", state)
    resume.assign(resume.path("trainer", "start_epoch"),
                  resume.subscript(resume.name("state"), resume.const("epoch")))  # fmt: skip
    resume.assign(resume.path("trainer", "step"),
                  resume.subscript(resume.name("state"), resume.const("step")))  # fmt: skip
    extra = resume.subscript(resume.name("state"), resume.const("extra"))
    resume.assign(resume.path("trainer", "carry"),
                  resume.method(extra, "get", resume.const("carry")))  # fmt: skip
    top.def_("resume", [("trainer", "Trainer"), ("path", "str")], resume, None)
    return top.ops


def _scheduler_states(b: PyBuilder, plan: StepsPlan) -> dict[str, SSAValue]:
    """`schedulers=trainer.schedulers` where the block has `lr_schedule`s."""
    return {"schedulers": b.path("trainer", "schedulers")} if plan.scheduled else {}


def _train_ops(plan: StepsPlan) -> list[Operation]:
    """`train(args, ctx)`: the epochs; each one's objectives, validated, as a record."""
    top, b = PyBuilder(), PyBuilder()
    top.comment("---- the loop ----")
    _checkpoint_folder(b)
    b.assign("trainer", b.call("build_trainer", b.name("args"), b.name("ctx")))
    if plan.base.amp:
        warn = PyBuilder()
        warn.expr(warn.call("print", warn.path("trainer", "plan", "warning"),
                            file=warn.name("sys.stderr")))  # fmt: skip
        b.if_(b.is_set(b.path("trainer", "plan", "warning")), warn)
    evaluate = PyBuilder()
    _evaluate_checkpoint(evaluate, plan)
    b.if_(b.is_set(b.path("args", "evaluate")), evaluate)
    resumed = PyBuilder()
    resumed.expr(resumed.call("resume", resumed.name("trainer"), resumed.path("args", "resume")))
    resumed.expr(resumed.call("print", resumed.fstring(
        "resumed from {} after epoch {}", resumed.path("args", "resume"),
        resumed.path("trainer", "start_epoch"))))  # fmt: skip
    b.if_(b.is_set(b.path("args", "resume")), resumed)
    b.assign("metrics", b.call("MetricsWriter", b.path("args", "metrics")))
    b.assign("epochs_done", b.path("trainer", "start_epoch"))
    b.assign("started", b.call("time.perf_counter"))
    epochs = b.call("range", b.path("trainer", "start_epoch"), b.path("args", "epochs"))
    loop = py.ForOp(epochs)
    epoch = loop.body.block.args[0]
    epoch.name_hint = "epoch"
    each = PyBuilder()
    _epoch(each, plan, epoch)
    loop.body.block.add_ops(each.ops)
    if plan.base.loop_location is not None:
        loop.location = plan.base.loop_location  # type: ignore[assignment]
    b.stmt(loop)
    b.expr(b.method(b.name("metrics"), "close"))
    b.assign("seconds", b.binop("-", b.call("time.perf_counter"), b.name("started")))
    b.expr(b.call("print", b.fstring("done: {} epochs, {} steps in {:.1f}s", b.name("epochs_done"),
                                     b.path("trainer", "step"), b.name("seconds"))))  # fmt: skip
    b.ret(b.const(0))
    top.def_("train", [("args", "argparse.Namespace"), ("ctx", "DistContext")], b, "int")
    return top.ops


def _checkpoint_folder(b: PyBuilder) -> None:
    """Before step 1, the folder the run saves in (runtime/checkpoint.py): writable, and never
    one that holds another run's checkpoints (a `run-N` folder inside it instead)."""
    then = PyBuilder()
    options = {"resume": then.path("args", "resume"), "overwrite": then.path("args", "overwrite")}
    folder = then.call("prepare_checkpoint_dir", then.path("args", "checkpoint_dir"), **options)
    folder.name_hint = "folder"  # too wide for one line with the assignment
    then.assign(then.path("args", "checkpoint_dir"), then.call("str", folder))
    b.comment("a run never loses another's work: a folder of its own if this one is used")
    named = b.is_set(b.path("args", "checkpoint_dir"))
    training = b.compare(b.path("args", "evaluate"), "is", b.const(None))
    b.if_(b.binop("and", named, training), then)


def _epoch(b: PyBuilder, plan: StepsPlan, epoch: SSAValue) -> None:
    """One epoch: train (`run_epoch`), validate, record, save."""
    max_steps = b.path("args", "max_steps")
    reached = b.add(py.BinOp("and", b.is_set(max_steps), b.compare(
        b.path("trainer", "step"), ">=", b.path("args", "max_steps"))))  # fmt: skip
    stop = PyBuilder()
    stop.stmt(py.BreakOp())
    b.if_(reached, stop)
    b.assign("start", b.call("time.perf_counter"))
    for model in plan.models:
        b.expr(b.method(b.path("trainer", model.name), "train"))
    b.expr(b.method(b.path("trainer", "train_loader"), "set_epoch", epoch))
    zeros = py.ComprehensionOp("dict", b.name("OBJECTIVES"), targets=1)
    key = zeros.body.block.args[0]
    key.name_hint = "name"
    inner = PyBuilder()
    device = inner.path("trainer", "ctx", "device")
    inner.stmt(py.YieldOp([key, inner.call("torch.zeros", inner.tuple_of(), device=device)]))
    zeros.body.block.add_ops(inner.ops)
    b.assign("fresh", b.tuple_of(b.add(zeros), b.const(0)))
    carried = b.add(py.BinOp("or", b.path("trainer", "carry"), b.name("fresh")))
    b.assign(b.tuple_of(b.name("sums"), b.name("done")), carried)
    b.assign(b.path("trainer", "carry"), b.const(None))
    b.assign("total", b.call("len", b.path("trainer", "train_loader")))
    bar = b.call("progress", b.path("trainer", "train_loader"), total=b.name("total"),
                 description=b.fstring("epoch {}", b.binop("+", epoch, b.const(1))))  # fmt: skip
    b.assign("batches", bar)
    b.assign("stop", _stop_lambda(b))
    step = b.call("partial", b.name("train_step"), b.name("trainer"))
    b.assign(b.tuple_of(b.name("sums"), b.name("done")), b.call(
        "run_epoch", step, b.name("batches"), sums=b.name("sums"), done=b.name("done"),
        total=b.name("total"), stop=b.name("stop")))  # fmt: skip
    elapsed = b.binop("-", b.call("time.perf_counter"), b.name("start"))
    b.assign("elapsed", elapsed)
    complete = b.compare(b.name("done"), "==", b.name("total"))
    b.assign("complete", complete)
    cut = PyBuilder()
    cut.comment("cut short: last.pt keeps the epoch's batches so far; no validation on the way out")
    cut.assign(cut.path("trainer", "carry"), cut.tuple_of(cut.name("sums"), cut.name("done")))
    path = cut.fstring("{}/last.pt", cut.path("args", "checkpoint_dir"))
    cut.expr(cut.call("save", cut.name("trainer"), path, epoch))
    cut.stmt(py.BreakOp())
    b.if_(b.not_(b.name("complete")), cut)
    for model in plan.models:
        b.expr(b.method(b.path("trainer", model.name), "eval"))
    means = py.ComprehensionOp("dict", b.method(b.name("sums"), "items"), targets=2)
    k, total = means.body.block.args
    k.name_hint, total.name_hint = "key", "value"
    mi = PyBuilder()
    mean = mi.binop("/", mi.method(total, "item"), mi.call("max", mi.name("done"), mi.const(1)))
    mi.stmt(py.YieldOp([k, mean]))
    means.body.block.add_ops(mi.ops)
    _record(b, plan, epoch, means)


def _stop_lambda(b: PyBuilder) -> SSAValue:
    """`lambda: args.max_steps is not None and trainer.step >= args.max_steps`."""
    inner = PyBuilder()
    limit = inner.path("args", "max_steps")
    reached = inner.add(py.BinOp("and", inner.is_set(limit), inner.compare(
        inner.path("trainer", "step"), ">=", inner.path("args", "max_steps"))))  # fmt: skip
    inner.ret(reached)
    return b.add(py.LambdaOp([], inner.ops))


def _record(b: PyBuilder, plan: StepsPlan, epoch: SSAValue, means: py.ComprehensionOp) -> None:
    b.assign("means", b.add(means))
    b.assign("validated", b.call("mean_objectives", b.call(
        "partial", b.name("objective_values"), b.name("trainer")),
        b.path("trainer", "val_loader")))  # fmt: skip
    b.assign("samples", b.binop("*", b.name("done"), b.path("args", "batch_size")))
    record = py.DictOp([
        (b.const("epoch"), b.binop("+", epoch, b.const(1))),
        (None, b.name("means")),
        (None, b.name("validated")),
        (b.const("samples_per_s"), b.binop("/", b.name("samples"), b.name("elapsed"))),
        (b.const("time"), b.name("elapsed")),
        (b.const("steps"), b.path("trainer", "step")),
    ])  # fmt: skip
    b.assign("record", b.add(record))
    b.expr(b.method(b.name("metrics"), "write", b.name("record")))
    b.expr(b.call("print", b.call("format_steps_summary", b.name("record"),
                                  epochs=b.path("args", "epochs"))))  # fmt: skip
    b.assign("epochs_done", b.binop("+", epoch, b.const(1)))
    b.assign("last", b.compare(b.name("epochs_done"), "==", b.path("args", "epochs")))
    every = b.is_set(b.name("CHECKPOINT_EVERY"))
    periodic = b.compare(b.binop("%", b.name("epochs_done"), b.name("CHECKPOINT_EVERY")), "==",
                         b.const(0))  # fmt: skip
    b.assign("due", b.add(py.BinOp("and", every, periodic)))
    due = b.add(py.BinOp("or", b.name("last"), b.name("due")))
    saving = PyBuilder()
    path2 = saving.fstring("{}/last.pt", saving.path("args", "checkpoint_dir"))
    saving.expr(saving.call("save", saving.name("trainer"), path2, saving.name("epochs_done")))
    b.if_(due, saving)


def _evaluate_checkpoint(b: PyBuilder, plan: StepsPlan) -> None:
    """--evaluate CHECKPOINT: the validation objectives of its weights; no training."""
    b.assign("models", _parts(b, plan))
    state = b.call("load_models_checkpoint", b.path("args", "evaluate"), models=b.name("models"),
                   map_location=b.path("trainer", "ctx", "device"))  # fmt: skip
    b.assign("state", state)
    for model in plan.models:
        b.expr(b.method(b.path("trainer", model.name), "eval"))
    each = b.call("partial", b.name("objective_values"), b.name("trainer"))
    b.assign("validated", b.call("mean_objectives", each, b.path("trainer", "val_loader")))
    epoch = b.subscript(b.name("state"), b.const("epoch"))
    record = py.DictOp([(b.const("epoch"), epoch), (None, b.name("validated"))])
    b.assign("record", b.add(record))
    b.expr(b.call("print", b.call("json.dumps", b.name("record"))))
    b.ret(b.const(0))


def _main_ops() -> list[Operation]:
    top, body, run = PyBuilder(), PyBuilder(), PyBuilder()
    body.assign("args", body.call("parse_args", body.name("argv")))
    ctx = run.call("DistContext", run.const(0), run.const(0), run.const(1),
                   run.call("resolve_device", run.path("args", "device")))  # fmt: skip
    run.assign("ctx", ctx)
    run.ret(run.call("train", run.name("args"), run.name("ctx")))
    region = py.single_block([], 1)
    (error,) = region.block.args
    error.name_hint = "error"
    handler = PyBuilder()
    handler.expr(handler.call("print", handler.fstring("error: {}", error),
                              file=handler.name("sys.stderr")))  # fmt: skip
    handler.ret(handler.const(1))
    region.block.add_ops(handler.ops)
    names = ("DatasetUnavailable", "DeviceUnavailable", "StepsCheckpointError", "CheckpointError")
    errors = body.tuple_of(*(body.name(n) for n in names))
    body.stmt(py.TryOp(run.ops, [(errors, region)]))
    argv = top.optional(top.generic("list", "str"))
    top.stmt(py.DefOp("main", ["argv"], body.ops, defaults={"argv": top.const(None)},
                      annotations={"argv": argv}, returns=top.name("int")))  # fmt: skip
    return top.ops
