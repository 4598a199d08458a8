"""Every key a train block accepts, one record each.

    train net on data:
        epochs = 10                          # SettingSpec("epochs", ..., Arg(int >= 1))
        ema = 0.999                          # Arg(float in (0, 1))
        early_stopping = patience(3, metric=val_loss)    # kind "patience"

A record holds the key, a one-line summary, and what its value may be: a plain value's
type and range (`value`, an `Arg`: check-train's TL0402 wrong type, TL0403 out of
range, TL0407 not one of the choices), or the name of a rule check-train keeps for
structured values (`kind`: an optimizer, a loss, a schedule from schedules.py,
`patience(...)`, a validation metric's name). `older_name_of` marks a key kept for
programs written before its rename. check-train builds its settings from these
records (an unknown key is TL0401 with a did-you-mean over them), docs/reference.md
lists them, and the editor completes them. Adding a key is one record here plus what
the emitted script does with it (passes/train_lowering/plan.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tensorloom.catalogue.args import Arg

SettingKind = Literal[
    "value", "optimizer", "loss", "lr_schedule", "grad_clip", "patience", "metric", "metrics",
    "compile", "ema", "distributed", "freeze", "lora", "objective", "samples", "target",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class SettingSpec:
    name: str
    summary: str
    value: Arg | None = None  # a plain value's type and range (kind "value")
    kind: SettingKind = "value"
    older_name_of: str | None = None

    def describe(self) -> str:
        """What the value may be, for the reference page: `int >= 1`, `a loss`."""
        if self.value is not None:
            return self.value.describe().split(": ", 1)[1]
        return _KIND_TEXT[self.kind]


_KIND_TEXT: dict[str, str] = {
    "optimizer": "an optimizer: `AdamW(lr=0.001)`",
    "loss": "a loss: `CrossEntropy`, or a `fn` of the program",
    "lr_schedule": "a schedule: `cosine(warmup_steps=200, min_lr=3e-5)`",
    "grad_clip": "float > 0, or `false`",
    "patience": "`patience(N, metric=M, min_delta=D)`",
    "metric": "a validation metric's name: `val_loss`, `val_accuracy`, `ema_val_loss`, ...",
    "metrics": "a list: `accuracy`, `top_k(k)`, a `fn` of the program",
    "compile": '`true`, `false`, "default", "reduce-overhead" or "max-autotune"',
    "ema": "float in (0, 1): 1 would never move",
    "distributed": '`true`, `false`, "ddp" or "fsdp"',
    "freeze": "a list of layers: `[wte, wpe, h[0:6]]`",
    "lora": "`LoRA(rank=8, alpha=16, dropout=0.0, targets=[c_attn, c_fc])`",
    "objective": "the name of a `fn NAME(net, x, y)` of the program",
    "samples": "the name of a `fn NAME(net) -> Tensor` of the program: images [N, C, H, W]",
    "target": "the name of a field of the data: `label`",
}


def _int(name: str, low: int) -> Arg:
    return Arg(name, "int", low=low, open_low=False)


def _bool(name: str) -> Arg:
    return Arg(name, "bool")


SETTING_SPECS: tuple[SettingSpec, ...] = (
    SettingSpec("epochs", "number of passes over the training data", _int("epochs", 1)),
    SettingSpec("batch_size", "samples per optimizer step (per process)", _int("batch_size", 1)),
    SettingSpec(
        "optimizer",
        "a torch.optim class, or a tuple of them over parameter groups",
        kind="optimizer",
    ),
    SettingSpec("loss", "a loss function", kind="loss"),
    SettingSpec(
        "objective",
        "a `fn` of the program that gets the model and the batch: the scalar to minimise",
        kind="objective",
    ),
    SettingSpec(
        "samples",
        "a `fn` of the program that gets the models and returns images in [0, 1]: written "
        "as a PNG grid after each epoch",
        kind="samples",
    ),
    SettingSpec(
        "target",
        "over data of named fields: the field the loss compares the output with (default "
        "`label`, else `y`); the forward takes the fields its parameters name",
        kind="target",
    ),
    SettingSpec(
        "precision",
        "training precision",
        Arg("precision", "str", choices=("auto", "fp32", "fp16", "bf16")),
    ),
    SettingSpec(
        "distributed",
        "`ddp` (or `true`): DistributedDataParallel; `fsdp`: FSDP2, sharded over the ranks",
        kind="distributed",
    ),
    SettingSpec("compile", "torch.compile mode", kind="compile"),
    SettingSpec("lr_schedule", "learning-rate schedule", kind="lr_schedule"),
    SettingSpec("grad_clip", "clip the gradient norm to this value", kind="grad_clip"),
    SettingSpec("grad_accum", "micro-batches per optimizer step", _int("grad_accum", 1)),
    SettingSpec(
        "accumulate_steps",
        "`grad_accum`'s older name",
        _int("accumulate_steps", 1),
        older_name_of="grad_accum",
    ),
    SettingSpec(
        "decay_groups", "no weight decay for biases and norm weights", _bool("decay_groups")
    ),
    SettingSpec("ema", "decay of an EMA of the weights, validated too", kind="ema"),
    SettingSpec("early_stopping", "stop after N validations without a new best", kind="patience"),
    SettingSpec("keep_best", "save `best.pt` at each new best of this metric", kind="metric"),
    SettingSpec("eval_every", "also validate every N optimizer steps", _int("eval_every", 1)),
    SettingSpec(
        "max_steps", "optimizer steps in all; the schedule spans them", _int("max_steps", 1)
    ),
    SettingSpec("seed", "random seed of the run", _int("seed", 0)),
    SettingSpec(
        "activation_checkpointing",
        "recompute block activations in backward",
        _bool("activation_checkpointing"),
    ),
    SettingSpec("val_every", "validate every N epochs", _int("val_every", 1)),
    SettingSpec("log_every", "log every N optimizer steps", _int("log_every", 1)),
    SettingSpec("metrics", "validation metrics: `accuracy`, `top_k(k)`, a `fn`", kind="metrics"),
    SettingSpec(
        "freeze",
        "layers whose weights do not train (no gradients, no optimizer state)",
        kind="freeze",
    ),
    SettingSpec(
        "lora", "LoRA adapters on the named Linear layers; their weights freeze", kind="lora"
    ),
)

SETTING_RECORDS: dict[str, SettingSpec] = {spec.name: spec for spec in SETTING_SPECS}
"""Train-block keys by name."""
