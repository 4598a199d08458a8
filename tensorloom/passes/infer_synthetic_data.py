"""`infer-synthetic-data`: `load_dataset()` gets the shapes the trained model takes and gives.

    train.dataset @data {}
        ->  train.dataset @data {num_classes = 10 : i64, sample_shape = [784 : i64]}
    (and the property `per_token_length = 16 : i64` when the model gives one class
    per token: [B, T, C] outputs)

The options are those a user may write (`load_dataset(sample_shape=[784],
num_classes=10)`), so the lowering passes them to the runtime's `load_dataset`
as they are. It runs in the train stage because it needs the nml models, which
`convert-nml-to-torch` replaces.

Steps:
1. One sample's shape: `shape-inference` finds it (support/synthetic_sample.py),
   infers the instance on a batch of such samples and writes the sample and the
   output type on the loop (its properties `synthetic_sample`, `synthetic_output`).
2. This pass reads them, infers nothing: an output [B, C] is C classes per
   sample; [B, T, C] is C classes per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import I64, ArrayAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute

from tensorloom.dialects import nml, train
from tensorloom.dialects.nml import TensorType
from tensorloom.passes.support.model_env import (
    lookup_symbol,
)
from tensorloom.passes.support.prerequisites import TLPass


@dataclass(frozen=True, slots=True)
class SyntheticShapes:
    sample_shape: tuple[int, ...]
    num_classes: int
    per_token_length: int | None  # the output is [B, T, C]: one class per token


def synthetic_shapes(loop: train.LoopOp) -> SyntheticShapes | None:
    """What `shape-inference` found the loop's model takes and gives on synthetic samples."""
    sample, output = loop.synthetic_sample, loop.synthetic_output
    if sample is None or not isinstance(output, TensorType):
        return None
    if output.dims is None:
        return None
    dims = tuple(d.value.data for d in sample.data if isinstance(d, IntegerAttr))
    return _classes(dims, output.dims)


def _classes(sample: tuple[int, ...], output: tuple[object, ...]) -> SyntheticShapes | None:
    classes = output[-1] if len(output) in (2, 3) else None
    if not isinstance(classes, int):
        return None
    if len(output) == 2:
        return SyntheticShapes(sample, classes, None)
    length = output[1] if isinstance(output[1], int) else None
    return SyntheticShapes(sample, classes, length) if length is not None else None


def _int(value: int) -> IntegerAttr[I64]:
    return IntegerAttr(value, i64)


def _fillable(
    module: ModuleOp, loop: train.LoopOp
) -> tuple[train.DatasetOp, SyntheticShapes] | None:
    """The loop's `load_dataset()` and the shapes to write on it; None if there is nothing to do."""
    data = lookup_symbol(module, loop.data, train.DatasetOp)
    instance = lookup_symbol(module, loop.model, nml.InstanceOp)
    if data is None or instance is None or data.source is not None:
        return None
    if "sample_shape" in data.options.data or "num_classes" in data.options.data:
        return None  # the user said what the samples look like (or this pass did)
    shapes = synthetic_shapes(loop)
    return None if shapes is None else (data, shapes)


def fill_synthetic(module: ModuleOp, loop: train.LoopOp) -> None:
    fillable = _fillable(module, loop)
    if fillable is None:
        return
    data, shapes = fillable
    options: dict[str, Attribute] = dict(data.options.data)
    options["sample_shape"] = ArrayAttr([_int(d) for d in shapes.sample_shape])
    options["num_classes"] = _int(shapes.num_classes)
    data.properties["options"] = type(data.options)(options)
    data.properties.pop("option_locs", None)
    if shapes.per_token_length is not None:
        data.per_token_length = _int(shapes.per_token_length)


@dataclass(frozen=True)
class InferSyntheticDataPass(TLPass):
    name = "infer-synthetic-data"
    requires = ("shape-inference",)

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """A loop over `load_dataset()` knows its samples' shape, its dataset not yet."""
        loops = (op for op in module.body.block.ops if isinstance(op, train.LoopOp))
        return any(_fillable(module, loop) is not None for loop in loops)

    @classmethod
    def applies_to(cls, module: ModuleOp) -> bool:
        """Only `load_dataset()` data, with nothing said about its samples, is inferred."""
        datasets = (op for op in module.body.block.ops if isinstance(op, train.DatasetOp))
        return any(
            d.source is None and not {"sample_shape", "num_classes"} & d.options.data.keys()
            for d in datasets
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if isinstance(o, train.LoopOp)]:
            fill_synthetic(op, loop)
