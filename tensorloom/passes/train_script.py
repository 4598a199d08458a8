"""The text of an emitted training script's sections, filled in from a `ScriptPlan`.

    plan = ScriptPlan(model_class="Classifier", dataset="digits", ...)
    settings_source(plan)     # 'EPOCHS = 10\\nBATCH_SIZE = 64 ...'
    loop_sources(plan)        # ['def parse_args(...)...', 'def seed_everything(...)...', ...]

`convert-train-to-torch` builds the plan from a checked `train.loop` and its
markers, and puts each section into the script as a `torch.raw` op. The
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
from tensorloom.dialects.train import CUDA_GRAPH_MODES, DEFAULT_BATCH_SIZE
from tensorloom.escape import py_comment, py_string
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
    model_location: LocationAttr | None = None  # the instance's `let net = Classifier()`
    optimizer_location: LocationAttr | None = None  # where `optimizer` is set
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
    def fusable_optimizer(self) -> bool:
        """Adam, AdamW or SGD with no implementation keyword the user chose: the script picks
        the fused (or capturable) one."""
        return self.optimizer in ("Adam", "AdamW", "SGD") and not (
            _names(self.optimizer_kwargs) & _OPTIMIZER_MODES
        )

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
            and self.fusable_optimizer
        )


def _fill(template: str, **values: object) -> str:
    return Template(dedent(template).strip("\n")).substitute({k: str(v) for k, v in values.items()})


# --- header and settings ---------------------------------------------------------------------


def header_source(plan: ScriptPlan) -> str:
    launch = (
        "torchrun --nproc_per_node=N OUT.py" if plan.distributed else "python OUT.py --device cpu"
    )
    return _fill(
        """
        # Trains `$model` on $data, as `$source` says.
        #
        # Run it:
        #     python OUT.py --epochs 10 --metrics run/metrics.jsonl
        #     $launch
        # OUT.py --help lists the options; importing this file runs nothing.$auto
        """,
        model=plan.model_class, data=py_comment(_data_name(plan)), source=py_comment(plan.source),
        launch=launch,
        auto=_AUTO_PRECISION_NOTE if plan.precision == "auto" else "",
    )  # fmt: skip


_AUTO_PRECISION_NOTE = """
#
# Precision is `auto` (the block sets none): bf16 autocast on a CUDA GPU that
# supports bf16, fp32 on the CPU; `--precision fp32|fp16|bf16` overrides it."""


def _data_name(plan: ScriptPlan) -> str:
    return "synthetic data" if plan.dataset is None else f"`{plan.dataset}`"


def data_description(plan: ScriptPlan) -> str:
    """`digits`, or `synthetic data`: what the script trains on, for its `--help`."""
    return _data_name(plan).replace("`", "")


def settings_source(plan: ScriptPlan) -> str:
    lines = ["# ---- settings: the train block's values; the command line overrides some ----"]
    if plan.recipe.epochs_set:
        lines.append(f"EPOCHS = {plan.epochs}")
    else:
        lines.append("EPOCHS: int | None = None  # as many as `max_steps` takes")
    if plan.batch_size is None:
        lines.append(
            f"BATCH_SIZE = {DEFAULT_BATCH_SIZE}  # `batch_size` was not set in the train block"
        )
    else:
        lines.append(f"BATCH_SIZE = {plan.batch_size}  # per process")
    lines.append(f"LEARNING_RATE = {plan.learning_rate}")
    if plan.amp:
        note = _PRECISION_NOTES[plan.precision]
        lines.append(f"PRECISION = {py_string(plan.precision)}  # {note}")
    if plan.fsdp_blocks is not None:
        blocks = ", ".join(py_string(b) for b in plan.fsdp_blocks)
        lines.append(f"FSDP_BLOCKS = [{blocks}]  # fully_shard units (then the root)")
    lines += _checkpoint_settings(plan)
    lines += _schedule_settings(plan)
    if plan.grad_clip != "None":
        lines.append(f"GRAD_CLIP = {plan.grad_clip}  # clips the global gradient norm")
    lines.append(f"GRAD_ACCUM = {plan.grad_accum}  # micro-batches per optimizer step")
    if plan.val_every != 1:
        lines.append(f"VAL_EVERY = {plan.val_every}  # epochs between validations (and the last)")
    if plan.reports_metrics:
        keys = ", ".join(f'"{m.key}"' for m in plan.metrics)
        lines.append(f"METRICS = [{keys}]  # `metrics = [...]`: reported after val_loss")
    lines += _recipe_settings(plan.recipe, plan.schedule is not None)
    if plan.log_every is not None:
        lines.append(f"LOG_EVERY = {plan.log_every}  # optimizer steps between loss lines")
    mode = py_string(plan.compile_mode) if plan.compile_mode else "None"
    lines.append(f"COMPILE_MODE: str | None = {mode}  # torch.compile's mode on CUDA")
    choice = "off" if plan.compile_mode is None else "auto" if plan.compile_auto else "on"
    note = {"off": "`compile = false`", "auto": "the block sets no `compile`"}.get(
        choice, "`compile` in the block"
    )
    lines.append(f"COMPILE = {py_string(choice)}  # {note}; --compile overrides it")
    lines.append(f"SEED = {plan.seed}")
    if "DATASET," in _load_call(plan) or plan.language_model_data:
        lines.append(f"DATASET: str = {py_string(plan.dataset or '')}")
    lines.append(f"DATASET_OPTIONS: dict[str, Any] = {plan.dataset_options}")
    return "\n".join(lines)


_PRECISION_NOTES = {
    "auto": "bf16 on a CUDA GPU with bf16 support, else fp32",
    "fp32": "no autocast",
    "fp16": "on the CPU, fp16 falls back to fp32",
    "bf16": "bf16 autocast; a GPU without bf16 gets fp16 and a GradScaler",
}


def _recipe_settings(recipe: RecipePlan, schedule: bool) -> list[str]:
    lines: list[str] = []
    if recipe.ema is not None:  # the recipe's parts are in the script only when set
        lines.append(f"EMA_DECAY = {recipe.ema}  # `ema`: an EMA of the weights")
    if recipe.early_stopping is not None:
        lines.append(f"EARLY_STOPPING = {recipe.early_stopping}  # (patience, metric, min_delta)")
    if recipe.keep_best is not None:
        keep = py_string(recipe.keep_best)
        lines.append(f"KEEP_BEST = {keep}  # saves best.pt at each new best of this metric")
    if recipe.eval_every is not None:
        lines.append(f"EVAL_EVERY = {recipe.eval_every}  # steps between validations")
    if recipe.max_steps is not None or not recipe.epochs_set or schedule:
        lines.append(f"MAX_STEPS: int | None = {recipe.max_steps}  # the schedule spans them")
    return lines


def _checkpoint_settings(plan: ScriptPlan) -> list[str]:
    if plan.checkpoint_every is None:
        return [
            "CHECKPOINT_EVERY: int | None = None  # unset: saved at the end and when interrupted",
            "KEEP_CHECKPOINTS = 3",
        ]
    return [
        f"CHECKPOINT_EVERY: int | None = {plan.checkpoint_every}  # {plan.checkpoint_unit}",
        "KEEP_CHECKPOINTS = 3",
    ]


def _schedule_settings(plan: ScriptPlan) -> list[str]:
    if plan.schedule is None:
        return []
    options = {"name": py_string(plan.schedule), **plan.schedule_kwargs}  # defaults filled in
    items = ", ".join(f"{py_string(k)}: {v}" for k, v in options.items())
    return [f"LR_SCHEDULE: dict[str, Any] = {{{items}}}  # `lr_schedule`, runtime/recipe.py"]


# --- loss ------------------------------------------------------------------------------------

# --- command line and setup ------------------------------------------------------------------


def image_dataset(plan: ScriptPlan) -> bool:
    """A named image dataset (MNIST, Fashion-MNIST, CIFAR-10): the one kind `--download` fetches."""
    return not (
        plan.language_model_data
        or plan.dataset is None
        or plan.dataset == "digits"
        or plan.dataset in SEQUENCE_TASKS
        or is_file_source(plan.dataset)
    )


def _load_call(plan: ScriptPlan) -> str:
    """The call of the runtime/data.py reader this dataset needs, up to its keywords."""
    if plan.dataset is None:
        return "load_synthetic("
    if plan.dataset == "digits":
        return "load_digits("
    if plan.dataset in SEQUENCE_TASKS:
        return "load_sequence_task(DATASET, "
    if is_file_source(plan.dataset):
        return "load_file_dataset(DATASET, "
    return "load_image_dataset(DATASET, download=args.download, "


RESUME = '''
def resume(trainer: Trainer, path: str) -> None:
    """Continue where a checkpoint left off: weights, optimizer, scaler, schedule, RNG,
    the recipe's state (EMA, early stopping, best) and, mid-epoch, the epoch's batches."""
    state = load_checkpoint(
        path, model=trainer.model, optimizer=trainer.optimizer, scaler=trainer.scaler,
        scheduler=trainer.scheduler, loader=trainer.train_loader, map_location=trainer.ctx.device,
    )  # fmt: skip
    _resume_extra(trainer, state)
'''

RESUME_SHARDED = '''
def resume(trainer: Trainer, path: str) -> None:
    """Continue from a sharded save (or the newest complete one in a folder), on any world size:
    weights, optimizer, scaler, schedule, RNG, the recipe's state (the EMA's shards too)
    and, mid-epoch, the epoch's batches."""
    ema = trainer.recipe.ema
    state = load_sharded_checkpoint(
        path,
        model=trainer.model,
        optimizer=trainer.optimizer,
        scaler=trainer.scaler,
        scheduler=trainer.scheduler,
        loader=trainer.train_loader,
        ema=ema.module if ema is not None else None,
    )
    _resume_extra(trainer, state)
'''


RESUME_GRAPH = '''
def resume(trainer: Trainer, path: str) -> None:
    """Continue where a checkpoint left off: weights, optimizer, scaler, schedule, RNG."""
    modes = optimizer_modes(trainer.optimizer)  # capturable or fused: this run decides
    state = load_checkpoint(
        path, model=trainer.model, optimizer=trainer.optimizer, scaler=trainer.scaler,
        scheduler=trainer.scheduler, loader=trainer.train_loader, map_location=trainer.ctx.device,
    )  # fmt: skip
    restore_optimizer_modes(trainer.optimizer, modes)
    _resume_extra(trainer, state)
'''


# --- the step --------------------------------------------------------------------------------


def _metrics_evaluate_source(plan: ScriptPlan) -> str:
    mark = "\n        _begin_step(trainer)" if plan.cuda_graphs else ""
    return _fill(
        '''
        @torch.no_grad()
        def evaluate(trainer: Trainer, model: nn.Module | None = None) -> dict[str, float]:
            """Validation loss and METRICS over the whole split, summed across ranks.

            Each batch adds its mean times its size, so the result is the mean over samples.
            """
            model = trainer.eval_model if model is None else model
            device = trainer.ctx.device
            model.eval()
            totals = torch.zeros(2 + len(METRICS), device=device)  # loss, samples, then METRICS
            for xb, yb in trainer.val_loader:$mark
                with autocast(trainer.plan, device):  # the loss runs in fp32 under it
                    output = model(xb)
                    totals[0] += loss_fn(output, $target).float() * len(xb)
                    totals[2:] += batch_metrics(output, xb, yb) * len(xb)
                totals[1] += len(xb)
            sums = all_reduce_sum(totals).tolist()
            count = max(sums[1], 1)
            values = {key: total / count for key, total in zip(METRICS, sums[2:], strict=True)}
            return {"val_loss": sums[0] / count, **values}
        ''',
        mark=mark, target=plan.loss_target,
    ) + "\n\n\n" + batch_metrics_source(plan)  # fmt: skip


def batch_metrics_source(plan: ScriptPlan) -> str:
    """`batch_metrics(output, inputs, target)`: each metric's batch mean, in METRICS' order."""
    values = [_metric_call(plan, m) for m in plan.metrics]
    listed = "".join(f"\n        {v}," for v in values)
    none = "target.new_zeros(0, dtype=torch.float32)"  # the output may be a tuple
    body = f"torch.stack([{listed}\n    ])" if values else none
    return _fill(
        '''
        def batch_metrics(
            output: torch.Tensor, inputs: torch.Tensor, target: torch.Tensor
        ) -> torch.Tensor:
            """`metrics = [$names]`: each one's mean over the batch."""
            return $body
        ''',
        names=", ".join(m.name if m.kind != "top_k" else f"top_k({m.k})" for m in plan.metrics),
        body=body,
    )  # fmt: skip


def _metric_call(plan: ScriptPlan, metric: Metric) -> str:
    if metric.kind == "accuracy":
        return "batch_accuracy(output, target)"  # runtime/metrics.py
    if metric.kind == "top_k":
        return f"batch_top_k_accuracy(output, target, {metric.k})"
    inputs = "inputs, " if metric.name in plan.takes_inputs else ""
    return f"{metric.name}(output, {inputs}target).float()"


# --- the loop --------------------------------------------------------------------------------

EPOCH_RECORD = '''
# ---- the loop ----
def validation_record(trainer: Trainer) -> dict[str, Any]:
    """The validation metrics, and the EMA weights' (`ema_` keys) when `ema` is set."""
    record = _as_record(evaluate(trainer))
    if trainer.recipe.ema is not None:
        ema = _as_record(evaluate(trainer, trainer.recipe.ema.module))
        record.update({f"ema_{key}": value for key, value in ema.items() if value is not None})
    return record


def _as_record(result: tuple[float, float | None] | dict[str, float]) -> dict[str, Any]:
    if isinstance(result, dict):
        return dict(result)
    return {"val_loss": result[0], "val_accuracy": result[1]}


def epoch_record(trainer: Trainer, epoch: int, train_loss: torch.Tensor, batches: int,
                 elapsed: float, args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    due = (epoch + 1) % VAL_EVERY == 0 or epoch + 1 == args.epochs
    validation = validation_record(trainer) if due else {"val_loss": None}
    samples = batches * args.batch_size * trainer.ctx.world_size
    return {
        "epoch": epoch + 1,
        "train_loss": all_reduce_mean(train_loss).item(),  # the epoch's one host sync
        **validation,
        "samples_per_s": samples / elapsed,
        "lr": float(trainer.optimizer.param_groups[0]["lr"]),
        "time": elapsed,
        "steps": trainer.step,
    }
'''

STEP_VALIDATION = '''


def step_validation(trainer: Trainer, epoch: int) -> None:
    """`eval_every = N`: validation after every N optimizer steps, recorded with its step."""
    record = {"epoch": epoch + 1, "steps": trainer.step, **validation_record(trainer)}
    trainer.train_model.train()
    if trainer.metrics is not None:
        trainer.metrics.write(record)
    if trainer.ctx.is_main:
        print(format_validation(record))
    after_validation(trainer, record)
'''


def epoch_record_source(plan: ScriptPlan) -> str:
    """The epoch's record and validation, `step_validation` with `eval_every`."""
    text = EPOCH_RECORD
    if plan.val_every == 1:  # every epoch
        text = text.replace(_VAL_EVERY, "").replace(
            "**validation,", "**validation_record(trainer),"
        )
    if plan.recipe.ema is None:
        text = (
            text.replace(_EMA_RECORD, "")
            .replace(
                "The validation metrics, and the EMA weights' (`ema_` keys) when `ema` is set.",
                "The validation metrics.",
            )
            .replace("    record = _as_record(evaluate(trainer))\n    return record", _RECORD)
            .replace(_AS_RECORD, "")
        )
        if plan.reports_metrics:  # `evaluate` returns the record
            text = text.replace(_RECORD, "    return evaluate(trainer)")
    if plan.recipe.eval_every is not None:
        text += STEP_VALIDATION
    if plan.recipe.keep_best is None:  # no best.pt: the loop calls the recipe itself
        text = text.replace(
            "    after_validation(trainer, record)", "    trainer.recipe.after_validation(record)"
        )
    return text


_RECORD = """    loss, accuracy = evaluate(trainer)
    return {"val_loss": loss, "val_accuracy": accuracy}"""
_AS_RECORD = """


def _as_record(result: tuple[float, float | None] | dict[str, float]) -> dict[str, Any]:
    if isinstance(result, dict):
        return dict(result)
    return {"val_loss": result[0], "val_accuracy": result[1]}"""
_VAL_EVERY = """    due = (epoch + 1) % VAL_EVERY == 0 or epoch + 1 == args.epochs
    validation = validation_record(trainer) if due else {"val_loss": None}
"""
_EMA_RECORD = """
    if trainer.recipe.ema is not None:
        ema = _as_record(evaluate(trainer, trainer.recipe.ema.module))
        record.update({f"ema_{key}": value for key, value in ema.items() if value is not None})"""


def serve_requests_source(plan: ScriptPlan) -> str:
    generate = ""
    if plan.language_model_data:
        generate = """
    if args.generate is not None:
        print(generate_text(
            model, args.generate, tokens=args.tokens, block_size=DATASET_OPTIONS["block_size"],
            temperature=args.temperature, top_k=args.top_k, seed=args.seed,
        ))  # fmt: skip"""
    return _fill(
        '''
        def serve_requests(trainer: Trainer, args: argparse.Namespace) -> None:
            """--predict, --export$generate_flag with the trained weights$ema."""
            $start
            example = next(iter(trainer.val_loader))[0][:2]
            if args.predict is not None:
                x = read_predict_inputs(
                    args.predict, sample_shape=tuple(example.shape[1:]),
                    normalisation=getattr(trainer.info, "normalisation", None),
                    integer=not example.is_floating_point(),
                )  # fmt: skip
                outputs = predict(model, x, batch_size=args.batch_size, device=trainer.ctx.device)
                write_predictions(outputs, args.out, classes=$classes)
            if args.export is not None:
                print(f"exported to {export_model(model, example, args.export)}")$generate
        ''',
        generate=generate, classes=plan.classification,
        ema=" (the EMA's with `ema`)" if plan.recipe.ema is not None else "",
        generate_flag=", --generate" if plan.language_model_data else "",
        start=_serve_start(plan).strip(),  # the first line takes the template's indent
    )  # fmt: skip


_NOT_MAIN = """
    if not trainer.ctx.is_main:
        return"""
_EMA_OR_MODEL = "trainer.recipe.ema.module if trainer.recipe.ema is not None else trainer.model"
_SERVE_START = f"""{_NOT_MAIN}
    model = {_EMA_OR_MODEL}"""

# FSDP: every rank gives its shards to rank 0's unsharded copy; it serves alone.
_SERVE_START_SHARDED = """
    if args.predict is None and args.export is None$no_generate:
        return
    sharded = trainer.recipe.ema.module if trainer.recipe.ema is not None else trainer.model
    whole = whole_model(sharded, $model.to(trainer.ctx.device))  # every rank
    if whole is None:  # not rank 0
        return
    model = whole"""


def _serve_start(plan: ScriptPlan) -> str:
    if not plan.sharded:
        text = _SERVE_START if plan.distributed else _SERVE_START.replace(_NOT_MAIN, "")
        if plan.recipe.ema is not None:
            return text
        return text.replace(_EMA_OR_MODEL, "trainer.model")
    no_generate = " and args.generate is None" if plan.language_model_data else ""
    model = f"{plan.model_class}({plan.model_args})"
    return _SERVE_START_SHARDED.replace("$no_generate", no_generate).replace("$model", model)


def program_name(plan: ScriptPlan) -> str:
    """The program's name, `mnist` for `examples/mnist.tl`: its checkpoints' folder."""
    name = PurePath(plan.source).stem
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "program"


def _names(kwargs: list[tuple[str, str]]) -> set[str]:
    return {name for name, _ in kwargs}


def _resume_source(plan: ScriptPlan) -> str:
    if plan.sharded:
        return RESUME_SHARDED
    return RESUME_GRAPH if plan.whole_step_graph else RESUME


def _evaluate_sections(
    plan: ScriptPlan,
    evaluate_ops: Callable[[ScriptPlan, str], list[Operation]],
    gathered_evaluate_ops: Callable[[], list[Operation]],
) -> list[str | list[Operation]]:
    """`evaluate`; under FSDP it is `_evaluate_whole`, which `evaluate` calls with the whole
    weights gathered."""
    name = "_evaluate_whole" if plan.sharded else "evaluate"
    if plan.reports_metrics:
        whole: str | list[Operation] = _metrics_evaluate_source(plan).replace(
            "def evaluate(", f"def {name}(", 1
        )
    else:
        whole = evaluate_ops(plan, name)
    return [whole, gathered_evaluate_ops()] if plan.sharded else [whole]


def loop_sources(plan: ScriptPlan) -> list[str | list[Operation]]:
    """The sections after the models, the loss and the command line (train_cli.py), in the
    script's order."""
    from tensorloom.passes.train_build import (
        build_recipe_ops,
        build_trainer_ops,
        scheduler_ops,
        trainer_ops,
    )
    from tensorloom.passes.train_data import build_loaders_ops
    from tensorloom.passes.train_loop import main_ops, run_sections, saves_ops
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
        seed_everything_ops,
        train_one_epoch_ops,
    )

    sections: list[str | list[Operation] | None] = [
        seed_everything_ops(),
        scheduler_ops(plan),
        trainer_ops(plan),
        build_loaders_ops(plan),
        build_trainer_ops(plan),
        batch_loss_ops(plan),
        build_recipe_ops(plan),
        _resume_source(plan),
        resume_extra_ops(),
        train_one_epoch_ops(plan),
        epoch_helper_ops(),
        graphed_epoch_ops(plan) if plan.whole_step_graph else None,
        forward_backward_ops(plan),
        begin_step_ops() if plan.cuda_graphs else None,
        optimizer_step_ops(plan),
        *_evaluate_sections(plan, evaluate_ops, gathered_evaluate_ops),
        epoch_record_source(plan),
        saves_ops(plan),
        run_sections(plan),
        serve_requests_source(plan),
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
    (", train_loader, plan)", ", train_loader)"),
    ('"optimizer": trainer.optimizer, "scaler": trainer.scaler,',
     '"optimizer": trainer.optimizer,'),
    ("optimizer, scaler = trainer.optimizer, trainer.scaler", "optimizer = trainer.optimizer"),
    ("weights, optimizer, scaler, schedule", "weights, optimizer, schedule"),
    (" optimizer=trainer.optimizer, scaler=trainer.scaler,", " optimizer=trainer.optimizer,"),
)  # fmt: skip
_NO_AMP_LINES = ("scaler=trainer.scaler,",)


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
