"""The `ScriptPlan` of a train block: a typed view of its `train.config` and what the rest
of the IR says about it (the bottom of the train lowering: it imports none of the section
builders).

    plan = ScriptPlan(config=<train.config>, model_class="Classifier", dataset="digits", ...)
    plan.setting("grad_accum", int)           # 4: the block's value, or the record's default
    plan.setting_or_none("grad_clip", float)  # None: the key is off
    loop_sources(plan)        # [[py.def @seed_everything ...], [py.class @Trainer ...], ...]

A train key's value is read from the `train.config` op by name, with the type its record
declares (catalogue/train_keys.py); the plan copies none of them, and repeats no default,
so a new key needs no field here. What is not a key is a field: the model's class, the data,
the markers the train passes added (precision, DDP, compile mode), source locations, and
what follows from several keys (the metrics, the loss's keywords).

`convert-train-to-torch` builds the plan from a checked `train.loop` and its
markers; `loop_sources` gives the sections after the command line, in order, each
a list of `py` ops built from the plan by train_build.py (the trainer, `build_trainer`,
`build_recipe`, the lr schedule), train_data.py, train_step.py, train_records.py and
train_loop.py. The sections are those of docs/emitted-script.md (golden copies in
tests/e2e/reference/, `make golden`); a section a program does not need (the lr
schedule, DDP's wrap, activation checkpointing, CUDA-graph step marks) is left out.
"""

from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TypeVar

from xdsl.dialects.builtin import LocationAttr
from xdsl.ir import Attribute

from tensorloom.catalogue.datasets import (
    ORDERED_SOURCES,
    PAIRED_SOURCES,
    SEQUENCE_TASKS,
    is_file_source,
)
from tensorloom.catalogue.train_keys import FIELDS
from tensorloom.dialects.train import CUDA_GRAPH_MODES, ConfigOp
from tensorloom.passes.support.loss_functions import Metric
from tensorloom.passes.support.py_builder import Value

T = TypeVar("T")

_KINDS: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str, "dict": dict,
                           "list": list}  # fmt: skip
"""A `train.config` field's declared kind, as the Python type `ScriptPlan.setting` gives."""


def _tupled(value: object) -> Value:
    """A config value as the script writes it: lists as tuples (`betas=(0.9, 0.95)`)."""
    return tuple(value) if isinstance(value, list) else value  # type: ignore[return-value]


CLASSIFICATION_LOSSES = ("CrossEntropy", "NLL")
# Optimizer keywords that choose its implementation: set by the user, they are kept.
OPTIMIZER_MODES = frozenset({"fused", "foreach", "capturable", "differentiable"})


@dataclass(frozen=True, slots=True)
class ScriptPlan:
    """Everything about one train block that the script's text depends on: its `train.config`,
    read by name (`setting`), and what follows from the rest of the IR (the model's class,
    the data, the markers the train passes added, where things are written)."""

    config: ConfigOp  # the block's keys, each field typed and defaulted by its record
    source: str  # the .tl file, as the user named it
    model_class: str
    dataset: str | None  # None: synthetic
    dataset_options: dict[str, Value]  # `load_dataset(...)`'s keywords at run time
    per_token_length: int | None  # synthetic data for a model with [B, T, C] outputs
    # "auto", "fp32", "fp16", "bf16": what insert-amp's marker asks for on a GPU; "none": no
    # marker (the pass left out), so the script has no autocast, GradScaler or --precision
    precision: str
    distributed: bool
    compile_mode: str | None = None
    checkpointed_layers: list[str] = field(default_factory=list[str])
    language_model_data: bool = False  # `"text"` or `"tokens"`: windows of runtime/tokens.py
    forward_inputs: int = 1  # the model's forward's parameters (an objective may pass several)
    # `carry state = none`: the values the objective takes after the batch and returns after
    # its loss, kept (detached) from one batch to the next, `None` again at each epoch's start
    carries: tuple[str, ...] = ()
    # What each epoch (and validation) starts each carried value from, in `carries`' order:
    # None for `none`, a model parameter's path (`net.h0`), or a tuple of them (an LSTM's)
    carry_starts: tuple[str | tuple[str, ...] | None, ...] = ()
    # The `fn`s (loss, metrics) that take the batch's inputs too: `fn NAME(out, x, y)`.
    takes_inputs: frozenset[str] = frozenset()
    # where the train block (its epoch loop), its `loss` and its dataset are (the source map)
    loop_location: LocationAttr | None = None
    label_classes: int | None = None  # a data file's labels are checked against this at load
    loss_location: LocationAttr | None = None  # where `loss` is set (else the train block)
    data_location: LocationAttr | None = None
    model_location: LocationAttr | None = None  # the instance's `let net = Classifier()`
    optimizer_location: LocationAttr | None = None  # where `optimizer` is set
    groups: tuple[tuple[str, Attribute], ...] = ()  # the block's `group` lines
    instance: str = "net"  # the model's name in the `.tl` file, which the groups' paths start with
    # `distributed = "fsdp"`: the layers `fully_shard` makes units of (the root is one too)
    fsdp_blocks: tuple[str, ...] | None = None
    model_overrides: tuple[tuple[str, Attribute], ...] = ()  # the instance's, as attributes
    # `weights model from "gpt2":`: the source as written, and its rules
    # ((file pattern(s), model pattern(s) or None to ignore, transposed[, along]), ...)
    pretrained: tuple[str, tuple[tuple[Value, ...], ...]] | None = None
    # Data of named fields: the fields each batch carries (the loop's `batch_fields`), and
    # the parameters of each `fn` the script calls with a batch; () for batches of (x, y).
    batch_fields: tuple[str, ...] = ()
    function_params: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def setting(self, name: str, kind: type[T]) -> T:
        """The `train.config` field `name` (the block's value, else its record's default in
        catalogue/train_keys.py), of its declared type: `plan.setting("grad_accum", int)`."""
        value = self.setting_or_none(name, kind)
        assert value is not None, f"train.config's `{name}` is none: use setting_or_none"
        return value

    def setting_or_none(self, name: str, kind: type[T]) -> T | None:
        """An optional field: None when the key is off (`plan.setting_or_none("ema", float)`)."""
        declared = FIELDS[name]
        assert _KINDS[declared.kind] is kind, f"`{name}` is {declared.kind}, not {kind.__name__}"
        value = self.config.value(name)
        assert value is None or isinstance(value, kind), (name, value)
        return value

    def default(self, name: str, kind: type[T]) -> T:
        """The record's default for the field `name`: what a block that leaves it out gets."""
        value = FIELDS[name].default
        assert isinstance(value, kind), (name, value)
        return value

    def has(self, name: str) -> bool:
        """Whether the optional field `name` is on: `plan.has("ema")`."""
        assert FIELDS[name].optional, f"`{name}` is never none"
        return self.config.value(name) is not None

    # --- what follows from several fields of train.config ---

    @property
    def optimizer_kwargs(self) -> list[tuple[str, Value]]:
        """The optimizer's keywords but `lr` (lists as tuples: `betas`)."""
        args = self.setting("optimizer_args", dict).items()
        return [(k, _tupled(v)) for k, v in args if k != "lr"]

    @property
    def learning_rate(self) -> float:
        """The optimizer's `lr` (train-config filled in the class's default)."""
        lr = self.setting("optimizer_args", dict)["lr"]
        assert isinstance(lr, int | float) and not isinstance(lr, bool), lr
        return lr

    @property
    def loss_kwargs(self) -> list[tuple[str, object]]:
        """The catalogue loss's arguments, as Python values."""
        return list(self.setting("loss_args", dict).items())

    @property
    def custom_loss(self) -> str | None:
        """`loss = NAME`: a `fn NAME(out, y)` of the `.tl` file, else None."""
        return self.setting("loss", str) if self.setting("loss_fn", bool) else None

    @property
    def schedule(self) -> str | None:
        """`lr_schedule`'s name (`cosine`), None for `none`."""
        name = self.setting("lr_schedule", str)
        return None if name == "none" else name

    @property
    def schedule_kwargs(self) -> dict[str, Value]:
        """The schedule's arguments, its record's defaults filled in."""
        return {k: _tupled(v) for k, v in self.setting("lr_schedule_args", dict).items()}

    @property
    def metrics(self) -> tuple[Metric, ...]:
        """`metrics = [accuracy, top_k(5), NAME]`, as train-config recorded them."""
        entries = self.setting("metrics", list)
        return tuple(Metric(str(e["kind"]), str(e["name"]), int(e["k"])) for e in entries)

    @property
    def optimizer_set(self) -> tuple[dict[str, object], ...]:
        """`optimizer = (Muon(hidden), AdamW(rest))`: each optimizer as train.config holds it
        (name, args: selections as plain data with per-group options, kwargs with `lr`); ()
        for one optimizer over the model."""
        return tuple(self.setting_or_none("optimizer_set", list) or ())

    @property
    def lora(self) -> dict[str, Value] | None:
        """`lora = LoRA(...)`: rank, alpha, dropout, targets (a tuple)."""
        adapters = self.setting_or_none("lora", dict)
        return None if adapters is None else {k: _tupled(v) for k, v in adapters.items()}

    # --- what the script does ---

    @property
    def batch_names(self) -> tuple[str, ...]:
        """A batch's tensors as the script names them: `xb, yb`, or its fields."""
        if not self.batch_fields:
            return ("xb", "yb")
        return tuple(field_variable(f) for f in self.batch_fields)

    def batch_arguments(self, function: str, models: int = 1) -> tuple[str, ...]:
        """What the `fn` `function` receives after its models: `xb, yb`, or its fields."""
        if not self.batch_fields:
            return ("xb", "yb")
        params = dict(self.function_params)[function][models:]
        if not all(p in self.batch_fields for p in params):  # (x, y) data, taken in order
            params = ("x", "y")
        return tuple(field_variable(p) for p in params)

    def carry_start(self, name: str) -> str | tuple[str, ...] | None:
        """What `carry name = ...` starts from: None (`none`), or its parameter path(s)."""
        starts = dict(zip(self.carries, self.carry_starts, strict=False))
        return starts.get(name)

    def learns_carry_start(self, model: str | None = None) -> bool:
        """Whether a carried value starts from parameters (of `model`, or of any model):
        they have a gradient at an epoch's first batch only, which DDP must be told of."""
        for start in self.carry_starts:
            paths = (start,) if isinstance(start, str) else start or ()
            if any(model is None or p.split(".")[0] == model for p in paths):
                return True
        return False

    def takes_carried(self, function: str, models: int = 1) -> bool:
        """Whether the metric `fn` `function` takes the carried values after the batch, as
        the objective does (`fn acc(net, x, y, state)`)."""
        params = dict(self.function_params).get(function, ())
        return bool(self.carries) and len(params) == models + 2 + len(self.carries)

    @property
    def sharded(self) -> bool:
        """FSDP2 (runtime/sharded.py) rather than DDP: sharded weights, DCP checkpoints."""
        return self.fsdp_blocks is not None

    @property
    def amp(self) -> bool:
        """insert-amp ran: the script has autocast, a GradScaler and `--precision`."""
        return self.precision != "none"

    @property
    def evaluate_records(self) -> bool:
        """`evaluate` returns the validation record itself (loss and accuracy of a catalogue
        loss, one model, whole weights): the program needs no `validation_record`."""
        return not self.reports_metrics and not self.has("ema") and not self.sharded

    @property
    def validation(self) -> str:
        """The function that gives the validation record: `evaluate` or `validation_record`."""
        return "evaluate" if self.evaluate_records else "validation_record"

    @property
    def model_loss(self) -> bool:
        """The batch's loss is `loss_fn(model(xb), yb)`: runtime/trainer.py's `ModelLoss`, not
        a `BatchLoss` of the program's own."""
        return not self.has("objective") and self.loss_targets == ("yb",)

    @property
    def loss_targets(self) -> tuple[str, ...]:
        """What the step passes `loss_fn` after the output: the targets, or inputs and targets."""
        return ("xb", "yb") if self.custom_loss in self.takes_inputs else ("yb",)

    @property
    def reports_metrics(self) -> bool:
        """Validation goes through `batch_metrics`: a loss written in the file, an objective,
        or `metrics`."""
        return self.custom_loss is not None or self.has("objective") or bool(self.metrics)

    @property
    def serves(self) -> bool:
        """--predict and --export: they feed the model one input, as the data's samples."""
        return self.forward_inputs == 1

    @property
    def batch_metrics(self) -> tuple[Metric, ...]:
        """The metrics measured on each validation batch (`perplexity` follows `val_loss`)."""
        return tuple(m for m in self.metrics if m.kind != "perplexity")

    @property
    def perplexity(self) -> bool:
        """`metrics = [perplexity]`: the record's `val_perplexity`, exp of `val_loss`."""
        return any(m.kind == "perplexity" for m in self.metrics)

    @property
    def generates(self) -> bool:
        """--generate: byte or token data (not `words`: the script keeps no vocabulary to
        decode), and a forward of one input to sample from."""
        return self.language_model_data and self.serves and not self.streams

    @property
    def data_error(self) -> str:
        """The runtime's exception for data that is not there (a user error: one line, exit 1)."""
        return "TokenDataUnavailable" if self.language_model_data else "DatasetUnavailable"

    @property
    def streams(self) -> bool:
        """`words` data: `batch_size` streams, windows in order (runtime/tokens.py's
        `StreamLoader`), which a carried value needs."""
        return self.dataset in ORDERED_SOURCES

    @property
    def classification(self) -> bool:
        return (
            self.setting("loss", str) in CLASSIFICATION_LOSSES
            and self.custom_loss is None
            and not self.has("objective")
        )

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
        chosen = {name for name, _ in self.optimizer_kwargs}
        return (
            self.setting("optimizer", str) in ("Adam", "AdamW", "SGD")
            and not chosen & OPTIMIZER_MODES
        )

    @property
    def whole_step_graph(self) -> bool:
        """The block allows capturing the whole step in one CUDA graph (runtime/graphs.py);
        the script still decides per run (device, resident data, model size)."""
        return (
            not self.distributed
            and not self.language_model_data  # windows are read per batch, not resident
            and self.setting("grad_accum", int) == 1
            and not self.carries
            and not self.has("grad_clip")
            and self.schedule is None
            and not self.has("ema")
            and not self.has("eval_every")
            and self.fusable_optimizer
            and not self.batch_fields  # the captured step copies into static (x, y) buffers
        )


# --- what the script trains on ----------------------------------------------------------------

# Names a field's variable would shadow in the script's loop and step functions.
_SCRIPT_NAMES = frozenset({
    "args", "bar", "batch", "batches", "batches_used", "ctx", "description", "device", "epoch",
    "F", "info", "inputs", "logits", "loss", "loss_sum", "max_steps", "model", "models", "nn",
    "optimizer", "output", "plan", "record", "scaled", "skip", "state", "step", "sums", "sync",
    "target", "torch", "totals", "train", "trainer", "val", "values",
})  # fmt: skip


def field_variable(field: str) -> str:
    """The script's variable for a batch's field: its name, or `NAME_b` where the name is
    Python's (a keyword, a builtin) or the loop's own."""
    if keyword.iskeyword(field) or field in dir(builtins) or field in _SCRIPT_NAMES:
        return f"{field}_b"
    return field


def data_name(plan: ScriptPlan) -> str:
    """`` `digits` ``, or `synthetic data`: the data, as the script's header names it."""
    return "synthetic data" if plan.dataset is None else f"`{plan.dataset}`"


def data_description(plan: ScriptPlan) -> str:
    """`digits`, or `synthetic data`: what the script trains on, for its `--help`."""
    return data_name(plan).replace("`", "")


# --- loss ------------------------------------------------------------------------------------

# --- command line and setup ------------------------------------------------------------------


def image_dataset(plan: ScriptPlan) -> bool:
    """A named image dataset (MNIST, Fashion-MNIST, CIFAR-10): the one kind `--download` fetches."""
    return not (
        plan.language_model_data
        or plan.dataset is None
        or plan.dataset in ("digits", *PAIRED_SOURCES)
        or plan.dataset in SEQUENCE_TASKS
        or is_file_source(plan.dataset)
    )


# --- the step --------------------------------------------------------------------------------


def program_name(plan: ScriptPlan) -> str:
    """The program's name, `mnist` for `examples/mnist.tl`: its checkpoints' folder."""
    name = PurePath(plan.source).stem
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "program"
