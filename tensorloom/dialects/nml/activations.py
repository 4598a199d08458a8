"""nml builtins between a network's layers: gelu, clamp, softmax, log_softmax, dropout.

    %1 = nml.gelu %0 approximate "tanh" : (!nml.tensor<[B, 256], f32>) -> ...
    %2 = nml.softmax %1 dim -1 : (...) -> ...
    %3 = nml.dropout %2 rate #nml.cfg<"p"> : (...) -> ...

Each is a `SpelledOp` typed as its input (softmax checks its `dim`). A dropout rate is
a number or the model's config (`rate_props`, `rate_argument`), as attention's is.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    Float64Type,
    FloatAttr,
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
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.costs import (
    DROPOUT,
    INPUT,
    OUTPUT,
    Cost,
    per_element,
)
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    same_shape,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    Member,
    SpelledOp,
    TorchArgument,
    apply_rule,
)
from tensorloom.dialects.nml.calls import (
    CallArgs,
    CallProblem,
    unknown_type,
)
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    CfgAttr,
)


@lazy_op_definition
class GeluOp(SpelledOp):
    """`nml.gelu %x` (exact) or `nml.gelu %x approximate "tanh"`."""

    name = "nml.gelu"
    COST: ClassVar[Cost] = per_element(saves=INPUT)
    FUNCTION: ClassVar[str] = "gelu"

    input = operand_def()
    approximate = opt_prop_def(StringAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`approximate` $approximate^)? attr-dict `:` functional-type($input, $result)"
    )

    def __init__(
        self, input: Value, result_type: Attribute | None = None, approximate: str = "none"
    ):
        super().__init__(
            operands=[input],
            properties={"approximate": StringAttr(approximate) if approximate != "none" else None},
            result_types=[result_type or SSAValue.get(input).type],
        )

    def verify_(self) -> None:
        if self.approximate is not None and self.approximate.data != "tanh":
            raise VerifyException(f'gelu approximate must be "tanh", got "{self.approximate.data}"')

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        approximate = args.const(1, "approximate", "none")
        if approximate not in ("none", "tanh"):
            return CallProblem(
                f'`approximate` of `gelu` must be "none" or "tanh", got `{approximate}`',
                'write `gelu(x, approximate="tanh")` for the tanh approximation',
            )
        return args.rest(("approximate",), 2) or cls(x, unknown_type(), str(approximate))

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        """`F.gelu(x)`, `F.gelu(x, approximate="tanh")`."""
        return [] if self.approximate is None else [("approximate", self.approximate.data)]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return operand_types[0]


@lazy_op_definition
class ClampOp(SpelledOp):
    """`nml.clamp %x min 0.0 max 6.0`: at least one bound; `x.clamp(min=0.0, max=6.0)`."""

    name = "nml.clamp"
    COST: ClassVar[Cost] = per_element(saves=INPUT)
    FUNCTION: ClassVar[str] = "clamp"

    input = operand_def()
    min = opt_prop_def(FloatAttr[Float64Type])
    max = opt_prop_def(FloatAttr[Float64Type])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`min` $min^)? (`max` $max^)? attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, low: float | None, high: float | None, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={
                "min": None if low is None else FloatAttr(low, Float64Type()),
                "max": None if high is None else FloatAttr(high, Float64Type()),
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.min is None and self.max is None:
            raise VerifyException("clamp needs `min`, `max` or both")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        low, high = args.number(1, "min"), args.number(2, "max")
        for bound in (low, high):
            if isinstance(bound, CallProblem):
                return bound
        if low is None and high is None:
            return CallProblem("`clamp` needs `min`, `max` or both", "write `clamp(x, min=0.0)`")
        return args.rest(("min", "max"), 3) or cls(x, low, high, unknown_type())  # type: ignore[arg-type]

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        bounds = (("min", self.min), ("max", self.max))
        return [(name, bound.value.data) for name, bound in bounds if bound is not None]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return operand_types[0]


class SoftmaxLikeOp(SpelledOp, ABC):
    """`nml.softmax %x dim -1`: `torch.softmax(x, dim=-1)`."""

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

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dim = args.int_arg(1, "dim")
        if isinstance(dim, CallProblem):
            return dim
        return args.unknown_keywords(("dim", "dtype")) or cls(x, dim, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("dim", self.dim.value.data)]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axis = self.dim.value.data
        return apply_rule(operand_types[0], lambda dims: same_shape(dims, axis))


@lazy_op_definition
class SoftmaxOp(SoftmaxLikeOp):
    name = "nml.softmax"
    COST: ClassVar[Cost] = per_element(5, saves=OUTPUT, autocast="fp32")
    FUNCTION: ClassVar[str] = "softmax"


@lazy_op_definition
class LogSoftmaxOp(SoftmaxLikeOp):
    name = "nml.log_softmax"
    COST: ClassVar[Cost] = per_element(5, saves=OUTPUT, autocast="fp32")
    FUNCTION: ClassVar[str] = "log_softmax"


def rate_argument(attr: Attribute | None) -> TorchArgument:
    """A dropout probability in the script: the number, or `self.<config>`."""
    if isinstance(attr, CfgAttr):
        return Member(attr.param.data)
    assert isinstance(attr, FloatAttr), f"compiler bug: dropout rate {attr}"
    return attr.value.data


def rate_props(p: float | CfgAttr, number: str, config: str) -> dict[str, Attribute]:
    """A dropout probability as properties: a number (`number`), or the model's config
    that holds it (`config`: `#nml.cfg<"p">`, read as `self.p`; resolve-nml checks its
    range under each instantiation)."""
    if isinstance(p, CfgAttr):
        return {config: p}
    return {number: FloatAttr(p, Float64Type())}


@lazy_op_definition
class DropoutOp(SpelledOp):
    """`nml.dropout %x p 0.1`, or `nml.dropout %x rate #nml.cfg<"p">` for a config rate;
    a number `p` lies in [0, 1). `F.dropout(x, p=0.1, training=self.training)`."""

    name = "nml.dropout"
    COST: ClassVar[Cost] = DROPOUT
    FUNCTION: ClassVar[str] = "dropout"

    input = operand_def()
    p = opt_prop_def(FloatAttr[Float64Type])
    rate = opt_prop_def(CfgAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`p` $p^)? (`rate` $rate^)? attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, p: float | CfgAttr, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties=rate_props(p, "p", "rate"),
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if (self.p is None) == (self.rate is None):
            raise VerifyException("dropout takes a number `p` or a config `rate`")
        if self.p is None:
            return
        p = self.p.value.data
        if not 0.0 <= p < 1.0:
            raise VerifyException(f"dropout probability must be in [0, 1), got {p}")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        rate = args.config_rate(args.value(1, "p"))
        if isinstance(rate, CallProblem):
            return rate
        p = args.const(1, "p", 0.5) if rate is None else 0.0
        if not isinstance(p, int | float) or isinstance(p, bool):
            return CallProblem("`p` of `dropout` must be a constant number or a config")
        if not 0.0 <= p < 1.0:
            return CallProblem(f"`dropout` probability must be in [0, 1), got {p}")
        problem = args.unknown_keywords(("p", "training", "inplace"))
        return problem or cls(x, rate or float(p), unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        return [("p", rate_argument(self.p or self.rate)), ("training", Member("training"))]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return operand_types[0]
