"""The script's header and settings as `py` ops: what it trains, how to run it, and the values.

    # Trains `Classifier` on `digits`, as `mnist.tl` says.
    # ...
    # python mnist.py --help lists the options; importing this file runs nothing.


    # ---- settings: the train block's values; the command line overrides some ----
    EPOCHS = 10
    BATCH_SIZE = 64  # `batch_size` was not set in the train block
    LEARNING_RATE = 0.001
    PRECISION = "fp16"  # on the CPU, fp16 falls back to fp32

The header is one comment paragraph; each setting is a module-level `py.assign`
(annotated where the value may be None), its note an end-of-line comment. A setting
is there only when the program uses it: PRECISION with insert-amp's marker,
FSDP_BLOCKS under FSDP, LR_SCHEDULE with `lr_schedule`, the recipe's keys when set.
"""

from __future__ import annotations

from xdsl.ir import Operation

from tensorloom.dialects import py
from tensorloom.dialects.train import DEFAULT_BATCH_SIZE
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.plan import RecipePlan, ScriptPlan, data_name, program_name

DEFINES = (
    "EPOCHS", "BATCH_SIZE", "LEARNING_RATE", "PRECISION", "FSDP_BLOCKS", "CHECKPOINT_EVERY",
    "KEEP_CHECKPOINTS", "LR_SCHEDULE", "GRAD_CLIP", "GRAD_ACCUM", "VAL_EVERY", "METRICS",
    "EMA_DECAY", "EARLY_STOPPING", "KEEP_BEST", "EVAL_EVERY", "MAX_STEPS", "LOG_EVERY",
    "COMPILE_MODE", "COMPILE", "SEED", "DATASET", "DATASET_OPTIONS",
)  # fmt: skip
"""The top-level names the settings take in the script (mangle-names keeps them free)."""

_AUTO_PRECISION_NOTE = """
Precision is `auto` (the block sets none): bf16 autocast on a CUDA GPU that
supports bf16, fp32 on the CPU; `--precision fp32|fp16|bf16` overrides it."""

PRECISION_NOTES = {
    "auto": "bf16 on a CUDA GPU with bf16 support, else fp32",
    "fp32": "no autocast",
    "fp16": "on the CPU, fp16 falls back to fp32",
    "bf16": "bf16 autocast; a GPU without bf16 gets fp16 and a GradScaler",
}


def header_ops(plan: ScriptPlan) -> list[Operation]:
    """The comment paragraph the script opens with: what it trains, and how to run it."""
    script = f"{program_name(plan)}.py"  # as `tlc run --keep` names it
    launch = (
        f"torchrun --nproc_per_node=2 {script}"
        if plan.distributed
        else f"python {script} --device cpu"
    )
    text = (
        f"Trains `{plan.model_class}` on {data_name(plan)}, as `{plan.source}` says.\n\n"
        "Run it:\n"
        f"    python {script} --epochs 10 --metrics run/metrics.jsonl\n"
        f"    {launch}\n"
        f"    python {script} --resume checkpoints/{program_name(plan)}/last.pt "
        f"--epochs {2 * plan.epochs}\n"
        f"python {script} --help lists the options; importing this file runs nothing."
    )
    if plan.precision == "auto":
        text += "\n" + _AUTO_PRECISION_NOTE
    return [py.CommentOp(text)]


def settings_ops(plan: ScriptPlan) -> list[Operation]:
    """The train block's values as module-level settings, in the order the script reads them."""
    b = PyBuilder()
    b.comment("---- settings: the train block's values; the command line overrides some ----")
    _run_length(b, plan)
    if plan.amp:
        b.assign("PRECISION", b.const(plan.precision), comment=PRECISION_NOTES[plan.precision])
    if plan.fsdp_blocks is not None:
        b.assign(
            "FSDP_BLOCKS",
            b.value(list(plan.fsdp_blocks)),
            comment="fully_shard units (then the root)",
        )
    _checkpoints(b, plan)
    _schedule(b, plan)
    _step(b, plan)
    _recipe(b, plan.recipe, plan.schedule is not None)
    if plan.log_every is not None:
        b.assign("LOG_EVERY", b.const(plan.log_every), comment="optimizer steps between loss lines")
    _compile(b, plan)
    b.assign("SEED", b.const(plan.seed))
    _data(b, plan)
    _weights(b, plan)
    return b.ops


def _weights(b: PyBuilder, plan: ScriptPlan) -> None:
    """WEIGHT_RULES: the `weights` block's rules: (file's name, model's name or None,
    transposed)."""
    if plan.freeze:
        b.assign(
            "FREEZE", b.value(list(plan.freeze)), comment="`freeze`: these layers do not train"
        )
    if plan.lora is not None:
        b.assign("LORA", b.value(dict(plan.lora)), comment="`lora`: adapters; the rest freezes",
                 annotation=b.generic("dict", "str", "Any"))  # fmt: skip
    if plan.pretrained is None:
        return
    b.assign(
        "WEIGHT_RULES",
        b.value(list(plan.pretrained[1])),
        comment="`weights`: the file's names -> the model's; None: ignored",
    )


def _run_length(b: PyBuilder, plan: ScriptPlan) -> None:
    """EPOCHS, BATCH_SIZE, LEARNING_RATE."""
    if plan.recipe.epochs_set:
        b.assign("EPOCHS", b.const(plan.epochs))
    else:
        b.assign(
            "EPOCHS",
            b.const(None),
            comment="as many as `max_steps` takes",
            annotation=b.optional("int"),
        )
    if plan.batch_size is None:
        b.assign(
            "BATCH_SIZE",
            b.const(DEFAULT_BATCH_SIZE),
            comment="`batch_size` was not set in the train block",
        )
    else:
        b.assign("BATCH_SIZE", b.const(plan.batch_size), comment="per process")
    note = "the first optimizer's: a schedule's `min_lr` is read against it"
    b.assign("LEARNING_RATE", b.const(plan.learning_rate),
             comment=note if plan.optimizer_set else None)  # fmt: skip


def _checkpoints(b: PyBuilder, plan: ScriptPlan) -> None:
    """CHECKPOINT_EVERY (epochs or steps) and KEEP_CHECKPOINTS."""
    every = plan.checkpoint_every
    note = "unset: saved at the end and when interrupted" if every is None else plan.checkpoint_unit
    b.assign("CHECKPOINT_EVERY", b.const(every), comment=note, annotation=b.optional("int"))
    b.assign("KEEP_CHECKPOINTS", b.const(3))


def _schedule(b: PyBuilder, plan: ScriptPlan) -> None:
    """LR_SCHEDULE: `lr_schedule`'s name and options, its defaults filled in."""
    if plan.schedule is None:
        return
    schedule = b.value({"name": plan.schedule, **plan.schedule_kwargs})
    b.assign(
        "LR_SCHEDULE",
        schedule,
        comment="`lr_schedule`, runtime/recipe.py",
        annotation=b.generic("dict", "str", "Any"),
    )


def _step(b: PyBuilder, plan: ScriptPlan) -> None:
    """GRAD_CLIP, GRAD_ACCUM, VAL_EVERY and METRICS."""
    if plan.grad_clip is not None:
        b.assign("GRAD_CLIP", b.const(plan.grad_clip), comment="clips the global gradient norm")
    b.assign("GRAD_ACCUM", b.const(plan.grad_accum), comment="micro-batches per optimizer step")
    if plan.val_every != 1:
        b.assign(
            "VAL_EVERY",
            b.const(plan.val_every),
            comment="epochs between validations (and the last)",
        )
    if plan.reports_metrics:
        b.assign(
            "METRICS",
            b.value([m.key for m in plan.metrics]),
            comment="`metrics = [...]`: reported after val_loss",
        )


def _recipe(b: PyBuilder, recipe: RecipePlan, schedule: bool) -> None:
    """The recipe's keys, each only when the block sets it (runtime/recipe.py reads them)."""
    if recipe.ema is not None:
        b.assign("EMA_DECAY", b.const(recipe.ema), comment="`ema`: an EMA of the weights")
    if recipe.early_stopping is not None:
        b.assign(
            "EARLY_STOPPING",
            b.value(recipe.early_stopping),
            comment="(patience, metric, min_delta)",
        )
    if recipe.keep_best is not None:
        b.assign(
            "KEEP_BEST",
            b.const(recipe.keep_best),
            comment="saves best.pt at each new best of this metric",
        )
    if recipe.eval_every is not None:
        b.assign("EVAL_EVERY", b.const(recipe.eval_every), comment="steps between validations")
    if recipe.max_steps is not None or not recipe.epochs_set or schedule:
        b.assign(
            "MAX_STEPS",
            b.const(recipe.max_steps),
            comment="the schedule spans them",
            annotation=b.optional("int"),
        )


def _compile(b: PyBuilder, plan: ScriptPlan) -> None:
    """COMPILE_MODE and COMPILE (`on`, `off`, or `auto`: only when it pays)."""
    b.assign(
        "COMPILE_MODE",
        b.const(plan.compile_mode or None),
        comment="torch.compile's mode on CUDA",
        annotation=b.optional("str"),
    )
    choice = "off" if plan.compile_mode is None else "auto" if plan.compile_auto else "on"
    why = {"off": "`compile = false`", "auto": "the block sets no `compile`"}.get(
        choice, "`compile` in the block"
    )
    b.assign("COMPILE", b.const(choice), comment=f"{why}; --compile overrides it")


def _data(b: PyBuilder, plan: ScriptPlan) -> None:
    """DATASET (for a reader that takes its name) and DATASET_OPTIONS."""
    named = plan.dataset is not None and plan.dataset != "digits"  # digits: its own reader
    if named or plan.language_model_data:
        b.assign("DATASET", b.const(plan.dataset or ""), annotation=b.name("str"))
    b.assign(
        "DATASET_OPTIONS", b.value(plan.dataset_options), annotation=b.generic("dict", "str", "Any")
    )
