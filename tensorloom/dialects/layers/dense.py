"""Dense and shape-keeping layers: Linear, Embedding, Dropout, Flatten, Identity, activations."""

from __future__ import annotations

from typing import ClassVar

from tensorloom.dialects.layers.base import (
    BOOL,
    FLOAT,
    INT,
    ArgError,
    BoundLayer,
    LayerSpec,
    Param,
    SavedTensors,
    choice,
    numel,
    optional,
    positive,
    probability,
    rank_error,
    replace_dim,
    req,
    unify_feature,
)
from tensorloom.dialects.shapes import Shape, ShapeMismatch, Unifier, flatten_shape


class LinearSpec(LayerSpec):
    """`Linear(in, out)`: [..., in] -> [..., out]; saves its input."""

    name = "Linear"
    autocast = "low"
    torch_class = "nn.Linear"
    params = (req("in_features", INT), req("out_features", INT), Param("bias", BOOL, True))

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        return positive(bound, "in_features", "out_features")

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if not shape:
            return rank_error("an at least 1-D", shape)
        dim = unify_feature(shape, -1, bound.get_int("in_features"), "input features", unifier)
        if isinstance(dim, ShapeMismatch):
            return dim
        return replace_dim(shape, -1, bound.get_int("out_features"))

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        i, o = bound.get_int("in_features"), bound.get_int("out_features")
        return {"weight": (o, i)} | ({"bias": (o,)} if bound.get_bool("bias") else {})

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        macs = numel(out_shape) * bound.get_int("in_features")
        return 2 * macs + (numel(out_shape) if bound.get_bool("bias") else 0)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        return SavedTensors(input_bytes=numel(in_shape) * dtype_bytes)


class EmbeddingSpec(LayerSpec):
    """`Embedding(n, d)`: integer indices [...] -> [..., d]; saves the int64 indices."""

    name = "Embedding"
    torch_class = "nn.Embedding"
    autocast = "input"
    params = (
        req("num_embeddings", INT),
        req("embedding_dim", INT),
        Param("padding_idx", optional(INT)),
        Param("max_norm", optional(FLOAT)),
        Param("norm_type", FLOAT, 2.0),
        Param("scale_grad_by_freq", BOOL, False),
        Param("sparse", BOOL, False),
    )

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = positive(bound, "num_embeddings", "embedding_dim")
        idx, n = bound["padding_idx"], bound.get_int("num_embeddings")
        if isinstance(idx, int) and not -n <= idx < n:
            errors.append(
                bound.error(
                    "padding_idx", f"`padding_idx` must be within `num_embeddings` ({n}), got {idx}"
                )
            )
        return errors

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        return None if shape is None else (*shape, bound.get_int("embedding_dim"))

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        return {"weight": (bound.get_int("num_embeddings"), bound.get_int("embedding_dim"))}

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        return SavedTensors(input_bytes=numel(in_shape) * 8)


class DropoutSpec(LayerSpec):
    """`Dropout(p)`: keeps the shape; in training saves a 1-byte mask per element."""

    name = "Dropout"
    torch_class = "nn.Dropout"
    params = (Param("p", FLOAT, 0.5), Param("inplace", BOOL, False))

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        return probability(bound, "p")

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return numel(out_shape)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        p = bound.get_float("p")
        return SavedTensors(extra_bytes=numel(out_shape) if 0.0 < p < 1.0 else 0)


class FlattenSpec(LayerSpec):
    """`Flatten(start_dim=1, end_dim=-1)`: a view; saves nothing."""

    name = "Flatten"
    torch_class = "nn.Flatten"
    params = (Param("start_dim", INT, 1), Param("end_dim", INT, -1))

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        return flatten_shape(shape, bound.get_int("start_dim"), bound.get_int("end_dim"))


class IdentitySpec(LayerSpec):
    name = "Identity"
    torch_class = "nn.Identity"


class _Activation(LayerSpec):
    """An elementwise activation: keeps the shape, 1 FLOP per element, and saves
    its output (ReLU, Tanh, Sigmoid, whose gradients need only the result) or its
    input (GELU, SiLU)."""

    saves_output: ClassVar[bool] = True

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return numel(out_shape)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        size = numel(out_shape) * dtype_bytes
        return (
            SavedTensors(output_bytes=size) if self.saves_output else SavedTensors(input_bytes=size)
        )


class ReLUSpec(_Activation):
    name = "ReLU"
    torch_class = "nn.ReLU"
    params = (Param("inplace", BOOL, False),)


class GELUSpec(_Activation):
    name = "GELU"
    torch_class = "nn.GELU"
    params = (Param("approximate", choice("none", "tanh"), "none"),)
    saves_output = False


class SiLUSpec(_Activation):
    name = "SiLU"
    torch_class = "nn.SiLU"
    params = (Param("inplace", BOOL, False),)
    saves_output = False


class TanhSpec(_Activation):
    name = "Tanh"
    torch_class = "nn.Tanh"


class SigmoidSpec(_Activation):
    name = "Sigmoid"
    torch_class = "nn.Sigmoid"


class SoftmaxSpec(_Activation):
    """`Softmax(dim)`: keeps the shape; 5 FLOPs per element (max, subtract, exp,
    sum, divide); saves its output. `dim=None` is PyTorch's legacy choice."""

    name = "Softmax"
    torch_class = "nn.Softmax"
    autocast = "fp32"
    params = (Param("dim", optional(INT)),)

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        dim = bound["dim"]
        if shape is None or not isinstance(dim, int) or -len(shape) <= dim < len(shape):
            return shape
        return rank_error(f"an at least {dim + 1 if dim >= 0 else -dim}-D", shape)

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return 5 * numel(out_shape)


SPECS: tuple[LayerSpec, ...] = (
    LinearSpec(),
    EmbeddingSpec(),
    DropoutSpec(),
    FlattenSpec(),
    IdentitySpec(),
    ReLUSpec(),
    GELUSpec(),
    SiLUSpec(),
    TanhSpec(),
    SigmoidSpec(),
    SoftmaxSpec(),
)
