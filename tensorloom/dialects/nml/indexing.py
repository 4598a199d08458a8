"""nml builtins that index: `x[...]`, `x[...] = v`, `x.size(0)`, where, masked_fill.

    %1 = nml.index %x [":", -1 : i64] : (!nml.tensor<[B, T, 8], f32>) -> ...
    %2 = nml.index_put "+=" %x [":", "?"] (%idx) , %v : (...) -> ...
    %n = nml.dim %x 0 : (!nml.tensor<[B, 8], f32>) -> i64
    %w = nml.where %mask, %a, %b : (...) -> ...

An index's items are ints, slices, `":"`, `"..."`, `#nml.none` or `"?"`, a select by
the next dynamic operand, typed by what that operand is (`typed_entries`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    Float64Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    i1,
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
    PER_VALUE_ELEMENT,
    VIEW,
    Cost,
)
from tensorloom.catalogue.shapes import (
    UNKNOWN_BOUND,
    Index,
    MaskIndex,
    Shape,
    ShapeMismatch,
    Slice,
    TensorIndex,
    Unifier,
    assigned_region,
    broadcast,
    broadcast_into,
    index_shape,
    normalize_dim,
    value_into_region,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    OP_OF_RECORD,
    FunctionalOp,
    SpelledOp,
    TorchArgument,
    apply_rule,
)
from tensorloom.dialects.nml.calls import (
    DYNAMIC,
    CallArgs,
    CallProblem,
    unknown_type,
)
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    AnyType,
    Dim,
    ListType,
    NoneType,
    NoneValueAttr,
    SliceAttr,
    TensorType,
    TupleType,
    element_type_name,
)

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
        parts = [_slice_part(p) for p in attr.parameters]
        return Slice(*parts)
    return DYNAMIC


def _slice_part(part: Attribute) -> int | str | None:
    """A slice bound: an int, `"?"` (computed: the next dynamic operand), or None."""
    if isinstance(part, IntegerAttr):
        return part.value.data
    return DYNAMIC if isinstance(part, StringAttr) and part.data == DYNAMIC else None


def dynamic_count(entries: Sequence[IndexEntry]) -> int:
    """How many dynamic operands an index takes: its selects and computed slice bounds."""
    slices = [e for e in entries if isinstance(e, Slice)]
    bounds = sum(1 for s in slices for b in (s.start, s.stop, s.step) if b == DYNAMIC)
    return entries.count(DYNAMIC) + bounds


@lazy_op_definition
class IndexOp(FunctionalOp):
    """`nml.index %x [":", -1 : i64]`: items are ints, `#nml.slice<...>`, `":"`,
    `"..."`, `#nml.none` (a new axis) or `"?"`, a select by the next dynamic operand."""

    name = "nml.index"
    COST: ClassVar[Cost] = VIEW

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
        _verify_index(self.entries(), len(self.dynamic_indices))

    def result_type(
        self,
        operand_types: Sequence[Attribute],
        size_of: Callable[[SSAValue], Dim],
        unifier: Unifier,
    ) -> Attribute | ShapeMismatch:
        """A computed slice bound is the size the forward computed (`x[:, :L]` with `L` a
        config, `w[:, i:i + 1]` in a loop over a range), else unknown."""
        sizes = [unifier.resolve(size_of(v)) for v in self.dynamic_indices]
        operand = operand_types[0]
        if isinstance(operand, TensorType) and operand.dims is not None:  # `T` bound to 8
            operand = operand.with_dims(unifier.resolve_shape(operand.dims))
        return self._shape(operand, operand_types[1:], sizes)

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return self._shape(operand_types[0], operand_types[1:], None)

    def _shape(
        self, operand: Attribute, dynamic: Sequence[Attribute], sizes: Sequence[Dim] | None
    ) -> Attribute | ShapeMismatch:
        entries = typed_entries(self.entries(), dynamic, sizes, masks=False)
        if isinstance(entries, ShapeMismatch):
            return entries
        if isinstance(operand, TupleType):
            return tuple_item(operand, entries)
        return apply_rule(operand, lambda dims: index_shape(dims, entries))


def typed_entries(
    items: Sequence[IndexEntry],
    dynamic: Sequence[Attribute],
    sizes: Sequence[Dim] | None,
    *,
    masks: bool,
) -> list[Index] | ShapeMismatch:
    """The entries with each `"?"` read off its operand: a slice bound its computed size
    (`sizes`, where the forward's values are known; else unknown), a select by its type:
    an integer, an i64 tensor (its dims take the indexed dim's place), a boolean mask
    where `masks` (an assignment's: a read by a mask is refused, since the size it gives
    depends on the data)."""
    position = 0
    entries: list[Index] = []
    for entry in items:
        if isinstance(entry, Slice):
            parts: list[Dim] = []
            for part in entry.parts():
                if part == DYNAMIC:
                    size = sizes[position] if sizes is not None else None
                    parts.append(UNKNOWN_BOUND if size is None else size)
                    position += 1
                else:
                    parts.append(part)
            entries.append(Slice(*parts))
            continue
        if not isinstance(entry, str):
            entries.append(entry)
            continue
        index = dynamic[position] if position < len(dynamic) else None
        position += 1
        selected = _select(index, masks)
        if isinstance(selected, ShapeMismatch):
            return selected
        entries.append(selected)
    return entries


def _select(index: Attribute | None, masks: bool) -> Index | ShapeMismatch:
    """What a runtime index selects: one element (an integer), or a tensor's worth."""
    if isinstance(index, TupleType | ListType):
        return ShapeMismatch(
            "a tuple or a list as one index is not supported",
            help="index by its elements side by side: `x[rows, cols]`, `x[where(m)[0]]`",
        )
    if isinstance(index, Float64Type):
        return ShapeMismatch("an index is an integer or a tensor, got a float")
    if not isinstance(index, TensorType):
        return 0
    if index.element_type == IntegerType(1):
        if masks:
            return MaskIndex(index.dims)
        return ShapeMismatch(
            "indexing by a boolean mask gives a size that depends on the data",
            help="keep the shape: `where(mask, x, 0.0)` or `x.masked_fill(mask, 0.0)`",
        )
    if index.element_type != i64:
        return ShapeMismatch(
            f"a tensor index holds integers (i64), got {index.element_type}",
            help="make the index with `.long()`, `argmax`, `topk` or `arange`",
        )
    return TensorIndex(index.dims)


def tuple_item(operand: TupleType, entries: Sequence[Index]) -> Attribute | ShapeMismatch:
    """`x.split(4)[0]`: one element of a tuple, by a constant index."""
    elements = operand.elements.data
    index = entries[0] if len(entries) == 1 else None
    if not isinstance(index, int):
        return ShapeMismatch("a tuple takes one constant integer index")
    if not -len(elements) <= index < len(elements):
        return ShapeMismatch(
            f"index {index} is out of range for a tuple of {len(elements)}",
            expected=f"an index in [{-len(elements)}, {len(elements) - 1}]",
            got=str(index),
        )
    return elements[index]


AUGMENTED = ("+=", "-=", "*=", "/=")
"""An `nml.index_put`'s operators beside `=`."""

_KINDS = {"i1": 0, "i64": 1}
"""bool < integer < floating point: the order PyTorch promotes in (floats are 2)."""


def count_name(op: Operation) -> str:
    """The name of a data-dependent length: `nnz_<line>_<column>` of the op's location."""
    location = op.location
    inner = getattr(location, "locations", None)  # a FusedLoc: its start
    start = inner.data[0] if inner else location
    line, column = getattr(start, "line", None), getattr(start, "column", None)
    if line is None or column is None:
        return "nnz"
    return f"nnz_{line.data}_{column.data}"


def _a(name: str) -> str:
    """`an i64`, `a f32`: the article as the name is read aloud."""
    return f"an {name}" if name.startswith("i") else f"a {name}"


@lazy_op_definition
class IndexPutOp(FunctionalOp):
    """`x[:, 0] = y`, `results[idx] += v`, `x[mask] = 0.0`: the tensor with the region
    `x[...]` replaced (or updated, by an augmented `operator`), typed as `x`:

        %x2 = nml.index_put "+=" %x [":", "?"] (%idx) , %v : (...) -> !nml.tensor<[N, D], f32>

    The value broadcasts to the region as PyTorch's assignment copies it; a boolean mask
    selects a number of elements of its own (`nnz_<line>_<column>`). `in_place`, set by
    convert-nml-to-torch, says nothing else sees `x`, so the script writes into it rather
    than into a copy (`x = x.clone()` first)."""

    name = "nml.index_put"
    COST: ClassVar[Cost] = PER_VALUE_ELEMENT

    input = operand_def()
    value = operand_def()
    dynamic_indices = var_operand_def()
    indices = prop_def(ArrayAttr)
    operator = prop_def(StringAttr)
    in_place = opt_prop_def(UnitAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$operator $input $indices (`(` $dynamic_indices^ `)`)? `,` $value "
        "(`in_place` $in_place^)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: Value,
        indices: Sequence[Attribute],
        dynamic_indices: Sequence[Value],
        value: Value,
        operator: str,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input, value, dynamic_indices],
            properties={"indices": ArrayAttr(indices), "operator": StringAttr(operator)},
            result_types=[result_type],
        )

    def entries(self) -> list[IndexEntry]:
        return [index_entry(a) for a in self.indices.data]

    def verify_(self) -> None:
        if self.operator.data not in ("=", *AUGMENTED):
            raise VerifyException(f"unknown assignment operator `{self.operator.data}`")
        _verify_index(self.entries(), len(self.dynamic_indices))

    def result_type(
        self,
        operand_types: Sequence[Attribute],
        size_of: Callable[[SSAValue], Dim],
        unifier: Unifier,
    ) -> Attribute | ShapeMismatch:
        sizes = [unifier.resolve(size_of(v)) for v in self.dynamic_indices]
        return self._check(operand_types, sizes, unifier)

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return self._check(operand_types, None, unifier or Unifier())

    def _check(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim] | None, unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        target, value, *dynamic = operand_types
        if not isinstance(target, TensorType):
            return ShapeMismatch(f"only a tensor can be assigned into, got {target}")
        problem = self._problem(target, value, dynamic, sizes, unifier)
        if problem is None:
            return target
        subject = f"`{self.input.name_hint or 'x'}[...] {self.operator.data}`"
        return ShapeMismatch(f"{subject}: {problem.message}", help=problem.help)

    def _problem(
        self,
        target: TensorType,
        value: Attribute,
        dynamic: Sequence[Attribute],
        sizes: Sequence[Dim] | None,
        unifier: Unifier,
    ) -> ShapeMismatch | None:
        entries = typed_entries(self.entries(), dynamic, sizes, masks=True)
        if isinstance(entries, ShapeMismatch):
            return entries
        count = count_name(self)
        dims = unifier.resolve_shape(target.dims) if target.dims is not None else None
        region = assigned_region(dims, entries, count, unifier)
        if isinstance(region, ShapeMismatch):
            return region
        if isinstance(value, TensorType):
            problem = value_into_region(region, value.dims, count, unifier)
            if problem is not None:
                return problem
        elif not isinstance(value, IntegerType | Float64Type | AnyType):
            names: dict[type[Attribute], str] = {
                TupleType: "a tuple",
                ListType: "a list",
                NoneType: "`none`",
            }
            what = names.get(type(value), str(value))
            return ShapeMismatch(f"assigns a tensor or a number, got {what}")
        advanced = any(isinstance(e, TensorIndex | MaskIndex) for e in entries)
        return self._dtype_problem(target, value, advanced)

    def _dtype_problem(
        self, target: TensorType, value: Attribute, advanced: bool
    ) -> ShapeMismatch | None:
        """PyTorch's rules: a tensor assigned through a tensor index has the target's dtype
        (index_put does not cast); an augmented assignment's result fits the target's."""
        held = element_type_name(target.element_type)
        if isinstance(value, AnyType):
            return None
        given = element_type_name(value.element_type) if isinstance(value, TensorType) else None
        if self.operator.data == "=":
            if not advanced or given is None or given == held:
                return None
            return ShapeMismatch(
                f"assigns {_a(given)} tensor into {_a(held)} tensor through a tensor index",
                help=f"PyTorch's index_put does not cast: make the value {held} "
                "(`.float()`, `.long()`, `.to(...)`)",
            )
        if given is None:  # a number: an int or a bool fits any tensor, a float a float one
            given = "f64" if isinstance(value, Float64Type) else "i64"
            given = "i1" if value == i1 else given
        if self.operator.data == "/=" and _KINDS.get(held, 2) < 2:
            return ShapeMismatch(
                f"a division gives floats, which {_a(held)} tensor cannot hold",
                help="make the tensor a float one first (`.float()`)",
            )
        kind = max(_KINDS.get(held, 2), _KINDS.get(given, 2))
        if kind <= _KINDS.get(held, 2):
            return None
        return ShapeMismatch(
            f"{given} values give {'floats' if kind == 2 else 'integers'} here, "
            f"which {_a(held)} tensor cannot hold",
            help="make the tensor a float one first (`.float()`), or the value "
            f"{held} (`.to(...)`)",
        )


@lazy_op_definition
class DimOp(SpelledOp):
    """`%n = nml.dim %x 0 : (...) -> i64`: one size of a tensor (`x.size(0)`, `x.shape[0]`)."""

    name = "nml.dim"
    FUNCTION: ClassVar[str] = "size"
    COST: ClassVar[Cost] = FREE

    input = operand_def()
    index = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input $index attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, index: int):
        super().__init__(
            operands=[input], properties={"index": IntegerAttr(index, i64)}, result_types=[i64]
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dim = args.int_arg(1, "dim")
        return dim if isinstance(dim, CallProblem) else cls(x, dim)

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", self.index.value.data)]

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


@lazy_op_definition
class WhereOp(SpelledOp):
    """`nml.where %cond, %a, %b`: `a` where `cond`, else `b`; all three broadcast
    (`a` or `b` may be a scalar). `torch.where(cond, a, b)`."""

    name = "nml.where"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "where"

    condition = operand_def()
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, condition: Value, lhs: Value, rhs: Value, result_type: Attribute):
        super().__init__(operands=[condition, lhs, rhs], result_types=[result_type])

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        if len(args.positional) == 1:  # `where(chosen == i)`: the indices where it holds
            nonzero = OP_OF_RECORD["nonzero"]
            return args.unknown_keywords(()) or nonzero(args.positional[0], unknown_type())  # type: ignore[call-arg]
        if len(args.positional) != 3:
            return CallProblem(
                f"`where` takes a condition and two values, got {len(args.positional)} arguments",
                "write `where(mask, a, b)`, or `where(mask)` for the indices where it holds",
            )
        cond, a, b = args.positional
        return args.unknown_keywords(()) or cls(cond, a, b, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", self.lhs), ("", self.rhs)]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        cond, *values = operand_types
        if not isinstance(cond, TensorType):
            return ShapeMismatch("where needs a boolean tensor as its condition")
        tensors = [t for t in values if isinstance(t, TensorType)]
        shape: Shape = cond.dims
        u = unifier or Unifier()
        for i, t in enumerate(values):
            if isinstance(t, TensorType):
                merged = broadcast(shape, t.dims, u)
                if isinstance(merged, ShapeMismatch):
                    return ShapeMismatch(
                        merged.message, merged.expected, merged.got, i + 1, merged.dim
                    )
                shape = merged
        like = tensors[0] if tensors else TensorType.unranked()
        return like.with_dims(shape)


@lazy_op_definition
class MaskedFillOp(SpelledOp):
    """`nml.masked_fill %x, %mask, %value`: `value` where `mask`; the mask broadcasts to x."""

    name = "nml.masked_fill"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "masked_fill"

    input = operand_def()
    mask = operand_def()
    value = operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `,` $mask `,` $value attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: Value, mask: Value, value: Value, result_type: Attribute):
        super().__init__(operands=[input, mask, value], result_types=[result_type])

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x, mask, value = (args.value(i, k) for i, k in enumerate(("input", "mask", "value")))
        if x is None or mask is None or value is None:
            return CallProblem(
                "`masked_fill` needs a tensor, a mask and a value",
                "write `x.masked_fill(mask, 0.0)`",
            )
        return args.unknown_keywords(("mask", "value")) or cls(x, mask, value, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", self.mask), ("", self.value)]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        x, mask = operand_types[0], operand_types[1]
        if not isinstance(x, TensorType) or not isinstance(mask, TensorType):
            return ShapeMismatch("masked_fill takes a tensor and a boolean mask tensor")
        if x.dims is None or mask.dims is None:
            return x
        result = broadcast_into(x.dims, mask.dims, unifier or Unifier())
        return result if isinstance(result, ShapeMismatch) else x


def _verify_index(entries: Sequence[IndexEntry], dynamic: int) -> None:
    """An index (of `nml.index` or `nml.index_put`) holds at most one `...`, and one dynamic
    operand per `?` item."""
    if entries.count(Ellipsis) > 1:
        raise VerifyException("an index may hold at most one `...`")
    if dynamic_count(entries) != dynamic:
        raise VerifyException(
            f"index has {dynamic_count(entries)} `?` items but {dynamic} dynamic operands"
        )
