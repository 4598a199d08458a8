"""nml functional builtins: relu, softmax, reshape, matmul, ... with their shape rules.

    %1 = nml.relu %0 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
    %2 = nml.softmax %1 dim -1 : (...) -> ...
    %3 = nml.reshape %2 to [B, -1] : (!nml.tensor<[B, 4, 64], f32>) -> ...
    %4 = nml.add %a, %b : (!nml.tensor<[B, T, 512], f32>, ...) -> ...

Every op here implements `infer_shape(operand_types, unifier)`, returning the result
type or a `ShapeMismatch`; the shape-inference pass calls it and supplies the
`Unifier` of symbolic dims. The rules themselves are the plain Python helpers of
`tensorloom/dialects/shapes.py`, which the layer catalogue shares.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.lazy_format import LazyFormatOp
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    AnyType,
    Dim,
    Dims,
    ListType,
    NoneValueAttr,
    SliceAttr,
    TensorType,
    TupleType,
)
from tensorloom.dialects.shapes import (
    Index,
    Shape,
    ShapeMismatch,
    Slice,
    Unifier,
    broadcast,
    cat_shape,
    flatten_shape,
    index_shape,
    matmul_shape,
    normalize_dim,
    permute_shape,
    reduce_shape,
    reshape_shape,
    same_shape,
    transpose_shape,
)

DimsRule = Callable[[Dims], "Shape | ShapeMismatch"]


def apply_rule(operand: Attribute, rule: DimsRule) -> Attribute | ShapeMismatch:
    """Apply a dims rule to a tensor type; unknown rank stays unknown."""
    if not isinstance(operand, TensorType):
        return ShapeMismatch(f"expected a tensor, got {operand}")
    dims = operand.dims
    if dims is None:
        return operand
    result = rule(dims)
    if isinstance(result, ShapeMismatch):
        return result
    return operand.with_dims(result)


def _ints(attr: ArrayAttr | None) -> list[int] | None:
    if attr is None:
        return None
    return [a.value.data for a in attr.data if isinstance(a, IntegerAttr)]


def _int_array(values: Sequence[int]) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr([IntegerAttr(v, i64) for v in values])


class FunctionalOp(LazyFormatOp, ABC):
    """A builtin with a shape rule; the shape-inference pass calls `infer_shape`
    with its `Unifier` (without one, a fresh unifier binds the symbols)."""

    @abstractmethod
    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch: ...


class UnaryOp(FunctionalOp, ABC):
    """An elementwise op of one operand: the result has the operand's type."""

    input = operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, result_type: Attribute | None = None):
        operand_type = SSAValue.get(input).type
        super().__init__(operands=[input], result_types=[result_type or operand_type])

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return operand_types[0]


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "nml.relu"


@irdl_op_definition
class GeluOp(UnaryOp):
    name = "nml.gelu"


@irdl_op_definition
class SiluOp(UnaryOp):
    name = "nml.silu"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "nml.tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "nml.sigmoid"


@irdl_op_definition
class NegOp(UnaryOp):
    name = "nml.neg"


class SoftmaxLikeOp(FunctionalOp, ABC):
    input = operand_def()
    dim = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `dim` $dim attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, dim: int, result_type: Attribute):
        super().__init__(
            operands=[input], properties={"dim": IntegerAttr(dim, i64)}, result_types=[result_type]
        )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axis = self.dim.value.data
        return apply_rule(operand_types[0], lambda dims: same_shape(dims, axis))


@irdl_op_definition
class SoftmaxOp(SoftmaxLikeOp):
    name = "nml.softmax"


@irdl_op_definition
class LogSoftmaxOp(SoftmaxLikeOp):
    name = "nml.log_softmax"


@irdl_op_definition
class DropoutOp(FunctionalOp):
    """`nml.dropout %x p 0.1`; `p` must lie in [0, 1)."""

    name = "nml.dropout"

    input = operand_def()
    p = prop_def(FloatAttr[Float64Type])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input `p` $p attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, p: float, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"p": FloatAttr(p, Float64Type())},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        p = self.p.value.data
        if not 0.0 <= p < 1.0:
            raise VerifyException(f"dropout probability must be in [0, 1), got {p}")

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return operand_types[0]


@irdl_op_definition
class FlattenOp(FunctionalOp):
    name = "nml.flatten"

    input = operand_def()
    start_dim = prop_def(IntegerAttr[I64])
    end_dim = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `from` $start_dim `to` $end_dim attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, start_dim: int, end_dim: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={
                "start_dim": IntegerAttr(start_dim, i64),
                "end_dim": IntegerAttr(end_dim, i64),
            },
            result_types=[result_type],
        )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        start, end = self.start_dim.value.data, self.end_dim.value.data
        return apply_rule(operand_types[0], lambda dims: flatten_shape(dims, start, end))


DYNAMIC = "?"


def _shape_entry(attr: Attribute) -> Dim | str:
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return None


class ReshapeLikeOp(FunctionalOp, ABC):
    """`nml.reshape %x to [B, -1, 64] (%n)`: sizes are ints (one may be -1),
    symbolic names, or `"?"` for a runtime size taken, in order, from `dynamic_sizes`."""

    input = operand_def()
    shape = prop_def(ArrayAttr)
    dynamic_sizes = var_operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `to` $shape (`(` $dynamic_sizes^ `)`)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: Value,
        shape: Sequence[Attribute],
        dynamic_sizes: Sequence[Value],
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input, dynamic_sizes],
            properties={"shape": ArrayAttr(shape)},
            result_types=[result_type],
        )

    def target(self) -> list[Dim]:
        """The target dims: `"?"` entries become unknown (None)."""
        entries = [_shape_entry(a) for a in self.shape.data]
        return [None if e == DYNAMIC else e for e in entries]

    def verify_(self) -> None:
        entries = [_shape_entry(a) for a in self.shape.data]
        if entries.count(-1) > 1:
            raise VerifyException("at most one dimension of a reshape may be -1")
        if any(isinstance(e, int) and e < -1 for e in entries):
            raise VerifyException("reshape sizes must be non-negative or -1")
        dynamic = entries.count(DYNAMIC)
        if dynamic != len(self.dynamic_sizes):
            raise VerifyException(
                f"reshape has {dynamic} `?` sizes but {len(self.dynamic_sizes)} dynamic operands"
            )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        target, unifier = self.target(), unifier or Unifier()
        return apply_rule(operand_types[0], lambda dims: reshape_shape(dims, target, unifier))


@irdl_op_definition
class ReshapeOp(ReshapeLikeOp):
    name = "nml.reshape"


@irdl_op_definition
class ViewOp(ReshapeLikeOp):
    name = "nml.view"


@irdl_op_definition
class PermuteOp(FunctionalOp):
    name = "nml.permute"

    input = operand_def()
    dims = prop_def(ArrayAttr[IntegerAttr[I64]])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input $dims attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, dims: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[input], properties={"dims": _int_array(dims)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        order = _ints(self.dims) or []
        normal = sorted(d % len(order) if -len(order) <= d < len(order) else d for d in order)
        if normal != list(range(len(order))):
            raise VerifyException(f"permute dims {order} are not a permutation")

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        order = _ints(self.dims) or []
        return apply_rule(operand_types[0], lambda dims: permute_shape(dims, order))


@irdl_op_definition
class TransposeOp(FunctionalOp):
    name = "nml.transpose"

    input = operand_def()
    dim0 = prop_def(IntegerAttr[I64])
    dim1 = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input $dim0 `,` $dim1 attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, dim0: int, dim1: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"dim0": IntegerAttr(dim0, i64), "dim1": IntegerAttr(dim1, i64)},
            result_types=[result_type],
        )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        a, b = self.dim0.value.data, self.dim1.value.data
        return apply_rule(operand_types[0], lambda dims: transpose_shape(dims, a, b))


class ReductionOp(FunctionalOp, ABC):
    """`nml.mean %x dims [-1] keepdim`; without `dims` it reduces every dim."""

    input = operand_def()
    dims = opt_prop_def(ArrayAttr[IntegerAttr[I64]])
    keepdim = opt_prop_def(UnitAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`dims` $dims^)? (`keepdim` $keepdim^)? attr-dict `:` "
        "functional-type($input, $result)"
    )

    def __init__(
        self, input: Value, dims: Sequence[int] | None, keepdim: bool, result_type: Attribute
    ):
        super().__init__(
            operands=[input],
            properties={
                "dims": _int_array(dims) if dims is not None else None,
                "keepdim": UnitAttr() if keepdim else None,
            },
            result_types=[result_type],
        )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axes, keep = _ints(self.dims), self.keepdim is not None
        return apply_rule(operand_types[0], lambda dims: reduce_shape(dims, axes, keep))


@irdl_op_definition
class MeanOp(ReductionOp):
    name = "nml.mean"


@irdl_op_definition
class SumOp(ReductionOp):
    name = "nml.sum"


@irdl_op_definition
class CatOp(FunctionalOp):
    name = "nml.cat"

    inputs = var_operand_def()
    dim = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)"
    )

    def __init__(self, inputs: Sequence[Value], dim: int, result_type: Attribute):
        super().__init__(
            operands=[inputs], properties={"dim": IntegerAttr(dim, i64)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("cat needs at least one tensor")

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        tensors = [t for t in operand_types if isinstance(t, TensorType)]
        if len(tensors) != len(operand_types):
            return ShapeMismatch("cat takes tensors only")
        all_dims = [t.dims for t in tensors]
        if any(d is None for d in all_dims):
            return tensors[0].with_dims(None)
        result = cat_shape(all_dims, self.dim.value.data, unifier or Unifier())
        return result if isinstance(result, ShapeMismatch) else tensors[0].with_dims(result)


class BinaryOp(FunctionalOp, ABC):
    """Elementwise arithmetic with broadcasting; either side may be a scalar."""

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, lhs: Value, rhs: Value, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        left, right = operand_types
        if not isinstance(left, TensorType) or not isinstance(right, TensorType):
            return _scalar_mix(left, right)
        a, b = left.dims, right.dims
        if a is None or b is None:
            return left.with_dims(None)
        result = broadcast(a, b, unifier or Unifier())
        return result if isinstance(result, ShapeMismatch) else left.with_dims(result)


def _scalar_mix(left: Attribute, right: Attribute) -> Attribute | ShapeMismatch:
    """A tensor with a scalar keeps the tensor's type; two scalars give f64 or i64."""
    for side in (left, right):
        if isinstance(side, TensorType):
            return side
    if not all(isinstance(t, IntegerType | Float64Type | AnyType) for t in (left, right)):
        return ShapeMismatch(f"arithmetic on {left} and {right}")
    if any(isinstance(t, AnyType) for t in (left, right)):
        return AnyType()
    return Float64Type() if Float64Type() in (left, right) else i64


@irdl_op_definition
class AddOp(BinaryOp):
    name = "nml.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "nml.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "nml.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    name = "nml.div"


@irdl_op_definition
class PowOp(BinaryOp):
    name = "nml.pow"


@irdl_op_definition
class MatmulOp(BinaryOp):
    name = "nml.matmul"

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        left, right = operand_types
        if not isinstance(left, TensorType) or not isinstance(right, TensorType):
            return ShapeMismatch("matmul takes two tensors")
        a, b = left.dims, right.dims
        if a is None or b is None:
            return left.with_dims(None)
        result = matmul_shape(a, b, unifier or Unifier())
        return result if isinstance(result, ShapeMismatch) else left.with_dims(result)


IndexEntry = Index | str
"""An `indices` item as the shape rule reads it, or `"?"`, a select by a runtime value."""

_STRING_ENTRIES: dict[str, Index] = {"...": Ellipsis, ":": Slice()}


def index_entry(attr: Attribute) -> IndexEntry:
    """An `indices` item as a shape rule reads it (see `IndexOp`)."""
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, NoneValueAttr):
        return None
    if isinstance(attr, StringAttr):
        return _STRING_ENTRIES.get(attr.data, attr.data)
    if isinstance(attr, SliceAttr):
        parts = [p.value.data if isinstance(p, IntegerAttr) else None for p in attr.parameters]
        return Slice(*parts)
    return DYNAMIC


@irdl_op_definition
class IndexOp(FunctionalOp):
    """`nml.index %x [":", -1 : i64]`: items are ints, `#nml.slice<...>`, `":"`,
    `"..."`, `#nml.none` (a new axis) or `"?"`, a select by the next dynamic operand."""

    name = "nml.index"

    input = operand_def()
    indices = prop_def(ArrayAttr)
    dynamic_indices = var_operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input $indices (`(` $dynamic_indices^ `)`)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: Value,
        indices: Sequence[Attribute],
        dynamic_indices: Sequence[Value],
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input, dynamic_indices],
            properties={"indices": ArrayAttr(indices)},
            result_types=[result_type],
        )

    def entries(self) -> list[IndexEntry]:
        return [index_entry(a) for a in self.indices.data]

    def verify_(self) -> None:
        entries = self.entries()
        if entries.count(Ellipsis) > 1:
            raise VerifyException("an index may hold at most one `...`")
        if entries.count(DYNAMIC) != len(self.dynamic_indices):
            raise VerifyException(
                f"index has {entries.count(DYNAMIC)} `?` items but "
                f"{len(self.dynamic_indices)} dynamic operands"
            )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        entries = [0 if isinstance(e, str) else e for e in self.entries()]
        if isinstance(operand_types[0], TupleType):
            return tuple_element(operand_types[0], entries)
        return apply_rule(operand_types[0], lambda dims: index_shape(dims, entries))


def tuple_element(tuple_type: TupleType, entries: Sequence[object]) -> Attribute | ShapeMismatch:
    """`t[i]` of a tuple: element `i` (negative from the end)."""
    types = tuple_type.types
    if len(entries) != 1 or not isinstance(entries[0], int) or isinstance(entries[0], bool):
        return ShapeMismatch("a tuple is indexed by one integer constant")
    index = entries[0]
    if not -len(types) <= index < len(types):
        return ShapeMismatch(f"index {index} is out of range for a tuple of {len(types)} elements")
    return types[index]


@irdl_op_definition
class DimOp(FunctionalOp):
    """`%n = nml.dim %x 0 : (...) -> i64`: one size of a tensor (`x.size(0)`, `x.shape[0]`)."""

    name = "nml.dim"

    input = operand_def()
    index = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input $index attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, index: int):
        super().__init__(
            operands=[input], properties={"index": IntegerAttr(index, i64)}, result_types=[i64]
        )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        operand = operand_types[0]
        if not isinstance(operand, TensorType):
            return ShapeMismatch(f"expected a tensor, got {operand}")
        rank = operand.rank
        if rank is not None:
            normal = normalize_dim(self.index.value.data, rank)
            if isinstance(normal, ShapeMismatch):
                return normal
        return i64


@irdl_op_definition
class ListOp(FunctionalOp):
    """`%l = nml.list %a, %b : (...) -> !nml.list`: a list or tuple of values."""

    name = "nml.list"

    elements = var_operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "($elements^)? attr-dict `:` functional-type($elements, $result)"
    )

    def __init__(self, elements: Sequence[Value]):
        super().__init__(operands=[elements], result_types=[ListType()])

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        """The elements' types, one by one: `(recon, mu, logvar)` keeps each shape."""
        return TupleType.of(operand_types)


UNARY_OPS: dict[str, type[UnaryOp]] = {
    op.name.removeprefix("nml."): op for op in (ReluOp, GeluOp, SiluOp, TanhOp, SigmoidOp, NegOp)
}
BINARY_OPS: dict[str, type[BinaryOp]] = {
    "+": AddOp, "-": SubOp, "*": MulOp, "/": DivOp, "**": PowOp, "@": MatmulOp,
}  # fmt: skip

FUNCTIONAL_OPS: tuple[type[FunctionalOp], ...] = (
    *UNARY_OPS.values(),
    SoftmaxOp, LogSoftmaxOp, DropoutOp, FlattenOp, ReshapeOp, ViewOp, PermuteOp, TransposeOp,
    MeanOp, SumOp, CatOp, *BINARY_OPS.values(), IndexOp, DimOp, ListOp,
)  # fmt: skip
