"""Sequence layers: LSTM, GRU and MultiHeadAttention, all batch-first.

TensorLoom always builds these with `batch_first=True` (PyTorch's default is
False): inputs are `[B, T, features]`, or unbatched `[T, features]`. In a forward,
`lstm(x)` and `gru(x)` mean the output sequence `[B, T, H * directions]` (the
final hidden states are dropped: emitted as `self.lstm(x)[0]`), and
`attention(x)` is self-attention, `self.attention(x, x, x, need_weights=False)[0]`;
with `causal=true` it is the runtime's `SelfAttention` (tensorloom/backends/runtime/
attention.py: a fused `c_attn` and `c_proj` as nanoGPT names them, the same parameter
count, `F.scaled_dot_product_attention(..., is_causal=True)` inside), applied as
`self.attention(x)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from tensorloom.catalogue.layers.base import (
    BIAS_INIT_PARAM,
    BIAS_INITS,
    BOOL,
    FLOAT,
    INT,
    ArgError,
    BoundLayer,
    CallKind,
    InitGroup,
    LayerSpec,
    Param,
    SavedTensors,
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
from tensorloom.catalogue.shapes import Dim, Shape, ShapeMismatch, Unifier, mismatch

_CUDNN_RESERVE_PAD = 256
_MiB = 1 << 20
MAX_STACKED_LAYERS = 1000
"""The most stacked layers a recurrent layer may have: each is a weight set the checker counts."""


def _sequence_rank(shape: tuple[object, ...]) -> bool:
    return len(shape) in (2, 3)


class _Recurrent(LayerSpec):
    """LSTM/GRU: `gates` weight blocks per layer and direction, two bias vectors each.

    Saved for backward (cuDNN, measured on an H200 with torch 2.11 in fp32 and
    fp16, matching to the byte): the input, the output sequence, the zero initial
    states (`states` tensors of [layers x directions, B, H]), and cuDNN's reserve
    space: `reserve_factor` x H elements per batch row, time step, layer and
    direction, plus every inner layer's output, plus 256 bytes.
    FLOPs: 2 x parameters per batch row and time step (matmuls and bias adds;
    gate pointwise math is ignored).

    Scratch (cuDNN's backward workspace, freed when the backward returns): an
    empirical rule fitted on `bench/cudnn_workspace.py` (288 LSTM/GRU configurations
    on an H200, cuDNN 9.19, fp32 and bf16): 8 MiB per layer and direction, plus
    the fp32 weights, plus `scratch_per_element` elements per batch row, time step
    and hidden unit (x1.3 bidirectional). Over that grid it is off by 9% on
    average and by up to 50% at hidden size 512, where cuDNN changes algorithm.
    """

    gates: ClassVar[int] = 4
    reserve_factor: ClassVar[int] = 5
    scratch_per_element: ClassVar[tuple[tuple[int, int], ...]] = ((256, 20), (1 << 62, 10))
    """(largest hidden size, elements per batch row x time step x hidden unit)"""
    states: ClassVar[int] = 2
    call_kind = "first_of_tuple"
    stateful = True
    autocast = "low"
    input_size_first = True
    forced_kwargs = (("batch_first", "True"),)

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = positive(bound, "input_size", "hidden_size", "num_layers") + probability(
            bound, "dropout"
        )
        if bound.get_int("num_layers") > MAX_STACKED_LAYERS:
            count = bound.get_int("num_layers")
            message = f"`num_layers` is {count:,}; a recurrent layer stacks at most 1,000"
            errors.append(bound.error("num_layers", message))
        proj = self._proj(bound)
        if proj < 0 or (proj and proj >= bound.get_int("hidden_size")):
            errors.append(
                bound.error("proj_size", "`proj_size` must be between 0 and `hidden_size` - 1")
            )
        return errors

    def _proj(self, bound: BoundLayer) -> int:
        return bound.get_int("proj_size") if "proj_size" in bound.values else 0

    def _dirs(self, bound: BoundLayer) -> int:
        return 2 if bound.get_bool("bidirectional") else 1

    def _out_features(self, bound: BoundLayer) -> int:
        return (self._proj(bound) or bound.get_int("hidden_size")) * self._dirs(bound)

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if not _sequence_rank(shape):
            return rank_error("a 3-D [B, T, features] (or 2-D unbatched)", shape)
        got = unify_feature(shape, -1, bound.get_int("input_size"), "input features", unifier)
        return (
            got
            if isinstance(got, ShapeMismatch)
            else replace_dim(shape, -1, self._out_features(bound))
        )

    def infer_shape(
        self, bound: BoundLayer, inputs: Sequence[Shape], unifier: Unifier
    ) -> Shape | ShapeMismatch:
        """`lstm(x)`, or `lstm(x, state)` (the state is checked by `state_shapes`)."""
        if len(inputs) not in (1, 2):
            return mismatch(
                f"takes the input and, maybe, a state: got {len(inputs)} inputs",
                help="write `lstm(x)`, or `lstm(x, state)` for the pair (output, state)",
            )
        return self.shape_rule(bound, inputs[0], unifier)

    def state_shapes(self, bound: BoundLayer, shape: tuple[Dim, ...]) -> tuple[Shape, ...]:
        """[layers x directions, B, H] each (without B for an unbatched input); an LSTM's
        h is `proj_size` wide when it projects, its c `hidden_size`."""
        stacks = bound.get_int("num_layers") * self._dirs(bound)
        batch: tuple[Dim, ...] = ()
        if len(shape) == 3:
            batch = (shape[0] if bound.get_bool("batch_first") else shape[1],)
        h = bound.get_int("hidden_size")
        widths = (self._proj(bound) or h, h)[: self.states]
        return tuple((stacks, *batch, width) for width in widths)

    def _layer_inputs(self, bound: BoundLayer) -> list[int]:
        """The input width of each layer (inner layers read all directions)."""
        inner = (self._proj(bound) or bound.get_int("hidden_size")) * self._dirs(bound)
        return [bound.get_int("input_size")] + [inner] * (bound.get_int("num_layers") - 1)

    def _per_direction(
        self, bound: BoundLayer, width: int, suffix: str
    ) -> dict[str, tuple[int, ...]]:
        """`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`, `weight_hr_l0`
        (`suffix` is the layer and direction: `_l1_reverse`)."""
        h, proj = bound.get_int("hidden_size"), self._proj(bound)
        g = self.gates * h
        shapes: dict[str, tuple[int, ...]] = {
            f"weight_ih{suffix}": (g, width),
            f"weight_hh{suffix}": (g, proj or h),
        }
        if bound.get_bool("bias"):
            shapes |= {f"bias_ih{suffix}": (g,), f"bias_hh{suffix}": (g,)}
        return shapes | ({f"weight_hr{suffix}": (proj, h)} if proj else {})

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        directions = ("", "_reverse")[: self._dirs(bound)]
        shapes: dict[str, tuple[int, ...]] = {}
        for layer, width in enumerate(self._layer_inputs(bound)):
            for direction in directions:
                shapes |= self._per_direction(bound, width, f"_l{layer}{direction}")
        return shapes

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        steps = numel(in_shape[:-1])  # batch rows x time steps
        return 2 * steps * self.param_count(bound)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        rows = numel(in_shape[:-1])  # batch rows x time steps
        batch = in_shape[0] if len(in_shape) == 3 else 1
        layers, h = bound.get_int("num_layers"), bound.get_int("hidden_size")
        units = layers * self._dirs(bound) * h
        inner_outputs = (layers - 1) * rows * self._out_features(bound)
        elements = self.reserve_factor * rows * units + inner_outputs + self.states * batch * units
        return SavedTensors(
            input_bytes=numel(in_shape) * dtype_bytes,
            output_bytes=numel(out_shape) * dtype_bytes,
            extra_bytes=elements * dtype_bytes + _CUDNN_RESERVE_PAD,
        )

    def scratch_bytes(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> int:
        rows = numel(in_shape[:-1])  # batch rows x time steps
        h, dirs = bound.get_int("hidden_size"), self._dirs(bound)
        per = next(n for limit, n in self.scratch_per_element if h <= limit)
        per_sample = per * rows * h * dtype_bytes * (13 if dirs == 2 else 10) // 10
        fixed = 8 * _MiB * bound.get_int("num_layers") * dirs + 4 * self.param_count(bound)
        return fixed + per_sample


def _rnn_params(lstm: bool) -> tuple[Param, ...]:
    common = (
        req("input_size", INT),
        req("hidden_size", INT),
        Param("num_layers", INT, 1),
        Param("bias", BOOL, True),
        Param("batch_first", BOOL, True),
        Param("dropout", FLOAT, 0.0),
        Param("bidirectional", BOOL, False),
    )
    return (*common, Param("proj_size", INT, 0)) if lstm else common


class LSTMSpec(_Recurrent):
    """`lstm(x)` is the output sequence; `let (out, state) = lstm(x, state)` starts from a
    state (`none`: zeros) and returns the pair (output, (h, c)), h and c each
    [num_layers x directions, B, hidden_size] (h `proj_size` wide when it projects)."""

    name = "LSTM"
    torch_class = "nn.LSTM"
    gates = 4
    params = _rnn_params(lstm=True)


class GRUSpec(_Recurrent):
    """`gru(x)` is the output sequence; `let (out, h) = gru(x, h)` starts from a state
    (`none`: zeros) and returns the pair (output, h), h [num_layers x directions, B,
    hidden_size]."""

    name = "GRU"
    torch_class = "nn.GRU"
    gates = 3
    reserve_factor = 6
    states = 1
    params = _rnn_params(lstm=False)


class MultiHeadAttentionSpec(LayerSpec):
    """`MultiHeadAttention(embed_dim, num_heads)`, PyTorch's `nn.MultiheadAttention`,
    used as self-attention on [B, T, D] -> [B, T, D].

    `init="normal", std=0.02` sets the q/k/v and output projections' weights,
    `out_std` (default `std`) the output projection's alone (GPT-2 scales it by
    `1 / sqrt(2 * n_layer)`), `bias_init` both biases.

    FLOPs: the q/k/v and output projections (8 T D^2 per row) and the two
    attention matmuls (4 T^2 D), plus bias adds.

    Saved for backward with fused attention on CUDA (measured on an H200 with
    torch 2.11, matching to the byte): not the input itself but its contiguous
    batch-second copy (the q/k/v projection's input), q, k and v, the attention
    output and its head-merged copy: 5 x [B, T, D], and a 6th in fp32 (the
    memory-efficient kernel; fp16/bf16 use flash attention); an fp32 log-sum-exp
    per head and query (queries padded to 32 in fp32); and 16 bytes of RNG state.
    """

    name = "MultiHeadAttention"
    torch_class = "nn.MultiheadAttention"
    call_kind = "first_of_tuple_self_attention"
    autocast = "low"
    input_size_first = True
    forced_kwargs = (("batch_first", "True"),)
    literal_params = ("causal",)
    params = (
        req("embed_dim", INT),
        req("num_heads", INT),
        Param("dropout", FLOAT, 0.0),
        Param("bias", BOOL, True),
        Param("add_bias_kv", BOOL, False),
        Param("add_zero_attn", BOOL, False),
        Param("kdim", optional(INT)),
        Param("vdim", optional(INT)),
        Param("batch_first", BOOL, True),
        Param("causal", BOOL, False, kw_only=True),
        *weight_init_params("out_std"),
        BIAS_INIT_PARAM,
    )
    init_groups = (
        InitGroup("init", ("c_attn.weight", "in_proj_weight"), std=("std",), mean="mean"),
        InitGroup(
            "init", ("c_proj.weight", "out_proj.weight"), std=("out_std", "std"), mean="mean"
        ),
        InitGroup(
            "bias_init",
            ("c_attn.bias", "in_proj_bias", "c_proj.bias", "out_proj.bias"),
            BIAS_INITS,
            needs="bias",
        ),
    )

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = positive(bound, "embed_dim", "num_heads") + probability(bound, "dropout")
        if errors:
            return errors
        if bound.get_bool("causal"):
            errors += [
                bound.error(k, f"`{k}` is not supported with `causal=true`")
                for k in ("add_bias_kv", "add_zero_attn")
                if bound.get_bool(k)
            ]
            if not bound.get_bool("batch_first"):
                errors.append(bound.error("batch_first", "`causal=true` needs `batch_first=true`"))
        e, h = bound.get_int("embed_dim"), bound.get_int("num_heads")
        if e % h:
            errors.append(
                bound.error(
                    "num_heads", f"`embed_dim` ({e}) must be divisible by `num_heads` ({h})"
                )
            )
        errors += [
            bound.error(k, f"`{k}` must equal `embed_dim` ({e}) for self-attention")
            for k in ("kdim", "vdim")
            if bound[k] not in (None, e)
        ]
        return errors

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if not _sequence_rank(shape):
            return rank_error("a 3-D [B, T, embed_dim] (or 2-D unbatched)", shape)
        got = unify_feature(
            shape, -1, bound.get_int("embed_dim"), "features (`embed_dim`)", unifier
        )
        return got if isinstance(got, ShapeMismatch) else replace_dim(shape, -1, got)

    def _causal(self, bound: BoundLayer) -> bool:
        return bool(bound.values.get("causal", False))

    def torch_class_of(self, bound: BoundLayer) -> str:
        return "SelfAttention" if self._causal(bound) else self.torch_class

    def call_kind_of(self, bound: BoundLayer) -> CallKind:
        return "plain" if self._causal(bound) else self.call_kind

    def runtime_module(self, bound: BoundLayer) -> str | None:
        return "attention" if self._causal(bound) else None

    def param_shapes(self, bound: BoundLayer) -> dict[str, tuple[int, ...]]:
        """`nn.MultiheadAttention`'s: the packed q/k/v projection, `bias_k`/`bias_v`,
        then the output projection `out_proj`; causal: `SelfAttention`'s `c_attn`, `c_proj`."""
        e, bias = bound.get_int("embed_dim"), bound.get_bool("bias")
        if bound.get_bool("causal"):
            return {
                "c_attn.weight": (3 * e, e),
                **({"c_attn.bias": (3 * e,)} if bias else {}),
                "c_proj.weight": (e, e),
                **({"c_proj.bias": (e,)} if bias else {}),
            }
        shapes: dict[str, tuple[int, ...]] = {"in_proj_weight": (3 * e, e)}
        shapes |= {"in_proj_bias": (3 * e,)} if bias else {}
        if bound.get_bool("add_bias_kv"):
            shapes |= {"bias_k": (1, 1, e), "bias_v": (1, 1, e)}
        shapes["out_proj.weight"] = (e, e)
        return shapes | ({"out_proj.bias": (e,)} if bias else {})

    def _keys(self, bound: BoundLayer, t: int) -> int:
        return t + int(bound.get_bool("add_bias_kv")) + int(bound.get_bool("add_zero_attn"))

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        e, t = bound.get_int("embed_dim"), in_shape[-2]
        rows = numel(in_shape[:-1])
        projections = 2 * rows * 4 * e * e + (rows * 4 * e if bound.get_bool("bias") else 0)
        attention = 2 * 2 * rows * self._keys(bound, t) * e
        return projections + attention

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        t, e, heads = in_shape[-2], bound.get_int("embed_dim"), bound.get_int("num_heads")
        batch = numel(in_shape[:-2])
        copies = 6 if dtype_bytes == 4 else 5
        queries = -(-t // 32) * 32 if dtype_bytes == 4 else t
        lse = batch * heads * queries * 4
        return SavedTensors(extra_bytes=copies * batch * t * e * dtype_bytes + lse + 16)


class RotarySpec(LayerSpec):
    """Rotary positions (RoPE) on queries or keys laid out [B, T, heads, dim], the position
    along dim 1, as modded-nanogpt applies them: each head's halves (x1, x2) become
    (x1 cos + x2 sin, x2 cos - x1 sin) at angle t * base^(-2i / dim). No parameters; the
    output has the input's shape.

    Three FLOPs per element (two products and a sum); autograd keeps the cosines and sines
    ([T, dim / 2] each, in the input's dtype) and neither the input nor the output."""

    name = "Rotary"
    torch_class = "Rotary"
    params = (req("dim", INT), Param("base", FLOAT, 10000.0))

    def validate(self, bound: BoundLayer) -> list[ArgError]:
        errors = positive(bound, "dim")
        if not errors and bound.get_int("dim") % 2:
            errors.append(bound.error("dim", f"`dim` must be even, got {bound.get_int('dim')}"))
        if bound.get_float("base") <= 0:
            errors.append(bound.error("base", f"`base` must be positive, got {bound['base']}"))
        return errors

    def shape_rule(
        self, bound: BoundLayer, shape: Shape, unifier: Unifier
    ) -> Shape | ShapeMismatch:
        if shape is None:
            return None
        if len(shape) != 4:
            return rank_error("a 4-D [B, T, heads, dim]", shape)
        got = unify_feature(shape, -1, bound.get_int("dim"), "features per head (`dim`)", unifier)
        return got if isinstance(got, ShapeMismatch) else replace_dim(shape, -1, got)

    def runtime_module(self, bound: BoundLayer) -> str | None:
        return "attention"

    def flops(
        self, bound: BoundLayer, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
    ) -> int:
        return 3 * numel(out_shape)

    def saved_tensors(
        self,
        bound: BoundLayer,
        in_shape: tuple[int, ...],
        out_shape: tuple[int, ...],
        dtype_bytes: int,
    ) -> SavedTensors:
        return SavedTensors(extra_bytes=in_shape[1] * bound.get_int("dim") * dtype_bytes)


SPECS: tuple[LayerSpec, ...] = (LSTMSpec(), GRUSpec(), MultiHeadAttentionSpec(), RotarySpec())
