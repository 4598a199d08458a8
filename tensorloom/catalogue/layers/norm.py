"""Normalisation layers: BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm, GroupNorm.

Each saves its input plus fp32 statistics (mean and inverse std) for backward.
FLOPs: 4 per element (mean, centre, variance, scale), 2 more with affine parameters.
"""

from __future__ import annotations

from typing import ClassVar

from tensorloom.catalogue.layers.base import (
    BIAS_INIT_PARAM,
    BIAS_INITS,
    BOOL,
    FLOAT,
    INT,
    INT_OR_INT_LIST,
    SAMPLE_LENGTH,
    ArgError,
    BoundLayer,
    InitGroup,
    LayerSpec,
    Param,
    SavedTensors,
    numel,
    optional,
    positive,
    rank_error,
    req,
    unify_feature,
    weight_init_params,
)
from tensorloom.catalogue.shapes import Dim, Shape, ShapeMismatch, Unifier, format_shape, mismatch

_STAT_BYTES = 4  # mean and rstd are fp32 whatever the input dtype


def _affine_shapes(shape: tuple[int, ...], affine: bool, bias: bool) -> dict[str, tuple[int, ...]]:
    """A norm's `weight` and `bias`, each of the normalised shape, when it has them."""
    if not affine:
        return {}
    return {"weight": shape} | ({"bias": shape} if bias else {})


def _affine_inits(affine: str) -> tuple[InitGroup, ...]:
    """`init="zeros"` for the scale (a residual branch's last BatchNorm), `bias_init=` for
    the shift: both exist only with `affine` (`elementwise_affine`)."""
    return (
        InitGroup("init", ("weight",), std=("std",), mean="mean", needs=affine),
        InitGroup("bias_init", ("bias",), BIAS_INITS, needs=affine),
    )


INIT_PARAMS = (*weight_init_params(), BIAS_INIT_PARAM)


def _norm_flops(elements: int, affine: bool) -> int:
    return elements * (6 if affine else 4)


class _BatchNorm(LayerSpec):
    """`BatchNormNd(num_features)`: channels at dim 1; saves input + 2 x [C] stats."""

    ranks: ClassVar[tuple[int, ...]] = (4,)
    layout: ClassVar[str] = "[N, C, H, W]"
    is_norm = True
    input_size_first = True
    params = (
        req("num_features", INT),
        Param("eps", FLOAT, 1e-5),
        Param("momentum", optional(FLOAT), 0.1),
        Param("affine", BOOL, True),
        Param("track_running_stats", BOOL, True),
        Param("bias", BOOL, True, kw_only=True),
        *INIT_PARAMS,
    )
    init_groups = _affine_inits("affine")

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        return positive(bound, "num_features")

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if len(shape) not in self.ranks:
            return rank_error(f"a {self.layout}", shape)
        c = unify_feature(shape, 1, bound.get_int("num_features"), "channels", unifier)
        return c if isinstance(c, ShapeMismatch) else shape

    def _affine(self, bound: BoundLayer) -> bool:
        return bound.get_bool("affine")

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        return _affine_shapes(
            (bound.get_int("num_features"),), self._affine(bound), bound.get_bool("bias")
        )

    def buffer_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        if not bound.get_bool("track_running_stats"):
            return {}
        c = bound.get_int("num_features")
        return {"running_mean": (c,), "running_var": (c,), "num_batches_tracked": ()}

    def integer_buffers(self, bound: BoundLayer) -> frozenset[str]:
        return frozenset({"num_batches_tracked"})

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return _norm_flops(numel(in_shape), self._affine(bound))

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        stats = 2 * bound.get_int("num_features") * _STAT_BYTES
        return SavedTensors(input_bytes=numel(in_shape) * dtype_bytes, extra_bytes=stats)


class BatchNorm1dSpec(_BatchNorm):
    name = "BatchNorm1d"
    torch_class = "nn.BatchNorm1d"
    ranks = (2, 3)
    layout = "2-D [N, C] or 3-D [N, C, L]"

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        # Channels-last [B, T, C] (a sequence of features) is the common mistake: PyTorch
        # normalises dim 1, so unifying a free T with C would hide it until the first step.
        features = bound.get_int("num_features")
        if shape is not None and len(shape) == 3:
            middle, last = unifier.resolve(shape[1]), unifier.resolve(shape[2])
            if isinstance(middle, str) and last == features:
                return ShapeMismatch(
                    f"normalises dim 1 of a 3-D [N, C, L] input, but {format_shape(shape)} "
                    f"has its {features} features last",
                    help=f"use `LayerNorm({features})` on [B, T, C], or `x.transpose(1, 2)` before "
                    "and after the batch norm",
                )
        return super().shape_rule(bound, shape, unifier)


class BatchNorm2dSpec(_BatchNorm):
    name = "BatchNorm2d"
    torch_class = "nn.BatchNorm2d"
    ranks = (4,)
    layout = "4-D [N, C, H, W]"


class LayerNormSpec(LayerSpec):
    """`LayerNorm(normalized_shape)`: the trailing dims must equal `normalized_shape`."""

    suffix_polymorphic = True
    name = "LayerNorm"
    torch_class = "nn.LayerNorm"
    autocast = "fp32"
    is_norm = True
    input_size_first = True
    params = (
        req("normalized_shape", INT_OR_INT_LIST),
        Param("eps", FLOAT, 1e-5),
        Param("elementwise_affine", BOOL, True),
        Param("bias", BOOL, True),
        *INIT_PARAMS,
    )
    init_groups = _affine_inits("elementwise_affine")

    def unknown_rank_suffix(self, bound: BoundLayer) -> tuple[int, ...]:
        return self.normalized(bound)

    def sample_shape(self, bound: BoundLayer) -> tuple[int, ...] | None:
        """A sequence of SAMPLE_LENGTH vectors (`LayerNorm(512)`: (16, 512))."""
        size = bound["normalized_shape"]
        return (SAMPLE_LENGTH, size) if isinstance(size, int) else None

    def normalized(self, bound: BoundLayer) -> tuple[int, ...]:
        v = bound["normalized_shape"]
        if isinstance(v, int):
            return (v,)
        assert isinstance(v, list | tuple)
        return tuple(x for x in v if isinstance(x, int))

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        if all(n > 0 for n in self.normalized(bound)):
            return []
        return [bound.error("normalized_shape", "`normalized_shape` must be positive")]

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        want = self.normalized(bound)
        if len(shape) < len(want):
            return rank_error(f"an at least {len(want)}-D", shape)
        trailing = shape[len(shape) - len(want) :]
        before = unifier.resolve_shape(trailing)
        for i, (w, d) in enumerate(zip(want, trailing, strict=True)):
            if isinstance(unifier.unify(w, d), ShapeMismatch):
                return self._trailing_error(want, before, shape, i - len(want), unifier)
        return shape

    def _trailing_error(
        self, want: tuple[int, ...], got: Shape, shape: tuple[Dim, ...], dim: int, unifier: Unifier
    ) -> ShapeMismatch:
        whole = unifier.format_shape(shape)
        if len(want) == 1:
            expectation = f"the last dim to be {want[0]}, got {format_shape(got)[1:-1]}"
        else:
            n, want_text = len(want), format_shape(want)
            expectation = f"the last {n} dims to be {want_text}, got {format_shape(got)}"
        message = f"expects {expectation} (input is {whole})"
        return mismatch(
            message,
            expected=want,
            got=got,
            dim=dim,
            help=self._channels_first_help(want, shape, unifier),
        )

    def _channels_first_help(
        self, want: tuple[int, ...], shape: tuple[Dim, ...], unifier: Unifier
    ) -> str | None:
        if len(want) != 1 or len(shape) != 4 or unifier.resolve(shape[1]) != want[0]:
            return None
        return (
            f"the input is channels-first with {want[0]} channels at dim 1; move them last before "
            "normalising, e.g. `x.flatten(2).transpose(1, 2)` gives [B, H*W, C]"
        )

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        return _affine_shapes(
            self.normalized(bound), bound.get_bool("elementwise_affine"), bound.get_bool("bias")
        )

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return _norm_flops(numel(in_shape), bound.get_bool("elementwise_affine"))

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        rows = numel(in_shape) // numel(self.normalized(bound))
        return SavedTensors(
            input_bytes=numel(in_shape) * dtype_bytes, extra_bytes=2 * rows * _STAT_BYTES
        )


class RMSNormSpec(LayerNormSpec):
    """`RMSNorm(normalized_shape, eps=none)`: like LayerNorm without centring or bias;
    saves its input and one fp32 statistic per row."""

    name = "RMSNorm"
    torch_class = "nn.RMSNorm"
    params = (
        req("normalized_shape", INT_OR_INT_LIST),
        Param("eps", optional(FLOAT)),
        Param("elementwise_affine", BOOL, True),
        *weight_init_params(),
    )
    init_groups = _affine_inits("elementwise_affine")[:1]

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        return _affine_shapes(self.normalized(bound), bound.get_bool("elementwise_affine"), False)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        rows = numel(in_shape) // numel(self.normalized(bound))
        return SavedTensors(
            input_bytes=numel(in_shape) * dtype_bytes, extra_bytes=rows * _STAT_BYTES
        )


class GroupNormSpec(LayerSpec):
    """`GroupNorm(num_groups, num_channels)`: [N, C, *] with C at dim 1."""

    name = "GroupNorm"
    is_norm = True
    torch_class = "nn.GroupNorm"
    autocast = "fp32"
    params = (
        req("num_groups", INT),
        req("num_channels", INT),
        Param("eps", FLOAT, 1e-5),
        Param("affine", BOOL, True),
        Param("bias", BOOL, True, kw_only=True),
        *INIT_PARAMS,
    )
    init_groups = _affine_inits("affine")

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = positive(bound, "num_groups", "num_channels")
        g, c = bound.get_int("num_groups"), bound.get_int("num_channels")
        if not errors and c % g:
            errors.append(
                bound.error(
                    "num_channels", f"`num_channels` ({c}) must be divisible by `num_groups` ({g})"
                )
            )
        return errors

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if len(shape) < 2:
            return rank_error("an at least 2-D [N, C, *]", shape)
        c = unify_feature(shape, 1, bound.get_int("num_channels"), "channels", unifier)
        return c if isinstance(c, ShapeMismatch) else shape

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        return _affine_shapes(
            (bound.get_int("num_channels"),), bound.get_bool("affine"), bound.get_bool("bias")
        )

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return _norm_flops(numel(in_shape), bound.get_bool("affine"))

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        stats = 2 * in_shape[0] * bound.get_int("num_groups") * _STAT_BYTES
        return SavedTensors(input_bytes=numel(in_shape) * dtype_bytes, extra_bytes=stats)


SPECS: tuple[LayerSpec, ...] = (
    BatchNorm1dSpec(),
    BatchNorm2dSpec(),
    LayerNormSpec(),
    RMSNormSpec(),
    GroupNormSpec(),
)
