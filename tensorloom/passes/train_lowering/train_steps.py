"""The script of a train block of `step` lines: several models, one or more optimizers a step.

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
A step of several optimizers over parameter groups (`step ce with Muon(hidden),
AdamW(rest)`: optimizer_groups.py selects them) zeroes them all, runs one backward and
steps each (`optimizers["ce.Muon"]`, `optimizers["ce.AdamW"]`), each with its own
`lr_schedule` (a LambdaLR in `trainer.schedulers`) and `grad_clip`. A model no step names
is wrapped in `Frozen` (no_grad, eval mode). The sections reuse the one-model script's
data loaders (train_data.py) and its settings' names.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.dialects import py
from tensorloom.passes.support.param_groups import ParamArg
from tensorloom.passes.support.py_builder import PyBuilder, Value
from tensorloom.passes.train_lowering.optimizer_groups import GroupEmitter
from tensorloom.passes.train_lowering.plan import ScriptPlan, data_description, program_name
from tensorloom.passes.train_lowering.train_data import build_loaders_ops, info_type, loader_type
from tensorloom.passes.train_lowering.train_step import carry_start

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
    blocks: tuple[str, ...] = ()  # under FSDP: the layers `fully_shard` makes units of
    # `weights G from "g.safetensors":`: the source as written and its rules (plan.py's form)
    pretrained: tuple[str, tuple[tuple[Value, ...], ...]] | None = None


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
    epochs: tuple[int | None, int | None] = (None, None)  # `from epoch 4 until epoch 9`


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
        if mode is None or (self.base.setting("compile", str) == "auto"):
            return None
        return {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(
            mode, mode
        )

    @property
    def scheduled(self) -> list[OptimizerPlan]:
        """The optimizers with an `lr_schedule`, in the block's order."""
        return [o for s in self.steps for o in s.optimizers if o.schedule is not None]

    @property
    def distributed(self) -> bool:
        """`distributed = ...`: a process group, sharded data, rank 0 logging."""
        return self.base.distributed

    @property
    def ddp(self) -> bool:
        """`distributed = true`: one DistributedDataParallel wrap per trained model."""
        return self.base.distributed and not self.base.sharded

    @property
    def sharded(self) -> bool:
        """`distributed = "fsdp"`: every model sharded in place (FSDP2's `fully_shard`),
        saved as DCP's shards by every rank (runtime/sharded_steps.py)."""
        return self.base.sharded

    @property
    def trained(self) -> tuple[ModelPlan, ...]:
        return tuple(m for m in self.models if not m.frozen)

    @property
    def ema(self) -> float | None:
        """`ema = 0.999`: the decay of an average of each trained model's weights."""
        return self.base.setting_or_none("ema", float)

    @property
    def published(self) -> tuple[ModelPlan, ...]:
        """The models a `weights` block fills at start-up."""
        return tuple(m for m in self.models if m.pretrained is not None)

    @property
    def windowed(self) -> bool:
        """Whether some step runs in some epochs only (`from epoch`, `until epoch`)."""
        return any(s.epochs != (None, None) for s in self.steps)


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
        *_main_ops(plan),
    ]


# --- settings and command line -------------------------------------------------------------


def _settings_ops(plan: StepsPlan) -> list[Operation]:
    b, base = PyBuilder(), plan.base
    b.comment("---- settings: the train block's values; the command line overrides some ----")
    epochs = base.setting_or_none("epochs", int) or base.default("epochs", int)
    b.assign("EPOCHS", b.const(epochs))
    b.assign("BATCH_SIZE", b.const(base.setting("batch_size", int)))
    b.assign("PRECISION", b.const(base.precision if base.amp else "fp32"))
    by_epochs = base.setting("checkpoint_unit", str) == "epochs"
    every = base.setting_or_none("checkpoint_every", int) if by_epochs else None
    b.assign("CHECKPOINT_EVERY", b.const(every), comment="epochs; unset: at the end")
    b.assign("GRAD_ACCUM", b.const(1), comment="each batch is one step of every optimizer")
    b.assign("SEED", b.const(base.setting("seed", int)))
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
    if plan.ema is not None:
        b.assign("EMA_DECAY", b.const(plan.ema), comment="`ema`: each trained model's average")
    if plan.published:
        sources = {m.name: m.pretrained[0] for m in plan.published if m.pretrained is not None}
        b.assign("PUBLISHED_WEIGHTS", b.value(sources),  # type: ignore[arg-type]
                 comment="`weights`: the file each model starts from")  # fmt: skip
        rules = {m.name: list(m.pretrained[1]) for m in plan.published if m.pretrained}
        b.assign("WEIGHT_RULES", b.value(rules),  # type: ignore[arg-type]
                 comment="each one's names in the file -> the model's; None: ignored")  # fmt: skip
    if plan.sharded:
        blocks = b.value({m.name: list(m.blocks) for m in plan.models})  # type: ignore[misc]
        b.assign("FSDP_BLOCKS", blocks, comment="each model's FSDP units, the model itself last")
    if plan.windowed:
        windows = {s.objective: s.epochs for s in plan.steps}
        note = "the epochs (from 1, both ends in) each step runs in; None: no bound"
        b.assign("EPOCHS_OF", b.value(windows), comment=note)  # type: ignore[arg-type]
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
    if plan.published:
        _argument(b, "--weights", action=b.const("append"), default=b.value([]),
                  metavar=b.const("MODEL=PATH"),
                  help=b.const("start MODEL from the published weights at PATH (default: "
                               "PUBLISHED_WEIGHTS)"))  # fmt: skip
        _argument(
            b,
            "--export-weights",
            default=b.const(None),
            metavar=b.const("DIR"),
            help=b.const("write each trained model to DIR/MODEL after training"),
        )
    if plan.base.has("samples"):
        where = b.const(f"samples/{program_name(plan.base)}.png")
        samples = plan.base.setting("samples", str)
        drawn = b.const(f"the PNG grid `{samples}` draws after each epoch")
        _argument(b, "--samples", default=where, help=drawn)
    if plan.compile_mode is not None:
        _argument(b, "--compile", choices=b.value(("auto", "on", "off")), default=b.const("auto"),
                  help=b.const("torch.compile each model; auto: on CUDA"))  # fmt: skip
    _argument(b, "--precision", choices=b.value(("auto", "fp32", "fp16", "bf16")),
              default=b.name("PRECISION"))  # fmt: skip
    if plan.sharded:
        told = "write the trained models' weights of a sharded save as one file, then exit"
        _argument(b, "--consolidate", nargs=b.const(2), metavar=b.value(("DIR", "OUT.pt")),
                  default=b.const(None), help=b.const(told))  # fmt: skip
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
    if plan.ddp:
        wrapped = b.generic("dict", "str", "nn.Module")
        b.assign("ddp", None, annotation=wrapped,
                 comment="each trained model's DistributedDataParallel wrap")  # fmt: skip
    optimizers = b.generic("dict", "str", "torch.optim.Optimizer")
    b.assign(
        "optimizers",
        None,
        annotation=optimizers,
        comment="by objective (`ce.Muon` of a step of several)",
    )
    if plan.ema is not None:
        b.assign("emas", None, annotation=b.generic("dict", "str", "ModelEMA"),
                 comment="an average of each trained model's weights, by model")  # fmt: skip
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
    if plan.windowed:
        b.assign("epoch", b.const(0), annotation=b.name("int"), comment="the running one, from 0")
    carry = b.optional(b.generic("tuple", b.generic("dict", "str", "torch.Tensor"), "int"))
    b.assign("carry", b.const(None), annotation=carry,
             comment="resumed mid-epoch: (objective sums, batches)")  # fmt: skip
    if plan.base.carries:
        b.assign("carried", b.call("field", default_factory=b.name("dict")),
                 annotation=b.generic("dict", "str", "Any"),
                 comment="`carry`: what the last batch's steps left")  # fmt: skip
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
    if plan.sharded:
        _shard_models(b, plan)
    empty = b.value({})
    kind = b.generic("dict", "str", "torch.optim.Optimizer")
    b.assign("optimizers", empty, annotation=kind)
    emitter = _emitter(plan)
    emitter.emit_groups(b)
    for step in plan.steps:
        for optimizer in step.optimizers:
            _optimizer(b, emitter, step, optimizer)
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
    if plan.ddp:
        _ddp_wraps(b, plan)
    wraps = [b.name("ddp")] if plan.ddp else []
    scheduled = [b.name("schedulers")] if plan.scheduled else []
    emas = [_emas(b, plan)] if plan.ema is not None else []
    if plan.distributed:
        b.comment("each rank its own noise from here on (the models above, built from the")
        b.comment("one seed, are alike on every rank)")
        b.expr(b.call("seed_everything", b.binop("+", b.path("args", "seed"),
                                                 b.path("ctx", "rank"))))  # fmt: skip
    fields = [b.name("ctx"), *(b.name(m.name) for m in plan.models), *wraps,
              b.name("optimizers"), *emas, b.name("scalers"), *scheduled, b.name("plan"),
              b.name("train_loader"), b.name("val_loader"), b.name("info"),
              *compiled]  # fmt: skip
    b.ret(b.call("Trainer", *fields))
    params = [("args", "argparse.Namespace"), ("ctx", "DistContext")]
    top.def_("build_trainer", params, b, "Trainer")
    return top.ops


def _emas(b: PyBuilder, plan: StepsPlan) -> SSAValue:
    """`emas = {"G": ModelEMA(G, EMA_DECAY), ...}`: the trained models' averages (under FSDP
    each average is a second model, sharded as its model is: `ModelEMA(G, EMA_DECAY,
    G_average)`, and each rank averages its own shards)."""
    if plan.sharded:
        _sharded_copies(b, plan)
    entries = [(b.const(m.name), b.call(
        "ModelEMA", b.name(m.name), b.name("EMA_DECAY"),
        *([b.name(f"{m.name}_average")] if plan.sharded else [])))
        for m in plan.trained]  # fmt: skip
    b.assign("emas", b.add(py.DictOp(entries)))
    return b.name("emas")


def _shard_call(b: PyBuilder, plan: StepsPlan, model: ModelPlan, name: str) -> None:
    """`shard_model(G, FSDP_BLOCKS["G"])`: in place, gathered in the training precision."""
    arguments = [("", b.name(name)), ("", b.subscript(b.name("FSDP_BLOCKS"), b.const(model.name)))]
    if plan.base.amp:  # else the weights are gathered as they are stored, in fp32
        arguments.append(("param_dtype", b.path("plan", "autocast_dtype")))
    b.expr(b.call_with("shard_model", arguments))


def _shard_models(b: PyBuilder, plan: StepsPlan) -> None:
    """Every model sharded in place before its optimizer is built (whose parameters are
    then the shards); a frozen one too, its forward run under no_grad."""
    gathered = " in the training precision" if plan.base.amp else ""
    b.comment(f"FSDP2, a `fully_shard` per model: its weights all-gathered{gathered} for its")
    b.comment("forward and backward, then freed; gradients reduce-scattered in fp32.")
    for model in plan.models:
        _shard_call(b, plan, model, model.name)


def _sharded_copies(b: PyBuilder, plan: StepsPlan) -> None:
    """`G_average`: a fresh model of G's class, sharded as G is; its weights take no numbers
    from the run (the first update copies G's)."""
    b.comment("each average is a model sharded as its model is; its weights take no numbers "
              "from the run")  # fmt: skip
    forked = b.call("torch.random.fork_rng", devices=b.add(py.ListOp([])))
    copies = PyBuilder()
    for model in plan.trained:
        made = copies.method(_model_call(copies, model), "to", copies.path("ctx", "device"))
        copies.assign(f"{model.name}_average", made)
    b.stmt(py.WithOp(forked, copies.ops))
    for model in plan.trained:
        _shard_call(b, plan, model, f"{model.name}_average")


def _ddp_wraps(b: PyBuilder, plan: StepsPlan) -> None:
    """`ddp = {"G": DistributedDataParallel(G, ...), ...}`: one wrap per trained model (of
    its compiled form under `compile`); a step calls the wraps of the models it updates and
    the plain modules of the others."""
    cuda = b.compare(b.path("ctx", "device", "type"), "==", b.const("cuda"))
    ids = b.add(py.IfExpOp(cuda, b.add(py.ListOp([b.path("ctx", "local_rank")])), b.const(None)))
    b.assign("device_ids", ids)
    compiled = plan.compile_mode is not None

    def run(name: str) -> SSAValue:
        return b.subscript(b.name("compiled"), b.const(name)) if compiled else b.name(name)

    def unused(name: str) -> dict[str, SSAValue]:
        """`carry h = net.h0`: h0 has a gradient at an epoch's first batch only."""
        learns = plan.base.learns_carry_start(name)
        return {"find_unused_parameters": b.const(True)} if learns else {}

    entries = [(b.const(m.name), b.call("DistributedDataParallel", run(m.name),
                                          device_ids=b.name("device_ids"), **unused(m.name)))
               for m in plan.trained]  # fmt: skip
    b.assign("ddp", b.add(py.DictOp(entries)))


def _compiled_models(b: PyBuilder, plan: StepsPlan) -> SSAValue:
    """`{"net": maybe_compile(net, on_cuda, COMPILE_MODE)}`: what the steps and validation
    call; the trainer keeps the models themselves for the optimizers and checkpoints."""
    b.comment("`compile`: the steps and validation run the compiled models (on CUDA; anywhere "
              "with --compile on)")  # fmt: skip
    on_cuda = b.compare(b.path("ctx", "device", "type"), "==", b.const("cuda"))
    choice = b.path("args", "compile")
    auto = b.binop("and", b.compare(choice, "==", b.const("auto")), on_cuda)
    b.assign("compile_it", b.binop("or", b.compare(choice, "==", b.const("on")), auto))
    entries = [(b.const(m.name), b.call("maybe_compile", b.name(m.name), b.name("compile_it"),
                                        b.name("COMPILE_MODE"))) for m in plan.models]  # fmt: skip
    b.assign("compiled", b.add(py.DictOp(entries)))
    return b.name("compiled")


def _emitter(plan: StepsPlan) -> GroupEmitter:
    return GroupEmitter(dict(plan.groups), {m.name: m.name for m in plan.models})


def _optimizer(
    b: PyBuilder, emitter: GroupEmitter, step: StepPlan, optimizer: OptimizerPlan
) -> None:
    """`optimizers["ce.Muon"] = torch.optim.Muon(groups["hidden"], lr=0.02)`."""
    spelled = ", ".join(emitter.spelled(a.selection) for a in optimizer.args)
    b.comment(f"`step {step.objective}`: {optimizer.optimizer} over {spelled}")
    params = emitter.parameters(b, optimizer.args)
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
                   b.const(plan.base.setting_or_none("max_steps", int)))  # fmt: skip
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
    for name in plan.base.carries:  # what the previous batch left (`carry`)
        b.assign(name, b.subscript(b.path("trainer", "carried"), b.const(name)))
    if plan.windowed:
        b.assign("losses", b.value({}), annotation=b.generic("dict", "str", "torch.Tensor"))
    losses: list[tuple[str, str]] = []
    for step in plan.steps:
        if step.epochs == (None, None):
            _step(b, plan, step)
            if plan.windowed:
                _keep_loss(b, step)
            losses.append((step.objective, f"{step.objective}_value"))
            continue
        b.comment(_written(step))
        inner = PyBuilder()
        _step(inner, plan, step, comment=False)
        _keep_loss(inner, step)
        window = b.subscript(b.name("EPOCHS_OF"), b.const(step.objective))
        b.if_(b.call("runs_in", b.path("trainer", "epoch"), window), inner)
    for name in plan.base.carries:  # the next batch starts from them
        b.assign(b.subscript(b.path("trainer", "carried"), b.const(name)), b.name(name))
    b.stmt(py.AugAssignOp("+=", b.path("trainer", "step"), b.const(1)))
    if plan.windowed:
        b.ret(b.name("losses"))
    else:
        entries = [(b.const(k), b.method(b.name(v), "detach")) for k, v in losses]
        b.ret(b.add(py.DictOp(entries)))
    top.def_("train_step", _batch_params(plan), b, top.generic("dict", "str", "torch.Tensor"))
    return top.ops


def _written(step: StepPlan) -> str:
    """`step d_loss with Adam(D, ...) from epoch 2`: the line, for the comment above it."""
    written = ", ".join(f"{o.optimizer}(...)" for o in step.optimizers)
    if len(step.optimizers) == 1:
        written = f"{step.optimizers[0].optimizer}({', '.join(step.models)}, ...)"
    return f"step {step.objective} with {written}{_window(step)}"


def _arguments(b: PyBuilder, plan: StepsPlan, objective: str) -> list[SSAValue]:
    """`G, D, xb, yb`: the models, then the batch (the fields the objective names)."""
    batch = plan.base.batch_arguments(objective, len(plan.models))
    return [b.name(m.name) for m in plan.models] + [b.name(n) for n in batch]


def _batch_params(plan: StepsPlan) -> list[tuple[str, str]]:
    """`trainer`, then a batch: `xb, yb`, or its fields."""
    return [("trainer", "Trainer"), *((n, "torch.Tensor") for n in plan.base.batch_names)]


def _validation_params(top: PyBuilder, plan: StepsPlan) -> list[tuple[str, str | SSAValue]]:
    """`_batch_params`, with `carry` the validation's carried values after `trainer`."""
    params: list[tuple[str, str | SSAValue]] = list(_batch_params(plan))
    if plan.base.carries:
        params.insert(1, ("val_carried", top.generic("dict", "str", "Any")))
    return params


def _validating(b: PyBuilder, plan: StepsPlan, function: str) -> SSAValue:
    """`partial(objective_values, trainer)`; with `carry`, from the initial values on."""
    if not plan.base.carries:
        return b.call("partial", b.name(function), b.name("trainer"))
    return b.call("partial", b.name(function), b.name("trainer"), _fresh_carried(b, plan))


def _window(step: StepPlan) -> str:
    first, last = step.epochs
    return (f" from epoch {first}" if first is not None else "") + (
        f" until epoch {last}" if last is not None else "")  # fmt: skip


def _step(b: PyBuilder, plan: StepsPlan, step: StepPlan, *, comment: bool = True) -> None:
    """Zero the step's optimizers' gradients, the objective under autocast, backward and
    each optimizer's step (`step_optimizer`)."""
    if comment:
        b.comment(_written(step))
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
    batch = plan.base.batch_arguments(step.objective, len(plan.models))
    args = [_step_model(inner, plan, step, m) for m in plan.models]
    args += [inner.name(n) for n in batch]
    value = f"{step.objective}_value"
    carried = _takes_carried(plan, step.objective)
    target = inner.name(value)
    if carried:  # the values the previous step or batch left, and the ones it leaves
        args += [inner.name(c) for c in carried]
        target = inner.tuple_of(target, *(inner.name(c) for c in carried))
    assign = py.AssignOp(target, inner.call(step.objective, *args))
    if step.location is not None:
        assign.location = step.location  # type: ignore[assignment]
    inner.stmt(assign)
    manager = b.call("autocast", b.path("trainer", "plan"), b.name("device"))
    b.stmt(py.WithOp(manager, inner.ops))
    if carried:
        b.comment("the next step and batch start from these, detached: backpropagation stops")
        for name in carried:
            b.assign(name, b.call("detached", b.name(name)))
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
    if plan.ema is not None:
        for model in step.models:
            average = b.subscript(b.path("trainer", "emas"), b.const(model))
            b.expr(b.method(average, "update", b.path("trainer", model)))


def _takes_carried(plan: StepsPlan, objective: str) -> tuple[str, ...]:
    """The carried values `objective` takes after the batch and returns after its loss (the
    block's `carry` names, when it has parameters for them), else ()."""
    return plan.base.carries if plan.base.takes_carried(objective, len(plan.models)) else ()


def _fresh_carried(b: PyBuilder, plan: StepsPlan) -> SSAValue:
    """`{"state": None}`: each carried value's initial value (`trainer.net.h0` where the
    block learns it)."""

    def owner(instance: str) -> SSAValue:
        return b.path("trainer", instance)

    entries = [(b.const(c), carry_start(b, plan.base, c, owner=owner)) for c in plan.base.carries]
    return b.add(py.DictOp(entries))


def _step_model(b: PyBuilder, plan: StepsPlan, step: StepPlan, model: ModelPlan) -> SSAValue:
    """`trainer.ddp["D"]` for a model the step's optimizer updates under DDP (its gradients
    are averaged over the ranks), else the model itself (no reduction waits on it)."""
    if plan.ddp and model.name in step.models:
        return b.subscript(b.path("trainer", "ddp"), b.const(model.name))
    return b.name(model.name)


def _keep_loss(b: PyBuilder, step: StepPlan) -> None:
    """`losses["teach"] = teach_value.detach()`."""
    target = b.subscript(b.name("losses"), b.const(step.objective))
    b.stmt(py.AssignOp(target, b.method(b.name(f"{step.objective}_value"), "detach")))


def _objective_values_ops(plan: StepsPlan) -> list[Operation]:
    top, b = PyBuilder(), PyBuilder()
    b.expr(b.const("Each objective on one validation batch, under autocast (no gradients)."))
    _models_local(b, plan)
    _values(b, plan, "val_")
    params = _validation_params(top, plan)
    top.def_("objective_values", params, b, top.generic("dict", "str", "torch.Tensor"))
    if plan.ema is None:
        return top.ops
    averaged = PyBuilder()
    averaged.expr(averaged.const("Each objective on one validation batch with the trained "
                                 "models' averages (`ema`)."))  # fmt: skip
    for model in plan.models:
        kept = averaged.path("trainer", model.name)
        if not model.frozen:
            average = averaged.subscript(averaged.path("trainer", "emas"),
                                         averaged.const(model.name))  # fmt: skip
            kept = averaged.attr(average, "module")
        averaged.assign(model.name, kept)
    _values(averaged, plan, "ema_val_")
    top.def_("ema_objective_values", params, averaged,
             top.generic("dict", "str", "torch.Tensor"))  # fmt: skip
    return top.ops


def _values(b: PyBuilder, plan: StepsPlan, prefix: str) -> None:
    """`with autocast(...): return {"val_d_loss": d_loss(G, D, xb, yb), ...}`, then each
    metric's (`"val_acc": acc(G, D, xb, yb)`); with `carry`, each objective that takes the
    carried values from `val_carried`, which it updates."""
    inner = PyBuilder()
    pairs = []
    for s in plan.steps:
        carried = _takes_carried(plan, s.objective)
        if not carried:
            call = inner.call(s.objective, *_arguments(inner, plan, s.objective))
            pairs.append((inner.const(f"{prefix}{s.objective}"), call))
            continue
        given = [inner.subscript(inner.name("val_carried"), inner.const(c)) for c in carried]
        call = inner.call(s.objective, *_arguments(inner, plan, s.objective), *given)
        value = inner.name(f"{s.objective}_value")
        inner.assign(inner.tuple_of(value, *(inner.name(c) for c in carried)), call)
        for c in carried:
            inner.assign(inner.subscript(inner.name("val_carried"), inner.const(c)),
                         inner.name(c))  # fmt: skip
        pairs.append((inner.const(f"{prefix}{s.objective}"), inner.name(f"{s.objective}_value")))
    for metric in plan.base.metrics:  # `metrics = [acc]`: functions of the models and the batch
        call = inner.call(metric.name, *_arguments(inner, plan, metric.name))
        pairs.append((inner.const(f"{prefix}{metric.name}"), call))
    inner.ret(inner.add(py.DictOp(pairs)))
    manager = b.call("autocast", b.path("trainer", "plan"), b.path("trainer", "ctx", "device"))
    b.stmt(py.WithOp(manager, inner.ops))


# --- checkpoints and the run -----------------------------------------------------------------


def _parts(b: PyBuilder, plan: StepsPlan) -> SSAValue:
    """`{"G": trainer.G, "D": trainer.D}`."""
    return b.add(py.DictOp([(b.const(m.name), b.path("trainer", m.name)) for m in plan.models]))


def _save_ops(plan: StepsPlan) -> list[Operation]:
    if plan.sharded:
        return _sharded_save_ops(plan)
    top, save, resume = PyBuilder(), PyBuilder(), PyBuilder()
    top.comment("---- checkpoints: every model, optimizer and scaler ----")
    save.expr(save.const("`path` holds the run after `epoch` epochs (and a cut epoch's part)."))
    save.assign("models", _parts(save, plan))
    entries = [(save.const("carry"), save.path("trainer", "carry"))]
    if plan.base.carries:  # a run resumed mid-epoch continues from them
        entries.append((save.const("carried"), save.path("trainer", "carried")))
    if _gathers(plan):  # under DDP every rank's (`gather_carried`), rank 0's above
        entries.append((save.const("carried_by_rank"), save.name("ranks")))
    if plan.ema is not None:
        states = py.ComprehensionOp("dict", save.method(save.path("trainer", "emas"), "items"),
                                    targets=2)  # fmt: skip
        key, average = states.body.block.args
        key.name_hint, average.name_hint = "name", "average"
        each = PyBuilder()
        each.stmt(py.YieldOp([key, each.method(average, "state_dict")]))
        states.body.block.add_ops(each.ops)
        entries.append((save.const("emas"), save.add(states)))
    save.assign("extra", save.add(py.DictOp(entries)))
    save.expr(save.call(
        "save_models_checkpoint", save.name("path"), models=save.name("models"),
        optimizers=save.path("trainer", "optimizers"), scalers=save.path("trainer", "scalers"),
        epoch=save.name("epoch"), step=save.path("trainer", "step"),
        loader=save.path("trainer", "train_loader"), extra=save.name("extra"),
        **_scheduler_states(save, plan), **_rank_rngs(save, plan),
    ))  # fmt: skip
    params: list[tuple[str, str | SSAValue]] = [("trainer", "Trainer"), ("path", "str"),
                                                ("epoch", "int")]  # fmt: skip
    defaults: dict[str, SSAValue] = {}
    if _gathers(plan):
        params.append(("ranks", top.optional(top.generic("list", "Any"))))
        defaults["ranks"] = top.const(None)
    if plan.ddp:
        params.append(("rngs", top.optional(top.generic("list", "Any"))))
        defaults["rngs"] = top.const(None)
    top.def_("save", params, save, None, defaults=defaults or None)
    resume.assign("models", _parts(resume, plan))
    state = resume.call(
        "load_models_checkpoint", resume.name("path"), models=resume.name("models"),
        optimizers=resume.path("trainer", "optimizers"),
        scalers=resume.path("trainer", "scalers"), loader=resume.path("trainer", "train_loader"),
        map_location=resume.path("trainer", "ctx", "device"), **_scheduler_states(resume, plan),
    )  # fmt: skip
    extra = _resume_position(resume, state)
    if plan.base.carries:
        resume.comment("the carried values (`carry`) where the interrupted epoch left them; "
                       "this rank's under DDP")  # fmt: skip
        ctx = resume.path("trainer", "ctx")
        resume.assign("cut", resume.is_set(resume.path("trainer", "carry")))
        own = resume.call("own_carried", extra, resume.attr(ctx, "rank"),
                          resume.attr(ctx, "world_size"), mid_epoch=resume.name("cut"))  # fmt: skip
        resume.assign(resume.path("trainer", "carried"), own)
    if plan.ema is not None:
        loop = py.ForOp(resume.method(resume.path("trainer", "emas"), "items"), targets=2)
        key, average = loop.body.block.args
        key.name_hint, average.name_hint = "name", "average"
        each = PyBuilder()
        saved = each.subscript(each.subscript(extra, each.const("emas")), key)
        each.expr(each.method(average, "load_state_dict", saved))
        loop.body.block.add_ops(each.ops)
        resume.stmt(loop)
    top.def_("resume", [("trainer", "Trainer"), ("path", "str")], resume, None)
    return top.ops


def _sharded_save_ops(plan: StepsPlan) -> list[Operation]:
    """Under FSDP `save` and `resume` run on every rank: a folder of DCP's shards of every
    model, optimizer and average, and rank 0's train state (runtime/sharded_steps.py)."""
    top, save, resume = PyBuilder(), PyBuilder(), PyBuilder()
    top.comment(
        "---- checkpoints: every model, optimizer and scaler, sharded: every rank saves ----"
    )
    save.expr(save.const("`path` (a folder) holds the run after `epoch` epochs (and a cut "
                         "epoch's part)."))  # fmt: skip
    save.assign("models", _parts(save, plan))
    entries = [(save.const("carry"), save.path("trainer", "carry"))]
    if plan.base.carries:  # each rank's own (its own streams'), gathered by every rank
        entries.append((save.const("carried"), save.path("trainer", "carried")))
        ranks = save.call("gather_carried", save.path("trainer", "carried"))
        entries.append((save.const("carried_by_rank"), ranks))
    save.assign("extra", save.add(py.DictOp(entries)))
    extra = save.name("extra")
    save.expr(save.call(
        "save_sharded_models", save.name("path"), models=save.name("models"),
        optimizers=save.path("trainer", "optimizers"), scalers=save.path("trainer", "scalers"),
        epoch=save.name("epoch"), step=save.path("trainer", "step"),
        loader=save.path("trainer", "train_loader"), extra=extra,
        **_scheduler_states(save, plan), **_ema_states(save, plan),
    ))  # fmt: skip
    params = [("trainer", "Trainer"), ("path", "str"), ("epoch", "int")]
    top.def_("save", params, save, None)
    resume.assign("models", _parts(resume, plan))
    state = resume.call(
        "load_sharded_models", resume.name("path"), models=resume.name("models"),
        optimizers=resume.path("trainer", "optimizers"),
        scalers=resume.path("trainer", "scalers"), loader=resume.path("trainer", "train_loader"),
        **_scheduler_states(resume, plan), **_ema_states(resume, plan),
    )  # fmt: skip
    kept = _resume_position(resume, state)
    if plan.base.carries:
        kept.name_hint = "extra"
        resume.comment("the carried values (`carry`) where the interrupted epoch left them, "
                       "this rank's own")  # fmt: skip
        resume.assign("ctx", resume.path("trainer", "ctx"))
        ctx = resume.name("ctx")
        resume.assign("cut", resume.is_set(resume.path("trainer", "carry")))
        cut = resume.name("cut")
        own = resume.call("own_carried", kept, resume.attr(ctx, "rank"),
                          resume.attr(ctx, "world_size"), mid_epoch=cut,
                          device=resume.attr(ctx, "device"))  # fmt: skip
        resume.assign(resume.path("trainer", "carried"), own)
    top.def_("resume", [("trainer", "Trainer"), ("path", "str")], resume, None)
    return top.ops


def _resume_position(resume: PyBuilder, state: SSAValue) -> SSAValue:
    """`state = <load>`, then the epoch, step and cut epoch's sums it holds onto the trainer
    (both checkpoint layouts); its `extra`, for the carried values and averages."""
    resume.assign("state", state)
    resume.assign(resume.path("trainer", "start_epoch"),
                  resume.subscript(resume.name("state"), resume.const("epoch")))  # fmt: skip
    resume.assign(resume.path("trainer", "step"),
                  resume.subscript(resume.name("state"), resume.const("step")))  # fmt: skip
    extra = resume.subscript(resume.name("state"), resume.const("extra"))
    resume.assign(resume.path("trainer", "carry"),
                  resume.method(extra, "get", resume.const("carry")))  # fmt: skip
    return extra


def _ema_states(b: PyBuilder, plan: StepsPlan) -> dict[str, SSAValue]:
    """`emas=trainer.emas` where the block has `ema`."""
    return {"emas": b.path("trainer", "emas")} if plan.ema is not None else {}


def _rank_rngs(b: PyBuilder, plan: StepsPlan) -> dict[str, SSAValue]:
    """`rng_by_rank=rngs` under DDP: every rank's RNG states, each rank drawing its own noise."""
    return {"rng_by_rank": b.name("rngs")} if plan.ddp else {}


def _gathers(plan: StepsPlan) -> bool:
    """Under DDP with `carry`: a save holds every rank's carried values, which every rank
    gathers (`gather_carried`) before rank 0 writes (under FSDP every rank calls `save`,
    which gathers them)."""
    return plan.ddp and bool(plan.base.carries)


def _saving(b: PyBuilder, plan: StepsPlan, path: SSAValue, epoch: SSAValue) -> PyBuilder:
    """`save(trainer, path, epoch)` (rank 0's, under DDP); under DDP every rank's RNG states
    gathered first, `rngs = gather_rng_states()` (each rank draws its own noise), and with
    `carry` every rank's carried values, `ranks = gather_carried(trainer.carried)`."""
    saving = PyBuilder()
    if not plan.ddp:
        saving.expr(saving.call("save", saving.name("trainer"), path, epoch))
        _on_main(b, plan, saving)
        return b
    arguments = [saving.name("trainer"), path, epoch]
    if _gathers(plan):
        b.assign("ranks", b.call("gather_carried", b.path("trainer", "carried")),
                 comment="every rank's, gathered by all")  # fmt: skip
        arguments.append(saving.name("ranks"))
    b.assign("rngs", b.call("gather_rng_states"), comment="every rank's RNG, gathered by all")
    saving.expr(saving.call("save", *arguments, rngs=saving.name("rngs")))
    _on_main(b, plan, saving)
    return b


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
    _published_weights(b, plan)
    resumed = PyBuilder()
    resumed.expr(resumed.call("resume", resumed.name("trainer"), resumed.path("args", "resume")))
    resumed.expr(resumed.call("print", resumed.fstring(
        "resumed from {} after epoch {}", resumed.path("args", "resume"),
        resumed.path("trainer", "start_epoch"))))  # fmt: skip
    b.if_(b.is_set(b.path("args", "resume")), resumed)
    where = b.path("args", "metrics")
    if plan.distributed:
        where = b.add(py.IfExpOp(b.path("ctx", "is_main"), where, b.const(None)))
    b.assign("metrics", b.call("MetricsWriter", where))
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
    if plan.published:
        _export_weights(b, plan)
    if plan.distributed:
        b.comment("every rank waits for rank 0's last save before leaving the process group")
        b.expr(b.call("barrier"))
    b.assign("seconds", b.binop("-", b.call("time.perf_counter"), b.name("started")))
    done = PyBuilder()
    done.expr(done.call("print", done.fstring(
        "done: {} epochs, {} steps in {:.1f}s", done.name("epochs_done"),
        done.path("trainer", "step"), done.name("seconds"))))  # fmt: skip
    _on_main(b, plan, done)
    b.ret(b.const(0))
    top.def_("train", [("args", "argparse.Namespace"), ("ctx", "DistContext")], b, "int")
    return top.ops


def _export_weights(b: PyBuilder, plan: StepsPlan) -> None:
    """--export-weights DIR: each trained model (not a frozen one) in DIR/NAME, in its
    published weights' names where it has a `weights` block (runtime/steps.py's
    `export_trained`: every rank calls it, rank 0 writes)."""
    then = PyBuilder()
    chosen = then.call(
        "weight_sources", then.name("PUBLISHED_WEIGHTS"), then.path("args", "weights")
    )
    then.assign("sources", chosen)
    trained = py.DictOp([(then.const(m.name), then.path("trainer", m.name)) for m in plan.trained])
    then.assign("trained", then.add(trained))
    then.assign("folders", then.call("export_trained", then.path("args", "export_weights"),
                                     then.name("trained"), rules=then.name("WEIGHT_RULES"),
                                     sources=then.name("sources")))  # fmt: skip
    told = PyBuilder()
    listed = told.call("map", told.name("str"), told.name("folders"))
    told.assign("where", told.method(told.const(", "), "join", listed))
    told.expr(
        told.call("print", told.fstring("wrote the trained weights to {}", told.name("where")))
    )
    then.if_(then.is_set(then.name("folders")), told)
    b.comment("--export-weights: each trained model in its published weights' names (rank 0)")
    b.if_(b.is_set(b.path("args", "export_weights")), then)


def _published_weights(b: PyBuilder, plan: StepsPlan) -> None:
    """`weights G from ...`: each such model's published weights at start-up, on every rank
    (under FSDP each keeps its shard of every tensor), unless --resume brings the run's."""
    if not plan.published:
        return
    load = PyBuilder()
    chosen = load.call(
        "weight_sources", load.name("PUBLISHED_WEIGHTS"), load.path("args", "weights")
    )
    load.assign("sources", chosen, comment="--weights MODEL=PATH reads another")
    for model in plan.published:
        module = load.path("trainer", model.name)
        if model.frozen:
            module = load.attr(module, "model")  # inside its `Frozen` wrapper
        source = load.subscript(load.name("sources"), load.const(model.name))
        rules = load.subscript(load.name("WEIGHT_RULES"), load.const(model.name))
        load.expr(load.call("load_pretrained", module, source, rules))
    told = PyBuilder()
    files = told.method(told.const(", "), "join", told.method(told.name("sources"), "values"))
    told.expr(told.call("print", told.fstring("starting from the published weights in {}", files)))
    _on_main(load, plan, told)
    b.comment("`weights`: each model's published weights (every rank), unless resumed")
    b.if_(b.compare(b.path("args", "resume"), "is", b.const(None)), load)


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
    objectives = b.name("OBJECTIVES")
    if plan.windowed:
        b.assign(b.path("trainer", "epoch"), epoch)
        b.assign("running", b.call("steps_in", b.name("EPOCHS_OF"), epoch),
                 comment="the objectives whose steps run this epoch")  # fmt: skip
        if any(s.epochs[1] is not None for s in plan.steps):
            b.comment("the steps that ended: their gradients and optimizer state, freed")
            b.expr(b.call("release_ended", b.path("trainer", "optimizers"), b.name("EPOCHS_OF"),
                          epoch))  # fmt: skip
        objectives = b.name("running")
    zeros = py.ComprehensionOp("dict", objectives, targets=1)
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
    if plan.base.carries:
        fresh = PyBuilder()
        fresh.assign(fresh.path("trainer", "carried"), _fresh_carried(fresh, plan))
        b.comment("a new epoch starts the carried values over; a resumed one keeps its own")
        b.if_(b.not_(b.name("done")), fresh)
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
    kept = "last/" if plan.sharded else "last.pt"
    cut.comment(f"cut short: {kept} keeps the epoch's batches so far; no validation on the way out")
    if plan.distributed:
        cut.comment("each rank summed its own batches: the save keeps their mean, which every "
                    "rank resumes from")  # fmt: skip
        cut.assign("sums", _rank_means(cut))
    cut.assign(cut.path("trainer", "carry"), cut.tuple_of(cut.name("sums"), cut.name("done")))
    if plan.sharded:  # every rank writes its shards
        saving = PyBuilder()
        saving.expr(saving.call("save", saving.name("trainer"), _last(saving, plan), epoch))
        _on_saving_ranks(cut, plan, saving)
    elif plan.ddp:
        cut.assign("path", cut.fstring("{}/last.pt", cut.path("args", "checkpoint_dir")))
        _saving(cut, plan, cut.name("path"), epoch)
    else:
        saving = PyBuilder()
        path = saving.fstring("{}/last.pt", saving.path("args", "checkpoint_dir"))
        saving.expr(saving.call("save", saving.name("trainer"), path, epoch))
        _on_main(cut, plan, saving)
    cut.stmt(py.BreakOp())
    b.if_(b.not_(b.name("complete")), cut)
    for model in plan.models:
        b.expr(b.method(b.path("trainer", model.name), "eval"))
    means = py.ComprehensionOp("dict", b.method(b.name("sums"), "items"), targets=2)
    k, total = means.body.block.args
    k.name_hint, total.name_hint = "key", "value"
    mi = PyBuilder()
    summed = mi.call("all_reduce_mean", total) if plan.distributed else total
    mean = mi.binop("/", mi.method(summed, "item"), mi.call("max", mi.name("done"), mi.const(1)))
    mi.stmt(py.YieldOp([k, mean]))
    means.body.block.add_ops(mi.ops)
    _record(b, plan, epoch, means)


def _rank_means(b: PyBuilder) -> SSAValue:
    """`{key: all_reduce_mean(value) for key, value in sums.items()}`."""
    means = py.ComprehensionOp("dict", b.method(b.name("sums"), "items"), targets=2)
    key, value = means.body.block.args
    key.name_hint, value.name_hint = "key", "value"
    inner = PyBuilder()
    inner.stmt(py.YieldOp([key, inner.call("all_reduce_mean", value)]))
    means.body.block.add_ops(inner.ops)
    return b.add(means)


def _stop_lambda(b: PyBuilder) -> SSAValue:
    """`lambda: args.max_steps is not None and trainer.step >= args.max_steps`."""
    inner = PyBuilder()
    limit = inner.path("args", "max_steps")
    reached = inner.add(py.BinOp("and", inner.is_set(limit), inner.compare(
        inner.path("trainer", "step"), ">=", inner.path("args", "max_steps"))))  # fmt: skip
    inner.ret(reached)
    return b.add(py.LambdaOp([], inner.ops))


def _validate(b: PyBuilder, plan: StepsPlan) -> None:
    """`validated`: each objective's validation mean (and with `ema`, the averages')."""
    if plan.base.carries:
        b.comment("`carry`: validation starts from the initial values, and carries them on")
    b.assign("validated", b.call("mean_objectives", _validating(b, plan, "objective_values"),
                                 b.path("trainer", "val_loader")))  # fmt: skip
    if plan.ema is not None:
        loop = py.ForOp(b.method(b.path("trainer", "emas"), "values"))
        average = loop.body.block.args[0]
        average.name_hint = "average"
        each = PyBuilder()
        each.expr(each.method(each.attr(average, "module"), "eval"))
        loop.body.block.add_ops(each.ops)
        b.stmt(loop)
        averaged = b.call("mean_objectives", _validating(b, plan, "ema_objective_values"),
                          b.path("trainer", "val_loader"))  # fmt: skip
        b.expr(b.method(b.name("validated"), "update", averaged))


def _gathered(b: PyBuilder, plan: StepsPlan, inner: PyBuilder, *, averages: bool) -> None:
    """`inner` as it is, or under FSDP within `gathered_models(...)`: every model (and with
    `averages` each `ema` average) held whole, as the ranks may validate different numbers
    of batches; under DDP after `sync_buffers(...)`: each rank's BatchNorm statistics, from
    its own batches and noise, are rank 0's for validation."""
    models = [b.path("trainer", m.name) for m in plan.models]
    emas = {"emas": b.path("trainer", "emas")} if averages and plan.ema is not None else {}
    if plan.ddp:
        b.comment("every rank validates with rank 0's buffers (BatchNorm's statistics), as "
                  "rank 0 saves them")  # fmt: skip
        b.expr(b.call("sync_buffers", *models, **emas))
    if not plan.sharded:
        b.ops += inner.ops
        return
    b.comment("each model held whole on every rank: the ranks' validation batches may differ")
    b.stmt(py.WithOp(b.call("gathered_models", *models, **emas), inner.ops))


def _record(b: PyBuilder, plan: StepsPlan, epoch: SSAValue, means: py.ComprehensionOp) -> None:
    b.assign("means", b.add(means))
    validation = PyBuilder()
    _validate(validation, plan)
    _gathered(b, plan, validation, averages=True)
    samples = b.binop("*", b.name("done"), b.path("args", "batch_size"))
    if plan.distributed:
        samples = b.binop("*", samples, b.path("trainer", "ctx", "world_size"))
    b.assign("samples", samples)
    record = py.DictOp([
        (b.const("epoch"), b.binop("+", epoch, b.const(1))),
        (None, b.name("means")),
        (None, b.name("validated")),
        (b.const("samples_per_s"), b.binop("/", b.name("samples"), b.name("elapsed"))),
        (b.const("time"), b.name("elapsed")),
        (b.const("steps"), b.path("trainer", "step")),
    ])  # fmt: skip
    b.assign("record", b.add(record))
    report = PyBuilder()
    report.expr(report.method(report.name("metrics"), "write", report.name("record")))
    line = report.call("format_steps_summary", report.name("record"),
                       epochs=report.path("args", "epochs"))  # fmt: skip
    report.expr(report.call("print", line))
    if plan.base.has("samples") and plan.sharded:
        b.comment("every rank draws (the sharded models' forwards gather their weights)")
        _draw(b, plan)
        report.expr(report.call("write_sample_grid", report.name("images"),
                                report.path("args", "samples")))  # fmt: skip
    elif plan.base.has("samples"):
        _samples(report, plan)
    _on_main(b, plan, report)
    b.assign("epochs_done", b.binop("+", epoch, b.const(1)))
    b.assign("last", b.compare(b.name("epochs_done"), "==", b.path("args", "epochs")))
    every = b.is_set(b.name("CHECKPOINT_EVERY"))
    periodic = b.compare(b.binop("%", b.name("epochs_done"), b.name("CHECKPOINT_EVERY")), "==",
                         b.const(0))  # fmt: skip
    b.assign("due", b.add(py.BinOp("and", every, periodic)))
    due = b.add(py.BinOp("or", b.name("last"), b.name("due")))
    if plan.ddp:  # every rank gathers the RNG states (and carried values); rank 0 writes
        saving = PyBuilder()
        saving.assign("path", saving.fstring("{}/last.pt", saving.path("args", "checkpoint_dir")))
        b.if_(due, _saving(saving, plan, saving.name("path"), saving.name("epochs_done")))
        return
    saving = PyBuilder()
    path = _last(saving, plan)
    saving.expr(saving.call("save", saving.name("trainer"), path, saving.name("epochs_done")))
    b.if_(due, saving)


def _last(b: PyBuilder, plan: StepsPlan) -> SSAValue:
    """`f"{args.checkpoint_dir}/last.pt"`, or under FSDP the folder `last`."""
    return b.fstring("{}/last" if plan.sharded else "{}/last.pt", b.path("args", "checkpoint_dir"))


def _on_saving_ranks(b: PyBuilder, plan: StepsPlan, then: PyBuilder) -> None:
    """`then` (a save) on every rank under FSDP, each writing its shards; else on rank 0."""
    if plan.sharded:
        b.ops += then.ops
    else:
        _on_main(b, plan, then)


def _on_main(b: PyBuilder, plan: StepsPlan, then: PyBuilder) -> None:
    """`then` on rank 0 only under DDP (it logs and saves for all), else as it is."""
    if plan.distributed:
        b.if_(b.path("trainer", "ctx", "is_main"), then)
    else:
        b.ops += then.ops


def _samples(b: PyBuilder, plan: StepsPlan) -> None:
    """`samples = sample`: the grid of `sample(G, D)`, the same noise each epoch."""
    _draw(b, plan)
    b.expr(b.call("write_sample_grid", b.name("images"), b.path("args", "samples")))


def _draw(b: PyBuilder, plan: StepsPlan) -> None:
    """`images = draw_samples(partial(sample, trainer.G, trainer.D), seed=args.seed)`."""
    models = [b.path("trainer", m.name) for m in plan.models]
    each = b.call("partial", b.name(plan.base.setting("samples", str)), *models)
    b.assign("images", b.call("draw_samples", each, seed=b.path("args", "seed")))


def _evaluate_checkpoint(b: PyBuilder, plan: StepsPlan) -> None:
    """--evaluate CHECKPOINT: the validation objectives of its weights; no training."""
    b.assign("models", _parts(b, plan))
    evaluated = b.path("args", "evaluate")
    if plan.sharded:  # every rank: its shards of a sharded save
        state = b.call("load_sharded_models", evaluated, models=b.name("models"))
    else:
        device = b.path("trainer", "ctx", "device")
        state = b.call("load_models_checkpoint", evaluated, models=b.name("models"),
                       map_location=device)  # fmt: skip
    b.assign("state", state)
    for model in plan.models:
        b.expr(b.method(b.path("trainer", model.name), "eval"))
    v = PyBuilder()
    each = _validating(v, plan, "objective_values")
    v.assign("validated", v.call("mean_objectives", each, v.path("trainer", "val_loader")))
    _gathered(b, plan, v, averages=False)
    epoch = b.subscript(b.name("state"), b.const("epoch"))
    record = py.DictOp([(b.const("epoch"), epoch), (None, b.name("validated"))])
    b.assign("record", b.add(record))
    b.expr(b.call("print", b.call("json.dumps", b.name("record"))))
    b.ret(b.const(0))


def _consolidate(b: PyBuilder, plan: StepsPlan) -> None:
    """--consolidate DIR OUT.pt (FSDP): the trained models' weights as one file, from one
    process with no group (DCP reads every shard: runtime/sharded_steps.py)."""
    then = PyBuilder()
    then.assign(then.tuple_of(then.name("folder"), then.name("output")),
                then.path("args", "consolidate"))  # fmt: skip
    models = py.DictOp([(then.const(m.name), _model_call(then, m)) for m in plan.trained])
    then.assign("models", then.add(models))
    written = then.call("consolidate_models", then.name("folder"), then.name("output"),
                        models=then.name("models"))  # fmt: skip
    then.assign("written", written)
    text = then.fstring("wrote the weights of {} to {}", then.name("folder"), then.name("written"))
    then.expr(then.call("print", text))
    then.ret(then.const(0))
    b.comment("one process, no group: DCP reads every shard")
    b.if_(b.is_set(b.path("args", "consolidate")), then)


def _main_ops(plan: StepsPlan) -> list[Operation]:
    distributed = plan.distributed
    top, body, run = PyBuilder(), PyBuilder(), PyBuilder()
    body.assign("args", body.call("parse_args", body.name("argv")))
    if plan.sharded:
        _consolidate(run, plan)
    if distributed:
        device = run.path("args", "device")
        ctx = run.call("setup_distributed", device, group_of_one=run.const(True))
    else:
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
    names = (
        plan.base.data_error,
        "DeviceUnavailable",
        "StepsCheckpointError",
        "CheckpointError",
        *(["ShardedCheckpointError"] if plan.sharded else []),
        *(["WeightsError"] if plan.published else []),
    )
    errors = body.tuple_of(*(body.name(n) for n in names))
    final = PyBuilder()
    if distributed:
        final.expr(final.call("teardown_distributed"))
    body.stmt(py.TryOp(run.ops, [(errors, region)], finalbody=final.ops))
    argv = top.optional(top.generic("list", "str"))
    top.stmt(py.DefOp("main", ["argv"], body.ops, defaults={"argv": top.const(None)},
                      annotations={"argv": argv}, returns=top.name("int")))  # fmt: skip
    return top.ops
