"""Dense and shape-keeping layers: Linear, Embedding, Dropout, Flatten, Identity, Upsample,
and the activation modules (ReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, LogSoftmax, LeakyReLU,
ELU, CELU, SELU, Mish, Hardswish, Hardsigmoid, ReLU6, Hardtanh, Softplus, Softsign,
Tanhshrink, PReLU)."""

from __future__ import annotations

from typing import ClassVar

from tensorloom.catalogue.layers.base import (
    BIAS_INIT_PARAM,
    BOOL,
    FLOAT,
    INT,
    WEIGHT_AND_BIAS_INIT,
    WEIGHT_INIT,
    ArgError,
    BoundLayer,
    Kind,
    LayerSpec,
    Param,
    SavedTensors,
    Value,
    choice,
    numel,
    optional,
    positive,
    probability,
    rank_error,
    replace_dim,
    req,
    unify_feature,
    weight_init_params,
)
from tensorloom.catalogue.shapes import Dim, Shape, ShapeMismatch, Unifier, flatten_shape, mismatch


class LinearSpec(LayerSpec):
    """`Linear(in, out)`: [..., in] -> [..., out]; saves its input.

    `Linear(d, d, init="normal", std=0.02, bias_init="zeros")` initialises the weight
    with `nn.init.normal_` and the bias with `nn.init.zeros_` after construction.
    """

    name = "Linear"
    autocast = "low"
    suffix_polymorphic = True
    input_size_first = True
    torch_class = "nn.Linear"
    params = (
        req("in_features", INT),
        req("out_features", INT),
        Param("bias", BOOL, True),
        *weight_init_params(),
        BIAS_INIT_PARAM,
    )
    init_groups = WEIGHT_AND_BIAS_INIT

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

    def unknown_rank_suffix(self, bound: BoundLayer) -> tuple[int, ...]:
        return (bound.get_int("out_features"),)

    def sample_shape(self, bound: BoundLayer) -> tuple[int, ...] | None:
        return (bound.get_int("in_features"),)

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
    """`Embedding(n, d)`: integer indices [...] -> [..., d]; saves the int64 indices.

    `Embedding(n, d, init="normal", std=0.02)` replaces PyTorch's N(0, 1) weights
    (`nn.init.normal_` after construction; it also overwrites a `padding_idx` row)."""

    name = "Embedding"
    torch_class = "nn.Embedding"
    takes_indices = True
    suffix_polymorphic = True
    autocast = "input"
    params = (
        req("num_embeddings", INT),
        req("embedding_dim", INT),
        Param("padding_idx", optional(INT)),
        Param("max_norm", optional(FLOAT)),
        Param("norm_type", FLOAT, 2.0),
        Param("scale_grad_by_freq", BOOL, False),
        Param("sparse", BOOL, False),
        *weight_init_params(),
    )
    init_groups = (WEIGHT_INIT,)

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

    def unknown_rank_suffix(self, bound: BoundLayer) -> tuple[int, ...]:
        return (bound.get_int("embedding_dim"),)

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

    suffix_polymorphic = True

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
    suffix_polymorphic = True
    name = "Identity"
    torch_class = "nn.Identity"


_UPSAMPLE_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "nearest-exact")
_MODE_RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def _sizes_kind(v: Value) -> bool:
    return (
        v is None
        or _positive_number(v)
        or (isinstance(v, list | tuple) and len(v) > 0 and all(_positive_number(x) for x in v))
    )


def _positive_number(v: Value) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class UpsampleSpec(LayerSpec):
    """`Upsample(size=none, scale_factor=none, mode="nearest")`: [N, C, *spatial] with the
    spatial dims set to `size` or scaled by `scale_factor` (floored); saves nothing."""

    name = "Upsample"
    torch_class = "nn.Upsample"
    params = (
        Param("size", Kind("an integer, a list of integers or `none`", _sizes_kind)),
        Param("scale_factor", Kind("a number, a list of numbers or `none`", _sizes_kind)),
        Param("mode", choice(*_UPSAMPLE_MODES), "nearest"),
        Param("align_corners", optional(BOOL)),
        Param("recompute_scale_factor", optional(BOOL)),
    )

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        size, scale = bound["size"], bound["scale_factor"]
        if (size is None) == (scale is None):
            return [ArgError("`Upsample` takes exactly one of `size` and `scale_factor`")]
        if bound["align_corners"] is not None and bound["mode"] not in _MODE_RANK:
            return [
                bound.error(
                    "align_corners",
                    "`align_corners` applies only to linear, bilinear, bicubic and trilinear modes",
                )
            ]
        return []

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        want = _MODE_RANK.get(str(bound["mode"]))
        if len(shape) < 3 or (want is not None and len(shape) != want):
            return rank_error(f"a {want or '3-D to 5'}-D [N, C, *spatial]", shape)
        spatial = len(shape) - 2
        out = _upsampled(bound, [unifier.resolve(d) for d in shape[2:]], spatial)
        if isinstance(out, ShapeMismatch):
            return out
        return (*shape[:2], *out)

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return numel(out_shape)


def _upsampled(bound: BoundLayer, sizes: list[Dim], spatial: int) -> list[Dim] | ShapeMismatch:
    size, scale = bound["size"], bound["scale_factor"]
    given = size if size is not None else scale
    factors = list(given) if isinstance(given, list | tuple) else [given] * spatial
    if len(factors) != spatial:
        name = "size" if size is not None else "scale_factor"
        return mismatch(
            f"got {len(factors)} `{name}` values for {spatial} spatial dims",
            expected=spatial,
            got=len(factors),
        )
    if size is not None:
        return [int(f) for f in factors]  # type: ignore[arg-type]
    return [
        int(d * f) if isinstance(d, int) else (d if f == 1 else None)  # type: ignore[operator]
        for d, f in zip(sizes, factors, strict=True)
    ]


class _Activation(LayerSpec):
    """An elementwise activation: keeps the shape, 1 FLOP per element, and saves
    its output (ReLU, Tanh, Sigmoid, whose gradients need only the result) or its
    input (GELU, SiLU)."""

    suffix_polymorphic = True

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


class LeakyReLUSpec(_Activation):
    name = "LeakyReLU"
    torch_class = "nn.LeakyReLU"
    params = (Param("negative_slope", FLOAT, 0.01), Param("inplace", BOOL, False))
    saves_output = False


class ELUSpec(_Activation):
    name = "ELU"
    torch_class = "nn.ELU"
    params = (Param("alpha", FLOAT, 1.0), Param("inplace", BOOL, False))
    saves_output = False


class CELUSpec(_Activation):
    name = "CELU"
    torch_class = "nn.CELU"
    params = (Param("alpha", FLOAT, 1.0), Param("inplace", BOOL, False))
    saves_output = False

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        if bound.get_float("alpha") != 0.0:
            return []
        return [bound.error("alpha", "`alpha` of `CELU` must not be zero")]


class SELUSpec(_Activation):
    name = "SELU"
    torch_class = "nn.SELU"
    params = (Param("inplace", BOOL, False),)
    saves_output = False


class _PlainActivation(_Activation):
    """An activation whose only option is `inplace`, saving its input."""

    params = (Param("inplace", BOOL, False),)
    saves_output = False


class MishSpec(_PlainActivation):
    name = "Mish"
    torch_class = "nn.Mish"


class HardswishSpec(_PlainActivation):
    name = "Hardswish"
    torch_class = "nn.Hardswish"


class HardsigmoidSpec(_PlainActivation):
    name = "Hardsigmoid"
    torch_class = "nn.Hardsigmoid"


class ReLU6Spec(_PlainActivation):
    name = "ReLU6"
    torch_class = "nn.ReLU6"


class HardtanhSpec(_Activation):
    name = "Hardtanh"
    torch_class = "nn.Hardtanh"
    params = (
        Param("min_val", FLOAT, -1.0),
        Param("max_val", FLOAT, 1.0),
        Param("inplace", BOOL, False),
    )
    saves_output = False

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        if bound.get_float("max_val") > bound.get_float("min_val"):
            return []
        return [bound.error("max_val", "`max_val` must be greater than `min_val`")]


class SoftplusSpec(_Activation):
    name = "Softplus"
    torch_class = "nn.Softplus"
    params = (Param("beta", FLOAT, 1.0), Param("threshold", FLOAT, 20.0))
    saves_output = False


class SoftsignSpec(_Activation):
    name = "Softsign"
    torch_class = "nn.Softsign"
    saves_output = False


class TanhshrinkSpec(_Activation):
    name = "Tanhshrink"
    torch_class = "nn.Tanhshrink"
    saves_output = False


class PReLUSpec(_Activation):
    """`PReLU(num_parameters=1)`: a learned slope, one per channel (dim 1) or shared."""

    name = "PReLU"
    torch_class = "nn.PReLU"
    params = (Param("num_parameters", INT, 1), Param("init", FLOAT, 0.25))
    saves_output = False

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        return positive(bound, "num_parameters")

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        n = bound.get_int("num_parameters")
        if shape is None or n == 1:
            return shape
        if len(shape) < 2:
            return rank_error(f"an at least 2-D [N, {n}, *]", shape)
        c = unify_feature(shape, 1, n, "channels", unifier)
        return c if isinstance(c, ShapeMismatch) else shape

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        return {"weight": (bound.get_int("num_parameters"),)}


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


class LogSoftmaxSpec(SoftmaxSpec):
    name = "LogSoftmax"
    torch_class = "nn.LogSoftmax"


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
    LogSoftmaxSpec(),
    LeakyReLUSpec(),
    ELUSpec(),
    CELUSpec(),
    SELUSpec(),
    MishSpec(),
    HardswishSpec(),
    HardsigmoidSpec(),
    ReLU6Spec(),
    HardtanhSpec(),
    SoftplusSpec(),
    SoftsignSpec(),
    TanhshrinkSpec(),
    PReLUSpec(),
    UpsampleSpec(),
)
