"""Every field of a checked train block, one record each, with the value it has when unset.

    train net on data:            train.config {epochs = 10 : i64, batch_size = 64 : i64,
        epochs = 10         ->                  optimizer = "Adam", optimizer_args = {lr = ...},
                                                precision = "auto", ...}

check-train checks the block's keys (their types and ranges, by name); the
`train-config` pass then writes one `train.config` op holding every field below,
the block's value or the record's default, and the lowering reads only that op.
A field's `kind` is the attribute it holds: `int` (i64), `float` (f64), `bool`,
`str`, `dict` (keyword arguments), `list` (of dicts); `optional` fields hold
`none` when off. Adding a key is one record here, its check in check-train and
its use in the lowering.

Optimizer learning rates: `lr` defaults to torch.optim's own default
(`OptimizerSpec.default_lr`); schedule arguments to `ScheduleSpec.defaults`.
"""

from __future__ import annotations

from dataclasses import dataclass

FieldKind = str  # "int", "float", "bool", "str", "dict", "list"


@dataclass(frozen=True, slots=True)
class ConfigField:
    name: str
    kind: FieldKind
    default: object  # the value of a block that does not set it; None: off (`optional`)
    summary: str
    optional: bool = False
    key: str | None = None  # the train block key it comes from, when not `name`
    left_out_when_off: bool = False  # absent, not `none`, from a block that does not use it


CONFIG_FIELDS: tuple[ConfigField, ...] = (
    ConfigField("epochs", "int", 10, "passes over the training data (none: as `max_steps` takes)",
                optional=True),
    ConfigField("batch_size", "int", 64, "samples per optimizer step, per process"),
    ConfigField("batch_size_set", "bool", False, "whether the block sets `batch_size`",
                key="batch_size"),
    ConfigField("optimizer", "str", "Adam", "the torch.optim class"),
    ConfigField("optimizer_args", "dict", {}, "its keyword arguments, `lr` always among them",
                key="optimizer"),
    ConfigField("optimizer_set", "list", None,
                "`optimizer = (Muon(hidden), AdamW(rest))`: each optimizer's name, selections "
                "and keywords (absent: one optimizer over the model)", optional=True,
                key="optimizer", left_out_when_off=True),
    ConfigField("loss", "str", "CrossEntropy", "a catalogue loss, or a `fn` of the file"),
    ConfigField("loss_args", "dict", {}, "the catalogue loss's keyword arguments", key="loss"),
    ConfigField("loss_fn", "bool", False, "whether `loss` names a `fn` of the file", key="loss"),
    ConfigField("objective", "str", None,
                "a `fn NAME(net, x, y)` of the file: the scalar the step minimises (none: `loss`)",
                optional=True),
    ConfigField("samples", "str", None,
                "a `fn NAME(net)` of the file returning images: a PNG grid after each epoch",
                optional=True),
    ConfigField("precision", "str", "auto", "fp32, fp16, bf16 or auto (bf16 on a bf16 GPU)"),
    ConfigField("distributed", "str", None,
                "ddp (`true`): DistributedDataParallel; fsdp: FSDP2, sharded over the ranks",
                optional=True),
    ConfigField("compile", "str", "auto",
                "torch.compile: a mode, `off`, or `auto` (when the run repays it)"),
    ConfigField("compile_mode", "str", "reduce-overhead", "the mode `on` and `auto` compile with",
                key="compile"),
    ConfigField("lr_schedule", "str", "none", "the learning-rate schedule"),
    ConfigField("lr_schedule_args", "dict", {}, "its arguments, defaults filled in",
                key="lr_schedule"),
    ConfigField("grad_clip", "float", None, "clip the global gradient norm", optional=True),
    ConfigField("grad_accum", "int", 1, "micro-batches per optimizer step"),
    ConfigField("decay_groups", "bool", True, "no weight decay for biases and norm weights"),
    ConfigField("ema", "float", None, "decay of an EMA of the weights", optional=True),
    ConfigField("early_stopping", "dict", None, "patience, metric and min_delta",
                optional=True),
    ConfigField("keep_best", "str", None, "save best.pt at each new best of this metric",
                optional=True),
    ConfigField("eval_every", "int", None, "also validate every N optimizer steps",
                optional=True),
    ConfigField("max_steps", "int", None, "optimizer steps in all; the schedule spans them",
                optional=True),
    ConfigField("seed", "int", 0, "random seed of the run"),
    ConfigField("activation_checkpointing", "bool", False,
                "recompute block activations in backward"),
    ConfigField("val_every", "int", 1, "epochs between validations (and the last)"),
    ConfigField("log_every", "int", None, "optimizer steps between loss lines", optional=True),
    ConfigField("metrics", "list", [], "validation metrics: kind, name and k of each"),
    ConfigField("freeze", "list", [], "state-dict prefixes whose parameters do not train"),
    ConfigField("lora", "dict", None, "LoRA adapters: rank, alpha, dropout, targets",
                optional=True),
    ConfigField("checkpoint_every", "int", None, "`checkpoint every N ...`", optional=True,
                key="checkpoint"),
    ConfigField("checkpoint_unit", "str", "epochs", "epochs or steps", key="checkpoint"),
)  # fmt: skip

FIELDS: dict[str, ConfigField] = {f.name: f for f in CONFIG_FIELDS}
"""Config fields by name."""

OLDER_NAMES: dict[str, str] = {"accumulate_steps": "grad_accum"}
"""Train block keys kept under an older name: the config holds the newer one."""

EARLY_STOPPING_DEFAULTS: dict[str, object] = {"metric": "val_loss", "min_delta": 0.0}
"""`early_stopping = patience(N)`'s other arguments, when not given."""

LORA_DEFAULTS: dict[str, object] = {"alpha": None, "dropout": 0.0}
"""`lora = LoRA(rank=r, targets=[...])`'s other arguments, when not given (alpha: the rank,
a scale of 1, as peft's `lora_alpha` defaults to 8 for its default rank 8)."""
