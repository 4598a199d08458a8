"""The script's set-up as `py` ops: `build_scheduler`, `build_trainer` (which fills
runtime/trainer.py's `Trainer` record) and `build_recipe` (DDP, FSDP).

    def build_trainer(args: argparse.Namespace, ctx: DistContext) -> Trainer:
        seed_everything(args.seed)              # the model alike on every rank
        train_loader, val_loader, info = build_loaders(args, ctx)
        model = Classifier().to(ctx.device)  # mnist.tl:31
        plan = resolve_precision(args.precision, ctx.device)
        ...
        seed_everything(args.seed + ctx.rank)   # DDP, FSDP: each rank its own noise
        return Trainer(ctx, model, train_model, compiled, optimizer, scheduler, ..., scaler=scaler)

What the plan decides: the precision plan and the GradScaler (fields, arguments, their
`Trainer` slots) only under insert-amp's marker; DDP's wrap or FSDP's sharding under
insert-ddp's; the schedule with `lr_schedule`; `planned_epochs` when the block leaves
`epochs` to `max_steps`; weight-decay groups where weight decay applies; the fused (or
capturable) optimizer where the user chose no implementation; and, for a step that may be
captured whole (runtime/graphs.py), the run's choice between that graph and torch.compile.
The model and the optimizer carry their lines of the `.tl` file (the source map).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue

from tensorloom.catalogue.optimizers import OPTIMIZERS
from tensorloom.catalogue.schedules import PER_EPOCH
from tensorloom.dialects import py
from tensorloom.passes.support.param_groups import ParamArg, decode
from tensorloom.passes.support.py_builder import PyBuilder, Value
from tensorloom.passes.train_lowering.optimizer_groups import GroupEmitter
from tensorloom.passes.train_lowering.plan import OPTIMIZER_MODES as MODES
from tensorloom.passes.train_lowering.plan import ScriptPlan
from tensorloom.passes.train_lowering.train_loop import model_ops

DEFINES = ("build_scheduler", "build_trainer", "build_recipe")
"""The top-level names these take in the script (mangle-names keeps them free)."""


# --- `build_scheduler` -----------------------------------------------------------------------


def scheduler_ops(plan: ScriptPlan) -> list[Operation]:
    """`build_scheduler` (with `lr_schedule`): runtime/recipe.py's schedule as a torch one."""
    if plan.schedule is None:
        return []
    top, body = PyBuilder(), PyBuilder()
    params = [("optimizer", "torch.optim.Optimizer"), ("steps_per_epoch", "int"),
              ("total_steps", "int")]  # fmt: skip
    if plan.schedule in PER_EPOCH:
        _plateau(body, plan)
        top.def_("build_scheduler", params, body, "torch.optim.lr_scheduler.ReduceLROnPlateau")
        return top.ops
    body.expr(body.const("`lr_schedule`: runtime/recipe.py's LrSchedule, stepped once per "
                         "optimizer step."))  # fmt: skip
    schedule = body.call("lr_schedule_from", body.name("LR_SCHEDULE"),
                         steps_per_epoch=body.name("steps_per_epoch"),
                         total_steps=body.name("total_steps"),
                         base_lr=body.name("LEARNING_RATE"))  # fmt: skip
    body.assign("schedule", schedule)
    body.ret(body.call("make_lr_scheduler", body.name("optimizer"), body.name("schedule")))
    top.def_("build_scheduler", params, body, "torch.optim.lr_scheduler.LRScheduler")
    return top.ops


def _plateau(body: PyBuilder, plan: ScriptPlan) -> None:
    """`ReduceLROnPlateau(optimizer, mode="min", factor=LR_SCHEDULE["factor"], ...)`."""
    body.expr(body.const("`lr_schedule = plateau`: torch's ReduceLROnPlateau on the validation "
                         "loss, stepped after each validation."))  # fmt: skip
    for key in plan.schedule_kwargs:
        body.assign(key, body.subscript(body.name("LR_SCHEDULE"), body.const(key)))
    arguments = [("", body.name("optimizer")), ("mode", body.const("min"))]
    arguments += [(key, body.name(key)) for key in plan.schedule_kwargs]
    body.ret(body.call_with("torch.optim.lr_scheduler.ReduceLROnPlateau", arguments))


# --- `build_trainer` -------------------------------------------------------------------------


def _on_device(b: PyBuilder, value: SSAValue) -> SSAValue:
    """`value.to(ctx.device)`."""
    return b.method(value, "to", b.path("ctx", "device"))


def _model(b: PyBuilder, plan: ScriptPlan) -> None:
    """`model = Classifier().to(ctx.device)` (the instance's line), its checkpointed layers."""
    b.assign("model", _on_device(b, model_ops(b, plan)))
    if plan.model_location is not None:
        b.ops[-1].location = plan.model_location  # the `# mnist.tl:31` of the source map
    if plan.setting("freeze", list):
        b.expr(b.call("freeze_layers", b.name("model"), b.name("FREEZE")))
    if plan.lora is not None:
        b.expr(b.call_with("add_lora", [("", b.name("model")), ("**", b.name("LORA"))]))
    if plan.checkpointed_layers:
        layers = b.add(py.ListOp([b.const(n) for n in plan.checkpointed_layers]))
        b.expr(b.call("checkpoint_activations", b.name("model"), layers))


def _precision_plan(b: PyBuilder, plan: ScriptPlan) -> None:
    """`plan = resolve_precision(...)` under insert-amp's marker."""
    if plan.amp:
        device = b.path("ctx", "device")
        b.assign("plan", b.call("resolve_precision", b.path("args", "precision"), device))


def _scaler(b: PyBuilder, plan: ScriptPlan) -> None:
    """`scaler = make_grad_scaler(plan, ctx.device)` under insert-amp's marker."""
    if plan.amp:
        b.assign("scaler", b.call("make_grad_scaler", b.name("plan"), b.path("ctx", "device")))


def _shard(b: PyBuilder, plan: ScriptPlan, model: str) -> None:
    """`shard_model(model, FSDP_BLOCKS, ...)`: gathered in the training precision."""
    arguments = [("", b.name(model)), ("", b.name("FSDP_BLOCKS"))]
    if plan.amp:  # else the weights are gathered as they are stored, in fp32
        arguments.append(("param_dtype", b.path("plan", "autocast_dtype")))
    b.expr(b.call_with("shard_model", arguments))


def _parameters(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """What the optimizer steps: `decay_groups`' two groups only where weight decay applies."""
    spec = OPTIMIZERS.get(plan.setting("optimizer", str))
    decay = dict(plan.optimizer_kwargs).get("weight_decay")
    if decay is None:
        decay = spec.default_weight_decay if spec is not None else 0.0
    if not plan.setting("decay_groups", bool) or decay == 0:
        # only what trains: frozen weights get no state
        if plan.setting("freeze", list) or plan.lora is not None:
            return b.call("decay_param_groups", b.name("model"), b.const(False))
        return b.method(b.name("model"), "parameters")
    return b.call("decay_param_groups", b.name("model"))


def _on_cuda(b: PyBuilder) -> SSAValue:
    return b.compare(b.path("ctx", "device", "type"), "==", b.const("cuda"))


Modes = Callable[[PyBuilder, ScriptPlan], list[tuple[str, SSAValue]]]


def _optimizer(b: PyBuilder, plan: ScriptPlan, modes: Modes) -> None:
    """`optimizer = torch.optim.Adam(params, lr=LEARNING_RATE, ..., fused=...)`: the
    block's keywords (`lr` is LEARNING_RATE), then the implementation this run picks."""
    if plan.optimizer_set:
        _optimizer_set(b, plan)
        return
    params = _parameters(b, plan)
    options = [(k, b.value(v)) for k, v in plan.optimizer_kwargs]
    arguments = [("", params), ("lr", b.name("LEARNING_RATE")), *options, *modes(b, plan)]
    b.assign("optimizer", b.call_with(f"torch.optim.{plan.setting('optimizer', str)}", arguments))
    if plan.optimizer_location is not None:
        b.ops[-1].location = plan.optimizer_location


def _optimizer_set(b: PyBuilder, plan: ScriptPlan) -> None:
    """`optimizer = (Muon(hidden), AdamW(rest))`: the groups, each optimizer over its own
    (fused on CUDA where torch has it and the block chose no implementation), and one
    `OptimizerSet` the loop steps, schedules, clips and checkpoints as it would one."""
    emitter = GroupEmitter(dict(plan.groups), {plan.instance: "model"})
    emitter.emit_groups(b)
    empty = b.value({})
    b.assign("optimizers", empty, annotation=b.generic("dict", "str", "torch.optim.Optimizer"))
    keys: list[str] = []
    for entry in plan.optimizer_set:
        name = str(entry["name"])
        key = name if name not in keys else f"{name}_{keys.count(name) + 1}"
        keys.append(name)
        args = [ParamArg(decode(a["select"]), tuple(a["options"].items()))  # type: ignore[index,union-attr]
                for a in entry["args"]]  # type: ignore[union-attr]  # fmt: skip
        kwargs: dict[str, Value] = dict(entry["kwargs"])  # type: ignore[call-overload]
        arguments = [("", emitter.parameters(b, args))]
        arguments += [(k, b.value(v)) for k, v in kwargs.items()]
        if name in ("Adam", "AdamW", "SGD") and not plan.sharded and not set(kwargs) & MODES:
            arguments.append(("fused", _on_cuda(b)))
        made = b.call_with(f"torch.optim.{name}", arguments)
        b.assign(b.subscript(b.name("optimizers"), b.const(key)), made)
    b.assign("optimizer", b.call("OptimizerSet", b.name("optimizers")))
    if plan.optimizer_location is not None:
        b.ops[-1].location = plan.optimizer_location


def _implementation(b: PyBuilder, plan: ScriptPlan) -> list[tuple[str, SSAValue]]:
    """`fused` on CUDA for Adam, AdamW and SGD unless the user chose an implementation; not
    under FSDP, whose shards are DTensors (the default, foreach, step)."""
    if plan.sharded or not plan.fusable_optimizer:
        return []
    return [("fused", _on_cuda(b))]


def _per_epoch(b: PyBuilder) -> SSAValue:
    """`len(train_loader) // GRAD_ACCUM`: the optimizer steps of one epoch."""
    return b.binop("//", b.call("len", b.name("train_loader")), b.name("GRAD_ACCUM"))


def _schedule(b: PyBuilder, plan: ScriptPlan) -> bool:
    """The steps per epoch (for a schedule, or `planned_epochs`), the epochs `max_steps`
    takes when the block sets none, and `scheduler`. Whether it named `steps_per_epoch`."""
    named = plan.schedule is not None or not plan.has("epochs")
    if named:
        b.assign("steps_per_epoch", _per_epoch(b))
    if not plan.has("epochs"):
        _planned_epochs(b, b.name("steps_per_epoch"))
    if plan.schedule is None:
        _no_schedule(b)
        return named
    total = b.call("total_train_steps", b.path("args", "epochs"), b.name("steps_per_epoch"),
                   b.name("MAX_STEPS"))  # fmt: skip
    b.assign("total", total)
    scheduler = b.call("build_scheduler", b.name("optimizer"), b.name("steps_per_epoch"),
                       b.name("total"))  # fmt: skip
    b.assign("scheduler", scheduler)
    return named


def _planned_epochs(b: PyBuilder, steps_per_epoch: SSAValue) -> None:
    """`args.epochs = planned_epochs(...)`: the epochs `max_steps` takes."""
    planned = b.call("planned_epochs", b.path("args", "epochs"), b.name("MAX_STEPS"),
                     steps_per_epoch)  # fmt: skip
    b.assign(b.path("args", "epochs"), planned)


def _no_schedule(b: PyBuilder) -> None:
    b.stmt(py.AssignOp(b.name("scheduler"), b.const(None), comment="no `lr_schedule`"))


def _should_compile(
    b: PyBuilder, plan: ScriptPlan, per_epoch_named: bool = False, captured: bool = False
) -> SSAValue:
    """`should_compile(...)` (runtime/compiling.py): the eager step it times is `BatchLoss`,
    under the precision plan's autocast; rank 0 says which way it went. Its steps read
    `steps_per_epoch` where `_schedule` named it (`per_epoch_named`)."""
    off = b.const("off")
    choice = b.add(py.IfExpOp(b.path("args", "no_compile"), off, b.path("args", "compile")))
    arguments = [("", choice), ("", b.name("COMPILE_MODE")), ("", b.path("ctx", "device"))]
    per_epoch = b.name("steps_per_epoch") if per_epoch_named else _per_epoch(b)
    steps = b.call("total_train_steps", b.path("args", "epochs"), per_epoch,
                   b.path("args", "max_steps"))  # fmt: skip
    arguments += [("steps", steps), ("batch_loss", batch_loss(b, plan)),
                  ("loader", b.name("train_loader"))]  # fmt: skip
    if plan.amp:
        region = b.call("partial", b.name("autocast"), b.name("plan"), b.path("ctx", "device"))
        arguments.append(("region", region))
    if plan.distributed:
        arguments.append(("announce", b.path("ctx", "is_main")))
    if captured:  # a captured step is not compiled
        arguments.append(("captured", b.name("whole_step")))
    return b.call_with("should_compile", arguments)


def batch_loss(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """`ModelLoss(model, loss_fn)` (runtime/trainer.py), or the program's `BatchLoss(model)`
    for an objective or a loss that takes the inputs."""
    if plan.model_loss:
        return b.call("ModelLoss", b.name("model"), b.name("loss_fn"))
    return b.call("BatchLoss", b.name("model"))


def _maybe_compile(b: PyBuilder, module: SSAValue) -> SSAValue:
    return b.call("maybe_compile", module, b.name("compile_it"), b.name("COMPILE_MODE"))


def _train_model(b: PyBuilder, plan: ScriptPlan) -> None:
    """What the step trains: FSDP's model (sharded in place), DDP's wrap of the compiled
    model, or, in one process, `BatchLoss` compiled (the forward and the loss in one graph,
    as nanoGPT computes its loss inside `forward`: an LM's [B*T, vocab] logits are then never
    cast to fp32 and log-softmaxed by eager kernels; bench/RESULTS.md, GPT-2)."""
    annotation = b.name("nn.Module")
    if plan.sharded:
        b.comment("sharded in place")
        b.stmt(py.AssignOp(b.name("train_model"), b.name("compiled"), annotation=annotation))
        return
    if not plan.distributed:
        b.comment("the step's forward and loss, compiled together; evaluation runs `compiled`")
        b.assign("train_model", _maybe_compile(b, batch_loss(b, plan)))
        return
    b.stmt(py.AssignOp(b.name("train_model"), b.name("compiled"), annotation=annotation))
    wrap = PyBuilder()
    cuda = _on_cuda(wrap)  # Python evaluates the condition first
    index = wrap.add(py.ListOp([wrap.path("ctx", "device", "index")]))
    ids = wrap.add(py.IfExpOp(cuda, index, wrap.const(None)))
    wrap.assign("device_ids", ids)
    # `carry h = net.h0`: h0 has a gradient at an epoch's first batch only
    unused = {"find_unused_parameters": wrap.const(True)} if plan.learns_carry_start() else {}
    ddp = wrap.call("DistributedDataParallel", wrap.name("compiled"),
                    device_ids=wrap.name("device_ids"), **unused)  # fmt: skip
    wrap.assign("train_model", ddp)
    b.if_(b.path("ctx", "is_distributed"), wrap)


def _trainer(b: PyBuilder, plan: ScriptPlan, *extra: tuple[str, SSAValue]) -> None:
    """`return Trainer(ctx, model, ..., build_recipe(model, ctx), scaler=scaler, plan=plan)`
    (runtime/trainer.py's record; the scaler and precision plan with insert-amp)."""
    fields = ["ctx", "model", "train_model", "compiled", "optimizer", "scheduler",
              "train_loader", "val_loader", "info"]  # fmt: skip
    arguments = [("", b.name(f)) for f in fields]
    if plan.distributed:
        recipe = b.call("build_recipe", b.name("model"), b.name("ctx"), *_recipe_plan(b, plan))
    else:  # one process: the recipe's parts and the stop signals, here
        b.assign("recipe", b.call_with("RunRecipe", [*_recipe_parts(b, plan),
                                                      ("signals", _signals(b, plan))]),
                 comment="the block's recipe keys (runtime/recipe.py)")  # fmt: skip
        recipe = b.name("recipe")
    amp = [(f, b.name(f)) for f in ("scaler", "plan")] if plan.amp else []
    b.ret(b.call_with("Trainer", [*arguments, ("", recipe), *amp, *extra]))


def _own_noise(b: PyBuilder, plan: ScriptPlan) -> None:
    """`seed_everything(args.seed + ctx.rank)` under DDP or FSDP, once the model is built
    from the one seed (alike on every rank): what the steps draw (dropout, an objective's
    `randint` and `randn_like`) is each rank's own; rank 0 draws what `--seed` gives."""
    if not plan.distributed:
        return
    b.comment("each rank its own noise from here on (the model above, built from the one")
    b.comment("seed, is alike on every rank)")
    b.expr(b.call("seed_everything", b.binop("+", b.path("args", "seed"), b.path("ctx", "rank"))))


def _recipe_plan(b: PyBuilder, plan: ScriptPlan) -> list[SSAValue]:
    """FSDP's `build_recipe` takes the precision plan: the EMA's copy is sharded in it."""
    return [b.name("plan")] if plan.sharded and plan.amp else []


def _start(b: PyBuilder, plan: ScriptPlan) -> None:
    """The seeds, the loaders, the model and the precision plan: every `build_trainer`'s."""
    b.expr(b.call("seed_everything", b.path("args", "seed")))
    loaders = b.call("build_loaders", b.name("args"), b.name("ctx"))
    b.assign(b.tuple_of(b.name("train_loader"), b.name("val_loader"), b.name("info")), loaders)
    _model(b, plan)
    _precision_plan(b, plan)


def _build_trainer(b: PyBuilder, plan: ScriptPlan) -> None:
    """The body of `build_trainer` for a step that is never captured whole."""
    _start(b, plan)
    if plan.sharded:
        gathered = " in the training precision" if plan.amp else ""
        b.comment(f"FSDP2: each block's weights are all-gathered{gathered} for its forward and")
        b.comment("backward, then freed; gradients are reduce-scattered in fp32.")
        _shard(b, plan, "model")
    _optimizer(b, plan, _implementation)
    per_epoch_named = _schedule(b, plan)
    b.assign("compile_it", _should_compile(b, plan, per_epoch_named))
    b.assign("compiled", _maybe_compile(b, b.name("model")))
    _train_model(b, plan)
    _scaler(b, plan)
    _own_noise(b, plan)
    _trainer(b, plan)


def build_trainer_ops(plan: ScriptPlan) -> list[Operation]:
    """`build_trainer(args, ctx)`: the `Trainer` of this run (and `_whole_step_graph`, which
    decides whether it captures its whole step, for a block that allows it)."""
    top, body = PyBuilder(), PyBuilder()
    if plan.whole_step_graph:
        _graph_build_trainer(body, plan)
    else:
        _build_trainer(body, plan)
    params = [("args", "argparse.Namespace"), ("ctx", "DistContext")]
    top.def_("build_trainer", params, body, "Trainer")
    return top.ops


def _graph_build_trainer(b: PyBuilder, plan: ScriptPlan) -> None:
    """The body of `build_trainer` for a block whose step may be captured whole (see
    runtime/graphs.py): the run decides, and the optimizer and torch.compile follow."""
    _start(b, plan)
    _scaler(b, plan)
    scaler = b.name("scaler") if plan.amp else b.const(None)
    allowed = b.not_(b.path("args", "no_cuda_graph"))
    decided = b.call("captures_whole_step", b.name("model"), b.name("train_loader"), scaler,
                     b.path("ctx", "device"), allowed=allowed)  # fmt: skip
    b.assign("whole_step", decided)
    if not plan.has("epochs"):
        _planned_epochs(b, b.call("len", b.name("train_loader")))
    _optimizer(b, plan, _capturable)
    _no_schedule(b)
    b.assign("compile_it", _should_compile(b, plan, captured=True))
    b.assign("compiled", _maybe_compile(b, b.name("model")))
    b.assign("train_model", _maybe_compile(b, batch_loss(b, plan)))
    _own_noise(b, plan)
    _trainer(b, plan, ("whole_step", b.name("whole_step")))


def _capturable(b: PyBuilder, plan: ScriptPlan) -> list[tuple[str, SSAValue]]:
    """Fused Adam/AdamW is capture-safe with capturable=True: one kernel for the whole
    update, where the capturable foreach path launches a dozen per step. Fused SGD is not."""
    if plan.setting("optimizer", str) == "SGD":
        return [("fused", b.binop("and", _on_cuda(b), b.not_(b.name("whole_step"))))]
    return [("fused", _on_cuda(b)), ("capturable", b.name("whole_step"))]


# --- `build_recipe` --------------------------------------------------------------------------


def _sharded_ema(b: PyBuilder, plan: ScriptPlan) -> None:
    """Under FSDP the `ema` average is a second model sharded as the model is: each rank
    averages its own shards, with no communication."""
    b.comment("its weights take no numbers from the run")
    forked = b.call("torch.random.fork_rng", devices=b.add(py.ListOp([])))
    copy = PyBuilder()
    copy.assign("ema_copy", _on_device(copy, model_ops(copy, plan)))
    b.stmt(py.WithOp(forked, copy.ops))
    _shard(b, plan, "ema_copy")


def _recipe_parts(b: PyBuilder, plan: ScriptPlan) -> list[tuple[str, SSAValue]]:
    """`RunRecipe`'s keywords: only the parts the block uses."""
    parts: list[tuple[str, SSAValue]] = []
    if plan.has("ema"):
        copy = [b.name("ema_copy")] if plan.sharded else []
        parts.append(("ema", b.call("ModelEMA", b.name("model"), b.name("EMA_DECAY"), *copy)))
    if plan.has("early_stopping"):
        patience = b.call_with("EarlyStopping", [("*", b.name("EARLY_STOPPING"))])
        parts.append(("stopper", patience))
    metric = b.name("KEEP_BEST") if plan.has("keep_best") else b.const("val_loss")
    parts.append(("best", b.call("BestTracker", metric)))
    if plan.has("eval_every"):
        parts.append(("eval_every", b.name("EVAL_EVERY")))
    return parts


def _signals(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """SIGINT and SIGTERM stop the run at a step; several processes must stop at one step,
    so a process group installs no handlers."""
    if not plan.distributed:
        return b.method(b.call("StopSignals"), "install")
    b.comment("several processes must stop at one step: no handlers")
    b.assign("signals", b.const(None))
    install = PyBuilder()
    install.assign("signals", install.method(install.call("StopSignals"), "install"))
    b.if_(b.not_(b.path("ctx", "is_distributed")), install)
    return b.name("signals")


def build_recipe_ops(plan: ScriptPlan) -> list[Operation]:
    """`build_recipe` (DDP, FSDP): a `RunRecipe` of only the parts the block uses
    (runtime/recipe.py): the best epoch (by `keep_best`'s metric, else val_loss) for the run's
    summary, the EMA, early stopping, `eval_every`; one process builds it in `build_trainer`,
    with SIGINT/SIGTERM handling."""
    if not plan.distributed:
        return []
    top, body = PyBuilder(), PyBuilder()
    body.expr(body.const("The block's recipe keys as runtime/recipe.py objects."))
    if plan.sharded and plan.has("ema"):
        _sharded_ema(body, plan)
    if plan.distributed:  # the handlers' statements first: the parts are one call
        signals = _signals(body, plan)
        parts = _recipe_parts(body, plan)
    else:
        parts = _recipe_parts(body, plan)
        signals = _signals(body, plan)
    body.ret(body.call_with("RunRecipe", [*parts, ("signals", signals)]))
    params: list[tuple[str, str | SSAValue]] = [("model", "nn.Module"), ("ctx", "DistContext")]
    if plan.sharded and plan.amp:
        params.append(("plan", "PrecisionPlan"))
    top.def_("build_recipe", params, body, "RunRecipe")
    return top.ops
