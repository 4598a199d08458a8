"""nml builtins that index, gather, pad, cast and pick: cumsum, topk, gather, pad, ...

    %v = nml.cumsum %x dim 1 : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], f32>
    %t = nml.topk %x k 2 dim -1 : (!nml.tensor<[B, 8], f32>)
           -> !nml.tuple<[!nml.tensor<[B, 2], f32>, !nml.tensor<[B, 2], i64>]>
    %p = nml.pad %x pads [1 : i64, "?"](%n) : (...) -> ...
    %c = nml.cast %x to "i64" : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 8], i64>

Every op here is a `SpelledOp`: its catalogue record (tensorloom/catalogue/functions.py)
gives the PyTorch it lowers to, and `torch_arguments` lists the arguments that call
takes after the tensor, so convert-nml-to-torch has one pattern for all of them. A
`PlainOp` (one tensor, then constants: cumsum, normalize) is built from its record too. The
shape rules are the helpers of tensorloom/catalogue/shapes.py.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
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
    bf16,
    f16,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    OptPropertyDef,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.costs import (
    FREE,
    INPUT,
    PER_SOURCE_ELEMENT,
    RESULT,
    VIEW,
    Cost,
    per_element,
    per_input_element,
)
from tensorloom.catalogue.functions import FUNCTIONS, Parameter
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    at_least_2d,
    gather_shape,
    index_add_shape,
    narrow_shape,
    one_hot_shape,
    pad_shape,
    reduce_shape,
    same_shape,
    scatter_shape,
    t_shape,
    topk_shape,
    transpose_shape,
    unsqueeze_shape,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    OP_OF_RECORD,
    Literal,
    PyName,
    SizedOp,
    SpelledOp,
    TorchArgument,
    apply_rule,
    int_array,
    int_values,
    sized_entries,
)
from tensorloom.dialects.nml.calls import (
    DYNAMIC,
    CallArgs,
    CallProblem,
    Missing,
    is_int,
    unknown_type,
)
from tensorloom.dialects.nml.creation import ListOp
from tensorloom.dialects.nml.indexing import count_name
from tensorloom.dialects.nml.ops import GetAttrOp, RefOp, Value
from tensorloom.dialects.nml.types import (
    AnyType,
    Dim,
    TensorType,
    TupleType,
    element_type_name,
)

INDICES = IntegerType(64)

ELEMENT_TYPES: dict[str, Attribute] = {
    "f32": f32, "f16": f16, "bf16": bf16, "i64": i64, "i1": IntegerType(1),
}  # fmt: skip
"""The element types a cast may give, by the name a tensor type prints."""

DTYPES: dict[str, str] = {
    "float32": "f32", "float": "f32", "float16": "f16", "half": "f16", "bfloat16": "bf16",
    "int64": "i64", "long": "i64", "bool": "i1",
}  # fmt: skip
"""`torch.<dtype>` names (and the cast methods: `.float()`, `.long()`) -> element type."""

TORCH_DTYPES: dict[str, str] = {
    "f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16",
    "i64": "torch.int64", "i1": "torch.bool",
}  # fmt: skip
"""How a cast's element type is spelled in the emitted script."""


class PlainOp(SpelledOp, ABC):
    """A builtin of one tensor and constant arguments, `nml.cumsum %x dim 1`: each argument
    its catalogue record's signature names after the tensor (`cumsum(x, dim)`) is the
    property of that name, an i64, f64, i1 or string.

    resolve-nml builds it from the record: each argument a constant of its default's type
    (a required one an integer), checked further by the op's `check_call` where the op
    asks more (`hardtanh`'s min below its max). convert-nml-to-torch spells it with the
    set arguments in the signature's order, as keywords (`torch.cumsum(x, dim=1)`) or,
    with `POSITIONAL`, without their names (`x.transpose(1, 2)`); an op overrides
    `torch_arguments` to spell them otherwise. Its assembly format is made from its
    properties (`$input `dim` $dim ...`, an optional one in `(...)?`) unless it gives
    its own `ASSEMBLY_FORMAT`. So a new plain builtin is its record
    (tensorloom/catalogue/functions.py) and its op: the properties, the shape rule and
    the `COST`."""

    input = operand_def()
    result = result_def()

    POSITIONAL: ClassVar[bool] = False

    def __init__(self, input: Value, constants: Mapping[str, Literal], result_type: Attribute):
        properties = {k: _constant_attr(v) for k, v in constants.items() if v is not None}
        super().__init__(operands=[input], properties=properties, result_types=[result_type])

    @classmethod
    def format_text(cls) -> str:
        if hasattr(cls, "ASSEMBLY_FORMAT"):
            return cls.ASSEMBLY_FORMAT
        properties = cls.get_irdl_definition().properties.items()
        parts = [
            f"(`{name}` ${name}^)?" if isinstance(prop, OptPropertyDef) else f"`{name}` ${name}"
            for name, prop in properties
        ]
        return " ".join(["$input", *parts, "attr-dict `:` functional-type($input, $result)"])

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        """`normalize(x, p=1.0, dim=-1)`: each argument the record's signature names after
        the tensor, a constant of its default's type, becomes the property of its name."""
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        parameters = FUNCTIONS[args.name].parameters[1:]
        constants: dict[str, Literal] = {}
        for index, parameter in enumerate(parameters, start=1):
            value = _plain_argument(args, index, parameter)
            if isinstance(value, CallProblem):
                return value
            constants[parameter.name] = value
        problem = cls.check_call(constants)
        names = [p.name for p in parameters]
        problem = problem or args.rest(names, len(parameters) + 1)
        return problem or cls(x, constants, unknown_type())

    @classmethod
    def check_call(cls, constants: Mapping[str, Literal]) -> CallProblem | None:
        """What the op asks of its arguments beyond their types (none by default)."""
        return None

    def constant(self, name: str) -> Literal:
        """The argument `name`'s value; None when it is not set."""
        attr = self.properties.get(name)
        if isinstance(attr, StringAttr):
            return attr.data
        if isinstance(attr, IntegerAttr) and attr.type == IntegerType(1):
            return bool(attr.value.data)
        return attr.value.data if isinstance(attr, IntegerAttr | FloatAttr) else None

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        parameters = FUNCTIONS[self.FUNCTION].parameters[1:]
        named = [p.name for p in parameters if p.name in self.properties]
        return [("" if self.POSITIONAL else n, self.constant(n)) for n in named]


def _plain_argument(args: CallArgs, index: int, parameter: Parameter) -> Literal | CallProblem:
    name, default = parameter.name, parameter.default
    if parameter.required:
        return args.int_arg(index, name)
    if isinstance(default, bool):
        return args.flag(index, name, default)
    if isinstance(default, int):
        return args.int_arg(index, name, default)
    if isinstance(default, float):
        number = args.number(index, name)
        return default if number is None else number
    value = args.const(index, name, default)
    if isinstance(value, str) or value is None:
        return value
    return CallProblem(f"`{name}` of `{args.name}` must be a constant string")


def _constant_attr(value: int | float | bool | str) -> Attribute:
    if isinstance(value, bool):
        return IntegerAttr(int(value), IntegerType(1))
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, Float64Type())
    return StringAttr(value)


def _element_of(operand: Attribute) -> Attribute:
    return (
        operand.element_type
        if isinstance(operand, TensorType)
        else TensorType.unranked().element_type
    )


def _integers(types: Sequence[Attribute], what: str) -> ShapeMismatch | None:
    """Sizes the forward computes must be integers (`x.size(2) - 4`, a loop counter)."""
    if all(isinstance(t, AnyType) or t == i64 for t in types):
        return None
    return ShapeMismatch(
        f"{what}, got a float", help="compute it from `x.size(d)` with `+ - *` and `floordiv`"
    )


def _dim_property(dim: int | None) -> IntegerAttr | None:
    return None if dim is None else IntegerAttr(dim, i64)


class _AlongDimOp(PlainOp, ABC):
    """`nml.cumsum %x dim 1`: the same shape, computed along one dim."""

    dim = prop_def(IntegerAttr[I64])

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axis = self.dim.value.data
        return apply_rule(operand_types[0], lambda dims: same_shape(dims, axis))


@lazy_op_definition
class CumsumOp(_AlongDimOp):
    name = "nml.cumsum"
    COST: ClassVar[Cost] = per_element(saves=INPUT, autocast="fp32")
    FUNCTION: ClassVar[str] = "cumsum"


@lazy_op_definition
class CumprodOp(_AlongDimOp):
    name = "nml.cumprod"
    COST: ClassVar[Cost] = per_element(saves=(0, RESULT), autocast="fp32")
    FUNCTION: ClassVar[str] = "cumprod"


@lazy_op_definition
class NormalizeOp(_AlongDimOp):
    """`nml.normalize %x p 2.0 dim 1`: `F.normalize`, x / max(||x||_p, eps) along `dim`."""

    name = "nml.normalize"
    FUNCTION: ClassVar[str] = "normalize"
    COST: ClassVar[Cost] = per_element(saves=INPUT)

    p = prop_def(FloatAttr[Float64Type])

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        """`F.normalize(x, dim=1)`: `p` only when it is not 2."""
        p = self.p.value.data
        return [*([("p", p)] if p != 2.0 else []), ("dim", self.dim.value.data)]


class TriangleOp(PlainOp, ABC):
    """`nml.tril %x diagonal 0`: a matrix (or a batch of them) with one triangle zeroed."""

    diagonal = prop_def(IntegerAttr[I64])

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        """`torch.tril(x)`, `torch.tril(x, diagonal=1)`: the diagonal when it is not 0."""
        diagonal = self.diagonal.value.data
        return [("diagonal", diagonal)] if diagonal else []

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        name = self.name.removeprefix("nml.")
        return apply_rule(operand_types[0], lambda dims: at_least_2d(dims, name))


@lazy_op_definition
class TrilOp(TriangleOp):
    name = "nml.tril"
    FUNCTION: ClassVar[str] = "tril"
    COST: ClassVar[Cost] = FREE


@lazy_op_definition
class TriuOp(TriangleOp):
    name = "nml.triu"
    FUNCTION: ClassVar[str] = "triu"
    COST: ClassVar[Cost] = FREE


@lazy_op_definition
class TOp(PlainOp):
    """`nml.t %x`: `x.T` / `x.t()`, a matrix transposed."""

    name = "nml.t"
    FUNCTION: ClassVar[str] = "t"
    COST: ClassVar[Cost] = VIEW

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return apply_rule(operand_types[0], t_shape)


@lazy_op_definition
class UnsqueezeOp(PlainOp):
    """`nml.unsqueeze %x dim 0`: `x.unsqueeze(0)`, a new dim of size 1."""

    name = "nml.unsqueeze"
    FUNCTION: ClassVar[str] = "unsqueeze"
    COST: ClassVar[Cost] = VIEW
    POSITIONAL: ClassVar[bool] = True

    dim = prop_def(IntegerAttr[I64])

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axis = self.dim.value.data
        return apply_rule(operand_types[0], lambda dims: unsqueeze_shape(dims, axis))


@lazy_op_definition
class TransposeOp(PlainOp):
    """`nml.transpose %x 1, 2`: `x.transpose(1, 2)`, two dims swapped."""

    name = "nml.transpose"
    FUNCTION: ClassVar[str] = "transpose"
    COST: ClassVar[Cost] = VIEW
    POSITIONAL: ClassVar[bool] = True

    dim0 = prop_def(IntegerAttr[I64])
    dim1 = prop_def(IntegerAttr[I64])

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input $dim0 `,` $dim1 attr-dict `:` functional-type($input, $result)"
    )

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        a, b = self.dim0.value.data, self.dim1.value.data
        return apply_rule(operand_types[0], lambda dims: transpose_shape(dims, a, b))


@lazy_op_definition
class NormOp(SpelledOp):
    """`nml.norm %x p 2.0 dims [-1] keepdim`: the vector p-norm over `dims` (every dim
    without), `torch.linalg.vector_norm`."""

    name = "nml.norm"
    COST: ClassVar[Cost] = per_input_element(2, saves=INPUT, autocast="fp32")
    FUNCTION: ClassVar[str] = "linalg.vector_norm"
    RECORDS: ClassVar[tuple[str, ...]] = ("norm", "linalg.vector_norm")

    input = operand_def()
    p = prop_def(FloatAttr[Float64Type])
    dims = opt_prop_def(ArrayAttr[IntegerAttr[I64]])
    keepdim = opt_prop_def(UnitAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `p` $p (`dims` $dims^)? (`keepdim` $keepdim^)? attr-dict `:` "
        "functional-type($input, $result)"
    )

    def __init__(
        self,
        input: Value,
        p: float,
        dims: Sequence[int] | None,
        keepdim: bool,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input],
            properties={
                "p": FloatAttr(p, Float64Type()),
                "dims": int_array(dims) if dims is not None else None,
                "keepdim": UnitAttr() if keepdim else None,
            },
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        order = args.number(1, "ord" if "ord" in args.keywords else "p")
        dims, keepdim = args.dims(2), args.flag(3, "keepdim", False)
        for found in (order, dims, keepdim):
            if isinstance(found, CallProblem):
                return found
        problem = args.rest(("p", "ord", "dim", "keepdim"), 4)
        p = 2.0 if order is None else order
        return problem or cls(x, p, dims, keepdim, unknown_type())  # type: ignore[arg-type]

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        arguments: list[tuple[str, TorchArgument]] = [("ord", self.p.value.data)]
        dims = int_values(self.dims)
        if dims is not None:
            arguments.append(("dim", dims[0] if len(dims) == 1 else tuple(dims)))
        if self.keepdim is not None:
            arguments.append(("keepdim", True))
        return arguments

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axes, keep = int_values(self.dims), self.keepdim is not None
        return apply_rule(operand_types[0], lambda dims: reduce_shape(dims, axes, keep))


@lazy_op_definition
class PadOp(SizedOp, SpelledOp):
    """`nml.pad %x pads [1 : i64, 1 : i64, "?", "?"](%a, %b) mode "constant" value 0.0`:
    `F.pad`, the last dims grown by (left, right) pairs, the last dim's first. A pad may
    be `"?"`, a size the forward computes (the next dynamic operand)."""

    name = "nml.pad"
    COST: ClassVar[Cost] = per_element()
    FUNCTION: ClassVar[str] = "pad"

    input = operand_def()
    pads = prop_def(ArrayAttr)
    mode = prop_def(StringAttr)
    value = opt_prop_def(FloatAttr[Float64Type])
    dynamic_sizes = var_operand_def()  # type: ignore[assignment]
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `pads` $pads (`(` $dynamic_sizes^ `)`)? `mode` $mode (`value` $value^)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    MODES: ClassVar[tuple[str, ...]] = ("constant", "reflect", "replicate", "circular")

    def __init__(
        self,
        input: Value,
        pads: Sequence[Attribute],
        dynamic_sizes: Sequence[Value],
        mode: str,
        value: float | None,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input, dynamic_sizes],
            properties={
                "pads": ArrayAttr(pads),
                "mode": StringAttr(mode),
                "value": None if value is None else FloatAttr(value, Float64Type()),
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if len(self.pads.data) % 2:
            raise VerifyException("pad takes (left, right) pairs: an even number of pads")
        if self.mode.data not in self.MODES:
            raise VerifyException(f"pad mode must be one of {', '.join(self.MODES)}")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x, pads = args.first(), args.value(1, "pad")
        if isinstance(x, CallProblem):
            return x
        if pads is None or not isinstance(pads.owner, ListOp) or not pads.owner.elements:
            return CallProblem(
                "`pad` needs the pads as a list of (left, right) pairs, the last dim's first",
                "write `pad(x, [1, 1, 2, 2])` to pad the last dim by 1 and the one before by 2",
            )
        found = args.sizes([pads])
        if isinstance(found, CallProblem):
            return found
        shape, dynamic = found
        if len(shape) % 2:
            return CallProblem(
                f"`pad` takes (left, right) pairs, got {len(shape)} pads",
                "give two pads per padded dim, the last dim's first",
            )
        mode, value = args.const(2, "mode", "constant"), args.number(3, "value")
        if mode not in cls.MODES:
            choices = ", ".join(f'`"{m}"`' for m in cls.MODES)
            return CallProblem(f"`mode` of `pad` must be one of {choices}")
        if isinstance(value, CallProblem):
            return value
        problem = args.rest(("pad", "mode", "value"), 4)
        return problem or cls(x, shape, dynamic, str(mode), value, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        dynamic = iter(self.dynamic_sizes)
        pads = tuple(
            next(dynamic) if isinstance(a, StringAttr) else a.value.data  # type: ignore[union-attr]
            for a in self.pads.data
        )
        arguments: list[tuple[str, TorchArgument]] = [("", pads)]
        if self.mode.data != "constant":
            arguments.append(("mode", self.mode.data))
        if self.value is not None:
            arguments.append(("value", self.value.value.data))
        return arguments

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        problem = _integers(operand_types[1:], "the pads must be integers")
        if problem is not None:
            return problem
        pads = sized_entries(self.pads, sizes)
        return apply_rule(operand_types[0], lambda dims: pad_shape(dims, pads))


@lazy_op_definition
class NarrowOp(SizedOp, SpelledOp):
    """`nml.narrow %x dim 1 start "?" length 4 (%i)`: `x.narrow(dim, start, length)`; the
    start may be a size the forward computes (a loop counter), the length must be known."""

    name = "nml.narrow"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "narrow"

    input = operand_def()
    dim = prop_def(IntegerAttr[I64])
    start = prop_def(Attribute)
    length = prop_def(IntegerAttr[I64])
    dynamic_sizes = var_operand_def()  # type: ignore[assignment]
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `dim` $dim `start` $start `length` $length (`(` $dynamic_sizes^ `)`)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: Value,
        dim: int,
        start: int | SSAValue,
        length: int,
        result_type: Attribute,
    ):
        dynamic = isinstance(start, SSAValue)
        super().__init__(
            operands=[input, [start] if dynamic else []],
            properties={
                "dim": IntegerAttr(dim, i64),
                "start": StringAttr(DYNAMIC) if dynamic else IntegerAttr(start, i64),
                "length": IntegerAttr(length, i64),
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.length.value.data < 0:
            raise VerifyException("narrow's length must not be negative")
        dynamic = isinstance(self.start, StringAttr)
        if dynamic != bool(self.dynamic_sizes):
            raise VerifyException('narrow takes a dynamic operand exactly when start is "?"')

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dim, start, length = (
            args.int_arg(1, "dim"),
            args.value(2, "start"),
            args.int_arg(3, "length"),
        )
        if isinstance(dim, CallProblem):
            return dim
        if isinstance(length, CallProblem) or start is None:
            return CallProblem(
                "`narrow` needs a dim, a start (it may be computed) and a constant length",
                "write `x.narrow(1, i, 4)`",
            )
        if length < 0:
            return CallProblem(f"the length of `narrow` must not be negative, got {length}")
        known = args.constant_of(start)
        first: int | SSAValue = known if is_int(known) else start  # type: ignore[assignment]
        problem = args.rest(("dim", "start", "length"), 4)
        return problem or cls(x, dim, first, length, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        start = self.start
        first: TorchArgument = (
            self.dynamic_sizes[0] if isinstance(start, StringAttr) else start.value.data  # type: ignore[attr-defined]
        )
        return [("", self.dim.value.data), ("", first), ("", self.length.value.data)]

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        problem = _integers(operand_types[1:], "the start must be an integer")
        if problem is not None:
            return problem
        start = sizes[0] if sizes else self.start.value.data  # type: ignore[attr-defined]
        dim, length = self.dim.value.data, self.length.value.data
        return apply_rule(operand_types[0], lambda dims: narrow_shape(dims, dim, start, length))


@lazy_op_definition
class CastOp(SpelledOp):
    """`nml.cast %x to "i64"`: `x.to(torch.int64)` (`.long()`, `.float()`, ...); the element
    type is one of the types a tensor type names (f32, f16, bf16, i64, i1)."""

    name = "nml.cast"
    FUNCTION: ClassVar[str] = "to"
    RECORDS: ClassVar[tuple[str, ...]] = ("float", "half", "bfloat16", "long", "bool", "to")
    COST: ClassVar[Cost] = per_element()

    input = operand_def()
    dtype = prop_def(StringAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `to` $dtype attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, dtype: str, result_type: Attribute):
        super().__init__(
            operands=[input], properties={"dtype": StringAttr(dtype)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        if self.dtype.data not in ELEMENT_TYPES:
            raise VerifyException(f"cast to an unknown element type `{self.dtype.data}`")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        """`x.long()`, `x.float()`, `x.to(torch.int64)`: the element type is the op's."""
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        if not args.method:
            example = "x.to(torch.float32)" if args.name == "to" else f"x.{args.name}()"
            return CallProblem(f"`{args.name}` is a tensor method", f"write `{example}`")
        if args.name != "to":
            return args.too_many(1) or cls(x, DTYPES[args.name], unknown_type())
        dtype = dtype_named(args.value(1, "dtype"))
        if dtype is None:
            return CallProblem(
                "`to` takes a dtype: one of "
                + ", ".join(f"`torch.{d}`" for d in DTYPES if d not in ("float", "half", "long")),
                "write `x.to(torch.float32)`",
            )
        return args.rest(("dtype",), 2) or cls(x, dtype, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", PyName(TORCH_DTYPES[self.dtype.data]))]

    def element_type(self) -> Attribute:
        return ELEMENT_TYPES[self.dtype.data]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        operand = operand_types[0]
        if isinstance(operand, AnyType):
            return TensorType.unranked(self.element_type())
        if not isinstance(operand, TensorType):
            return ShapeMismatch(f"expected a tensor, got {operand}")
        return TensorType(operand.shape, self.element_type())


def dtype_named(value: SSAValue | None) -> str | None:
    """`torch.int64` (a getattr of the name `torch`) as the element type it names (`i64`)."""
    if value is None or not isinstance(value.owner, GetAttrOp):
        return None
    base = value.owner.input.owner
    if not isinstance(base, RefOp) or base.symbol.root_reference.data != "torch":
        return None
    return DTYPES.get(value.owner.attr_name.data)


class _ArgReduceOp(SpelledOp, ABC):
    """`nml.argmax %x dim 1 keepdim`: the index of the largest (smallest) element along
    `dim` (of the flattened tensor without), as i64."""

    input = operand_def()
    dim = opt_prop_def(IntegerAttr[I64])
    keepdim = opt_prop_def(UnitAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`dim` $dim^)? (`keepdim` $keepdim^)? attr-dict `:` "
        "functional-type($input, $result)"
    )

    def __init__(self, input: Value, dim: int | None, keepdim: bool, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"dim": _dim_property(dim), "keepdim": UnitAttr() if keepdim else None},
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dim, keepdim = args.const(1, "dim", None), args.flag(2, "keepdim", False)
        if dim is not None and not is_int(dim):
            return CallProblem(f"`dim` of `{args.name}` must be a constant integer")
        if isinstance(keepdim, CallProblem):
            return keepdim
        problem = args.rest(("dim", "keepdim"), 3)
        return problem or cls(x, dim, keepdim, unknown_type())  # type: ignore[arg-type]

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        arguments: list[tuple[str, TorchArgument]] = []
        if self.dim is not None:
            arguments.append(("dim", self.dim.value.data))
        if self.keepdim is not None:
            arguments.append(("keepdim", True))
        return arguments

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axis = None if self.dim is None else self.dim.value.data
        keep = self.keepdim is not None and axis is not None
        found = apply_rule(operand_types[0], lambda dims: reduce_shape(dims, axis, keep))
        if isinstance(found, TensorType):
            return TensorType(found.shape, INDICES)
        return found


@lazy_op_definition
class ArgmaxOp(_ArgReduceOp):
    name = "nml.argmax"
    COST: ClassVar[Cost] = per_input_element()
    FUNCTION: ClassVar[str] = "argmax"


@lazy_op_definition
class ArgminOp(_ArgReduceOp):
    name = "nml.argmin"
    COST: ClassVar[Cost] = per_input_element()
    FUNCTION: ClassVar[str] = "argmin"


class _ValuesIndicesOp(SpelledOp, ABC):
    """An op whose result is the pair (values, i64 indices), as PyTorch's named tuple."""

    def pair(self, operand: Attribute, dims: Sequence[Dim] | None) -> Attribute:
        element = _element_of(operand)
        return TupleType.of(
            [TensorType.from_dims(dims, element), TensorType.from_dims(dims, INDICES)]
        )


class _ExtremumOp(_ValuesIndicesOp, ABC):
    """`nml.max %x dim 1 keepdim`: the largest values along `dim` and where they are."""

    input = operand_def()
    dim = prop_def(IntegerAttr[I64])
    keepdim = opt_prop_def(UnitAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `dim` $dim (`keepdim` $keepdim^)? attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, dim: int, keepdim: bool, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"dim": IntegerAttr(dim, i64), "keepdim": UnitAttr() if keepdim else None},
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        """`x.max()` is the largest element (`nml.amax`); `x.max(dim=1)` the pair (values,
        indices)."""
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dim, keepdim = args.const(1, "dim", None), args.flag(2, "keepdim", False)
        if isinstance(keepdim, CallProblem):
            return keepdim
        problem = args.rest(("dim", "keepdim"), 3)
        if problem is not None:
            return problem
        if dim is None:
            return OP_OF_RECORD[f"a{args.name}"](x, None, False, unknown_type())  # type: ignore[call-arg]
        if not is_int(dim):
            other, compare = ("maximum", ">") if args.name == "max" else ("minimum", "<")
            return CallProblem(
                f"`dim` of `{args.name}` must be a constant integer",
                f"for the elementwise {other} of two tensors write `where(a {compare} b, a, b)`",
            )
        return cls(x, dim, keepdim, unknown_type())  # type: ignore[arg-type]

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        arguments: list[tuple[str, TorchArgument]] = [("dim", self.dim.value.data)]
        return arguments + ([("keepdim", True)] if self.keepdim is not None else [])

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        operand = operand_types[0]
        axis, keep = self.dim.value.data, self.keepdim is not None
        found = apply_rule(operand, lambda dims: reduce_shape(dims, axis, keep))
        if not isinstance(found, TensorType):
            return found
        return self.pair(operand, found.dims)


@lazy_op_definition
class MaxOp(_ExtremumOp):
    name = "nml.max"
    COST: ClassVar[Cost] = per_input_element()
    FUNCTION: ClassVar[str] = "max"


@lazy_op_definition
class MinOp(_ExtremumOp):
    name = "nml.min"
    COST: ClassVar[Cost] = per_input_element()
    FUNCTION: ClassVar[str] = "min"


@lazy_op_definition
class TopkOp(SizedOp, _ValuesIndicesOp):
    """`nml.topk %x k 2 dim -1 smallest`: the k largest (smallest) values along `dim`,
    sorted, and their indices; `k "?" (%k)`: a k the forward computes (a config, Mixtral's
    `num_experts_per_tok`), its value read where the checker knows it."""

    name = "nml.topk"
    COST: ClassVar[Cost] = per_input_element()
    FUNCTION: ClassVar[str] = "topk"

    input = operand_def()
    k = prop_def(Attribute)
    dim = prop_def(IntegerAttr[I64])
    smallest = opt_prop_def(UnitAttr)
    dynamic_sizes = var_operand_def()  # type: ignore[assignment]
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `k` $k `dim` $dim (`smallest` $smallest^)? (`(` $dynamic_sizes^ `)`)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self, input: Value, k: int | SSAValue, dim: int, smallest: bool, result_type: Attribute
    ):
        dynamic = isinstance(k, SSAValue)
        super().__init__(
            operands=[input, [k] if dynamic else []],
            properties={
                "k": StringAttr(DYNAMIC) if dynamic else IntegerAttr(k, i64),
                "dim": IntegerAttr(dim, i64),
                "smallest": UnitAttr() if smallest else None,
            },
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        given, dim = args.value(1, "k"), args.int_arg(2, "dim", -1)
        if given is None:
            return CallProblem("`topk` needs the argument `k`", "write `x.topk(2, dim=-1)`")
        known = args.constant_of(given)  # else computed: a config, `x.size(1) // 2`
        k: int | SSAValue | CallProblem = known if is_int(known) else given  # type: ignore[assignment]
        if not isinstance(known, Missing) and not is_int(known):
            k = CallProblem("`k` of `topk` must be an integer")
        largest, ordered = args.flag(3, "largest", True), args.flag(4, "sorted", True)
        for found in (k, dim, largest, ordered):
            if isinstance(found, CallProblem):
                return found
        if isinstance(k, int) and k < 0:
            return CallProblem(f"`k` of `topk` must not be negative, got {k}")
        if ordered is False:
            return CallProblem(
                "`topk` gives its values sorted",
                "leave out `sorted=false`: the order is then defined",
            )
        problem = args.rest(("k", "dim", "largest", "sorted"), 5)
        return problem or cls(x, k, dim, not largest, unknown_type())  # type: ignore[arg-type]

    def verify_(self) -> None:
        k = self.k
        dynamic = isinstance(k, StringAttr)
        if dynamic != bool(self.dynamic_sizes):
            raise VerifyException('topk takes a dynamic operand exactly when k is "?"')
        if isinstance(k, IntegerAttr) and k.value.data < 0:
            raise VerifyException("topk's k must not be negative")

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        k = self.k
        first: TorchArgument = (
            self.dynamic_sizes[0] if isinstance(k, StringAttr) else k.value.data  # type: ignore[attr-defined]
        )
        arguments: list[tuple[str, TorchArgument]] = [("", first), ("dim", self.dim.value.data)]
        return arguments + ([("largest", False)] if self.smallest is not None else [])

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        if _integers(operand_types[1:], "k") is not None:
            return ShapeMismatch(
                "k of `topk` must be an integer, got a float",
                help="give it an integer: a config such as `num_experts_per_tok = 2`",
            )
        operand = operand_types[0]
        k = sizes[0] if sizes else self.k.value.data  # type: ignore[attr-defined]
        if isinstance(k, int) and k < 0:
            return ShapeMismatch(f"k of `topk` must not be negative, got {k}")
        axis = self.dim.value.data
        if not isinstance(k, int):  # not known when checked: the size is unknown
            found = apply_rule(operand, lambda dims: topk_shape(dims, 0, axis))
            if isinstance(found, TensorType) and found.dims is not None:
                dims: list[Dim] = list(found.dims)
                dims[axis] = None
                return self.pair(operand, tuple(dims))
            return found if isinstance(found, ShapeMismatch) else self.pair(operand, None)
        found = apply_rule(operand, lambda dims: topk_shape(dims, k, axis))
        if not isinstance(found, TensorType):
            return found
        return self.pair(operand, found.dims)


@lazy_op_definition
class OneHotOp(SpelledOp):
    """`nml.one_hot %ids classes 10`: [..] class indices -> [.., 10] of 0 and 1 (i64)."""

    name = "nml.one_hot"
    COST: ClassVar[Cost] = per_element()
    FUNCTION: ClassVar[str] = "one_hot"

    input = operand_def()
    num_classes = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `classes` $num_classes attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, num_classes: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"num_classes": IntegerAttr(num_classes, i64)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.num_classes.value.data <= 0:
            raise VerifyException("one_hot needs a positive number of classes")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        classes = args.int_arg(1, "num_classes")
        if isinstance(classes, CallProblem) or classes <= 0:
            return CallProblem(
                "`one_hot` needs `num_classes`, a positive constant: the number of classes is "
                "the size of the new dim",
                "write `one_hot(ids, num_classes=10)`",
            )
        return args.rest(("num_classes",), 2) or cls(x, classes, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("num_classes", self.num_classes.value.data)]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        operand = operand_types[0]
        if isinstance(operand, TensorType) and operand.element_type != INDICES:
            element = element_type_name(operand.element_type)
            return ShapeMismatch(
                f"`one_hot` takes class indices (i64), got {element}",
                help="cast the indices first: `ids.long()`",
            )
        classes = self.num_classes.value.data
        found = apply_rule(operand, lambda dims: one_hot_shape(dims, classes))
        return TensorType(found.shape, INDICES) if isinstance(found, TensorType) else found


def _index_type(index: Attribute, what: str) -> ShapeMismatch | None:
    if isinstance(index, TensorType) and index.element_type != INDICES:
        return ShapeMismatch(
            f"`{what}` takes an i64 index tensor, got {element_type_name(index.element_type)}",
            help="make the index with `.long()` or from `argmax`, `topk` or `arange`",
        )
    return None


@lazy_op_definition
class GatherOp(SpelledOp):
    """`nml.gather %x, %index dim 1`: out[i][j] = x[i][index[i][j]] (for dim 1); the result
    has the index's shape and x's element type."""

    name = "nml.gather"
    COST: ClassVar[Cost] = per_element()
    FUNCTION: ClassVar[str] = "gather"

    input = operand_def()
    index = operand_def()
    dim = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `,` $index `dim` $dim attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: Value, index: Value, dim: int, result_type: Attribute):
        super().__init__(
            operands=[input, index],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x, dim, index = args.first(), args.int_arg(1, "dim"), args.value(2, "index")
        if isinstance(x, CallProblem):
            return x
        if isinstance(dim, CallProblem):
            return dim
        if index is None:
            return CallProblem("`gather` needs the index", "write `x.gather(1, index)`")
        return args.rest(("dim", "index"), 3) or cls(x, index, dim, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", self.dim.value.data), ("", self.index)]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        x, index = operand_types
        problem = _index_type(index, "gather")
        if problem is not None:
            return problem
        if not isinstance(x, TensorType) or not isinstance(index, TensorType):
            return TensorType.unranked(_element_of(x))
        found = gather_shape(x.dims, index.dims, self.dim.value.data, unifier or Unifier())
        if isinstance(found, ShapeMismatch):
            return found
        return TensorType.from_dims(found, x.element_type)


class _ScatterLikeOp(SpelledOp, ABC):
    """`nml.scatter_add %x, %index, %src dim 1`: x with src's values written (added) at
    the index along `dim`; the result has x's type."""

    input = operand_def()
    index = operand_def()
    source = operand_def()
    dim = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `,` $index `,` $source `dim` $dim attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, input: Value, index: Value, source: Value, dim: int, result_type: Attribute):
        super().__init__(
            operands=[input, index, source],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x, dim, index = args.first(), args.int_arg(1, "dim"), args.value(2, "index")
        source_name = "source" if args.name == "index_add" else "src"
        source = args.value(3, source_name)
        if args.name == "scatter" and source is None:
            source = args.keywords.get("value")
        if isinstance(x, CallProblem):
            return x
        if isinstance(dim, CallProblem):
            return dim
        if index is None or source is None:
            return CallProblem(
                f"`{args.name}` needs a dim, an index and a `{source_name}`",
                f"write `x.{args.name}(1, index, {source_name})`",
            )
        allowed = ("dim", "index", source_name, *(("value",) if args.name == "scatter" else ()))
        return args.rest(allowed, 4) or cls(x, index, source, dim, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("", self.dim.value.data), ("", self.index), ("", self.source)]

    @abstractmethod
    def check(
        self, x: TensorType, index: TensorType, source: Attribute, u: Unifier
    ) -> ShapeMismatch | None: ...

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        x, index, source = operand_types
        what = self.name.removeprefix("nml.")
        problem = _index_type(index, what)
        if problem is not None:
            return problem
        if not isinstance(x, TensorType) or not isinstance(index, TensorType):
            return x if isinstance(x, TensorType) else TensorType.unranked()
        return self.check(x, index, source, unifier or Unifier()) or x


class _ScatterOp(_ScatterLikeOp, ABC):
    def check(
        self, x: TensorType, index: TensorType, source: Attribute, u: Unifier
    ) -> ShapeMismatch | None:
        src = source.dims if isinstance(source, TensorType) else None
        scalar = not isinstance(source, TensorType)
        what = self.name.removeprefix("nml.")
        return scatter_shape(x.dims, index.dims, src, scalar, self.dim.value.data, u, what)


@lazy_op_definition
class ScatterOp(_ScatterOp):
    name = "nml.scatter"
    COST: ClassVar[Cost] = PER_SOURCE_ELEMENT
    FUNCTION: ClassVar[str] = "scatter"


@lazy_op_definition
class ScatterAddOp(_ScatterOp):
    name = "nml.scatter_add"
    COST: ClassVar[Cost] = PER_SOURCE_ELEMENT
    FUNCTION: ClassVar[str] = "scatter_add"

    def check(
        self, x: TensorType, index: TensorType, source: Attribute, u: Unifier
    ) -> ShapeMismatch | None:
        if not isinstance(source, TensorType):
            return ShapeMismatch("`scatter_add` adds a tensor `src`, not a number")
        return super().check(x, index, source, u)


@lazy_op_definition
class IndexAddOp(_ScatterLikeOp):
    """`nml.index_add %x, %index, %source dim 0`: x with source's slices added at the
    1-D index along `dim` (a token's output added to its row, in a sparse MoE)."""

    name = "nml.index_add"
    COST: ClassVar[Cost] = PER_SOURCE_ELEMENT
    FUNCTION: ClassVar[str] = "index_add"

    def check(
        self, x: TensorType, index: TensorType, source: Attribute, u: Unifier
    ) -> ShapeMismatch | None:
        if not isinstance(source, TensorType):
            return ShapeMismatch("`index_add` adds a tensor `source`, not a number")
        return index_add_shape(x.dims, index.dims, source.dims, self.dim.value.data, u)


@lazy_op_definition
class NonzeroOp(SpelledOp):
    """`nml.nonzero %mask`: `where(mask)`, the indices where `mask` holds, one i64 tensor
    per dim of the mask. Their length depends on the data: a size of its own, named for
    the call (`nnz_12_24` at line 12, column 24), which no rule binds to a number, so that
    two calls' lengths never pass for one another.

        %t = nml.nonzero %m : (!nml.tensor<[N, 2], i1>)
               -> !nml.tuple<[!nml.tensor<["nnz_12_24"], i64>, !nml.tensor<["nnz_12_24"], i64>]>
    """

    name = "nml.nonzero"
    COST: ClassVar[Cost] = per_input_element()
    FUNCTION: ClassVar[str] = "nonzero"

    input = operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        """`x.nonzero(as_tuple=true)`: `where(x)`; the `[n, ndim]` form is not typed."""
        x = args.value(0, "input")
        if x is None:
            return CallProblem("`nonzero` needs a tensor", "write `mask.nonzero(as_tuple=true)`")
        if args.const(1, "as_tuple", False) is not True:
            return CallProblem(
                "`nonzero` is typed in its tuple form only",
                "write `nonzero(mask, as_tuple=true)`, or `where(mask)`",
            )
        return args.rest(("as_tuple",), 2) or cls(x, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("as_tuple", True)]

    def count_name(self) -> str:
        """The name of the data-dependent length: `nnz_<line>_<column>` of the call."""
        return count_name(self)

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        mask = operand_types[0]
        if not isinstance(mask, TensorType):
            return ShapeMismatch("`where(condition)` takes a boolean tensor")
        if mask.element_type != IntegerType(1):
            return ShapeMismatch(
                f"`where(condition)` takes a boolean tensor, got {mask.element_type}",
                help="compare to make one: `where(chosen == i)`",
            )
        if mask.dims is None:
            return AnyType()
        found = TensorType.from_dims((self.count_name(),), INDICES)
        return TupleType.of([found] * max(len(mask.dims), 1))
