"""nml builtins that reduce dims: mean, sum, amax, amin, var, std.

    %m = nml.mean %x dims [-1] keepdim : (!nml.tensor<[B, 8], f32>) -> !nml.tensor<[B, 1], f32>
    %v = nml.var %x dims [-1] correction 0 : (...) -> ...

Without `dims` a reduction reduces every dim; var and std take a `correction`.
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
    result_def,
)

from tensorloom.catalogue.costs import (
    FREE,
    Cost,
    reduction,
)
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    reduce_shape,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    SpelledOp,
    TorchArgument,
    apply_rule,
    int_array,
    int_values,
)
from tensorloom.dialects.nml.calls import (
    CallArgs,
    CallProblem,
    is_int,
    unknown_type,
)
from tensorloom.dialects.nml.ops import Value


class ReductionOp(SpelledOp, ABC):
    """`nml.mean %x dims [-1] keepdim`; without `dims` it reduces every dim.
    `x.mean(dim=-1, keepdim=True)`; several dims are a tuple."""

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
                "dims": int_array(dims) if dims is not None else None,
                "keepdim": UnitAttr() if keepdim else None,
            },
            result_types=[result_type],
        )

    KEEPDIM_AT: ClassVar[int] = 2
    """Where `keepdim` may come positionally (-1: a keyword only)."""

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        dim = args.const(1, "dim", None)
        keepdim = args.const(cls.KEEPDIM_AT, "keepdim", False)
        if is_int(dim):
            dim = [dim]  # type: ignore[list-item]
        if not (dim is None or (isinstance(dim, list) and all(isinstance(d, int) for d in dim))):
            return CallProblem(f"`dim` of `{args.name}` must be a constant integer or list of them")
        if not isinstance(keepdim, bool):
            return CallProblem(f"`keepdim` of `{args.name}` must be `true` or `false`")
        dims = None if dim is None else [d for d in dim if isinstance(d, int)]
        return cls.reduced(args, x, dims, keepdim)

    @classmethod
    def reduced(
        cls, args: CallArgs, x: SSAValue, dims: list[int] | None, keepdim: bool
    ) -> Operation | CallProblem:
        return args.unknown_keywords(("dim", "keepdim")) or cls(x, dims, keepdim, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        dims = int_values(self.dims)
        arguments: list[tuple[str, TorchArgument]] = []
        if dims is not None:
            arguments.append(("dim", dims[0] if len(dims) == 1 else tuple(dims)))
        return (
            arguments
            + self.moment_arguments()
            + ([("keepdim", True)] if self.keepdim is not None else [])
        )

    def moment_arguments(self) -> list[tuple[str, TorchArgument]]:
        return []

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axes, keep = int_values(self.dims), self.keepdim is not None
        return apply_rule(operand_types[0], lambda dims: reduce_shape(dims, axes, keep))


@lazy_op_definition
class MeanOp(ReductionOp):
    name = "nml.mean"
    COST: ClassVar[Cost] = reduction()
    FUNCTION: ClassVar[str] = "mean"


@lazy_op_definition
class SumOp(ReductionOp):
    name = "nml.sum"
    COST: ClassVar[Cost] = reduction(autocast="fp32")
    FUNCTION: ClassVar[str] = "sum"


@lazy_op_definition
class AmaxOp(ReductionOp):
    name = "nml.amax"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "amax"


@lazy_op_definition
class AminOp(ReductionOp):
    name = "nml.amin"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "amin"


class MomentOp(ReductionOp, ABC):
    """`nml.var %x dims [-1] correction 0 keepdim`: `correction` defaults to 1 (Bessel)."""

    correction = opt_prop_def(IntegerAttr[I64])

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input (`dims` $dims^)? (`correction` $correction^)? (`keepdim` $keepdim^)? "
        "attr-dict `:` functional-type($input, $result)"
    )

    def __init__(
        self,
        input: Value,
        dims: Sequence[int] | None,
        keepdim: bool,
        result_type: Attribute,
        correction: int | None = None,
    ):
        super().__init__(input, dims, keepdim, result_type)
        if correction is not None:
            self.correction = IntegerAttr(correction, i64)

    KEEPDIM_AT: ClassVar[int] = -1  # the third positional is `unbiased`

    @classmethod
    def reduced(
        cls, args: CallArgs, x: SSAValue, dims: list[int] | None, keepdim: bool
    ) -> Operation | CallProblem:
        correction = args.const(-1, "correction", None)
        unbiased = args.const(2, "unbiased", None)
        if isinstance(unbiased, bool):
            correction = int(unbiased)
        if correction is not None and not (isinstance(correction, int) and correction >= 0):
            return CallProblem(f"`correction` of `{args.name}` must be a constant integer >= 0")
        problem = args.unknown_keywords(("dim", "keepdim", "correction", "unbiased"))
        return problem or cls(x, dims, keepdim, unknown_type(), correction)  # type: ignore[arg-type]

    def moment_arguments(self) -> list[tuple[str, TorchArgument]]:
        if self.correction is None:
            return []
        return [("correction", self.correction.value.data)]


@lazy_op_definition
class VarOp(MomentOp):
    name = "nml.var"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "var"


@lazy_op_definition
class StdOp(MomentOp):
    name = "nml.std"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "std"
