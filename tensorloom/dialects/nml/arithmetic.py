"""nml builtins of arithmetic: the elementwise family, the operators, matmul and einsum.

    %1 = nml.relu %0 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
    %2 = nml.add %a, %b : (!nml.tensor<[B, T, 512], f32>, f64) -> !nml.tensor<[B, T, 512], f32>
    %3 = nml.lt %a, %b : (...) -> !nml.tensor<[B, T, 512], i1>
    %4 = nml.einsum "bij,bjk->bik" %a, %b : (...) -> ...

The elementwise family (`relu`, `exp`, `neg`, ...) is generated from the catalogue's
`ELEMENTWISE` table and the comparisons from `COMPARE_OPS`'s; `UNARY_OPS`,
`BINARY_OPS` and `COMPARE_OPS` are how irgen and shape inference find the op of an
operator.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    Float64Type,
    IntegerType,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    operand_def,
    prop_def,
    result_def,
    var_operand_def,
)

from tensorloom.catalogue.costs import (
    FREE,
    INPUT,
    MATMUL,
    PRODUCT,
    Cost,
    per_element,
)
from tensorloom.catalogue.functions import ELEMENTWISE, SCALAR_MATH, Elementwise
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    broadcast,
    einsum_shape,
    matmul_shape,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    FunctionalOp,
    SpelledOp,
    TorchArgument,
    tensor_operands,
)
from tensorloom.dialects.nml.calls import (
    CallArgs,
    CallProblem,
    unknown_type,
)
from tensorloom.dialects.nml.creation import ListOp
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    AnyType,
    TensorType,
)


class UnaryOp(FunctionalOp, ABC):
    """An elementwise op of one operand: the result has the operand's type."""

    input = operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, result_type: Attribute | None = None):
        operand_type = SSAValue.get(input).type
        super().__init__(operands=[input], result_types=[result_type or operand_type])

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        problem = args.unknown_keywords(("inplace",) if args.name in ("relu", "silu") else ())
        return problem or args.too_many(1) or cls(x, unknown_type())

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        operand = operand_types[0]
        name = self.name.removeprefix("nml.")
        if not isinstance(operand, Float64Type | IntegerType) or name == "neg":
            return operand
        if name in SCALAR_MATH:
            return Float64Type()  # `log(theta)` of a float config: `math.log`
        return ShapeMismatch(
            f"`{name}` takes a tensor, got a number",
            help=f"of the elementwise functions, {_listed(SCALAR_MATH)} also take a number",
        )


def _listed(names: frozenset[str]) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names))


def _elementwise(name: str, function: Elementwise) -> type[UnaryOp]:
    """One op of the elementwise family: `nml.<name>`, the result typed as the operand."""
    fields = {
        "name": f"nml.{name}",
        "__doc__": function.summary,
        "__annotations__": {"COST": ClassVar[Cost], "FUNCTION": ClassVar[str]},
        "COST": function.cost,
        **({"FUNCTION": name} if name != "neg" else {}),  # `-x` is the operator's
    }
    cls = type(f"{name.title().replace('_', '')}Op", (UnaryOp,), fields)
    cls.__module__ = __name__
    return lazy_op_definition(cls)


_FAMILY: dict[str, type[UnaryOp]] = {
    name: _elementwise(name, function) for name, function in ELEMENTWISE.items()
}
ReluOp = _FAMILY["relu"]
SiluOp = _FAMILY["silu"]
TanhOp = _FAMILY["tanh"]
SigmoidOp = _FAMILY["sigmoid"]
NegOp = _FAMILY["neg"]


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


@lazy_op_definition
class AddOp(BinaryOp):
    name = "nml.add"
    COST: ClassVar[Cost] = per_element()


@lazy_op_definition
class SubOp(BinaryOp):
    name = "nml.sub"
    COST: ClassVar[Cost] = per_element()


@lazy_op_definition
class MulOp(BinaryOp):
    name = "nml.mul"
    COST: ClassVar[Cost] = PRODUCT


@lazy_op_definition
class DivOp(BinaryOp):
    name = "nml.div"
    COST: ClassVar[Cost] = PRODUCT

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        """As Python's `/`: two integers give a float (`x.size(1) / 2` is 4.0)."""
        result = super().infer_shape(operand_types, unifier)
        return Float64Type() if result == i64 else result


@lazy_op_definition
class PowOp(BinaryOp):
    name = "nml.pow"
    # backward: `grad * (exponent * x.pow(exponent - 1))`, two temporaries of x's size
    COST: ClassVar[Cost] = per_element(saves=INPUT, autocast="fp32", backward_temporaries=2)
    FUNCTION: ClassVar[str] = "pow"

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        if len(args.positional) != 2:
            return CallProblem(
                f"`pow` takes a tensor and an exponent, got {len(args.positional)} positional "
                "argument" + ("s" if len(args.positional) != 1 else ""),
                "write `pow(x, 2)` or `x ** 2`",
            )
        lhs, rhs = args.positional
        return args.unknown_keywords(()) or cls(lhs, rhs, unknown_type())


@lazy_op_definition
class MatmulOp(BinaryOp):
    name = "nml.matmul"
    COST: ClassVar[Cost] = MATMUL
    FUNCTION: ClassVar[str] = "matmul"

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        if len(args.positional) != 2:
            return CallProblem(f"`matmul` takes 2 tensors, got {len(args.positional)}")
        return cls(args.positional[0], args.positional[1], unknown_type())

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


class CompareOp(BinaryOp, ABC):
    """`nml.lt %a, %b`: a comparison, broadcasting; a boolean (`i1`) tensor, or an
    `i1` scalar for two scalars."""

    COST: ClassVar[Cost] = FREE

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        result = super().infer_shape(operand_types, unifier)
        if isinstance(result, TensorType):
            return TensorType(result.shape, IntegerType(1))
        return result if isinstance(result, ShapeMismatch) else IntegerType(1)


def _comparison(name: str) -> type[CompareOp]:
    cls = type(f"{name.title()}Op", (CompareOp,), {"name": f"nml.{name}"})
    cls.__module__ = __name__
    return lazy_op_definition(cls)


COMPARE_OPS: dict[str, type[CompareOp]] = {
    op: _comparison(name)
    for op, name in (
        ("<", "lt"),
        ("<=", "le"),
        (">", "gt"),
        (">=", "ge"),
        ("==", "eq"),
        ("!=", "ne"),
    )
}
"""The comparison operators, generated from this table: operator -> op."""


UNARY_OPS: dict[str, type[UnaryOp]] = dict(_FAMILY)
BINARY_OPS: dict[str, type[BinaryOp]] = {
    "+": AddOp, "-": SubOp, "*": MulOp, "/": DivOp, "**": PowOp, "@": MatmulOp,
}  # fmt: skip


@lazy_op_definition
class EinsumOp(SpelledOp):
    """`nml.einsum "bij,bjk->bik" %a, %b`: the output shape follows the equation."""

    name = "nml.einsum"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "einsum"

    equation = prop_def(StringAttr)
    inputs = var_operand_def()
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$equation $inputs attr-dict `:` functional-type($inputs, $result)"
    )

    def __init__(self, equation: str, inputs: Sequence[Value], result_type: Attribute):
        super().__init__(
            operands=[inputs],
            properties={"equation": StringAttr(equation)},
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        equation = args.const(0, "equation")
        if not isinstance(equation, str):
            return CallProblem(
                "`einsum` needs the equation as a string first",
                'write `einsum("bij,bjk->bik", a, b)`',
            )
        operands = args.positional[1:]
        if len(operands) == 1 and isinstance(operands[0].owner, ListOp):
            operands = list(operands[0].owner.elements)
        if not operands:
            return CallProblem("`einsum` needs at least one tensor after the equation")
        return args.unknown_keywords(()) or cls(equation, operands, unknown_type())

    @property
    def tensor(self) -> SSAValue | None:
        return None

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        """`torch.einsum("bij,bjk->bik", a, b)`."""
        return [("", self.equation.data), *(("", v) for v in self.inputs)]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        tensors = tensor_operands(operand_types, "einsum")
        if isinstance(tensors, ShapeMismatch):
            return tensors
        result = einsum_shape(self.equation.data, [t.dims for t in tensors], unifier or Unifier())
        return result if isinstance(result, ShapeMismatch) else tensors[0].with_dims(result)
