"""nml builtins that join tensors or split one into pieces: cat, stack, split, chunk.

    %c = nml.cat %a, %b dim 1 : (...) -> ...
    %s = nml.split %x sizes [64 : i64, 64 : i64] dim 2 : (...) -> !nml.tuple<[...]>
    %k = nml.chunk %x 3 dim -1 : (...) -> !nml.tuple<[...]>

cat and stack take the elements of an `nml.list`; split and chunk give a tuple of
pieces (a list of unknown length when a size is known only at run time).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    IntegerAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.costs import (
    FREE,
    VIEW,
    Cost,
    per_element,
)
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    cat_shape,
    chunk_shapes,
    split_shapes,
    stack_shape,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    FunctionalOp,
    SizedOp,
    SpelledOp,
    TorchArgument,
    sized_entries,
    sizes_in_order,
    tensor_operands,
)
from tensorloom.dialects.nml.calls import (
    CallArgs,
    CallProblem,
    Const,
    Missing,
    is_int,
    unknown_type,
)
from tensorloom.dialects.nml.creation import ListOp
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    AnyType,
    Dim,
    Dims,
    ListType,
    TensorType,
    TupleType,
)


class JoinOp(SpelledOp, ABC):
    """`nml.cat %a, %b dim 1`, `nml.stack`: tensors joined along `dim` (a new one for
    stack); `torch.cat([a, b], dim=1)`."""

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
            raise VerifyException(f"{self.name.removeprefix('nml.')} needs at least one tensor")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        tensors = args.first()
        if isinstance(tensors, CallProblem):
            return tensors
        if not isinstance(tensors.owner, ListOp) or not tensors.owner.elements:
            return CallProblem(f"`{args.name}` needs a list of tensors, as in `cat([a, b], dim=1)`")
        dim = args.int_arg(1, "dim", 0)
        if isinstance(dim, CallProblem):
            return dim
        elements = list(tensors.owner.elements)
        return args.unknown_keywords(("dim",)) or cls(elements, dim, unknown_type())

    @property
    def tensor(self) -> SSAValue | None:
        return None

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", list(self.inputs)), ("dim", self.dim.value.data)]


@lazy_op_definition
class CatOp(JoinOp):
    name = "nml.cat"
    COST: ClassVar[Cost] = per_element()
    FUNCTION: ClassVar[str] = "cat"
    RECORDS: ClassVar[tuple[str, ...]] = ("cat", "concat")

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


@lazy_op_definition
class StackOp(JoinOp):
    name = "nml.stack"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "stack"

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        tensors = tensor_operands(operand_types, "stack")
        if isinstance(tensors, ShapeMismatch):
            return tensors
        result = stack_shape([t.dims for t in tensors], self.dim.value.data, unifier or Unifier())
        return result if isinstance(result, ShapeMismatch) else tensors[0].with_dims(result)


class _PiecesOp(FunctionalOp, ABC):
    """split and chunk: a tuple of pieces along `dim`."""

    def pieces(self, dims: Dims, unifier: Unifier) -> list[Dims | None] | ShapeMismatch | None: ...

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        operand = operand_types[0]
        if not isinstance(operand, TensorType):
            return ShapeMismatch(f"expected a tensor, got {operand}")
        pieces = self.pieces(operand.dims, unifier or Unifier())  # type: ignore[arg-type]
        if pieces is None:
            return ListType()
        if isinstance(pieces, ShapeMismatch):
            return pieces
        return TupleType.of([operand.with_dims(p) for p in pieces])


def _pieces_args(args: CallArgs, what: str) -> tuple[SSAValue, Const | Missing, int] | CallProblem:
    """split's and chunk's common arguments: the tensor, the size (`what`), and `dim`."""
    x = args.first()
    if isinstance(x, CallProblem):
        return x
    size = args.const(1, what)
    dim = args.int_arg(2, "dim", 0)
    if isinstance(dim, CallProblem):
        return dim
    return args.unknown_keywords((what, "dim")) or (x, size, dim)


def _split_problem() -> CallProblem:
    return CallProblem(
        "`split` needs a positive size or a list of sizes",
        "write `x.split(64, dim=-1)` or `x.split([64, 128], dim=-1)`",
    )


@lazy_op_definition
class SplitOp(SizedOp, SpelledOp):
    """`nml.split %x sizes [64 : i64, 64 : i64] dim 2` or `nml.split %x equal sizes ["?"](%d)
    dim 2` (pieces of one size, the last shorter): a tuple of tensors. A size may be `"?"`,
    the next dynamic operand (a config)."""

    name = "nml.split"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "split"

    input = operand_def()
    sizes = prop_def(ArrayAttr)
    dim = prop_def(IntegerAttr[I64])
    equal = opt_prop_def(UnitAttr)
    dynamic_sizes = var_operand_def()  # type: ignore[assignment]
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`equal` $equal^)? `sizes` $sizes (`(` $dynamic_sizes^ `)`)? `dim` $dim "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: Value,
        sizes: Sequence[Attribute],
        dynamic_sizes: Sequence[Value],
        equal: bool,
        dim: int,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input, dynamic_sizes],
            properties={
                "sizes": ArrayAttr(sizes),
                "dim": IntegerAttr(dim, i64),
                "equal": UnitAttr() if equal else None,
            },
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        found = _pieces_args(args, "split_size_or_sections")
        if isinstance(found, CallProblem):
            return found
        x, size, dim = found
        value = args.value(1, "split_size_or_sections")
        if value is None or (
            isinstance(size, int | float) and (size <= 0 or isinstance(size, float))
        ):
            return _split_problem()
        equal = not isinstance(value.owner, ListOp)
        sizes = args.sizes([value])
        if isinstance(sizes, CallProblem):
            return sizes
        shape, dynamic = sizes
        if isinstance(size, list) and not all(isinstance(v, int) and v >= 0 for v in size):
            return _split_problem()
        return cls(x, shape, dynamic, equal, dim, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        """`x.split(64, dim=2)`, `x.split([64, 128], dim=-1)`."""
        sizes = sizes_in_order(self.sizes, self.dynamic_sizes)
        first: TorchArgument = sizes[0] if self.equal is not None else sizes
        dim = self.dim.value.data
        return [("", first), *([("dim", dim)] if dim != 0 else [])]

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        operand = operand_types[0]
        if not isinstance(operand, TensorType):
            return (
                TensorType.unranked()
                if isinstance(operand, AnyType)
                else ShapeMismatch(f"expected a tensor, got {operand}")
            )
        entries = sized_entries(self.sizes, sizes)
        if not all(isinstance(e, int) for e in entries):
            return ListType()  # a size known only at run time: the pieces are unknown
        ints = [e for e in entries if isinstance(e, int)]
        split: int | list[int] = ints[0] if self.equal is not None else ints
        pieces = split_shapes(operand.dims, split, self.dim.value.data, unifier)
        if pieces is None or isinstance(pieces, ShapeMismatch):
            return ListType() if pieces is None else pieces
        return TupleType.of([operand.with_dims(p) for p in pieces])


@lazy_op_definition
class ChunkOp(_PiecesOp, SpelledOp):
    """`nml.chunk %x 3 dim -1`: `x.chunk(3, dim=-1)`."""

    name = "nml.chunk"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "chunk"

    input = operand_def()
    chunks = prop_def(IntegerAttr[I64])
    dim = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input $chunks `dim` $dim attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, chunks: int, dim: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"chunks": IntegerAttr(chunks, i64), "dim": IntegerAttr(dim, i64)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.chunks.value.data <= 0:
            raise VerifyException("chunk needs a positive number of chunks")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        found = _pieces_args(args, "chunks")
        if isinstance(found, CallProblem):
            return found
        x, size, dim = found
        if not is_int(size) or size <= 0:  # type: ignore[operator]
            return CallProblem("`chunks` of `chunk` must be a positive constant integer")
        return cls(x, size, dim, unknown_type())  # type: ignore[arg-type]

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        dim = self.dim.value.data
        return [("", self.chunks.value.data), *([("dim", dim)] if dim != 0 else [])]

    def pieces(self, dims: Dims, unifier: Unifier) -> list[Dims | None] | ShapeMismatch | None:
        return chunk_shapes(dims, self.chunks.value.data, self.dim.value.data, unifier)  # type: ignore[return-value]
