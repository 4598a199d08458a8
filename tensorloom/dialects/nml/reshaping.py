"""nml builtins that rearrange dims: flatten, reshape, view, permute, squeeze, expand, repeat.

    %1 = nml.flatten %0 from 1 to -1 : (!nml.tensor<[B, 4, 64], f32>) -> ...
    %2 = nml.reshape %1 to [B, -1, 64] (%n) : (...) -> ...
    %3 = nml.permute %2 [0, 2, 1] : (...) -> ...
    %4 = nml.expand %3 to [-1, "?", 4](%m) : (...) -> ...

A size may be known only at run time (`"?"`, the next dynamic operand): such an op is
a `SizedOp`, and shape inference gives it what it knows of each size.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Iterator, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    IntegerAttr,
    StringAttr,
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
)
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    expand_shape,
    flatten_shape,
    permute_shape,
    repeat_shape,
    reshape_shape,
    squeeze_shape,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    SizedOp,
    SizeOf,
    SpelledOp,
    TorchArgument,
    apply_rule,
    int_array,
    int_values,
    shape_entry,
    sized_entries,
    sizes_in_order,
)
from tensorloom.dialects.nml.calls import (
    DYNAMIC,
    CallArgs,
    CallProblem,
    is_int,
    unknown_type,
)
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    Dim,
    Dims,
    TensorType,
)


@lazy_op_definition
class FlattenOp(SpelledOp):
    """`nml.flatten %x from 1 to -1`: `x.flatten(1)`. The function `flatten(x)` keeps the
    batch dim (`start_dim=1`, as `nn.Flatten`), the method `x.flatten()` flattens all, as
    `torch.flatten` does."""

    name = "nml.flatten"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "flatten"

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

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        start = args.int_arg(1, "start_dim", 0 if args.method else 1)
        end = args.int_arg(2, "end_dim", -1)
        if isinstance(start, CallProblem):
            return start
        if isinstance(end, CallProblem):
            return end
        return args.unknown_keywords(("start_dim", "end_dim")) or cls(x, start, end, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        """`x.flatten(1)`: trailing default arguments are left out."""
        start, end = self.start_dim.value.data, self.end_dim.value.data
        kept = [start, end] if end != -1 else [start] if start != 0 else []
        return [("", d) for d in kept]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        start, end = self.start_dim.value.data, self.end_dim.value.data
        return apply_rule(operand_types[0], lambda dims: flatten_shape(dims, start, end))


class ToSizesOp(SizedOp, SpelledOp, ABC):
    """An op of a tensor and a list of sizes (`to [B, -1, 64](%n)`): reshape and view,
    expand and repeat. An entry is an int, a symbolic name, or `"?"`, the next of
    `dynamic_sizes` (a size known only when the script runs)."""

    input = operand_def()
    shape = prop_def(ArrayAttr)
    dynamic_sizes = var_operand_def()  # type: ignore[assignment]
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


class ReshapeLikeOp(ToSizesOp, ABC):
    """`nml.reshape %x to [B, -1, 64] (%n)`: sizes are ints (one may be -1),
    symbolic names, or `"?"` for a runtime size taken, in order, from `dynamic_sizes`.
    `x.reshape(x.size(0), -1, 64)`: a symbolic size reads the input's own size."""

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        given = args.positional[1:] or (
            [args.keywords["shape"]] if "shape" in args.keywords else []
        )
        if not given:
            return CallProblem(f"`{args.name}` needs the target shape")
        sizes = args.sizes(given)
        if isinstance(sizes, CallProblem):
            return sizes
        shape, dynamic = sizes
        return _reshape_problem(args.name, shape) or cls(x, shape, dynamic, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        operand = self.input.type
        dims = operand.dims if isinstance(operand, TensorType) else None
        dynamic = iter(self.dynamic_sizes)
        return [("", self._size(entry, dynamic, dims)) for entry in self.shape.data]

    def _size(
        self, entry: Attribute, dynamic: Iterator[SSAValue], dims: Dims | None
    ) -> TorchArgument:
        if isinstance(entry, IntegerAttr):
            return entry.value.data
        assert isinstance(entry, StringAttr)
        if entry.data == DYNAMIC:
            return next(dynamic)
        if not dims or entry.data not in dims:
            return -1  # a size the checker could not place: the rest of the elements
        return SizeOf(self.input, dims.index(entry.data))

    def target(self) -> list[Dim]:
        """The target dims: `"?"` entries become unknown (None)."""
        entries = [shape_entry(a) for a in self.shape.data]
        return [None if e == DYNAMIC else e for e in entries]

    def verify_(self) -> None:
        entries = [shape_entry(a) for a in self.shape.data]
        if entries.count(-1) > 1:
            raise VerifyException("at most one dimension of a reshape may be -1")
        if any(isinstance(e, int) and e < -1 for e in entries):
            raise VerifyException("reshape sizes must be non-negative or -1")
        dynamic = entries.count(DYNAMIC)
        if dynamic != len(self.dynamic_sizes):
            raise VerifyException(
                f"reshape has {dynamic} `?` sizes but {len(self.dynamic_sizes)} dynamic operands"
            )

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        target = sized_entries(self.shape, sizes)
        return apply_rule(operand_types[0], lambda dims: reshape_shape(dims, target, unifier))


def _reshape_problem(name: str, shape: list[Attribute]) -> CallProblem | None:
    sizes = [a.value.data for a in shape if isinstance(a, IntegerAttr)]
    if sizes.count(-1) > 1:
        return CallProblem(f"at most one size of `{name}` may be -1 (inferred)")
    negative = next((n for n in sizes if n < -1), None)
    if negative is not None:
        return CallProblem(f"`{name}` sizes must be -1 (inferred) or more, got {negative}")
    return None


@lazy_op_definition
class ReshapeOp(ReshapeLikeOp):
    name = "nml.reshape"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "reshape"


@lazy_op_definition
class ViewOp(ReshapeLikeOp):
    name = "nml.view"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "view"


@lazy_op_definition
class PermuteOp(SpelledOp):
    """`nml.permute %x [0, 2, 1]`: `x.permute(0, 2, 1)`."""

    name = "nml.permute"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "permute"

    input = operand_def()
    dims = prop_def(ArrayAttr[IntegerAttr[I64]])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input $dims attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, dims: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[input], properties={"dims": int_array(dims)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        order = int_values(self.dims) or []
        normal = sorted(d % len(order) if -len(order) <= d < len(order) else d for d in order)
        if normal != list(range(len(order))):
            raise VerifyException(f"permute dims {order} are not a permutation")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dims = [args.constant_of(v) for v in args.positional[1:]]
        if len(dims) == 1 and isinstance(dims[0], list):
            dims = list(dims[0])
        if not dims or not all(is_int(d) for d in dims):
            return CallProblem("`permute` needs the new order of dims as constant integers")
        order = [d for d in dims if isinstance(d, int)]
        normal = sorted(d % len(order) if -len(order) <= d < len(order) else d for d in order)
        if normal != list(range(len(order))):
            shown = ", ".join(str(d) for d in order)
            return CallProblem(
                f"`permute` dims ({shown}) are not a permutation of 0..{len(order) - 1}"
            )
        return cls(x, order, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", d) for d in int_values(self.dims) or []]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        order = int_values(self.dims) or []
        return apply_rule(operand_types[0], lambda dims: permute_shape(dims, order))


class _SizesOp(ToSizesOp, ABC):
    """`nml.expand %x to [-1, "?", 4](%n)`: sizes are ints or `"?"` (the next dynamic operand);
    `x.expand(B, -1, -1)`, `x.repeat(1, 4)`, given as separate arguments or one list."""

    def verify_(self) -> None:
        dynamic = [shape_entry(a) for a in self.shape.data].count(DYNAMIC)
        if dynamic != len(self.dynamic_sizes):
            raise VerifyException(
                f"{self.name} has {dynamic} `?` sizes but "
                f"{len(self.dynamic_sizes)} dynamic operands"
            )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        given = args.positional[1:] or ([args.keywords["size"]] if "size" in args.keywords else [])
        if not given:
            return CallProblem(f"`{args.name}` needs the sizes, as in `x.{args.name}(B, -1)`")
        found = args.sizes(given)
        if isinstance(found, CallProblem):
            return found
        shape, dynamic = found
        return cls(x, shape, dynamic, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", size) for size in sizes_in_order(self.shape, self.dynamic_sizes)]


@lazy_op_definition
class ExpandOp(_SizesOp):
    name = "nml.expand"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "expand"

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        target = sized_entries(self.shape, sizes)
        return apply_rule(operand_types[0], lambda dims: expand_shape(dims, target, unifier))


@lazy_op_definition
class RepeatOp(_SizesOp):
    name = "nml.repeat"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "repeat"

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        counts = sized_entries(self.shape, sizes)
        return apply_rule(operand_types[0], lambda dims: repeat_shape(dims, counts))


@lazy_op_definition
class SqueezeOp(SpelledOp):
    """`nml.squeeze %x dims [1]`: without `dims`, every dim of size 1; `x.squeeze()`,
    `x.squeeze(-1)`, `x.squeeze((1, 2))`."""

    name = "nml.squeeze"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "squeeze"

    input = operand_def()
    dims = opt_prop_def(ArrayAttr[IntegerAttr[I64]])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`dims` $dims^)? attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, dims: Sequence[int] | None, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"dims": int_array(dims) if dims is not None else None},
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dim = args.const(1, "dim", None)
        if is_int(dim):
            dim = [dim]  # type: ignore[list-item]
        if not (dim is None or (isinstance(dim, list) and all(isinstance(d, int) for d in dim))):
            return CallProblem("`dim` of `squeeze` must be a constant integer or list of them")
        dims = None if dim is None else [d for d in dim if isinstance(d, int)]
        return args.unknown_keywords(("dim",)) or cls(x, dims, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        dims = int_values(self.dims)
        if dims is None:
            return []
        return [("", dims[0] if len(dims) == 1 else tuple(dims))]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axes, u = int_values(self.dims), unifier or Unifier()
        return apply_rule(operand_types[0], lambda dims: squeeze_shape(dims, axes, u))
