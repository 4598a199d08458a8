"""The `ScriptPlan` of a train block, and the sections of its script still held as text.

    plan = ScriptPlan(model_class="Classifier", dataset="digits", ...)
    loop_sources(plan)        # [[py.def @seed_everything ...], 'class Trainer: ...', ...]

`convert-train-to-torch` builds the plan from a checked `train.loop` and its
markers; `loop_sources` gives the sections after the command line, in order: the
`py` ops of train_step.py, train_records.py and train_loop.py, and the trainer's
sections (its dataclass, `build_trainer`, `build_recipe`, the lr schedule) as
`torch.raw` text, which this module still writes. The
sections are those of docs/emitted-script.md (golden copies in tests/e2e/reference/,
`make golden`): the code that does not depend on the program
is written once here; what the train block decides is substituted (`$name`
placeholders, `string.Template`), and a section a program does not need (the lr
schedule, DDP's wrap, activation checkpointing, CUDA-graph step marks) is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from string import Template
from textwrap import dedent

from xdsl.dialects.builtin import LocationAttr
from xdsl.ir import Attribute, Operation

from tensorloom.catalogue.datasets import SEQUENCE_TASKS, is_file_source
from tensorloom.catalogue.optimizers import OPTIMIZERS
from tensorloom.dialects.train import CUDA_GRAPH_MODES
from tensorloom.escape import py_string
from tensorloom.passes.loss_functions import Metric

CLASSIFICATION_LOSSES = ("CrossEntropy", "NLL")
# Optimizer keywords that choose its implementation: set by the user, they are kept.
_OPTIMIZER_MODES = frozenset({"fused", "foreach", "capturable", "differentiable"})


@dataclass(frozen=True, slots=True)
class RecipePlan:
    """The recipe keys of a train block, as Python literals (runtime/recipe.py uses them)."""

    decay_groups: bool = True
    ema: str | None = None  # `ema = 0.999`
    early_stopping: str | None = None  # `(patience, metric, min_delta)`
    keep_best: str | None = None  # a metric key: `val_loss`
    eval_every: int | None = None  # optimizer steps
    max_steps: int | None = None
    epochs_set: bool = True  # False: the run's epochs follow from `max_steps`


@dataclass(frozen=True, slots=True)
class ScriptPlan:
    """Everything about one train block that the script's text depends on."""

    source: str  # the .tl file, as the user named it
    model_class: str
    model_args: str  # `d_model=256, n_heads=4`: the instance's overrides, as Python
    dataset: str | None  # None: synthetic
    dataset_options: str  # a Python dict literal
    per_token_length: int | None  # synthetic data for a model with [B, T, C] outputs
    epochs: int
    batch_size: int | None  # None: not set in the block
    optimizer: str
    optimizer_kwargs: list[tuple[str, str]]  # (name, Python source), `lr` excluded
    learning_rate: str
    loss: str
    loss_kwargs: list[tuple[str, object]]  # the catalogue loss's arguments, as Python values
    # "auto", "fp32", "fp16", "bf16": what insert-amp's marker asks for on a GPU; "none": no
    # marker (the pass left out), so the script has no autocast, GradScaler or --precision
    precision: str
    distributed: bool
    checkpoint_every: int | None
    checkpoint_unit: str
    schedule: str | None  # "cosine", "step", "warmup"
    schedule_kwargs: dict[str, str] = field(default_factory=dict[str, str])
    grad_clip: str = "None"
    grad_accum: int = 1
    compile_mode: str | None = None
    compile_auto: bool = False  # no `compile` key: the script compiles only when it pays
    seed: int = 0
    checkpointed_layers: list[str] = field(default_factory=list[str])
    val_every: int = 1
    log_every: int | None = None
    language_model_data: bool = False  # `"text"` or `"tokens"`: windows of runtime/tokens.py
    custom_loss: str | None = None  # `loss = NAME`, a `fn NAME(out, y)` of the `.tl` file
    # The `fn`s (loss, metrics) that take the batch's inputs too: `fn NAME(out, x, y)`.
    takes_inputs: frozenset[str] = frozenset()
    metrics: tuple[Metric, ...] = ()  # `metrics = [accuracy, top_k(5), NAME]`
    # where the train block (its epoch loop), its `loss` and its dataset are (the source map)
    loop_location: LocationAttr | None = None
    label_classes: int | None = None  # a data file's labels are checked against this at load
    loss_location: LocationAttr | None = None  # where `loss` is set (else the train block)
    data_location: LocationAttr | None = None
    recipe: RecipePlan = RecipePlan()
    # `distributed = "fsdp"`: the layers `fully_shard` makes units of (the root is one too)
    fsdp_blocks: tuple[str, ...] | None = None
    model_overrides: tuple[tuple[str, Attribute], ...] = ()  # the instance's, as attributes

    @property
    def sharded(self) -> bool:
        """FSDP2 (runtime/sharded.py) rather than DDP: sharded weights, DCP checkpoints."""
        return self.fsdp_blocks is not None

    @property
    def amp(self) -> bool:
        """insert-amp ran: the script has autocast, a GradScaler and `--precision`."""
        return self.precision != "none"

    @property
    def loss_target(self) -> str:
        """What the step passes `loss_fn` after the output: the targets, or inputs and targets."""
        return "xb, yb" if self.custom_loss in self.takes_inputs else "yb"

    @property
    def reports_metrics(self) -> bool:
        """Validation goes through `batch_metrics`: a loss written in the file, or `metrics`."""
        return self.custom_loss is not None or bool(self.metrics)

    @property
    def classification(self) -> bool:
        return self.loss in CLASSIFICATION_LOSSES and self.custom_loss is None

    @property
    def resident_data(self) -> bool:
        """The data is a built-in dataset, small enough to live on the device (runtime/loader.py's
        `DeviceLoader`); a file may not be."""
        return self.dataset is None or not is_file_source(self.dataset)

    @property
    def cuda_graphs(self) -> bool:
        """torch.compile replays CUDA graphs in this mode ("max-autotune" too, unlike
        "max-autotune-no-cudagraphs"), so the script marks where each step begins."""
        return self.compile_mode in CUDA_GRAPH_MODES

    @property
    def whole_step_graph(self) -> bool:
        """The block allows capturing the whole step in one CUDA graph (runtime/graphs.py);
        the script still decides per run (device, resident data, model size)."""
        return (
            not self.distributed
            and not self.language_model_data  # windows are read per batch, not resident
            and self.grad_accum == 1
            and self.grad_clip == "None"
            and self.schedule is None
            and self.recipe.ema is None
            and self.recipe.eval_every is None
            and self.optimizer in ("Adam", "AdamW", "SGD")
            and not _names(self.optimizer_kwargs) & _OPTIMIZER_MODES
        )


def _fill(template: str, **values: object) -> str:
    return Template(dedent(template).strip("\n")).substitute({k: str(v) for k, v in values.items()})


# --- what the script trains on ----------------------------------------------------------------


def data_name(plan: ScriptPlan) -> str:
    """`` `digits` ``, or `synthetic data`: the data, as the script's header names it."""
    return "synthetic data" if plan.dataset is None else f"`{plan.dataset}`"


def data_description(plan: ScriptPlan) -> str:
    """`digits`, or `synthetic data`: what the script trains on, for its `--help`."""
    return data_name(plan).replace("`", "")


# --- loss ------------------------------------------------------------------------------------

# --- command line and setup ------------------------------------------------------------------


def scheduler_source(plan: ScriptPlan) -> str | None:
    if plan.schedule is None:
        return None
    return dedent(_SCHEDULER).strip("\n")


_SCHEDULER = '''
    def build_scheduler(
        optimizer: torch.optim.Optimizer, steps_per_epoch: int, total_steps: int
    ) -> torch.optim.lr_scheduler.LRScheduler:
        """`lr_schedule`: runtime/recipe.py's LrSchedule, stepped once per optimizer step."""
        schedule = lr_schedule_from(
            LR_SCHEDULE, steps_per_epoch=steps_per_epoch, total_steps=total_steps,
            base_lr=LEARNING_RATE,
        )  # fmt: skip
        return make_lr_scheduler(optimizer, schedule)
'''


TRAINER = '''
@dataclass
class Trainer:
    """Everything the loop touches, built once by `build_trainer`."""

    ctx: DistContext
    model: nn.Module  # the user's module: saved, loaded
    train_model: nn.Module  # trained: BatchLoss (one process) or the DDP-wrapped model
    eval_model: nn.Module  # compiled, not DDP-wrapped: evaluated
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler | None
    scheduler: torch.optim.lr_scheduler.LRScheduler | None
    plan: PrecisionPlan
    train_loader: $loader
    val_loader: $loader
    info: $info
    recipe: RunRecipe  # EMA, early stopping, keep-best, eval_every, stop signals
    step: int = 0
    start_epoch: int = 0
    carry: tuple[torch.Tensor, int] | None = None  # resumed mid-epoch: (loss sum, batches)
    metrics: MetricsWriter | None = None
    checkpoint_dir: str | None = None
    saved_step: int = -1  # the step last.pt holds
'''

_TRAINER_METRICS = """
    metrics: MetricsWriter | None = None"""
TRAINER_GRAPH_FIELDS = """
    whole_step: bool = False  # the step is captured in one CUDA graph (runtime/graphs.py)
    graphed: GraphedStep | None = None  # captured at the first epoch, after any resume
"""


def trainer_source(plan: ScriptPlan) -> str:
    text = _fill(TRAINER, loader=_loader_type(plan), info=_info_type(plan))
    if plan.recipe.eval_every is None:  # only `step_validation` writes between epochs
        text = text.replace(_TRAINER_METRICS, "")
    if not plan.whole_step_graph:
        return text
    return text + TRAINER_GRAPH_FIELDS.rstrip("\n")


def _loader_type(plan: ScriptPlan) -> str:
    if plan.language_model_data:
        return "WindowLoader"
    return "DeviceLoader" if plan.resident_data else "DeviceLoader | HostLoader"


def _info_type(plan: ScriptPlan) -> str:
    return "TokenInfo" if plan.language_model_data else "DataInfo"


def image_dataset(plan: ScriptPlan) -> bool:
    """A named image dataset (MNIST, Fashion-MNIST, CIFAR-10): the one kind `--download` fetches."""
    return not (
        plan.language_model_data
        or plan.dataset is None
        or plan.dataset == "digits"
        or plan.dataset in SEQUENCE_TASKS
        or is_file_source(plan.dataset)
    )


def build_trainer_source(plan: ScriptPlan) -> str:
    if plan.whole_step_graph:
        return _graph_build_trainer_source(plan)
    optimizer_args = "".join(f", {k}={v}" for k, v in plan.optimizer_kwargs)
    fused = ""
    if plan.sharded:
        pass  # the shards are DTensors: the default (foreach) step
    elif plan.optimizer in ("Adam", "AdamW", "SGD") and not _names(plan.optimizer_kwargs) & {
        "fused",
        "foreach",
        "capturable",
        "differentiable",
    }:
        fused = ', fused=ctx.device.type == "cuda"'
    schedule = (
        "total = total_train_steps(args.epochs, steps_per_epoch, MAX_STEPS)\n"
        "    scheduler = build_scheduler(optimizer, steps_per_epoch, total)"
        if plan.schedule is not None
        else "scheduler = None  # no `lr_schedule`"
    )
    checkpointed = ""
    if plan.checkpointed_layers:
        names = ", ".join(py_string(n) for n in plan.checkpointed_layers)
        checkpointed = f"\n    checkpoint_activations(model, [{names}])"
    wrap = "\n    train_model: nn.Module = compiled  # sharded in place" if plan.sharded else ""
    if plan.distributed and not plan.sharded:
        wrap = (
            dedent("""
            train_model: nn.Module = compiled
            if ctx.is_distributed:
                device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
                train_model = DistributedDataParallel(compiled, device_ids=device_ids)
        """)
            .rstrip("\n")
            .replace("\n", "\n    ")
        )
    text = _fill(
        """
        def build_trainer(args: argparse.Namespace, ctx: DistContext) -> Trainer:
            seed_everything(args.seed)
            train_loader, val_loader, info = build_loaders(args, ctx)
            model = $model_class($model_args).to(ctx.device)$checkpointed
            plan = resolve_precision(args.precision, ctx.device)$shard
            optimizer = torch.optim.$optimizer(
                $params, lr=LEARNING_RATE$optimizer_args$fused
            )
            steps_per_epoch = len(train_loader) // GRAD_ACCUM
            args.epochs = planned_epochs(args.epochs, MAX_STEPS, steps_per_epoch)
            $schedule
            $should_compile
            compiled = maybe_compile(model, compile_it, COMPILE_MODE)$train_model
            scaler = make_grad_scaler(plan, ctx.device)
            return Trainer(
                ctx, model, train_model, compiled, optimizer, scaler, scheduler, plan,
                train_loader, val_loader, info, build_recipe(model, ctx$recipe_plan),
            )  # fmt: skip
        """,
        recipe_plan=", plan" if plan.sharded else "",
        model_class=plan.model_class, model_args=plan.model_args, checkpointed=checkpointed,
        optimizer=plan.optimizer, optimizer_args=optimizer_args, fused=fused,
        params=_param_groups(plan),
        schedule=schedule, train_model=wrap or _BATCH_LOSS_MODEL,
        shard=_SHARD if plan.sharded else "",
        should_compile=_should_compile_call(plan, "compile_it = "),
    )  # fmt: skip
    return _epochs_set(text, plan)


def _should_compile_call(plan: ScriptPlan, assign: str) -> str:
    """`compile_it = should_compile(...)` (runtime/compiling.py), in `build_trainer`'s indent:
    the eager step it times is `BatchLoss`, under the precision plan's autocast."""
    keywords = "batch_loss=BatchLoss(model), loader=train_loader"
    if plan.amp:
        keywords += ",\n        region=partial(autocast, plan, ctx.device)"
    if plan.distributed:
        keywords += ", announce=ctx.is_main"  # rank 0 says which way it went
    return (
        f"{assign}should_compile(\n"
        '        "off" if args.no_compile else args.compile, COMPILE_MODE, ctx.device,\n'
        "        steps=total_train_steps(args.epochs, len(train_loader) // GRAD_ACCUM, "
        "args.max_steps),\n"
        f"        {keywords},\n"
        "    )  # fmt: skip"
    )


def _epochs_set(text: str, plan: ScriptPlan) -> str:
    """`build_trainer` without `planned_epochs` when the block sets `epochs` (then it is
    `--epochs` as given), and without `steps_per_epoch` when no schedule needs it."""
    if not plan.recipe.epochs_set:
        return text
    for line in (
        "\n    args.epochs = planned_epochs(args.epochs, MAX_STEPS, steps_per_epoch)",
        "\n    args.epochs = planned_epochs(args.epochs, MAX_STEPS, len(train_loader))",
        *(
            ()
            if plan.schedule is not None
            else ("\n    steps_per_epoch = len(train_loader) // GRAD_ACCUM",)
        ),
    ):
        text = text.replace(line, "")
    return text


# One process: the step calls `BatchLoss`, so torch.compile sees the forward and the loss as
# one graph (as nanoGPT computes its loss inside `forward`): an LM's [B*T, vocab] logits are
# then never cast to fp32 and log-softmaxed by eager kernels (bench/RESULTS.md, GPT-2).
_BATCH_LOSS_MODEL = """
    # the step's forward and loss, compiled together; evaluation runs `compiled`
    train_model = maybe_compile(BatchLoss(model), compile_it, COMPILE_MODE)"""


_SHARD = """
    # FSDP2: each block's weights are all-gathered in the training precision for its
    # forward and backward, then freed; gradients are reduce-scattered in fp32.
    shard_model(model, FSDP_BLOCKS, param_dtype=plan.autocast_dtype)"""


def _param_groups(plan: ScriptPlan) -> str:
    """What the optimizer steps: `decay_groups`' two groups only where weight decay applies."""
    spec = OPTIMIZERS.get(plan.optimizer)
    decay = dict(plan.optimizer_kwargs).get("weight_decay")
    if decay is None:
        decay = str(spec.default_weight_decay if spec is not None else 0.0)
    if not plan.recipe.decay_groups or decay.replace(".", "").strip("0") == "":
        return "model.parameters()"
    return "decay_param_groups(model)"


def _names(kwargs: list[tuple[str, str]]) -> set[str]:
    return {name for name, _ in kwargs}


def _graph_build_trainer_source(plan: ScriptPlan) -> str:
    """`build_trainer` for a block whose step may be captured whole (see runtime/graphs.py)."""
    optimizer_args = "".join(f", {k}={v}" for k, v in plan.optimizer_kwargs)
    # Fused Adam/AdamW is capture-safe with capturable=True: one kernel for the whole update,
    # where the capturable foreach path launches a dozen per step. Fused SGD is not.
    if plan.optimizer == "SGD":
        modes = 'fused=ctx.device.type == "cuda" and not whole_step'
    else:
        modes = 'fused=ctx.device.type == "cuda", capturable=whole_step'
    checkpointed = ""
    if plan.checkpointed_layers:
        names = ", ".join(py_string(n) for n in plan.checkpointed_layers)
        checkpointed = f"\n    checkpoint_activations(model, [{names}])"
    text = _fill(
        '''
        def build_trainer(args: argparse.Namespace, ctx: DistContext) -> Trainer:
            seed_everything(args.seed)
            train_loader, val_loader, info = build_loaders(args, ctx)
            model = $model_class($model_args).to(ctx.device)$checkpointed
            plan = resolve_precision(args.precision, ctx.device)
            scaler = make_grad_scaler(plan, ctx.device)
            whole_step = _whole_step_graph(model, train_loader, scaler, args, ctx)
            args.epochs = planned_epochs(args.epochs, MAX_STEPS, len(train_loader))
            optimizer = torch.optim.$optimizer(
                $params, lr=LEARNING_RATE$optimizer_args,
                $modes,
            )  # fmt: skip
            scheduler = None  # no `lr_schedule`
            # The captured step replaces torch.compile: it already runs as one graph launch.
            if whole_step:
                print("compile: off (the whole step is one CUDA graph)", flush=True)
            $should_compile
            compiled = maybe_compile(model, compile_it, COMPILE_MODE)
            train_model = maybe_compile(BatchLoss(model), compile_it, COMPILE_MODE)
            return Trainer(
                ctx, model, train_model, compiled, optimizer, scaler, scheduler, plan,
                train_loader, val_loader, info, build_recipe(model, ctx), whole_step=whole_step,
            )  # fmt: skip


        def _whole_step_graph(
            model: nn.Module, loader: $loader,
            scaler: torch.amp.GradScaler | None, args: argparse.Namespace, ctx: DistContext,
        ) -> bool:  # fmt: skip
            """Whether this run captures its whole step in one CUDA graph (runtime/graphs.py):
            on CUDA, data on the device, no GradScaler, at most SMALL_MODEL_PARAMS parameters."""
            small = sum(p.numel() for p in model.parameters()) <= SMALL_MODEL_PARAMS
            resident = isinstance(loader, DeviceLoader)
            cuda = ctx.device.type == "cuda" and not args.no_cuda_graph
            return cuda and resident and scaler is None and small
        ''',
        model_class=plan.model_class, model_args=plan.model_args, checkpointed=checkpointed,
        optimizer=plan.optimizer, optimizer_args=optimizer_args, modes=modes,
        params=_param_groups(plan),
        loader=_loader_type(plan),
        should_compile=_should_compile_call(plan, "compile_it = not whole_step and "),
    )  # fmt: skip
    return _epochs_set(text, plan)


def build_recipe_source(plan: ScriptPlan) -> str:
    """`build_recipe`: a `RunRecipe` of only the parts the block uses (runtime/recipe.py):
    the best epoch (by `keep_best`'s metric, else val_loss) for the run's summary, the
    EMA, early stopping, `eval_every`, and SIGINT/SIGTERM handling in one process."""
    recipe = plan.recipe
    parts: list[str] = []
    if recipe.ema is not None:
        parts.append("ema=ModelEMA(model, EMA_DECAY, ema_copy)" if plan.sharded
                     else "ema=ModelEMA(model, EMA_DECAY)")  # fmt: skip
    if recipe.early_stopping is not None:
        parts.append("stopper=EarlyStopping(*EARLY_STOPPING)")
    parts.append("best=BestTracker(KEEP_BEST)" if recipe.keep_best is not None
                 else 'best=BestTracker("val_loss")')  # fmt: skip
    if recipe.eval_every is not None:
        parts.append("eval_every=EVAL_EVERY")
    if plan.distributed:  # several processes must stop at one step: no handlers
        parts.append("signals=None if ctx.is_distributed else StopSignals().install()")
    else:
        parts.append("signals=StopSignals().install()")
    one_line = f"    return RunRecipe({', '.join(parts)})"
    if len(one_line) <= 100:
        lines = [one_line]
    else:
        lines = ["    return RunRecipe(", *(f"        {p}," for p in parts), "    )"]
    if plan.sharded and recipe.ema is not None:
        lines[:0] = [line.replace("$model", f"{plan.model_class}({plan.model_args})")
                     for line in _SHARDED_EMA]  # fmt: skip
    parameters = "model: nn.Module, ctx: DistContext"
    if plan.sharded:
        parameters += ", plan: PrecisionPlan"
    doc = '    """The block\'s recipe keys as runtime/recipe.py objects."""'
    return "\n".join([f"def build_recipe({parameters}) -> RunRecipe:", doc, *lines])


# Under FSDP the `ema` average is a second model sharded as the model is: each rank
# averages its own shards, with no communication.
_SHARDED_EMA = [
    "    with torch.random.fork_rng(devices=[]):  # its weights take no numbers from the run",
    "        ema_copy = $model.to(ctx.device)",
    "    shard_model(ema_copy, FSDP_BLOCKS, param_dtype=plan.autocast_dtype)",
]


# --- the step --------------------------------------------------------------------------------


def program_name(plan: ScriptPlan) -> str:
    """The program's name, `mnist` for `examples/mnist.tl`: its checkpoints' folder."""
    name = PurePath(plan.source).stem
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "program"


def _evaluate_sections(
    plan: ScriptPlan,
    evaluate_ops: Callable[[ScriptPlan, str], list[Operation]],
    metrics_evaluate_ops: Callable[[ScriptPlan, str], list[Operation]],
    gathered_evaluate_ops: Callable[[], list[Operation]],
) -> list[list[Operation]]:
    """`evaluate`; under FSDP it is `_evaluate_whole`, which `evaluate` calls with the whole
    weights gathered."""
    name = "_evaluate_whole" if plan.sharded else "evaluate"
    whole = (metrics_evaluate_ops if plan.reports_metrics else evaluate_ops)(plan, name)
    return [whole, gathered_evaluate_ops()] if plan.sharded else [whole]


def loop_sources(plan: ScriptPlan) -> list[str | list[Operation]]:
    """The sections after the models, the loss and the command line (train_cli.py), in the
    script's order."""
    from tensorloom.passes.train_data import build_loaders_ops
    from tensorloom.passes.train_loop import (
        main_ops,
        run_sections,
        saves_ops,
        serve_requests_ops,
    )
    from tensorloom.passes.train_records import metrics_evaluate_ops, records_ops
    from tensorloom.passes.train_step import (
        batch_loss_ops,
        begin_step_ops,
        epoch_helper_ops,
        evaluate_ops,
        forward_backward_ops,
        gathered_evaluate_ops,
        graphed_epoch_ops,
        optimizer_step_ops,
        resume_extra_ops,
        resume_ops,
        seed_everything_ops,
        train_one_epoch_ops,
    )

    sections: list[str | list[Operation] | None] = [
        seed_everything_ops(),
        scheduler_source(plan),
        trainer_source(plan),
        build_loaders_ops(plan),
        build_trainer_source(plan),
        batch_loss_ops(plan),
        build_recipe_source(plan),
        resume_ops(plan),
        resume_extra_ops(),
        train_one_epoch_ops(plan),
        epoch_helper_ops(),
        graphed_epoch_ops(plan) if plan.whole_step_graph else None,
        forward_backward_ops(plan),
        begin_step_ops() if plan.cuda_graphs else None,
        optimizer_step_ops(plan),
        *_evaluate_sections(plan, evaluate_ops, metrics_evaluate_ops, gathered_evaluate_ops),
        records_ops(plan),
        saves_ops(plan),
        run_sections(plan),
        serve_requests_ops(plan),
        main_ops(plan),
    ]
    return [_section_text(s, plan) if isinstance(s, str) else s for s in sections if s]


def _section_text(text: str, plan: ScriptPlan) -> str:
    text = dedent(text).strip("\n")
    text = text if plan.amp else without_amp(text)
    return text if plan.distributed else _one_process(text)


# One process reduces nothing: without `distributed`, the script carries no process-group code.
_ONE_PROCESS = (
    ("all_reduce_sum(totals)", "totals"),
    ("all_reduce_mean(train_loss)", "train_loss"),
    ("\n    barrier()  # no rank closes its connections while another still uses them", ""),
    ("\n    barrier()", ""),
    ("    log = print if ctx.is_main else _silent\n", ""),
    ('; rank 0 writes."""', '."""'),
    ("\n\n\ndef _silent(*_args: object, **_kwargs: object) -> None:\n    return None", ""),
    (" and ctx.is_main:", ":"),
    ("if trainer.ctx.is_main and ", "if "),
    (", enabled=ctx.is_main", ""),
)
_RANK_ZERO = ("if ctx.is_main:", "if trainer.ctx.is_main:")


def _one_process(text: str) -> str:
    """The section as one process runs it: no collectives, and rank 0's blocks unwrapped."""
    for collective, local in _ONE_PROCESS:
        text = text.replace(collective, local)
    text = re.sub(r"^( *)log\(", r"\1print(", text, flags=re.MULTILINE)  # rank 0's `log`
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() not in _RANK_ZERO:
            out.append(lines[i])
            i += 1
            continue
        end = _block_end(lines, i)
        out += [body[4:] for body in lines[i + 1 : end]]
        i = end
    return "\n".join(out)


# Without insert-amp's marker the script has no precision plan and no GradScaler: these
# are its arguments, fields and uses (the `with autocast(...)` blocks are unwrapped, the
# `if ... scaler is not None:` blocks dropped, by `without_amp`).
_NO_AMP = (
    ("optimizer, scaler, scheduler, plan,", "optimizer, scheduler,"),
    (", train_loader, plan)", ", train_loader)"),
    ("_whole_step_graph(model, train_loader, scaler, args, ctx)",
     "_whole_step_graph(model, train_loader, args, ctx)"),
    ("    scaler: torch.amp.GradScaler | None, args: argparse.Namespace, ctx: DistContext,\n",
     "    args: argparse.Namespace, ctx: DistContext,\n"),
    ("resident and scaler is None and small", "resident and small"),
    ('"optimizer": trainer.optimizer, "scaler": trainer.scaler,',
     '"optimizer": trainer.optimizer,'),
    ("optimizer, scaler = trainer.optimizer, trainer.scaler", "optimizer = trainer.optimizer"),
    ("weights, optimizer, scaler, schedule", "weights, optimizer, schedule"),
    (" optimizer=trainer.optimizer, scaler=trainer.scaler,", " optimizer=trainer.optimizer,"),
)  # fmt: skip
_NO_AMP_LINES = (
    "scaler: torch.amp.GradScaler | None",
    "plan: PrecisionPlan",
    "plan = resolve_precision(args.precision, ctx.device)",
    "scaler = make_grad_scaler(plan, ctx.device)",
    "scaler=trainer.scaler,",
)


def without_amp(text: str) -> str:
    """A section's text with no mixed precision: what the script is without insert-amp."""
    for old, new in _NO_AMP:
        text = text.replace(old, new)
    lines = [line for line in text.split("\n") if line.strip() not in _NO_AMP_LINES]
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        block_end = _block_end(lines, i)
        if stripped.startswith("with autocast("):  # unwrap: the body, one level out
            out += [body[4:] for body in lines[i + 1 : block_end]]
            i = block_end
        elif stripped.startswith("if ") and "scaler is not None" in stripped:
            i = _drop_else(lines, block_end, out, _indent(line))
        else:
            out.append(line)
            i += 1
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block_end(lines: list[str], i: int) -> int:
    """The index after the block the line `i` opens (its more-indented lines)."""
    j = i + 1
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > _indent(lines[i])):
        j += 1
    while j > i + 1 and not lines[j - 1].strip():  # the blank lines after it are not its
        j -= 1
    return j


def _drop_else(lines: list[str], j: int, out: list[str], indent: int) -> int:
    """After a dropped `if`: an `else:` at its indent keeps its body, one level out."""
    if j < len(lines) and lines[j].strip() == "else:" and _indent(lines[j]) == indent:
        end = _block_end(lines, j)
        out += [body[4:] for body in lines[j + 1 : end]]
        return end
    return j
