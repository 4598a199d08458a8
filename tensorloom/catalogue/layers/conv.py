"""Convolutions and pools: Conv1d, Conv2d, ConvTranspose1d/2d, MaxPool2d, AvgPool2d,
AdaptiveAvgPool2d.

Inputs are channels-first, batched `[N, C, *spatial]` or unbatched `[C, *spatial]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from tensorloom.catalogue.layers.base import (
    BIAS_INIT_PARAM,
    BOOL,
    INT,
    WEIGHT_AND_BIAS_INIT,
    ArgError,
    BoundLayer,
    Kind,
    LayerSpec,
    Param,
    SavedTensors,
    choice,
    int_or_ints,
    non_negative_ints,
    numel,
    optional,
    padding_kind,
    positive,
    positive_ints,
    rank_error,
    req,
    unify_feature,
    weight_init_params,
)
from tensorloom.catalogue.shapes import (
    Dim,
    Shape,
    ShapeMismatch,
    Unifier,
    conv_output_size,
    conv_transpose_output_size,
    format_shape,
    mismatch,
    pool_output_size,
)


def _split(shape: tuple[Dim, ...], spatial: int) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
    """`[N, C, H, W]` -> (`[N, C]`, `[H, W]`)."""
    return shape[:-spatial], shape[-spatial:]


def _check_rank(shape: tuple[Dim, ...], spatial: int) -> ShapeMismatch | None:
    if len(shape) in (spatial + 1, spatial + 2):
        return None
    names = "N, C, L" if spatial == 1 else "N, C, H, W"
    return rank_error(f"a {spatial + 2}-D [{names}] (or {spatial + 1}-D unbatched)", shape)


def _too_small(shape: tuple[Dim, ...], out: Sequence[Dim]) -> ShapeMismatch | None:
    if all(not isinstance(d, int) or d > 0 for d in out):
        return None
    return mismatch(
        f"gives an empty output for input {format_shape(shape)}: the spatial size is "
        "smaller than the kernel",
        expected="a larger spatial size",
        got=format_shape(shape),
    )


def _conv_params(n: int) -> tuple[Param, ...]:
    return (
        req("in_channels", INT),
        req("out_channels", INT),
        req("kernel_size", int_or_ints(n)),
        Param("stride", int_or_ints(n), 1),
        Param("padding", padding_kind(n), 0),
        Param("dilation", int_or_ints(n), 1),
        Param("groups", INT, 1),
        Param("bias", BOOL, True),
        Param("padding_mode", choice("zeros", "reflect", "replicate", "circular"), "zeros"),
        *weight_init_params(),
        BIAS_INIT_PARAM,
    )


class _ConvNd(LayerSpec):
    """`ConvNd(in, out, kernel_size, ...)`; saves its input for the weight gradient."""

    spatial: ClassVar[int] = 2
    autocast = "low"
    input_size_first = True
    # A synthetic image's side, by the number of spatial dims (`sample_shape`).
    SAMPLE_SIDES: ClassVar[dict[int, tuple[int, ...]]] = {1: (64,), 2: (32, 32)}
    init_groups = WEIGHT_AND_BIAS_INIT
    unmodelled_scratch = (
        "cuDNN's convolution workspace is not in the budget: measured on an H200 it is "
        "0 to 22x a convolution's input, depending on the algorithm cuDNN picks (docs/info.md)"
    )

    def sample_shape(self, bound: BoundLayer) -> tuple[int, ...] | None:
        """One image of `in_channels` channels (`Conv2d(3, ...)`: (3, 32, 32))."""
        return (bound.get_int("in_channels"), *self.SAMPLE_SIDES[self.spatial])

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        n = self.spatial
        errors = positive(bound, "in_channels", "out_channels", "groups")
        for name in ("kernel_size", "stride", "dilation"):
            errors += positive_ints(bound, name, n)
        if not isinstance(bound["padding"], str):
            errors += non_negative_ints(bound, "padding", n)
        return errors or self._check_groups(bound) + self._check_same(bound)

    def _check_groups(self, bound: BoundLayer) -> list[ArgError]:
        g = bound.get_int("groups")
        return [
            bound.error(
                "groups", f"`{name}` ({bound.get_int(name)}) must be divisible by `groups` ({g})"
            )
            for name in ("in_channels", "out_channels")
            if bound.get_int(name) % g
        ]

    def _check_same(self, bound: BoundLayer) -> list[ArgError]:
        if bound["padding"] != "same" or all(
            s == 1 for s in bound.get_ints("stride", self.spatial)
        ):
            return []
        return [
            bound.error(
                "padding",
                '`padding="same"` is not supported for strided convolutions',
                help="compute the padding explicitly, e.g. `padding=kernel_size // 2`",
            )
        ]

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if (bad := _check_rank(shape, self.spatial)) is not None:
            return bad
        lead, sizes = _split(shape, self.spatial)
        channel = unify_feature(
            shape, -self.spatial - 1, bound.get_int("in_channels"), "input channels", unifier
        )
        if isinstance(channel, ShapeMismatch):
            return channel
        out = self.spatial_out(bound, [unifier.resolve(s) for s in sizes])
        return _too_small(shape, out) or (*lead[:-1], bound.get_int("out_channels"), *out)

    def spatial_out(self, bound: BoundLayer, sizes: list[Dim]) -> list[Dim]:
        n = self.spatial
        k, s, d = (bound.get_ints(a, n) for a in ("kernel_size", "stride", "dilation"))
        pad = bound["padding"]
        pads: Sequence[int | str] = (
            [pad] * n if isinstance(pad, str) else bound.get_ints("padding", n)
        )
        return [conv_output_size(sizes[i], k[i], s[i], pads[i], d[i]) for i in range(n)]

    def _weight_per_out(self, bound: BoundLayer) -> int:
        k = numel(bound.get_ints("kernel_size", self.spatial))
        return bound.get_int("in_channels") // bound.get_int("groups") * k

    def weight_shape(self, bound: BoundLayer) -> tuple[int, ...]:
        """`[out, in / groups, *kernel]`."""
        g = bound.get_int("groups")
        k = bound.get_ints("kernel_size", self.spatial)
        return (bound.get_int("out_channels"), bound.get_int("in_channels") // g, *k)

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        bias = {"bias": (bound.get_int("out_channels"),)} if bound.get_bool("bias") else {}
        return {"weight": self.weight_shape(bound)} | bias

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        macs = numel(out_shape) * self._weight_per_out(bound)
        return 2 * macs + (numel(out_shape) if bound.get_bool("bias") else 0)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        return SavedTensors(input_bytes=numel(in_shape) * dtype_bytes)


class Conv1dSpec(_ConvNd):
    name = "Conv1d"
    torch_class = "nn.Conv1d"
    spatial = 1
    params = _conv_params(1)


class Conv2dSpec(_ConvNd):
    name = "Conv2d"
    torch_class = "nn.Conv2d"
    spatial = 2
    params = _conv_params(2)


def _conv_transpose_params(n: int) -> tuple[Param, ...]:
    return (
        req("in_channels", INT),
        req("out_channels", INT),
        req("kernel_size", int_or_ints(n)),
        Param("stride", int_or_ints(n), 1),
        Param("padding", int_or_ints(n), 0),
        Param("output_padding", int_or_ints(n), 0),
        Param("groups", INT, 1),
        Param("bias", BOOL, True),
        Param("dilation", int_or_ints(n), 1),
        Param("padding_mode", choice("zeros", "reflect", "replicate", "circular"), "zeros"),
        *weight_init_params(),
        BIAS_INIT_PARAM,
    )


class _ConvTransposeNd(_ConvNd):
    """`ConvTransposeNd`: weight [in, out/groups, *kernel]; only zero padding mode."""

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        n = self.spatial
        errors = super().validate(bound) + non_negative_ints(bound, "output_padding", n)
        if bound["padding_mode"] != "zeros":
            errors.append(
                bound.error("padding_mode", f'`{self.name}` supports only `padding_mode="zeros"`')
            )
        return errors or self._check_output_padding(bound)

    def _check_output_padding(self, bound: BoundLayer) -> list[ArgError]:
        n = self.spatial
        triples = zip(
            *(bound.get_ints(a, n) for a in ("output_padding", "stride", "dilation")), strict=True
        )
        if all(op < max(s, d) for op, s, d in triples):
            return []
        return [
            bound.error(
                "output_padding", "`output_padding` must be smaller than `stride` or `dilation`"
            )
        ]

    def spatial_out(self, bound: BoundLayer, sizes: list[Dim]) -> list[Dim]:
        n = self.spatial
        k, s, p, op, d = (
            bound.get_ints(a, n)
            for a in ("kernel_size", "stride", "padding", "output_padding", "dilation")
        )
        return [
            conv_transpose_output_size(sizes[i], k[i], s[i], p[i], op[i], d[i]) for i in range(n)
        ]

    def weight_shape(self, bound: BoundLayer) -> tuple[int, ...]:
        """`[in, out / groups, *kernel]`: a transposed convolution's weight is the
        forward convolution's, read the other way."""
        g = bound.get_int("groups")
        k = bound.get_ints("kernel_size", self.spatial)
        return (bound.get_int("in_channels"), bound.get_int("out_channels") // g, *k)

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        per_in = (
            bound.get_int("out_channels")
            // bound.get_int("groups")
            * numel(bound.get_ints("kernel_size", self.spatial))
        )
        macs = numel(in_shape) * per_in
        return 2 * macs + (numel(out_shape) if bound.get_bool("bias") else 0)


class ConvTranspose1dSpec(_ConvTransposeNd):
    name = "ConvTranspose1d"
    torch_class = "nn.ConvTranspose1d"
    spatial = 1
    params = _conv_transpose_params(1)


class ConvTranspose2dSpec(_ConvTransposeNd):
    name = "ConvTranspose2d"
    torch_class = "nn.ConvTranspose2d"
    spatial = 2
    params = _conv_transpose_params(2)


class _Pool2d(LayerSpec):
    """Shared by MaxPool2d and AvgPool2d: [N, C, H, W] or [C, H, W]."""

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = positive_ints(bound, "kernel_size", 2) + non_negative_ints(bound, "padding", 2)
        if bound["stride"] is not None:
            errors += positive_ints(bound, "stride", 2)
        return errors or self._check_padding(bound)

    def _check_padding(self, bound: BoundLayer) -> list[ArgError]:
        pads, limits = bound.get_ints("padding", 2), self._pad_limits(bound)
        if all(2 * p <= lim for p, lim in zip(pads, limits, strict=True)):
            return []
        return [bound.error("padding", "`padding` must be at most half of the kernel size")]

    def _pad_limits(self, bound: BoundLayer) -> tuple[int, ...]:
        return bound.get_ints("kernel_size", 2)

    def _window(
        self, bound: BoundLayer
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        k = bound.get_ints("kernel_size", 2)
        s = k if bound["stride"] is None else bound.get_ints("stride", 2)
        d = bound.get_ints("dilation", 2) if "dilation" in bound.values else (1, 1)
        return k, s, bound.get_ints("padding", 2), d

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if (bad := _check_rank(shape, 2)) is not None:
            return bad
        lead, sizes = _split(shape, 2)
        k, s, p, d = self._window(bound)
        ceil = bound.get_bool("ceil_mode")
        out = [
            pool_output_size(unifier.resolve(sizes[i]), k[i], s[i], p[i], d[i], ceil)
            for i in range(2)
        ]
        return _too_small(shape, out) or (*lead, *out)

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return numel(out_shape) * numel(bound.get_ints("kernel_size", 2))


class MaxPool2dSpec(_Pool2d):
    """Saves its input and the int64 argmax indices (one per output element)."""

    name = "MaxPool2d"
    torch_class = "nn.MaxPool2d"
    params = (
        req("kernel_size", int_or_ints(2)),
        Param("stride", optional(int_or_ints(2))),
        Param("padding", int_or_ints(2), 0),
        Param("dilation", int_or_ints(2), 1),
        Param("return_indices", BOOL, False),
        Param("ceil_mode", BOOL, False),
    )

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = super().validate(bound) + positive_ints(bound, "dilation", 2)
        if bound.get_bool("return_indices"):
            errors.append(
                bound.error(
                    "return_indices",
                    "`return_indices=true` makes `MaxPool2d` return a tuple, which a layer cannot",
                )
            )
        return errors

    def _pad_limits(self, bound: BoundLayer) -> tuple[int, ...]:
        k, d = bound.get_ints("kernel_size", 2), bound.get_ints("dilation", 2)
        return tuple((ki - 1) * di + 1 for ki, di in zip(k, d, strict=True))

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        return SavedTensors(
            input_bytes=numel(in_shape) * dtype_bytes, extra_bytes=numel(out_shape) * 8
        )


class AvgPool2dSpec(_Pool2d):
    """Saves its input (the backward kernel reads its geometry)."""

    name = "AvgPool2d"
    torch_class = "nn.AvgPool2d"
    params = (
        req("kernel_size", int_or_ints(2)),
        Param("stride", optional(int_or_ints(2))),
        Param("padding", int_or_ints(2), 0),
        Param("ceil_mode", BOOL, False),
        Param("count_include_pad", BOOL, True),
        Param("divisor_override", optional(INT)),
    )

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = super().validate(bound)
        if bound["divisor_override"] == 0:
            errors.append(bound.error("divisor_override", "`divisor_override` must not be zero"))
        return errors

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        return SavedTensors(input_bytes=numel(in_shape) * dtype_bytes)


def _is_output_size(v: object) -> bool:
    def one(x: object) -> bool:
        return x is None or (isinstance(x, int) and not isinstance(x, bool))

    return one(v) or (isinstance(v, list | tuple) and len(v) == 2 and all(one(x) for x in v))


class AdaptiveAvgPool2dSpec(LayerSpec):
    """`AdaptiveAvgPool2d(output_size)`: any H, W to the given size (`none` keeps a dim).
    A 1x1 output is a mean, which saves nothing; otherwise the input is saved."""

    name = "AdaptiveAvgPool2d"
    torch_class = "nn.AdaptiveAvgPool2d"
    params = (req("output_size", Kind("an integer, `none` or 2 of those", _is_output_size)),)

    def _sizes(self, bound: BoundLayer) -> tuple[int | None, int | None]:
        v = bound["output_size"]
        if isinstance(v, list | tuple):
            a, b = v
            return (a if isinstance(a, int) else None, b if isinstance(b, int) else None)
        return (v, v) if isinstance(v, int) else (None, None)

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        if all(s is None or s > 0 for s in self._sizes(bound)):
            return []
        return [bound.error("output_size", "`output_size` must be positive")]

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if (bad := _check_rank(shape, 2)) is not None:
            return bad
        lead, sizes = _split(shape, 2)
        return (
            *lead,
            *(o if o is not None else i for o, i in zip(self._sizes(bound), sizes, strict=True)),
        )

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return numel(in_shape)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        if tuple(out_shape[-2:]) == (1, 1):
            return SavedTensors()
        return SavedTensors(input_bytes=numel(in_shape) * dtype_bytes)


SPECS: tuple[LayerSpec, ...] = (
    Conv1dSpec(),
    Conv2dSpec(),
    ConvTranspose1dSpec(),
    ConvTranspose2dSpec(),
    MaxPool2dSpec(),
    AvgPool2dSpec(),
    AdaptiveAvgPool2dSpec(),
)
