"""One synthetic sample's shape: what `load_dataset()` must make for a model to take it.

The forward's annotated input (`x: Tensor[B, 784]`), else what the first layer applied
to the input expects, as its catalogue record's `sample_shape` says (`Linear(784, ...)`
takes [784], `LayerNorm(512)` [T, 512], `Conv2d(3, ...)` [3, 32, 32]), looking into a
nested model when that comes first. A free length `T` is `SEQUENCE_LENGTH`.
`shape-inference` calls it and writes the sample on the loop (`synthetic_sample`),
which infer-synthetic-data reads.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from tensorloom.catalogue.args import INT64_MAX
from tensorloom.catalogue.layers.base import SAMPLE_LENGTH
from tensorloom.dialects import nml
from tensorloom.dialects.nml import TensorType
from tensorloom.passes.support.model_env import (
    Env,
    bind_layer,
    forward_of,
    layers_of,
    model_env,
    nested_overrides,
)

SEQUENCE_LENGTH = SAMPLE_LENGTH


def synthetic_sample(
    model: nml.ModelOp, env: Env, models: dict[str, nml.ModelOp]
) -> tuple[int, ...] | None:
    """The shape of one sample the model takes, if its input says it."""
    return _sample_shape(model, env, models, depth=0)


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
    return None if bound is None else bound.spec.sample_shape(bound)
