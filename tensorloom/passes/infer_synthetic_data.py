"""`infer-synthetic-data`: `load_dataset()` gets the shapes the trained model takes and gives.

    train.dataset @data {}
        ->  train.dataset @data {num_classes = 10 : i64, sample_shape = [784 : i64]}
    (and `{per_token_length = 16 : i64}` in the attribute dict when the model
    gives one class per token: [B, T, C] outputs)

The options are those a user may write (`load_dataset(sample_shape=[784],
num_classes=10)`), so the lowering passes them to the runtime's `load_dataset`
as they are. It runs in the train stage because it needs the nml models, which
`convert-nml-to-torch` replaces.

Steps:
1. One sample's shape (`synthetic_sample`, which `shape-inference` calls): the
   forward's annotated input (`x: Tensor[B, 784]`), else what the first layer
   applied to the input expects (`Linear(784, ...)` takes [784], `LayerNorm(512)`
   [T, 512], `Conv2d(3, ...)` [3, 32, 32]), looking into a nested model when that
   comes first. A free length `T` is `SEQUENCE_LENGTH`.
2. `shape-inference` infers the instance on a batch of such samples and writes
   the sample and the output type on the loop (`synthetic_sample`,
   `synthetic_output`); this pass reads them, infers nothing: an output [B, C]
   is C classes per sample; [B, T, C] is C classes per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, SSAValue

from tensorloom.catalogue.args import INT64_MAX
from tensorloom.dialects import nml, train
from tensorloom.dialects.nml import TensorType
from tensorloom.passes.support.model_env import (
    Env,
    bind_layer,
    forward_of,
    layers_of,
    lookup_symbol,
    model_env,
    nested_overrides,
)
from tensorloom.passes.support.prerequisites import TLPass

SEQUENCE_LENGTH = 16
IMAGE_SIDE = {"Conv1d": (64,), "Conv2d": (32, 32), "Conv3d": (8, 16, 16)}


@dataclass(frozen=True, slots=True)
class SyntheticShapes:
    sample_shape: tuple[int, ...]
    num_classes: int
    per_token_length: int | None  # the output is [B, T, C]: one class per token


def synthetic_shapes(loop: train.LoopOp) -> SyntheticShapes | None:
    """What `shape-inference` found the loop's model takes and gives on synthetic samples."""
    sample = loop.attributes.get("synthetic_sample")
    output = loop.attributes.get("synthetic_output")
    if not isinstance(sample, ArrayAttr) or not isinstance(output, TensorType):
        return None
    if output.dims is None:
        return None
    dims = tuple(d.value.data for d in sample.data if isinstance(d, IntegerAttr))
    return _classes(dims, output.dims)


def synthetic_sample(
    model: nml.ModelOp, env: Env, models: dict[str, nml.ModelOp]
) -> tuple[int, ...] | None:
    """Step 1: the shape of one sample the model takes, if its input says it."""
    return _sample_shape(model, env, models, depth=0)


def _classes(sample: tuple[int, ...], output: tuple[object, ...]) -> SyntheticShapes | None:
    classes = output[-1] if len(output) in (2, 3) else None
    if not isinstance(classes, int):
        return None
    if len(output) == 2:
        return SyntheticShapes(sample, classes, None)
    length = output[1] if isinstance(output[1], int) else None
    return SyntheticShapes(sample, classes, length) if length is not None else None


def _sample_shape(
    model: nml.ModelOp, env: Env, models: dict[str, nml.ModelOp], depth: int
) -> tuple[int, ...] | None:
    forward = forward_of(model)
    if forward is None or not forward.body.block.args or depth > 8:
        return None
    x = forward.body.block.args[0]
    declared = _declared(x, env)
    if declared is not None:
        return declared
    first = _first_apply(x)
    layer = layers_of(model).get(first.layer.root_reference.data) if first is not None else None
    if layer is None:
        return None
    nested = models.get(layer.kind.data)
    if nested is not None:
        overrides = nested_overrides(layer, nested, env)
        nested_env = model_env(nested, overrides if isinstance(overrides, dict) else {})
        return _sample_shape(nested, nested_env, models, depth + 1)
    return _layer_input(layer, env)


def _declared(x: SSAValue, env: Env) -> tuple[int, ...] | None:
    """The annotated sample shape: a config's dim (`Tensor[B, d]`) is its value, any other
    named dim (`T`) a sequence of SEQUENCE_LENGTH."""
    if not isinstance(x.type, TensorType) or x.type.dims is None or len(x.type.dims) < 2:
        return None
    return tuple(_dim_size(d, env) for d in x.type.dims[1:])


def _dim_size(dim: object, env: Env) -> int:
    if isinstance(dim, int):
        return dim
    value = env.get(dim) if isinstance(dim, str) else None
    usable = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= INT64_MAX
    return value if usable else SEQUENCE_LENGTH  # type: ignore[return-value]


def _first_apply(x: SSAValue) -> nml.ApplyOp | None:
    return next((use.operation for use in x.uses if isinstance(use.operation, nml.ApplyOp)), None)


def _layer_input(layer: nml.LayerOp, env: Env) -> tuple[int, ...] | None:
    bound = bind_layer(layer, env)
    if bound is None:
        return None
    kind = layer.kind.data
    if kind == "Linear":
        return (bound.get_int("in_features"),)
    if kind == "LayerNorm":
        shape = bound["normalized_shape"]
        size = shape if isinstance(shape, int) else None
        return (SEQUENCE_LENGTH, size) if size is not None else None
    if kind in IMAGE_SIDE:
        return (bound.get_int("in_channels"), *IMAGE_SIDE[kind])
    return None


def _int(value: int) -> IntegerAttr:
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
        data.attributes["per_token_length"] = _int(shapes.per_token_length)


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
