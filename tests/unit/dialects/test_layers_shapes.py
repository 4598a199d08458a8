"""Symbolic shape rules and the shape helpers, checked by hand and against torch."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from layer_helpers import bind

from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Slice,
    Unifier,
    broadcast,
    cat_shape,
    conv_output_size,
    flatten_shape,
    format_shape,
    index_shape,
    matmul_shape,
    permute_shape,
    pool_output_size,
    reduce_shape,
    reshape_shape,
    transpose_shape,
)

SWEEP = settings(max_examples=100, deadline=None, derandomize=True)


def test_linear_on_symbolic_batch() -> None:
    spec, bound = bind("Linear", 784, 256)
    assert spec.infer_shape(bound, [("B", 784)], Unifier()) == ("B", 256)


def test_linear_feature_mismatch_gives_the_pieces() -> None:
    spec, bound = bind("Linear", 128, 10)
    m = spec.infer_shape(bound, [("B", 256)], Unifier())
    assert m == ShapeMismatch(
        "expects 128 input features, got 256", expected="128", got="256", dim=-1
    )
    assert m.render("fc2") == "`fc2` expects 128 input features, got 256"


def test_linear_binds_a_symbolic_feature_dim() -> None:
    spec, bound = bind("Linear", 64, 10)
    u = Unifier()
    assert spec.infer_shape(bound, [("B", "D")], u) == ("B", 10)
    assert u.resolve("D") == 64


def test_layernorm_on_channels_first_is_a_mismatch_with_help() -> None:
    spec, bound = bind("LayerNorm", 768)
    m = spec.infer_shape(bound, [("B", 768, 14, 14)], Unifier())
    assert isinstance(m, ShapeMismatch)
    assert m.message == "expects the last dim to be 768, got 14 (input is [B, 768, 14, 14])"
    assert (m.expected, m.got, m.dim) == ("[768]", "[14]", -1)
    assert m.help is not None and "x.flatten(2).transpose(1, 2)" in m.help


def test_conv_gives_symbolic_sizes_as_expressions() -> None:
    """A symbolic size stays itself where the convolution preserves it, else becomes
    an expression of it (PyTorch's floor formula, catalogue/dim_expr.py)."""
    spec, bound = bind("Conv2d", 3, 16, 3, padding="same")
    assert spec.infer_shape(bound, [("B", 3, "H", "W")], Unifier()) == ("B", 16, "H", "W")
    spec, bound = bind("Conv2d", 3, 16, 3, stride=2, padding=1)
    want = ("B", 16, "(H+1)//2", "(W+1)//2")  # (H + 2 - 2 - 1)//2 + 1
    assert spec.infer_shape(bound, [("B", 3, "H", "W")], Unifier()) == want
    assert spec.infer_shape(bound, [("B", 3, 32, 32)], Unifier()) == ("B", 16, 16, 16)
    spec, bound = bind("Conv2d", 3, 16, 3, padding=3)
    assert spec.infer_shape(bound, [("B", 3, "H", "W")], Unifier()) == ("B", 16, "H+4", "W+4")


def test_conv_channel_mismatch_and_rank() -> None:
    spec, bound = bind("Conv2d", 1, 32, 3)
    m = spec.infer_shape(bound, [("B", 3, 28, 28)], Unifier())
    assert isinstance(m, ShapeMismatch) and m.message == "expects 1 input channels, got 3"
    assert m.dim == -3
    m = spec.infer_shape(bound, [("B", 784)], Unifier())
    assert isinstance(m, ShapeMismatch)
    assert m.message == "expects a 4-D [N, C, H, W] (or 3-D unbatched) input, got [B, 784]"


def test_sequence_layers_and_unification_of_t() -> None:
    u = Unifier()
    lstm_spec, lstm = bind("LSTM", 32, 64, bidirectional=True)
    attn_spec, attn = bind("MultiHeadAttention", 128, 4)
    h = lstm_spec.infer_shape(lstm, [("B", "T", 32)], u)
    assert h == ("B", "T", 128)
    assert attn_spec.infer_shape(attn, [h], u) == ("B", "T", 128)
    assert broadcast(("B", "T", 128), ("B", "S", 128), u) == ("B", "T", 128)
    assert u.resolve("S") == "T"
    assert broadcast(("T",), (10,), u) == (10,)
    assert u.format_shape(("B", "S")) == "[B, 10]"


def test_embedding_and_batchnorm() -> None:
    spec, bound = bind("Embedding", 1000, 64)
    assert spec.infer_shape(bound, [("B", "T")], Unifier()) == ("B", "T", 64)
    spec, bound = bind("BatchNorm2d", 16)
    m = spec.infer_shape(bound, [("B", 16, 8)], Unifier())
    assert isinstance(m, ShapeMismatch) and m.expected == "a 4-D [N, C, H, W]"
    m = spec.infer_shape(bound, [("B", 8, 4, 4)], Unifier())
    assert isinstance(m, ShapeMismatch) and m.message == "expects 16 channels, got 8"


def test_unknown_rank_and_arity() -> None:
    spec, bound = bind("Linear", 4, 2)
    assert spec.infer_shape(bound, [None], Unifier()) is None
    m = spec.infer_shape(bound, [("B", 4), ("B", 4)], Unifier())
    assert isinstance(m, ShapeMismatch) and m.message == "takes 1 input, got 2"


def test_unifier() -> None:
    u = Unifier()
    assert u.unify("B", "N") == "B"
    assert u.unify("N", 8) == 8
    assert u.resolve("B") == 8
    m = u.unify("B", 9)
    assert m == ShapeMismatch("expects 8, got 9", expected="8", got="9")
    assert u.resolve("B") == 8
    assert u.unify(None, "Q") == "Q"
    assert u.bind("T", 512) == 512 and u.format_shape(("B", "T", None)) == "[8, 512, ?]"
    assert format_shape(None) == "[*]"


def test_broadcast_mismatch_names_the_dim() -> None:
    m = broadcast(("B", 3), ("B", 4), Unifier())
    assert isinstance(m, ShapeMismatch)
    assert m.message == "cannot broadcast [B, 3] with [B, 4]"
    assert m.dim == -1


def test_helpers_with_symbols() -> None:
    u = Unifier()
    assert matmul_shape(("B", "T", 64), (64, "V"), u) == ("B", "T", "V")
    assert reshape_shape(("B", "T", 512), ["B", "T", 8, -1], u) == ("B", "T", 8, 64)
    assert reshape_shape(("B", 4, 4), ["B", -1], u) == ("B", 16)
    assert reshape_shape(("B", 4, "T"), [-1, 4], u) is not None
    assert flatten_shape(("B", 1, 28, 28), 1) == ("B", 784)
    assert flatten_shape(("B", "C", 28), 1) == ("B", "28*C")  # one symbol: affine
    assert flatten_shape(("B", "C", "H"), 1) == ("B", None)  # a product of symbols is not
    assert cat_shape([("B", 3), ("B", 5)], -1, u) == ("B", 8)
    assert cat_shape([("B", "T"), ("B", "T")], -1, u) == ("B", "2*T")
    assert index_shape(("B", "T", 64), [Ellipsis, 0]) == ("B", "T")
    assert index_shape(("B", "T", 64), [Slice(), -1]) == ("B", 64)
    assert conv_output_size("H", 3, 1, 1) == "H"
    assert pool_output_size("H", 2, 2) == "H//2"
    assert pool_output_size("H", 2, 2, ceil_mode=True) is None
    assert pool_output_size(pool_output_size("H", 2, 2), 2, 2) == "H//4"


def test_helper_errors() -> None:
    u = Unifier()
    m = matmul_shape(("B", 256), (128, 10), u)
    assert isinstance(m, ShapeMismatch)
    assert m.message == "matmul of [B, 256] and [128, 10]: inner dims 256 and 128 differ"
    assert isinstance(transpose_shape(("B", 3), 0, 2), ShapeMismatch)
    assert isinstance(permute_shape(("B", 3), [0, 0]), ShapeMismatch)
    assert isinstance(reshape_shape((2, 3), [4, 2], u), ShapeMismatch)
    assert isinstance(cat_shape([("B", 3), ("B", 5, 1)], 1, u), ShapeMismatch)
    assert isinstance(index_shape((2, 3), [5]), ShapeMismatch)
    assert isinstance(reduce_shape((2, 3), 2), ShapeMismatch)


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


def _run(fn: object) -> tuple[int, ...] | None:
    try:
        return tuple(fn().shape)  # type: ignore[operator]
    except (RuntimeError, IndexError, ValueError):
        return None


def _agrees(predicted: object, actual: tuple[int, ...] | None) -> None:
    if actual is None:
        assert isinstance(predicted, ShapeMismatch), predicted
    else:
        assert predicted == actual


@SWEEP
@given(shapes, shapes)
def test_broadcast_and_matmul_match_torch(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    x, y = torch.zeros(a), torch.zeros(b)
    _agrees(broadcast(a, b, Unifier()), _run(lambda: x + y))
    _agrees(matmul_shape(a, b, Unifier()), _run(lambda: x @ y))


@SWEEP
@given(shapes, st.integers(-4, 3), st.integers(-4, 3), st.booleans())
def test_dim_helpers_match_torch(shape: tuple[int, ...], d0: int, d1: int, keep: bool) -> None:
    x = torch.zeros(shape)
    _agrees(transpose_shape(shape, d0, d1), _run(lambda: x.transpose(d0, d1)))
    _agrees(reduce_shape(shape, d0, keep), _run(lambda: x.sum(d0, keepdim=keep)))
    if _run(lambda: x.flatten(d0, d1)) is not None:
        assert flatten_shape(shape, d0, d1) == tuple(x.flatten(d0, d1).shape)
    _agrees(cat_shape([shape, shape], d0, Unifier()), _run(lambda: torch.cat([x, x], d0)))


@SWEEP
@given(shapes, st.permutations(range(4)))
def test_permute_and_reshape_match_torch(shape: tuple[int, ...], order: list[int]) -> None:
    x = torch.zeros(shape)
    dims = [d for d in order if d < len(shape)]
    _agrees(permute_shape(shape, dims), _run(lambda: x.permute(dims)))
    target = [-1, *shape[1:]][::-1]
    _agrees(reshape_shape(shape, target, Unifier()), _run(lambda: x.reshape(target)))


@pytest.mark.parametrize(
    "index",
    [
        [0],
        [Slice(1, None)],
        [Ellipsis, None, 1],
        [Slice(None, None, 2), Ellipsis],
        [None, -1, Slice(0, 2)],
    ],
)
def test_index_matches_torch(index: list[object]) -> None:
    x = torch.zeros(3, 4, 5)
    pyindex = tuple(slice(i.start, i.stop, i.step) if isinstance(i, Slice) else i for i in index)
    assert index_shape((3, 4, 5), index) == tuple(x[pyindex].shape)  # type: ignore[arg-type]
