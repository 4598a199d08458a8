"""The train dialect: data sources, train blocks, and what the train passes add.

    train.dataset @data = "digits" {flatten = true}
    train.loop @net on @data {
      train.set "epochs" = 10 : i64
      train.set "optimizer" = #nml.call<"Adam", [], {lr = 1.000000e-03 : f64}>
      train.checkpoint every 5 "epochs"
      train.autocast "float16"          // added by insert-amp
      train.grad_scaler
    }
    train.main {                        // other top-level statements, in order
      %0 = nml.constant "done"
      %1 = nml.call "print"(%0) {arg_names = [""]} : (!nml.str) -> !nml.any
    }

A train block's settings are `train.set` ops whose values are attribute
expressions (see the nml dialect); the passes read them and add the marker ops
below (`train.autocast`, `train.ddp_wrap`, ...), which the lowering to torch turns
into the script's building blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.traits import HasParent, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_format import LazyFormatOp

CHECKPOINT_UNITS = ("epochs", "steps")
# The batch size of a train block that sets no `batch_size` (the emitted script's default).
DEFAULT_BATCH_SIZE = 64
# "auto": bfloat16 where the device supports it (a bf16-capable GPU), else none,
# decided at run time.
AUTOCAST_DTYPES = ("float16", "bfloat16", "auto")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DDP_BACKENDS = ("nccl", "gloo")


def _check_nonempty(name: StringAttr, what: str) -> None:
    if not name.data:
        raise VerifyException(f"{what} must not be empty")


def _check_one_of(value: StringAttr, allowed: Sequence[str], what: str) -> None:
    if value.data not in allowed:
        choices = ", ".join(f'"{a}"' for a in allowed)
        raise VerifyException(f'{what} must be one of {choices}, got "{value.data}"')


@irdl_op_definition
class DatasetOp(LazyFormatOp):
    """`train.dataset @data = "digits" {flatten = true}`: `load_dataset(...)`.

    Without a source (`load_dataset()`) the dataset is synthetic.
    """

    name = "train.dataset"

    sym_name = prop_def(SymbolNameConstraint())
    source = opt_prop_def(StringAttr)
    options = prop_def(DictionaryAttr)
    option_locs = opt_prop_def(ArrayAttr)

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


@irdl_op_definition
class LoopOp(LazyFormatOp):
    """`train.loop @net on @data { settings }`: a train block.

    `model_loc` and `data_loc` are where the two names are written, for
    check-scopes' diagnostics when one names nothing.
    """

    name = "train.loop"

    model = prop_def(SymbolRefAttr)
    data = prop_def(SymbolRefAttr)
    model_loc = opt_prop_def()
    data_loc = opt_prop_def()
    body = region_def("single_block")

    traits = traits_def(NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$model `on` $data attr-dict-with-keyword $body"

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


@irdl_op_definition
class SetOp(LazyFormatOp):
    """`train.set "epochs" = 10 : i64`: one `key = value` line; `value_loc` is the value's."""

    name = "train.set"

    key = prop_def(StringAttr)
    value = prop_def()
    value_loc = opt_prop_def()

    traits = traits_def(HasParent(LoopOp))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$key `=` $value attr-dict"

    def __init__(self, key: str, value: Attribute, value_loc: Attribute | None = None):
        super().__init__(
            properties={"key": StringAttr(key), "value": value, "value_loc": value_loc}
        )

    def verify_(self) -> None:
        _check_nonempty(self.key, "setting key")


@irdl_op_definition
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


@irdl_op_definition
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


@irdl_op_definition
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


@irdl_op_definition
class GradScalerOp(LazyFormatOp):
    """`train.grad_scaler`: scale the loss and step through a `GradScaler`."""

    name = "train.grad_scaler"

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class ProcessGroupOp(LazyFormatOp):
    """`train.process_group "nccl"`: initialise torch.distributed before training."""

    name = "train.process_group"

    backend = prop_def(StringAttr)

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$backend attr-dict"

    def __init__(self, backend: str):
        super().__init__(properties={"backend": StringAttr(backend)})

    def verify_(self) -> None:
        _check_one_of(self.backend, DDP_BACKENDS, "process group backend")


@irdl_op_definition
class DdpWrapOp(LazyFormatOp):
    """`train.ddp_wrap @net`: wrap the model in DistributedDataParallel."""

    name = "train.ddp_wrap"

    model = prop_def(SymbolRefAttr)

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$model attr-dict"

    def __init__(self, model: str):
        super().__init__(properties={"model": SymbolRefAttr(model)})


@irdl_op_definition
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


@irdl_op_definition
class DistributedSamplerOp(LazyFormatOp):
    """`train.distributed_sampler @data shuffle`: shard the data across ranks."""

    name = "train.distributed_sampler"

    data = prop_def(SymbolRefAttr)
    shuffle = opt_prop_def(UnitAttr)

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$data (`shuffle` $shuffle^)? attr-dict"

    def __init__(self, data: str, shuffle: bool = True):
        super().__init__(
            properties={"data": SymbolRefAttr(data), "shuffle": UnitAttr() if shuffle else None}
        )


@irdl_op_definition
class RankZeroOnlyOp(LazyFormatOp):
    """`train.rank_zero_only ["logging", "checkpoint"]`: what only rank 0 does."""

    name = "train.rank_zero_only"

    actions = prop_def(ArrayAttr[StringAttr])

    traits = traits_def(HasParent(LoopOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$actions attr-dict"

    def __init__(self, actions: Sequence[str]):
        super().__init__(properties={"actions": string_array(actions)})

    def verify_(self) -> None:
        if not self.actions.data:
            raise VerifyException("rank_zero_only needs at least one action")


@irdl_op_definition
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


@irdl_op_definition
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


Train = Dialect(
    "train",
    [
        DatasetOp,
        LoopOp,
        SetOp,
        CheckpointOp,
        MainOp,
        AutocastOp,
        GradScalerOp,
        ProcessGroupOp,
        DdpWrapOp,
        FsdpShardOp,
        DistributedSamplerOp,
        RankZeroOnlyOp,
        CompileOp,
        ActivationCheckpointOp,
    ],
    [],
)
