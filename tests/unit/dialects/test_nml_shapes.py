"""The shape hooks of nml's functional builtins, called as shape inference calls them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from xdsl.dialects.builtin import IntegerAttr, StringAttr, f64, i64
from xdsl.ir import Attribute, Block, SSAValue

from tensorloom.catalogue.shapes import ShapeMismatch, Unifier
from tensorloom.dialects import nml
from tensorloom.dialects.nml import TensorType
from tensorloom.dialects.nml.tensor_ops import TransposeOp


def tensor(*dims: int | str | None) -> TensorType:
    return TensorType.from_dims(list(dims))


def values(*types: Attribute) -> Sequence[SSAValue]:
    return Block(arg_types=types).args


def dims_of(result: Attribute | ShapeMismatch) -> object:
    assert isinstance(result, TensorType), result
    return result.dims


def test_tensor_type_dims_round_trip() -> None:
    t = tensor("B", 784, None)
    assert t.dims == ("B", 784, None)
    assert t.rank == 3
    assert TensorType.unranked().dims is None
    assert str(t) == "!nml.tensor<[B, 784, ?], f32>"


def test_unary_keeps_the_operand_type() -> None:
    (x,) = values(tensor("B", 256))
    assert nml.ReluOp(x).infer_shape([x.type]) == x.type


def test_unknown_rank_stays_unknown() -> None:
    (x,) = values(TensorType.unranked())
    op = nml.FlattenOp(x, 1, -1, TensorType.unranked())
    assert dims_of(op.infer_shape([x.type])) is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((4, 1, 3), (5, 1), (4, 5, 3)),
        (("B", "T", 512), (512,), ("B", "T", 512)),
        (("B", 512), ("B", 512), ("B", 512)),
        ((None, 3), (7, 3), (7, 3)),
    ],
)
def test_add_broadcasts(
    a: tuple[int | str | None, ...],
    b: tuple[int | str | None, ...],
    expected: tuple[int | str | None, ...],
) -> None:
    x, y = values(tensor(*a), tensor(*b))
    assert dims_of(nml.AddOp(x, y, TensorType.unranked()).infer_shape([x.type, y.type])) == expected


def test_add_mismatch_is_an_error() -> None:
    x, y = values(tensor("B", 3), tensor("B", 4))
    result = nml.AddOp(x, y, TensorType.unranked()).infer_shape([x.type, y.type])
    assert isinstance(result, ShapeMismatch)
    assert result.message == "cannot broadcast [B, 3] with [B, 4]"


def test_add_with_a_scalar_keeps_the_tensor() -> None:
    x, s = values(tensor("B", 3), f64)
    assert nml.MulOp(x, s, TensorType.unranked()).infer_shape([x.type, s.type]) == x.type


def test_softmax_checks_its_dim() -> None:
    (x,) = values(tensor("B", 10))
    assert nml.SoftmaxOp(x, -1, TensorType.unranked()).infer_shape([x.type]) == x.type
    bad = nml.SoftmaxOp(x, 2, TensorType.unranked()).infer_shape([x.type])
    assert isinstance(bad, ShapeMismatch)
    assert bad.message == "dimension 2 is out of range for a tensor of rank 2"


def test_transpose_and_permute() -> None:
    (x,) = values(tensor("B", "T", 64))
    assert dims_of(TransposeOp(x, {"dim0": 1, "dim1": 2}, x.type).infer_shape([x.type])) == (
        "B",
        64,
        "T",
    )
    assert dims_of(nml.PermuteOp(x, [2, 0, 1], x.type).infer_shape([x.type])) == (64, "B", "T")


def test_flatten_multiplies_known_dims() -> None:
    (x,) = values(tensor("B", 1, 28, 28))
    assert dims_of(nml.FlattenOp(x, 1, -1, x.type).infer_shape([x.type])) == ("B", 784)
    (y,) = values(tensor("B", "C", 4))
    assert dims_of(nml.FlattenOp(y, 1, -1, y.type).infer_shape([y.type])) == ("B", "4*C")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (("B", 784), (784, 10), ("B", 10)),
        ((8, "T", 64), (8, 64, "T"), (8, "T", "T")),
        ((3,), (3, 5), (5,)),
        ((4, 3), (3,), (4,)),
    ],
)
def test_matmul(
    a: tuple[int | str, ...], b: tuple[int | str, ...], expected: tuple[int | str, ...]
) -> None:
    x, y = values(tensor(*a), tensor(*b))
    assert (
        dims_of(nml.MatmulOp(x, y, TensorType.unranked()).infer_shape([x.type, y.type])) == expected
    )


def test_matmul_inner_mismatch_blames_the_right_operand() -> None:
    x, y = values(tensor("B", 784), tensor(256, 10))
    result = nml.MatmulOp(x, y, TensorType.unranked()).infer_shape([x.type, y.type])
    assert isinstance(result, ShapeMismatch) and result.operand == 1
    assert "784 and 256 differ" in result.message


def test_cat_adds_along_its_dim() -> None:
    x, y = values(tensor("B", 3, 5), tensor("B", 4, 5))
    assert dims_of(nml.CatOp([x, y], 1, x.type).infer_shape([x.type, y.type])) == ("B", 7, 5)
    z, w = values(tensor("B", 3), tensor("B", 3, 1))
    bad = nml.CatOp([z, w], 0, z.type).infer_shape([z.type, w.type])
    assert isinstance(bad, ShapeMismatch)
    assert (bad.message, bad.operand) == ("cat of tensors of rank 2 and 3", 1)


def test_mean_and_sum() -> None:
    (x,) = values(tensor("B", "T", 64))
    assert dims_of(nml.MeanOp(x, [-1], False, x.type).infer_shape([x.type])) == ("B", "T")
    assert dims_of(nml.SumOp(x, [1], True, x.type).infer_shape([x.type])) == ("B", 1, 64)
    assert dims_of(nml.SumOp(x, None, False, x.type).infer_shape([x.type])) == ()


def test_reshape_infers_minus_one() -> None:
    (x,) = values(tensor(8, 4, 64))
    shape = [IntegerAttr(8, i64), IntegerAttr(-1, i64)]
    assert dims_of(nml.ReshapeOp(x, shape, [], x.type).infer_shape([x.type])) == (8, 256)


def test_reshape_with_symbolic_and_dynamic_sizes() -> None:
    x, n = values(tensor("B", 256), i64)
    shape = [StringAttr("B"), StringAttr("?"), IntegerAttr(16, i64)]
    op = nml.ViewOp(x, shape, [n], x.type)
    assert dims_of(op.infer_shape([x.type, n.type])) == ("B", None, 16)


def test_reshape_size_mismatch() -> None:
    (x,) = values(tensor(8, 4))
    shape = [IntegerAttr(3, i64), IntegerAttr(3, i64)]
    result = nml.ReshapeOp(x, shape, [], x.type).infer_shape([x.type])
    assert isinstance(result, ShapeMismatch)
    assert result.message == "cannot view [8, 4] as [3, 3]: the element counts differ"


def test_index_selects_slices_and_adds_axes() -> None:
    (x,) = values(tensor("B", "T", 64))
    items = [StringAttr(":"), IntegerAttr(-1, i64)]
    assert dims_of(nml.IndexOp(x, items, [], x.type).infer_shape([x.type])) == ("B", 64)
    sliced = [
        StringAttr("..."),
        nml.SliceAttr(IntegerAttr(0, i64), IntegerAttr(16, i64), nml.NoneValueAttr()),
    ]
    assert dims_of(nml.IndexOp(x, sliced, [], x.type).infer_shape([x.type])) == ("B", "T", 16)
    axis = [nml.NoneValueAttr(), StringAttr("...")]
    assert dims_of(nml.IndexOp(x, axis, [], x.type).infer_shape([x.type])) == (1, "B", "T", 64)


def test_index_out_of_range() -> None:
    (x,) = values(tensor("B", 3))
    result = nml.IndexOp(x, [StringAttr(":"), IntegerAttr(3, i64)], [], x.type).infer_shape(
        [x.type]
    )
    assert isinstance(result, ShapeMismatch)
    assert result.message == "index 3 is out of range for a dimension of size 3"


def test_dim_returns_an_integer() -> None:
    (x,) = values(tensor("B", 3))
    assert nml.DimOp(x, 0).infer_shape([x.type]) == i64
    assert isinstance(nml.DimOp(x, 5).infer_shape([x.type]), ShapeMismatch)


def test_the_given_unifier_binds_symbols() -> None:
    unifier = Unifier()
    unifier.bind("B", 32)
    x, y = values(tensor("B", 3), tensor(32, 3))
    assert dims_of(nml.AddOp(x, y, x.type).infer_shape([x.type, y.type], unifier)) == (32, 3)
    z, w = values(tensor("T", 3), tensor(16, 3))
    nml.AddOp(z, w, z.type).infer_shape([z.type, w.type], unifier)
    assert unifier.resolve("T") == 16


def test_without_a_unifier_a_fresh_one_is_used() -> None:
    x, y = values(tensor("B", 3), tensor("N", 3))
    assert dims_of(nml.AddOp(x, y, x.type).infer_shape([x.type, y.type])) == ("B", 3)
    z, w = values(tensor(4, 3), tensor(5, 3))
    assert isinstance(nml.AddOp(z, w, z.type).infer_shape([z.type, w.type]), ShapeMismatch)
