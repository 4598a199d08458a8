"""The train dialect: data sources, train blocks, and what the train passes add.

    train.dataset @data = "digits" {flatten = true}
    train.loop @net on @data {
      train.set "epochs" = 10 : i64
      train.set "optimizer" = #nml.call<"Adam", [], {lr = 1.000000e-03 : f64}>
      train.checkpoint every 5 "epochs"
      train.autocast "float16"          // added by insert-amp
    }
    train.main {                        // other top-level statements, in order
      %0 = nml.constant "done"
      %1 = nml.call "print"(%0) {arg_names = [""]} : (!nml.str) -> !nml.any
    }

A train block's settings are `train.set` ops whose values are attribute
expressions (see the nml dialect); the passes read them and add the marker ops
below (`train.autocast`, `train.ddp_wrap`, ...), which the lowering to torch turns
into the script's building blocks: each marker is read there, and a script whose
pipeline left out the pass that adds it has none of that code. The GradScaler is the
run's choice (runtime/amp.py: fp16 on a CUDA device, or bf16 where the GPU has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    NoneAttr,
    NoneType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region, TypeAttribute
from xdsl.irdl import (
    ParsePropInAttrDict,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.traits import HasParent, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.train_keys import CONFIG_FIELDS, FIELDS
from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.lazy_format import LazyFormatOp
from tensorloom.dialects.nml.types import CallAttr, ExprAttr

CHECKPOINT_UNITS = ("epochs", "steps")
# The batch size of a train block that sets no `batch_size` (the emitted script's default).
DEFAULT_BATCH_SIZE: int = FIELDS["batch_size"].default  # type: ignore[assignment]
# "auto": bfloat16 where the device supports it (a bf16-capable GPU), else none; "float32":
# none; both decided at run time, where `--precision` may pick another.
AUTOCAST_DTYPES = ("float16", "bfloat16", "float32", "auto")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")  # the modes that replay CUDA graphs


def _check_nonempty(name: StringAttr, what: str) -> None:
    if not name.data:
        raise VerifyException(f"{what} must not be empty")


def _check_one_of(value: StringAttr, allowed: Sequence[str], what: str) -> None:
    if value.data not in allowed:
        choices = ", ".join(f'"{a}"' for a in allowed)
        raise VerifyException(f'{what} must be one of {choices}, got "{value.data}"')


@lazy_op_definition
class DatasetOp(LazyFormatOp):
    """`train.dataset @data = "digits" {flatten = true}`: `load_dataset(...)`.

    Without a source (`load_dataset()`) the dataset is synthetic.
    """

    name = "train.dataset"

    sym_name = prop_def(SymbolNameConstraint())
    source = opt_prop_def(StringAttr)
    options = prop_def(DictionaryAttr)
    option_locs = opt_prop_def(ArrayAttr)
    per_token_length = opt_prop_def(IntegerAttr[I64])
    """On `load_dataset()` for a model with one class per token ([B, T, C] outputs): T, the
    length of a synthetic sequence (written by infer-synthetic-data)."""

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name (`=` $source^)? $options attr-dict"

    def __init__(
        self,
        sym_name: str,
        source: str | None,
        options: dict[str, Attribute] | None = None,
        option_locs: Sequence[Attribute] | None = None,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "source": StringAttr(source) if source is not None else None,
                "options": DictionaryAttr(options or {}),
                "option_locs": ArrayAttr(option_locs) if option_locs is not None else None,
            }
        )

    def verify_(self) -> None:
        if self.option_locs is not None and len(self.option_locs) != len(self.options.data):
            raise VerifyException(
                f"`option_locs` has {len(self.option_locs)} entries, "
                f"expected {len(self.options.data)}"
            )
        if self.per_token_length is None:
            return
        if self.source is not None:
            raise VerifyException("`per_token_length` is for synthetic data (`load_dataset()`)")
        if self.per_token_length.value.data < 1:
            raise VerifyException("`per_token_length` must be positive")


@lazy_op_definition
class LoopOp(LazyFormatOp):
    """`train.loop @net on @data { settings }`: a train block.

    `model_loc` and `data_loc` are where the two names are written, for
    check-scopes' diagnostics when one names nothing. A block of several models,
    `train (G, D) on data`, lists them all in `models` (`model` is the first) and
    their locations in `model_locs`.
    """

    name = "train.loop"

    model = prop_def(SymbolRefAttr)
    data = prop_def(SymbolRefAttr)
    model_loc = opt_prop_def()
    data_loc = opt_prop_def()
    model_output = opt_prop_def(TypeAttribute)
    """The type the model's forward returns on the loop's data (written by shape-inference;
    check-train checks the loss against it, the lowering sizes the script by it)."""
    synthetic_sample = opt_prop_def(ArrayAttr[IntegerAttr[I64]])
    """Over `load_dataset()` data: the shape of one sample the model takes, `[784]`
    (written by shape-inference with `synthetic_output`; infer-synthetic-data reads both)."""
    synthetic_output = opt_prop_def(TypeAttribute)
    """... and the type the forward returns on a batch of such samples."""
    models = opt_prop_def(ArrayAttr[SymbolRefAttr])
    model_locs = opt_prop_def(ArrayAttr)
    batch_fields = opt_prop_def(ArrayAttr[StringAttr])
    """Over data of named fields: the fields each batch carries, in the data's order, those
    the block's objectives (and metric functions) name (written by shape-inference; the
    lowering loads and passes them by name). Absent: batches of (x, y)."""
    body = region_def("single_block")

    traits = traits_def(NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$model `on` $data attr-dict-with-keyword $body"

    def verify_(self) -> None:
        if (self.synthetic_sample is None) != (self.synthetic_output is None):
            raise VerifyException("`synthetic_sample` and `synthetic_output` go together")
        if self.synthetic_sample is not None and any(
            d.value.data < 1 for d in self.synthetic_sample.data
        ):
            raise VerifyException("`synthetic_sample` sizes must be positive")
        if self.batch_fields is not None:
            names = [f.data for f in self.batch_fields.data]
            if not names or len(set(names)) != len(names):
                raise VerifyException("`batch_fields` lists one or more fields, each once")
            if not all(n.isidentifier() for n in names):
                raise VerifyException("`batch_fields` are identifiers: an objective's parameters")

    def __init__(self, model: str, data: str, body: Region | None = None):
        super().__init__(
            properties={"model": SymbolRefAttr(model), "data": SymbolRefAttr(data)},
            regions=[body or Region(Block())],
        )

    def settings(self) -> dict[str, SetOp]:
        """The `train.set` ops by key (the last one wins if a key repeats)."""
        return {op.key.data: op for op in self.body.block.ops if isinstance(op, SetOp)}

    def setting(self, key: str) -> Attribute | None:
        op = self.settings().get(key)
        return op.value if op is not None else None

    def model_names(self) -> list[str]:
        """The block's models: `[G, D]` for `train (G, D) on data`, `[net]` for one."""
        if self.models is None:
            return [self.model.root_reference.data]
        return [ref.root_reference.data for ref in self.models.data]

    def field_names(self) -> list[str]:
        """The fields each batch carries (`batch_fields`); [] for batches of (x, y)."""
        return [f.data for f in self.batch_fields.data] if self.batch_fields is not None else []

    def steps(self) -> list[StepOp]:
        """The block's `step ... with ...` lines, in order."""
        return [op for op in self.body.block.ops if isinstance(op, StepOp)]

    def carries(self) -> list[CarryOp]:
        """The block's `carry NAME = value` lines, in order: the objective's parameters after
        the batch, and what it returns after its loss."""
        return [op for op in self.body.block.ops if isinstance(op, CarryOp)]

    def groups(self) -> dict[str, GroupOp]:
        """The block's `group NAME = ...` lines by name, in order (the first of a name that
        repeats: check-train reports the second)."""
        groups: dict[str, GroupOp] = {}
        for op in self.body.block.ops:
            if isinstance(op, GroupOp):
                groups.setdefault(op.group.root_reference.data, op)
        return groups

    def runs_objectives(self) -> bool:
        """The block minimises `fn`s that call its models (`objective = f` or `step` lines):
        the data feeds them, not a model's forward directly."""
        has_objective = self.setting("objective") is not None or bool(self.steps())
        config = next((op for op in self.body.block.ops if isinstance(op, ConfigOp)), None)
        return has_objective or (config is not None and config.value("objective") is not None)


@lazy_op_definition
class StepOp(LazyFormatOp):
    """`train.step @d_loss with #nml.call<"Adam", ["D"], {lr = 2.0e-04 : f64}>`: one step of
    each batch, in the block's order: zero the optimizer's gradients, compute the objective
    `fn d_loss(...)`, backward, step that optimizer. The optimizer's positional arguments name
    the models whose parameters it updates."""

    name = "train.step"

    objective = prop_def(SymbolRefAttr)
    optimizer = prop_def()
    objective_loc = opt_prop_def()
    optimizer_loc = opt_prop_def()
    # `from epoch 11 until epoch 20`: the epochs, from 1 and both included, the step runs in
    # (every epoch where absent); `window_loc` is the clause's
    first_epoch = opt_prop_def(IntegerAttr)
    last_epoch = opt_prop_def(IntegerAttr)
    window_loc = opt_prop_def()

    traits = traits_def(HasParent(LoopOp))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$objective `with` $optimizer attr-dict"

    def __init__(self, objective: str, optimizer: Attribute):
        super().__init__(properties={"objective": SymbolRefAttr(objective), "optimizer": optimizer})

    def epochs(self) -> tuple[int | None, int | None]:
        """`(11, None)` for `from epoch 11`: the first and last epoch it runs in, if bounded."""
        first, last = self.first_epoch, self.last_epoch
        return (first.value.data if first is not None else None,
                last.value.data if last is not None else None)  # fmt: skip

    def optimizer_calls(self) -> list[Attribute]:
        """Each optimizer of the step: one, or (`with Muon(hidden), AdamW(rest)`) an array
        of them that one backward feeds."""
        if isinstance(self.optimizer, ArrayAttr):
            return list(self.optimizer.data)
        return [self.optimizer]

    def optimizer_locs(self) -> list[Attribute | None]:
        """Where each optimizer is written, in `optimizer_calls`' order."""
        locs = self.optimizer_loc
        if isinstance(locs, ArrayAttr):
            return list(locs.data)
        return [locs]


def named(selection: Attribute) -> Attribute:
    """A parameter selection with each capitalised model name as a name: the attribute
    builder reads `G` as a call of no arguments (`params(G) - G.fc`)."""
    match selection:
        case CallAttr() if selection.callee.data == "params":
            args = [named(a) for a in selection.args.data]
            return CallAttr.get("params", args, dict(selection.kwargs.data))
        case CallAttr() if not selection.args.data and not selection.kwargs.data:
            return StringAttr(selection.callee.data)
        case ExprAttr():
            return ExprAttr.get(selection.op.data, [named(a) for a in selection.operands.data])
        case _:
            return selection


@lazy_op_definition
class GroupOp(LazyFormatOp):
    """`train.group @hidden = #nml.call<"params", ["net.blocks"], {ndim = 2 : i64}>`: a named
    selection of a model's parameters (`group hidden = params(net.blocks, ndim=2)`), which
    the block's optimizers name in place of a model. check-train resolves it against the
    specialised model: `params(PATH, "glob", ndim=N)`, and `a - b`, `a + b` of selections."""

    name = "train.group"

    group = prop_def(SymbolRefAttr)
    value = prop_def()
    value_loc = opt_prop_def()

    traits = traits_def(HasParent(LoopOp))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$group `=` $value attr-dict"

    def __init__(self, name: str, value: Attribute, value_loc: Attribute | None = None):
        super().__init__(
            properties={"group": SymbolRefAttr(name), "value": value, "value_loc": value_loc}
        )


@lazy_op_definition
class CarryOp(LazyFormatOp):
    """`train.carry "state" = none`: a value kept from one batch to the next (truncated
    backpropagation through time, as pytorch/examples' word_language_model trains).

    The block's objective takes it after the batch and returns it after its loss,
    `fn lm_loss(net, x, y, state)` returning `(loss, state)`; between batches it is detached
    (the gradient stops at the batch's start), and at each epoch's start and for validation
    it is `init` again: `none` (the recurrent layers' zero state), or a learned start, the
    path of a model's `Parameter` (`"net.h0"`) or an array of them (`["net.h0", "net.c0"]`,
    an LSTM's pair), which the epoch's first batch backpropagates into. In a block of `step`
    lines each step whose objective has parameters for the values takes and returns them in
    turn. `carried` is the type the objective returns for it (written by check-train); the
    lowering keeps it in the trainer and in checkpoints (each rank's under DDP), so a run
    resumed mid-epoch continues from the same value."""

    name = "train.carry"

    var = prop_def(StringAttr)
    init = opt_prop_def()
    init_loc = opt_prop_def()
    carried = opt_prop_def(TypeAttribute)

    traits = traits_def(HasParent(LoopOp))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$var (`=` $init^)? attr-dict"

    def __init__(self, var: str, init: Attribute | None, init_loc: Attribute | None = None):
        super().__init__(properties={"var": StringAttr(var), "init": init, "init_loc": init_loc})

    def verify_(self) -> None:
        _check_nonempty(self.var, "carried value's name")
        if self.carried is not None and self.init is None:
            raise VerifyException("a carried value with a type needs its initial value")


@lazy_op_definition
class SetOp(LazyFormatOp):
    """`train.set "epochs" = 10 : i64`: one `key = value` line; `value_loc` is the value's,
    `element_locs` each element's of a tuple or list value (`optimizer = (Muon(...), ...)`)."""

    name = "train.set"

    key = prop_def(StringAttr)
    value = prop_def()
    value_loc = opt_prop_def()
    element_locs = opt_prop_def(ArrayAttr)

    traits = traits_def(HasParent(LoopOp))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$key `=` $value attr-dict"

    def __init__(self, key: str, value: Attribute, value_loc: Attribute | None = None):
        super().__init__(
            properties={"key": StringAttr(key), "value": value, "value_loc": value_loc}
        )

    def verify_(self) -> None:
        _check_nonempty(self.key, "setting key")


@lazy_op_definition
class ConfigOp(LazyFormatOp):
    """`train.config {epochs = 10 : i64, optimizer = "Adam", ...}`: a checked block, complete.

    Written by the `train-config` pass in place of the block's `train.set` and
    `train.checkpoint` ops: every field of catalogue/train_keys.py, the block's
    value or the field's default. The verifier checks each field's attribute kind;
    `locs` keeps where each key was written (the script's `# file.tl:LINE` notes).
    """

    name = "train.config"

    fields = prop_def(DictionaryAttr)
    locs = opt_prop_def(DictionaryAttr)  # where the block wrote each key it sets

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$fields (`locs` $locs^)? attr-dict"

    def __init__(self, fields: dict[str, Attribute], locs: dict[str, Attribute] | None = None):
        properties: dict[str, Attribute | None] = {"fields": DictionaryAttr(fields)}
        properties["locs"] = DictionaryAttr(locs) if locs else None
        super().__init__(properties=properties)

    def loc(self, key: str) -> Attribute | None:
        """Where the block sets `key` (a location attribute), or None."""
        return self.locs.data.get(key) if self.locs is not None else None

    def verify_(self) -> None:
        values = self.fields.data
        missing = [
            f.name for f in CONFIG_FIELDS if f.name not in values and not f.left_out_when_off
        ]
        if missing:
            raise VerifyException(f"train.config lacks {', '.join(missing)}")
        for name, value in values.items():
            field = FIELDS.get(name)
            if field is None:
                raise VerifyException(f"train.config has no field `{name}`")
            if not (field.optional and isinstance(value, NoneAttr | NoneType)) and not _is_kind(
                value, field.kind
            ):
                raise VerifyException(f"train.config field `{name}` must be {field.kind}")

    def value(self, name: str) -> object:
        """A field as a Python value: int, float, bool, str, dict, list, or None when off (or
        left out: `ConfigField.left_out_when_off`)."""
        value = self.fields.data.get(name)
        return None if value is None else _python(value)


def _is_kind(value: Attribute, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, IntegerAttr) and value.type == i1
    if kind == "int":
        return isinstance(value, IntegerAttr) and value.type == i64
    return isinstance(value, _KIND_ATTRS[kind])


_KIND_ATTRS: dict[str, type[Attribute]] = {
    "float": FloatAttr, "str": StringAttr, "dict": DictionaryAttr, "list": ArrayAttr,
}  # fmt: skip


def _python(value: Attribute) -> object:
    if isinstance(value, NoneAttr | NoneType):
        return None
    if isinstance(value, IntegerAttr):
        number = value.value.data
        return bool(number) if value.type == i1 else number
    if isinstance(value, FloatAttr):
        return value.value.data
    if isinstance(value, StringAttr):
        return value.data
    if isinstance(value, DictionaryAttr):
        return {k: _python(v) for k, v in value.data.items()}
    if isinstance(value, ArrayAttr):
        return [_python(v) for v in value.data]
    raise VerifyException(f"train.config holds an unexpected attribute {value}")


def config_attr(value: object) -> Attribute:
    """A Python value as the attribute a `train.config` field holds."""
    if value is None:
        return NoneType()  # prints `none`, and `none` parses back as it
    if isinstance(value, bool):
        return IntegerAttr(int(value), i1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, dict):
        return DictionaryAttr({str(k): config_attr(v) for k, v in value.items()})  # type: ignore[misc]
    if isinstance(value, list | tuple):
        return ArrayAttr([config_attr(v) for v in value])  # type: ignore[misc]
    raise TypeError(f"no train.config attribute for {value!r}")


def config_of(loop: LoopOp) -> ConfigOp:
    """The loop's `train.config`; the lowering and the insert passes read only it."""
    config = next((op for op in loop.body.block.ops if isinstance(op, ConfigOp)), None)
    if config is None:
        raise VerifyException("the train loop has no train.config: run the train-config pass")
    return config


@lazy_op_definition
class CheckpointOp(LazyFormatOp):
    """`train.checkpoint every 5 "epochs"`: the checkpoint policy."""

    name = "train.checkpoint"

    every = prop_def(IntegerAttr[I64])
    unit = prop_def(StringAttr)

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "`every` $every $unit attr-dict"

    def __init__(self, every: int, unit: str):
        super().__init__(properties={"every": IntegerAttr(every, i64), "unit": StringAttr(unit)})

    def verify_(self) -> None:
        if self.every.value.data <= 0:
            raise VerifyException(
                f"checkpoint interval must be positive, got {self.every.value.data}"
            )
        _check_one_of(self.unit, CHECKPOINT_UNITS, "checkpoint unit")


@lazy_op_definition
class MainOp(LazyFormatOp):
    """`train.main { ... }`: a script's other top-level statements, in source order.

    Present only when a script has statements besides models, kernels, instances,
    datasets and train blocks; the script's train loops then sit inside it, in order.
    """

    name = "train.main"

    body = region_def("single_block")

    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "attr-dict-with-keyword $body"

    def __init__(self, body: Region | None = None):
        super().__init__(regions=[body or Region(Block())])


# ------------------------------------------------------- added by train passes


@lazy_op_definition
class AutocastOp(LazyFormatOp):
    """`train.autocast "float16"`: forward and loss under `torch.autocast` (`"auto"`: below)."""

    name = "train.autocast"

    dtype = prop_def(StringAttr)

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$dtype attr-dict"

    def __init__(self, dtype: str):
        super().__init__(properties={"dtype": StringAttr(dtype)})

    def verify_(self) -> None:
        _check_one_of(self.dtype, AUTOCAST_DTYPES, "autocast dtype")


@lazy_op_definition
class DdpWrapOp(LazyFormatOp):
    """`train.ddp_wrap @net`: wrap the model in DistributedDataParallel."""

    name = "train.ddp_wrap"

    model = prop_def(SymbolRefAttr)

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$model attr-dict"

    def __init__(self, model: str):
        super().__init__(properties={"model": SymbolRefAttr(model)})


@lazy_op_definition
class FsdpShardOp(LazyFormatOp):
    """`train.fsdp_shard @net ["h"]`: FSDP2 `fully_shard` on each listed block (a layer
    list stands for each of its models), then on the model itself."""

    name = "train.fsdp_shard"

    model = prop_def(SymbolRefAttr)
    blocks = prop_def(ArrayAttr[StringAttr])

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$model $blocks attr-dict"

    def __init__(self, model: str, blocks: Sequence[str]):
        super().__init__(properties={"model": SymbolRefAttr(model), "blocks": string_array(blocks)})


@lazy_op_definition
class CompileOp(LazyFormatOp):
    """`train.compile @net mode "max-autotune"`: wrap the model in `torch.compile`."""

    name = "train.compile"

    model = prop_def(SymbolRefAttr)
    mode = prop_def(StringAttr)

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$model `mode` $mode attr-dict"

    def __init__(self, model: str, mode: str):
        super().__init__(properties={"model": SymbolRefAttr(model), "mode": StringAttr(mode)})

    def verify_(self) -> None:
        _check_one_of(self.mode, COMPILE_MODES, "compile mode")


@lazy_op_definition
class ActivationCheckpointOp(LazyFormatOp):
    """`train.activation_checkpoint @net ["block1", "block2"]`: recompute these
    layers' activations in the backward pass (non-reentrant)."""

    name = "train.activation_checkpoint"

    model = prop_def(SymbolRefAttr)
    layers = prop_def(ArrayAttr[StringAttr])

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$model $layers attr-dict"

    def __init__(self, model: str, layers: Sequence[str]):
        super().__init__(
            properties={
                "model": SymbolRefAttr(model),
                "layers": string_array(layers),
            }
        )

    def verify_(self) -> None:
        if not self.layers.data:
            raise VerifyException("activation_checkpoint needs at least one layer")


WeightRuleTuple = tuple["str | tuple[str, ...]", "str | tuple[str, ...] | None", bool, "int | None"]
"""(the file's name or names, the model's name or names or None to ignore, transposed, the
dim several names are split or joined along or None)."""


def _names(attr: Attribute) -> str | tuple[str, ...]:
    if isinstance(attr, ArrayAttr):
        return tuple(s.data for s in attr.data if isinstance(s, StringAttr))
    return attr.data if isinstance(attr, StringAttr) else ""


def _names_attr(names: str | Sequence[str] | None) -> Attribute:
    if names is None or isinstance(names, str):
        return StringAttr(names or "")
    return string_array(list(names))


@lazy_op_definition
class WeightsOp(LazyFormatOp):
    """`train.weights @net from "gpt2" {...}`: a `weights` block, the published weights an
    instance starts from and the rules that name the file's tensors in the model's names.

    Rule i maps `sources[i]` (the file's name pattern, or an array of them joined into one
    tensor) to `targets[i]` (the model's, or an array the tensor is split into), `""` for a
    tensor to ignore; `transposed[i]` is 1 where the file stores it the other way round
    (Hugging Face GPT-2's `Conv1D`); `along[i]` is the dim a rule of several names joins or
    splits along, -1 where the rule does not say. `rule_locs[i]` is where rule i is written.
    `config_keys[j]` is a config.json entry that must equal the instance's config
    `config_names[j]` (written at `config_locs[j]`). A block that applies a `@weights` map of
    the model's .nml file holds its rules after its own, located there, and names it in
    `weights_map` (its name, written at `weights_map_loc`).
    """

    name = "train.weights"

    instance = prop_def(StringAttr)
    source = prop_def(StringAttr)
    sources = prop_def(ArrayAttr[Attribute])
    targets = prop_def(ArrayAttr[Attribute])
    transposed = prop_def(ArrayAttr[IntegerAttr])
    along = opt_prop_def(ArrayAttr[IntegerAttr])
    rule_locs = opt_prop_def(ArrayAttr)
    config_keys = opt_prop_def(ArrayAttr[StringAttr])
    config_names = opt_prop_def(ArrayAttr[StringAttr])
    config_locs = opt_prop_def(ArrayAttr)
    instance_loc = opt_prop_def(Attribute)
    source_loc = opt_prop_def(Attribute)
    weights_map = opt_prop_def(StringAttr)
    weights_map_loc = opt_prop_def(Attribute)

    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$instance `from` $source attr-dict"

    def __init__(
        self,
        instance: str,
        source: str,
        rules: Sequence[WeightRuleTuple | tuple[str, str | None, bool]],
        rule_locs: Sequence[Attribute] | None = None,
        configs: Sequence[tuple[str, str]] = (),
        config_locs: Sequence[Attribute] | None = None,
    ):
        alongs = [r[3] if len(r) > 3 else None for r in rules]
        super().__init__(
            properties={
                "instance": StringAttr(instance),
                "source": StringAttr(source),
                "sources": ArrayAttr([_names_attr(r[0]) for r in rules]),
                "targets": ArrayAttr([_names_attr(r[1]) for r in rules]),
                "transposed": ArrayAttr([IntegerAttr(int(r[2]), i1) for r in rules]),
                "along": ArrayAttr([IntegerAttr(-1 if a is None else a, i64) for a in alongs])
                if any(a is not None for a in alongs)
                else None,
                "rule_locs": ArrayAttr(rule_locs) if rule_locs is not None else None,
                "config_keys": string_array([k for k, _ in configs]) if configs else None,
                "config_names": string_array([n for _, n in configs]) if configs else None,
                "config_locs": ArrayAttr(config_locs) if configs and config_locs else None,
            }
        )

    def rules(self) -> list[WeightRuleTuple]:
        """(file pattern(s), model pattern(s) or None to ignore, transposed, along), in order."""
        n = len(self.sources.data)
        alongs = [a.value.data for a in self.along.data] if self.along is not None else [-1] * n
        return [
            (_names(s), _names(t) or None, bool(f.value.data), a if a >= 0 else None)
            for s, t, f, a in zip(self.sources, self.targets, self.transposed, alongs, strict=True)
        ]

    def configs(self) -> list[tuple[str, str]]:
        """(config.json's entry, the instance's config name), in order."""
        if self.config_keys is None or self.config_names is None:
            return []
        return [
            (k.data, n.data)
            for k, n in zip(self.config_keys.data, self.config_names.data, strict=True)
        ]

    def verify_(self) -> None:
        n = len(self.sources.data)
        if len(self.targets.data) != n or len(self.transposed.data) != n:
            raise VerifyException("`sources`, `targets` and `transposed` must have one entry each")
        for names in (*self.sources.data, *self.targets.data):
            if not isinstance(names, StringAttr) and not (
                isinstance(names, ArrayAttr) and all(isinstance(s, StringAttr) for s in names)
            ):
                raise VerifyException("a rule's names are a string or an array of strings")
        for what, array in (("along", self.along), ("rule_locs", self.rule_locs)):
            if array is not None and len(array.data) != n:
                raise VerifyException(f"`{what}` has {len(array.data)} entries, expected {n}")
        keys, names = self.config_keys, self.config_names
        if (keys is None) != (names is None) or (
            keys is not None and names is not None and len(keys.data) != len(names.data)
        ):
            raise VerifyException("`config_keys` and `config_names` must have one entry each")


Train = Dialect(
    "train",
    [
        DatasetOp,
        LoopOp,
        SetOp,
        StepOp,
        GroupOp,
        CarryOp,
        ConfigOp,
        CheckpointOp,
        MainOp,
        AutocastOp,
        DdpWrapOp,
        FsdpShardOp,
        CompileOp,
        ActivationCheckpointOp,
        WeightsOp,
    ],
    [],
)
