"""The catalogue against real PyTorch: exact parameter counts and output shapes,
for fixed configurations of every layer and a randomized sweep per family."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from layer_helpers import check_against_torch

from tensorloom.catalogue.layers import LAYERS, Value

torch.manual_seed(0)
SWEEP = settings(max_examples=100, deadline=None, derandomize=True)

FIXED: list[tuple[str, list[Value], dict[str, Value], tuple[int, ...]]] = [
    ("Linear", [784, 256], {}, (4, 784)),
    ("Linear", [16, 8], {"bias": False}, (2, 3, 16)),
    ("Linear", [5, 3], {}, (5,)),
    ("Conv1d", [3, 6, 5], {"padding": "same", "dilation": 2}, (2, 3, 17)),
    ("Conv1d", [4, 8, 3], {"stride": 2, "groups": 2}, (4, 20)),
    ("Conv2d", [1, 32, 3], {}, (2, 1, 28, 28)),
    ("Conv2d", [3, 6, (3, 5)], {"stride": (1, 2), "padding": (1, 0), "bias": False}, (1, 3, 9, 11)),
    (
        "Conv2d",
        [4, 4, 4],
        {"padding": "same", "groups": 4, "padding_mode": "reflect"},
        (2, 4, 8, 8),
    ),
    ("Conv2d", [2, 2, 3], {"padding": "valid"}, (2, 5, 5)),
    ("ConvTranspose2d", [8, 4, 4], {"stride": 2, "padding": 1}, (2, 8, 7, 7)),
    ("ConvTranspose2d", [4, 6, 3, 2, 1, 1, 2], {"bias": False}, (1, 4, 5, 6)),
    ("BatchNorm1d", [10], {}, (4, 10)),
    ("BatchNorm1d", [10], {"affine": False}, (4, 10, 7)),
    ("BatchNorm2d", [3], {"bias": False}, (2, 3, 4, 4)),
    ("LayerNorm", [768], {}, (2, 5, 768)),
    ("LayerNorm", [[4, 5]], {"elementwise_affine": False}, (3, 4, 5)),
    ("LayerNorm", [6], {"bias": False}, (6,)),
    ("GroupNorm", [4, 8], {}, (2, 8, 3, 3)),
    ("GroupNorm", [2, 6], {"affine": False}, (2, 6)),
    ("Dropout", [0.1], {}, (3, 4)),
    ("Embedding", [100, 16], {"padding_idx": 0}, (2, 7)),
    ("LSTM", [10, 20], {}, (3, 5, 10)),
    ("LSTM", [10, 20, 2], {"bidirectional": True, "dropout": 0.1}, (3, 5, 10)),
    ("LSTM", [6, 8], {"proj_size": 3, "num_layers": 2, "bias": False}, (4, 6)),
    ("GRU", [7, 9, 3], {"bidirectional": True}, (2, 4, 7)),
    ("MultiHeadAttention", [512, 8], {}, (2, 6, 512)),
    ("MultiHeadAttention", [12, 3], {"bias": False, "add_bias_kv": True}, (2, 4, 12)),
    ("MultiHeadAttention", [8, 2, 0.1, True, False, True], {}, (5, 8)),
    ("MultiHeadAttention", [64, 4], {"causal": True}, (2, 7, 64)),
    ("MultiHeadAttention", [12, 3], {"causal": True, "bias": False, "dropout": 0.1}, (5, 12)),
    ("Rotary", [8], {}, (2, 5, 3, 8)),
    ("Rotary", [16], {"base": 500.0}, (1, 4, 2, 16)),
    ("MaxPool2d", [2], {}, (2, 3, 8, 8)),
    ("MaxPool2d", [3, 2, 1], {"ceil_mode": True, "dilation": 1}, (1, 2, 7, 9)),
    ("AvgPool2d", [(2, 3)], {"stride": 1, "padding": 1}, (2, 6, 6)),
    ("AvgPool2d", [3], {"ceil_mode": True, "count_include_pad": False}, (1, 1, 10, 10)),
    ("AdaptiveAvgPool2d", [1], {}, (2, 16, 7, 7)),
    ("AdaptiveAvgPool2d", [(None, 3)], {}, (2, 5, 7, 9)),
    ("Flatten", [], {}, (2, 3, 4, 5)),
    ("Flatten", [0, 1], {}, (2, 3, 4)),
    ("Identity", [], {}, (2, 3)),
    ("ReLU", [], {}, (2, 3)),
    ("GELU", [], {"approximate": "tanh"}, (2, 3)),
    ("SiLU", [], {}, (2, 3)),
    ("Tanh", [], {}, (2, 3)),
    ("Sigmoid", [], {}, (2, 3)),
    ("Softmax", [], {"dim": -1}, (2, 3)),
    ("LogSoftmax", [1], {}, (2, 3, 4)),
    ("LeakyReLU", [0.2], {}, (2, 3)),
    ("ELU", [], {"alpha": 0.5}, (2, 3)),
    ("CELU", [2.0], {}, (2, 3)),
    ("SELU", [], {}, (2, 3)),
    ("Mish", [], {}, (2, 3)),
    ("Hardswish", [], {}, (2, 3)),
    ("Hardsigmoid", [], {}, (2, 3)),
    ("ReLU6", [], {}, (2, 3)),
    ("Hardtanh", [-2.0, 2.0], {}, (2, 3)),
    ("Softplus", [], {"beta": 2.0}, (2, 3)),
    ("Softsign", [], {}, (2, 3)),
    ("Tanhshrink", [], {}, (2, 3)),
    ("PReLU", [], {}, (2, 3)),
    ("PReLU", [4], {}, (2, 4, 5, 5)),
    ("PReLU", [4], {}, (2, 3, 5)),
    ("RMSNorm", [16], {}, (2, 5, 16)),
    ("RMSNorm", [[4, 5]], {"eps": 1e-6, "elementwise_affine": False}, (3, 4, 5)),
    ("RMSNorm", [16], {}, (2, 16, 5)),
    ("ConvTranspose1d", [8, 4, 4], {"stride": 2, "padding": 1}, (2, 8, 7)),
    ("ConvTranspose1d", [4, 6, 3], {"groups": 2, "bias": False, "dilation": 2}, (4, 9)),
    ("Upsample", [], {"scale_factor": 2}, (2, 3, 4, 5)),
    ("Upsample", [], {"size": [6, 7], "mode": "bilinear", "align_corners": True}, (2, 3, 4, 5)),
    ("Upsample", [], {"scale_factor": 1.5, "mode": "linear"}, (2, 3, 5)),
    ("Upsample", [8], {}, (1, 2, 3, 3, 3)),
]


def test_every_layer_has_a_fixed_case() -> None:
    # `Parameter` (a tensor) and `Sequential` (a container of these layers) are built
    # and counted on emitted models in tests/e2e/test_language.py.
    assert {case[0] for case in FIXED} == set(LAYERS) - {"Parameter", "Sequential"}


@pytest.mark.parametrize(("name", "args", "kwargs", "shape"), FIXED)
def test_fixed_configuration(
    name: str, args: list[Value], kwargs: dict[str, Value], shape: tuple[int, ...]
) -> None:
    check_against_torch(name, args, kwargs, shape)


@SWEEP
@given(
    st.integers(1, 40),
    st.integers(1, 40),
    st.booleans(),
    st.lists(st.integers(1, 4), min_size=0, max_size=2),
)
def test_linear_sweep(i: int, o: int, bias: bool, lead: list[int]) -> None:
    check_against_torch("Linear", [i, o], {"bias": bias}, (*lead, i))


@st.composite
def conv2d_cases(draw: st.DrawFn) -> tuple[list[Value], dict[str, Value], tuple[int, ...]]:
    groups = draw(st.integers(1, 3))
    cin, cout = groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 3))
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    same = stride == (1, 1) and draw(st.booleans())
    padding: Value = "same" if same else (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    kwargs: dict[str, Value] = {
        "stride": stride,
        "padding": padding,
        "dilation": draw(st.integers(1, 2)),
        "groups": groups,
        "bias": draw(st.booleans()),
    }
    size = (draw(st.integers(1, 10)), draw(st.integers(1, 10)))
    batch = draw(st.sampled_from([(), (2,)]))
    return [cin, cout, kernel], kwargs, (*batch, cin, *size)


@SWEEP
@given(conv2d_cases())
def test_conv2d_sweep(case: tuple[list[Value], dict[str, Value], tuple[int, ...]]) -> None:
    check_against_torch("Conv2d", *case)


@SWEEP
@given(
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(0, 2),
    st.integers(1, 12),
)
def test_conv1d_sweep(g: int, a: int, b: int, k: int, s: int, p: int, length: int) -> None:
    kwargs: dict[str, Value] = {"stride": s, "padding": p, "groups": g}
    check_against_torch("Conv1d", [g * a, g * b, k], kwargs, (2, g * a, length))


@SWEEP
@given(
    st.integers(1, 2),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(1, 3),
    st.integers(0, 2),
    st.integers(0, 2),
    st.integers(1, 2),
    st.booleans(),
)
def test_conv_transpose2d_sweep(
    g: int, a: int, b: int, k: int, s: int, p: int, op: int, d: int, bias: bool
) -> None:
    op = min(op, max(s, d) - 1)
    kwargs: dict[str, Value] = {
        "stride": s,
        "padding": p,
        "output_padding": op,
        "groups": g,
        "bias": bias,
        "dilation": d,
    }
    check_against_torch("ConvTranspose2d", [g * a, g * b, k], kwargs, (1, g * a, 4, 5))


@SWEEP
@given(
    st.sampled_from(["BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm"]),
    st.integers(1, 4),
    st.integers(1, 6),
    st.booleans(),
    st.booleans(),
)
def test_norm_sweep(name: str, groups: int, per: int, affine: bool, bias: bool) -> None:
    c = groups * per
    cases: dict[str, tuple[list[Value], dict[str, Value], tuple[int, ...]]] = {
        "BatchNorm1d": ([c], {"affine": affine, "bias": bias}, (3, c, 2)),
        "BatchNorm2d": ([c], {"affine": affine, "bias": bias}, (2, c, 3, 3)),
        "LayerNorm": ([[per, c]], {"elementwise_affine": affine, "bias": bias}, (2, per, c)),
        "GroupNorm": ([groups, c], {"affine": affine, "bias": bias}, (2, c, 3)),
    }
    check_against_torch(name, *cases[name])


@SWEEP
@given(
    st.sampled_from(["LSTM", "GRU"]),
    st.integers(1, 12),
    st.integers(2, 12),
    st.integers(1, 3),
    st.booleans(),
    st.booleans(),
    st.integers(0, 5),
    st.sampled_from([(), (2,)]),
)
def test_recurrent_sweep(
    name: str,
    i: int,
    h: int,
    layers: int,
    bias: bool,
    bidirectional: bool,
    proj: int,
    batch: tuple[int, ...],
) -> None:
    kwargs: dict[str, Value] = {"num_layers": layers, "bias": bias, "bidirectional": bidirectional}
    if name == "LSTM":
        kwargs["proj_size"] = min(proj, h - 1)
    check_against_torch(name, [i, h], kwargs, (*batch, 3, i))


@SWEEP
@given(
    st.integers(1, 4),
    st.integers(1, 6),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(1, 5),
)
def test_attention_sweep(
    heads: int, per_head: int, bias: bool, bias_kv: bool, zero_attn: bool, t: int
) -> None:
    e = heads * per_head
    kwargs: dict[str, Value] = {"bias": bias, "add_bias_kv": bias_kv, "add_zero_attn": zero_attn}
    check_against_torch("MultiHeadAttention", [e, heads], kwargs, (2, t, e))


@SWEEP
@given(
    st.sampled_from(["MaxPool2d", "AvgPool2d"]),
    st.integers(1, 4),
    st.one_of(st.none(), st.integers(1, 3)),
    st.integers(0, 2),
    st.booleans(),
    st.integers(1, 9),
    st.integers(1, 9),
)
def test_pool_sweep(name: str, k: int, s: int | None, p: int, ceil: bool, h: int, w: int) -> None:
    p = min(p, k // 2)
    check_against_torch(name, [k, s, p], {"ceil_mode": ceil}, (2, 3, h, w))


@SWEEP
@given(
    st.one_of(
        st.integers(1, 5), st.tuples(st.one_of(st.none(), st.integers(1, 5)), st.integers(1, 5))
    ),
    st.integers(1, 8),
    st.integers(1, 8),
)
def test_adaptive_pool_sweep(size: Value, h: int, w: int) -> None:
    check_against_torch("AdaptiveAvgPool2d", [size], {}, (2, 3, h, w))


@SWEEP
@given(st.integers(1, 50), st.integers(1, 20), st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_embedding_sweep(n: int, d: int, lead: list[int]) -> None:
    check_against_torch("Embedding", [n, d], {"padding_idx": n - 1}, tuple(lead))


@SWEEP
@given(st.integers(-4, 3), st.integers(-4, 3), st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_flatten_sweep(start: int, end: int, shape: list[int]) -> None:
    rank = len(shape)
    if not (-rank <= start < rank and -rank <= end < rank) or start % rank > end % rank:
        return
    check_against_torch("Flatten", [start, end], {}, tuple(shape))
