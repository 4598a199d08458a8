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
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.plan import ScriptPlan, data_name, program_name

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
        f"--epochs {2 * (plan.setting_or_none('epochs', int) or plan.default('epochs', int))}\n"
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
    _recipe(b, plan)
    if plan.has("log_every"):
        b.assign("LOG_EVERY", b.const(plan.setting("log_every", int)),
                 comment="optimizer steps between loss lines")  # fmt: skip
    _compile(b, plan)
    b.assign("SEED", b.const(plan.setting("seed", int)))
    _data(b, plan)
    _weights(b, plan)
    return b.ops


def _weights(b: PyBuilder, plan: ScriptPlan) -> None:
    """WEIGHT_RULES: the `weights` block's rules: (file's name, model's name or None,
    transposed)."""
    freeze = plan.setting("freeze", list)
    if freeze:
        b.assign("FREEZE", b.value(freeze), comment="`freeze`: these layers do not train")
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
    if plan.has("epochs"):
        b.assign("EPOCHS", b.const(plan.setting("epochs", int)))
    else:
        b.assign(
            "EPOCHS",
            b.const(None),
            comment="as many as `max_steps` takes",
            annotation=b.optional("int"),
        )
    batch_size = b.const(plan.setting("batch_size", int))
    if plan.setting("batch_size_set", bool):
        b.assign("BATCH_SIZE", batch_size, comment="per process")
    else:
        b.assign("BATCH_SIZE", batch_size, comment="`batch_size` was not set in the train block")
    note = "the first optimizer's: a schedule's `min_lr` is read against it"
    b.assign("LEARNING_RATE", b.const(plan.learning_rate),
             comment=note if plan.optimizer_set else None)  # fmt: skip


def _checkpoints(b: PyBuilder, plan: ScriptPlan) -> None:
    """CHECKPOINT_EVERY (epochs or steps) and KEEP_CHECKPOINTS."""
    every = plan.setting_or_none("checkpoint_every", int)
    unit = plan.setting("checkpoint_unit", str)
    note = "unset: saved at the end and when interrupted" if every is None else unit
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
    if plan.has("grad_clip"):
        clip = b.const(plan.setting("grad_clip", float))
        b.assign("GRAD_CLIP", clip, comment="clips the global gradient norm")
    accum = b.const(plan.setting("grad_accum", int))
    b.assign("GRAD_ACCUM", accum, comment="micro-batches per optimizer step")
    if plan.setting("val_every", int) != 1:
        b.assign(
            "VAL_EVERY",
            b.const(plan.setting("val_every", int)),
            comment="epochs between validations (and the last)",
        )
    if plan.reports_metrics:
        b.assign(
            "METRICS",
            b.value([m.key for m in plan.batch_metrics]),
            comment="`metrics = [...]`: reported after val_loss",
        )


def _recipe(b: PyBuilder, plan: ScriptPlan) -> None:
    """The recipe's keys, each only when the block sets it (runtime/recipe.py reads them)."""
    if plan.has("ema"):
        ema = b.const(plan.setting("ema", float))
        b.assign("EMA_DECAY", ema, comment="`ema`: an EMA of the weights")
    stopping = plan.setting_or_none("early_stopping", dict)
    if stopping is not None:
        b.assign(
            "EARLY_STOPPING",
            b.value((stopping["patience"], stopping["metric"], stopping["min_delta"])),
            comment="(patience, metric, min_delta)",
        )
    if plan.has("keep_best"):
        b.assign(
            "KEEP_BEST",
            b.const(plan.setting("keep_best", str)),
            comment="saves best.pt at each new best of this metric",
        )
    if plan.has("eval_every"):
        every = b.const(plan.setting("eval_every", int))
        b.assign("EVAL_EVERY", every, comment="steps between validations")
    max_steps = plan.setting_or_none("max_steps", int)
    if max_steps is not None or not plan.has("epochs") or plan.schedule is not None:
        b.assign(
            "MAX_STEPS",
            b.const(max_steps),
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
    auto = plan.setting("compile", str) == "auto"
    choice = "off" if plan.compile_mode is None else "auto" if auto else "on"
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
