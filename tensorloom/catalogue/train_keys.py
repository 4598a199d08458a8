"""Every key a train block accepts, one record each: its check, its type, its default, and how
it reaches `train.config`.

    train net on data:                   train.config {epochs = 5 : i64, batch_size = 64 : i64,
        epochs = 5           ->                        grad_clip = 1.000000e+00 : f64, ...}
        grad_clip = 1.0

    TrainKey("grad_clip", "clip the gradient norm to this value",
             Arg("grad_clip", "float", low=0.0), off=True,
             optional=True, steps="per_optimizer",
             field="clip the global gradient norm")

A record says everything about its key:

- what its value may be. A plain value (`value`, an `Arg`) is checked generically:
  its type (TL0402), its range (TL0403), its choices (TL0407; `switch`: `true` and `false`
  too; `off`: `false` turns the key off). A structured value names its `check`
  (catalogue/train_rules.py: an optimizer, a loss, a schedule, `patience(...)`, a
  validation metric's name, ...), and says in `shown` what it may be.
- the `train.config` field it becomes: the field's type (the value's, or `type`), its
  default when the block leaves the key out (`default`; None with `optional`: off), and
  the further fields it fills (`more`: `optimizer_args`, `batch_size_set`, ...).
- what a block of `step` lines does with it (`steps`): a new key is refused there
  (TL0431) until the steps lowering reads it.
- how the value reaches the field (`reach`): by default the value itself, when it is of
  the field's type and in range (`write_plain`); otherwise the rule the record names
  (catalogue/train_rules.py: `Adam(lr=0.1)` becomes `optimizer` and `optimizer_args`).

check-train calls each record's check (an unknown key is TL0401 with a did-you-mean over
them), train-config each record's reach: neither keeps a table of kinds. The `train.config` verifier
checks each field's type, the lowering reads the fields by name with their declared type
(`ScriptPlan.setting`), docs/reference.md lists them and the editor completes them.
Adding a key, plain or structured (its check and reach written beside its record or in
train_rules.py), is one record here, the script section that uses it, and its row in
docs/train-block.md (docs/architecture.md, "Adding a concept", counts it).

Optimizer learning rates: `lr` defaults to torch.optim's own default
(`OptimizerSpec.default_lr`); schedule arguments to `ScheduleSpec.defaults`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tensorloom.catalogue import train_rules as rules
from tensorloom.catalogue.args import Arg
from tensorloom.catalogue.train_rules import Check, Reach

FieldKind = str  # "int", "float", "bool", "str", "dict" (keyword arguments), "list" (of dicts)

StepsUse = Literal["taken", "per_optimizer", "named_by_steps", "not_yet"]
"""What a block of `step` lines does with a key: reads it (`taken`), reads it for the block and
takes it on each step's optimizer too (`per_optimizer`: `AdamW(rest, grad_clip=1.0)`), has
each step name it instead (`named_by_steps`: TL0431 "not taken"), or does not support it
yet (`not_yet`: TL0431, never silently dropped; a new key's default)."""


@dataclass(frozen=True, slots=True)
class ConfigField:
    """One field of `train.config`."""

    name: str
    kind: FieldKind
    default: object  # the value of a block that does not set it; None: off (`optional`)
    summary: str
    optional: bool = False
    left_out_when_off: bool = False  # absent, not `none`, from a block that does not use it


@dataclass(frozen=True, slots=True)
class TrainKey:
    """One train-block key; see the module docstring."""

    name: str
    summary: str  # one line: the reference page, the editor's hover
    value: Arg | None = None  # a plain value's type, range and choices
    check: Check | None = None  # else: a structured value's check (catalogue/train_rules.py)
    switch: bool = False  # `true` and `false` are choices too (`compile = true`)
    off: bool = False  # `false` turns the key off (`grad_clip = false`)
    shown: str | None = None  # what the value may be (reference page), where its Arg cannot say
    default: object = None  # the field's value when the block leaves the key out
    optional: bool = False  # the field may hold `none` (off)
    type: FieldKind | None = None  # the field's type, when not the plain value's
    field: str = ""  # the field's summary, when not the key's
    more: tuple[ConfigField, ...] = ()  # further fields the key fills
    reach: Reach = rules.write_plain  # how the value becomes the field(s): itself by default
    older_name_of: str | None = None  # a key kept under its older name: it writes no field
    steps: StepsUse = "not_yet"  # what a block of `step` lines does with it

    @property
    def fields(self) -> tuple[ConfigField, ...]:
        """The `train.config` fields this key fills, its own first."""
        if self.older_name_of is not None:
            return ()
        kind = self.type or (self.value.type if self.value is not None else None)
        assert kind is not None, f"{self.name}: a structured key declares its field's type"
        own = ConfigField(self.name, kind, self.default, self.field or self.summary,
                          self.optional)  # fmt: skip
        return (own, *self.more)

    @property
    def checked(self) -> Check:
        """The check of the key's value: its own, or its `Arg`'s (`plain_check`)."""
        return self.check if self.check is not None else rules.plain_check(self)

    @property
    def choices(self) -> tuple[str | bool, ...]:
        """The values a key with choices takes: `true`, `false` first for a switch."""
        strings = self.value.choices if self.value is not None else ()
        return ((True, False) if self.switch else ()) + strings

    def describe(self) -> str:
        """What the value may be, for the reference page: `int >= 1`, `a loss`."""
        if self.shown is not None:
            return self.shown
        if self.switch:
            said = [_said(c) for c in self.choices]
            return ", ".join(said[:-1]) + " or " + said[-1]
        if self.value is not None:
            text = self.value.describe().split(": ", 1)[1]
            return text + (", or `false`" if self.off else "")
        raise AssertionError(f"{self.name}: a structured key says what its value may be (`shown`)")


def _said(choice: str | bool) -> str:
    if isinstance(choice, bool):
        return "`true`" if choice else "`false`"
    return f'"{choice}"'


def _int(name: str, low: int) -> Arg:
    return Arg(name, "int", low=low, open_low=False)


def _bool(name: str) -> Arg:
    return Arg(name, "bool")


TRAIN_KEYS: tuple[TrainKey, ...] = (
    TrainKey("epochs", "number of passes over the training data", _int("epochs", 1),
             default=10, optional=True, reach=rules.epochs_fields, steps="taken",
             field="passes over the training data (none: as `max_steps` takes)"),
    TrainKey("batch_size", "samples per optimizer step (per process)", _int("batch_size", 1),
             default=64, reach=rules.batch_size_fields, steps="taken",
             more=(ConfigField("batch_size_set", "bool", False,
                               "whether the block sets `batch_size`"),)),
    TrainKey("optimizer", "a torch.optim class, or a tuple of them over parameter groups",
             check=rules.check_optimizer, shown="an optimizer: `AdamW(lr=0.001)`",
             type="str", default="Adam", reach=rules.optimizer_fields, steps="named_by_steps",
             field="the torch.optim class",
             more=(ConfigField("optimizer_args", "dict", {},
                               "its keyword arguments, `lr` always among them"),
                   ConfigField("optimizer_set", "list", None,
                               "`optimizer = (Muon(hidden), AdamW(rest))`: each optimizer's "
                               "name, selections and keywords (absent: one optimizer over the "
                               "model)", optional=True, left_out_when_off=True))),
    TrainKey("loss", "a loss function",
             check=rules.check_loss, shown="a loss: `CrossEntropy`, or a `fn` of the program",
             type="str", default="CrossEntropy", reach=rules.loss_fields, steps="named_by_steps",
             field="a catalogue loss, or a `fn` of the file",
             more=(ConfigField("loss_args", "dict", {},
                               "the catalogue loss's keyword arguments"),
                   ConfigField("loss_fn", "bool", False,
                               "whether `loss` names a `fn` of the file"))),
    TrainKey("objective",
             "a `fn` of the program that gets the model and the batch: the scalar to minimise",
             check=rules.a_function_name, shown="the name of a `fn NAME(net, x, y)` of the program",
             type="str", optional=True, steps="named_by_steps",
             field="a `fn NAME(net, x, y)` of the file: the scalar the step minimises "
                   "(none: `loss`)"),
    TrainKey("samples",
             "a `fn` of the program that gets the models and returns images in [0, 1]: "
             "written as a PNG grid after each epoch",
             check=rules.a_function_name,
             shown="the name of a `fn NAME(net) -> Tensor` of the program: images [N, C, H, W]",
             type="str", optional=True, steps="taken",
             field="a `fn NAME(net)` of the file returning images: a PNG grid after each epoch"),
    TrainKey("target",
             "over data of named fields: the field the loss compares the output with (default "
             "`label`, else `y`); the forward takes the fields its parameters name",
             check=rules.a_field_name, shown="the name of a field of the data: `label`",
             # a block of objectives (of `step` lines too) has no loss to take it: TL0471
             type="str", optional=True, steps="taken",
             field="a `loss` block over named fields: the field its loss takes (none: `label`, "
                   "else `y`; shape-inference writes the one it takes as `loss_target`)"),
    TrainKey("precision", "training precision",
             Arg("precision", "str", choices=("auto", "fp32", "fp16", "bf16")),
             default="auto", steps="taken",
             field="fp32, fp16, bf16 or auto (bf16 on a bf16 GPU)"),
    TrainKey("distributed",
             "`ddp` (or `true`): DistributedDataParallel; `fsdp`: FSDP2, sharded over the ranks",
             Arg("distributed", "str", choices=("ddp", "fsdp")), switch=True,
             optional=True, reach=rules.distributed_fields, steps="taken"),
    TrainKey("compile", "torch.compile mode",
             Arg("compile", "str", choices=("default", "reduce-overhead", "max-autotune")),
             switch=True, default="auto", reach=rules.compile_fields, steps="taken",
             field="torch.compile: a mode, `off`, or `auto` (when the run repays it)",
             more=(ConfigField("compile_mode", "str", "reduce-overhead",
                               "the mode `on` and `auto` compile with"),)),
    TrainKey("lr_schedule", "learning-rate schedule",
             check=rules.check_schedule,
             shown="a schedule: `cosine(warmup_steps=200, min_lr=3e-5)`",
             type="str", default="none", reach=rules.schedule_fields, steps="per_optimizer",
             field="the learning-rate schedule",
             more=(ConfigField("lr_schedule_args", "dict", {},
                               "its arguments, defaults filled in"),)),
    TrainKey("grad_clip", "clip the gradient norm to this value",
             Arg("grad_clip", "float", low=0.0), off=True,
             optional=True, steps="per_optimizer",
             field="clip the global gradient norm"),
    TrainKey("grad_accum", "micro-batches per optimizer step", _int("grad_accum", 1),
             default=1),
    TrainKey("accumulate_steps", "`grad_accum`'s older name", _int("accumulate_steps", 1),
             older_name_of="grad_accum"),
    TrainKey("decay_groups", "no weight decay for biases and norm weights",
             _bool("decay_groups"),
             default=True),
    TrainKey("ema", "decay of an EMA of the weights, validated too",
             Arg("ema", "float", low=0.0, high=1.0), shown="float in (0, 1): 1 would never move",
             optional=True, steps="taken",
             field="decay of an EMA of the weights"),
    TrainKey("early_stopping", "stop after N validations without a new best",
             check=rules.patience, shown="`patience(N, metric=M, min_delta=D)`",
             type="dict", optional=True, reach=rules.early_stopping_fields,
             field="patience, metric and min_delta"),
    TrainKey("keep_best", "save `best.pt` at each new best of this metric",
             check=rules.metric_name,
             shown="a validation metric's name: `val_loss`, `val_accuracy`, `ema_val_loss`, ...",
             type="str", optional=True),
    TrainKey("eval_every", "also validate every N optimizer steps", _int("eval_every", 1),
             optional=True),
    TrainKey("max_steps", "optimizer steps in all; the schedule spans them",
             _int("max_steps", 1),
             optional=True, steps="taken"),
    TrainKey("seed", "random seed of the run", _int("seed", 0),
             default=0, steps="taken"),
    TrainKey("activation_checkpointing", "recompute block activations in backward",
             _bool("activation_checkpointing"),
             default=False),
    TrainKey("val_every", "validate every N epochs", _int("val_every", 1),
             default=1,
             field="epochs between validations (and the last)"),
    TrainKey("log_every", "log every N optimizer steps", _int("log_every", 1),
             optional=True,
             field="optimizer steps between loss lines"),
    TrainKey("metrics", "validation metrics: `accuracy`, `top_k(k)`, a `fn`",
             check=rules.checked_by_the_block,
             shown="a list: `accuracy`, `top_k(k)`, a `fn` of the program",
             type="list", default=[], reach=rules.metrics_fields, steps="taken",
             field="validation metrics: kind, name and k of each"),
    TrainKey("freeze", "layers whose weights do not train (no gradients, no optimizer state)",
             check=rules.freeze_list, shown="a list of layers: `[wte, wpe, h[0:6]]`",
             type="list", default=[], reach=rules.freeze_fields, steps="taken",
             field="state-dict prefixes whose parameters do not train"),
    TrainKey("lora", "LoRA adapters on the named Linear layers; their weights freeze",
             check=rules.lora_adapters,
             shown="`LoRA(rank=8, alpha=16, dropout=0.0, targets=[c_attn, c_fc])`",
             type="dict", optional=True, reach=rules.lora_fields, steps="taken",
             field="LoRA adapters: rank, alpha, dropout, targets"),
)  # fmt: skip

KEYS: dict[str, TrainKey] = {key.name: key for key in TRAIN_KEYS}
"""Train-block keys by name."""

CHECKPOINT_FIELDS: tuple[ConfigField, ...] = (
    ConfigField("checkpoint_every", "int", None, "`checkpoint every N ...`", optional=True),
    ConfigField("checkpoint_unit", "str", "epochs", "epochs or steps"),
)
"""The fields of the block's `checkpoint every N epochs` line, which is not a key."""

CONFIG_FIELDS: tuple[ConfigField, ...] = (
    *(f for key in TRAIN_KEYS for f in key.fields),
    *CHECKPOINT_FIELDS,
)
"""Every field of `train.config`, in the order the op holds them."""

FIELDS: dict[str, ConfigField] = {f.name: f for f in CONFIG_FIELDS}
"""Config fields by name."""

OLDER_NAMES: dict[str, str] = {
    key.name: key.older_name_of for key in TRAIN_KEYS if key.older_name_of is not None
}
"""Train block keys kept under an older name: the config holds the newer one."""
