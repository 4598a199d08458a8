"""The layer catalogue: every layer a model may declare, with its static model.

    layer fc1 = Linear(784, 256)      ->  LAYERS["Linear"]

For each layer (`LayerSpec`, see `base.py`): the constructor's parameters with
PyTorch's names, order and defaults; `bind` and `validate` (argument errors as
values); `infer_shape` over symbolic shapes; an exact `param_count`; `flops`;
`saved_tensors` / `activation_bytes`; and `torch_ctor` and `call_kind` for the
backend. Deviations from PyTorch: `LSTM`, `GRU` and `MultiHeadAttention`
default to (and are always emitted with) `batch_first=True`;
`MultiHeadAttention` is `nn.MultiheadAttention` used as self-attention.

FLOPs convention: 2 per multiply-add of a matmul or convolution, 1 per bias
add and per element of an activation or dropout, 5 per element of softmax,
4 per element of a normalisation (6 with affine parameters), the window size
per output element of a pool; recurrent layers count only their matmuls and
biases (2 x parameters per row and time step). Shapes must be concrete and
include the batch.

Activation model (`saved_tensors`): the tensors autograd keeps alive after
the forward pass of one training step, on CUDA, in bytes, given the concrete
input and output shapes and the element size the layer computes in (see
`LayerSpec.autocast`: under AMP, norms and softmax compute in fp32). Inputs
and outputs are reported separately from tensors made only for backward, so
that a whole-model estimate counts a tensor once when layer i saves its output
and layer i+1 its input. Parameters are never counted here.
"""

from __future__ import annotations

from tensorloom.catalogue.layers import container, conv, dense, norm, parameter, sequence
from tensorloom.catalogue.layers.base import (
    ArgError,
    BoundLayer,
    CallKind,
    LayerSpec,
    Param,
    SavedTensors,
    TorchCtor,
    Value,
    py_literal,
)
from tensorloom.diagnostics.core import did_you_mean

__all__ = [
    "LAYERS",
    "ArgError",
    "BoundLayer",
    "CallKind",
    "LayerSpec",
    "Param",
    "SavedTensors",
    "TorchCtor",
    "Value",
    "lookup",
    "py_literal",
    "suggest",
]

LAYERS: dict[str, LayerSpec] = {
    spec.name: spec
    for spec in (*dense.SPECS, *conv.SPECS, *norm.SPECS, *sequence.SPECS, *parameter.SPECS)
}


LAYERS[container.SEQUENTIAL] = container.SequentialSpec(LAYERS)


def lookup(name: str) -> LayerSpec | None:
    return LAYERS.get(name)


def suggest(name: str) -> str | None:
    """The catalogue name a misspelt layer most likely meant (`linear` -> `Linear`)."""
    folded = {n.lower(): n for n in LAYERS}
    if name.lower() in folded:
        return folded[name.lower()]
    return did_you_mean(name, LAYERS)
