"""nml builtins that make values: lists, arange, random samples, linspace, multinomial.

    %l = nml.list %a, %b : (...) -> !nml.list
    %r = nml.arange [0 : i64, "?", 1 : i64](%t) : (i64) -> !nml.tensor<[T], i64>
    %s = nml.sample "normal" ["?", 16](%n) : (i64) -> !nml.tensor<[B, 16], f32>
    %p = nml.linspace 1.0e-04 to 2.0e-02 steps 1000 : !nml.tensor<[1000], f32>

A size or bound may be a run-time integer (`"?"`, the next dynamic operand).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.costs import (
    FREE,
    Cost,
)
from tensorloom.catalogue.shapes import (
    Shape,
    ShapeMismatch,
    Unifier,
    arange_length,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml.builtins import (
    FunctionalOp,
    SizedOp,
    SpelledOp,
    TorchArgument,
    apply_rule,
    shape_entry,
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
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.types import (
    Dim,
    Dims,
    ListType,
    TensorType,
    TupleType,
)


@lazy_op_definition
class ListOp(FunctionalOp):
    """`%l = nml.list %a, %b : (...) -> !nml.list`: a list or tuple of values."""

    name = "nml.list"
    COST: ClassVar[Cost] = FREE

    elements = var_operand_def()
    result = result_def()
    tuple = opt_prop_def(UnitAttr)
    """`(a, b)`, a tuple (irgen); without it, `[a, b]`, a list."""

    irdl_options = (ParsePropInAttrDict(),)
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


@lazy_op_definition
class ArangeOp(SizedOp):
    """`nml.arange [0 : i64, "?", 1 : i64](%t)`: start, end, step (ints, floats or `"?"`);
    an i64 vector when all are integers, else f32."""

    name = "nml.arange"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "arange"

    bounds = prop_def(ArrayAttr)
    dynamic_sizes = var_operand_def()  # type: ignore[assignment]
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$bounds (`(` $dynamic_sizes^ `)`)? attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self, bounds: Sequence[Attribute], dynamic_sizes: Sequence[Value], result_type: Attribute
    ):
        super().__init__(
            operands=[dynamic_sizes],
            properties={"bounds": ArrayAttr(bounds)},
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        given = args.positional or [v for k in ("start", "end") if (v := args.keywords.get(k))]
        if not 1 <= len(given) <= 3:
            return CallProblem(
                f"`arange` takes 1 to 3 arguments, got {len(given)}",
                "the forms are `arange(end)`, `arange(start, end)` and `arange(start, end, step)`",
            )
        if "step" in args.keywords:
            given = [*given, args.keywords["step"]]
        bounds, dynamic = _bounds(args, given)
        if len(given) == 1:
            bounds = [IntegerAttr(0, i64), bounds[0], IntegerAttr(1, i64)]
        elif len(given) == 2:
            bounds = [*bounds, IntegerAttr(1, i64)]
        problem = args.unknown_keywords(("start", "end", "step", "device", "dtype"))
        return problem or _arange_problem(bounds) or cls(bounds, dynamic, unknown_type())

    def is_float(self) -> bool:
        return any(isinstance(a, FloatAttr) for a in self.bounds.data)

    def verify_(self) -> None:
        if len(self.bounds.data) != 3:
            raise VerifyException("arange takes start, end and step")

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        known = iter(sizes)
        values: list[Dim | float] = []
        for a in self.bounds.data:
            if isinstance(a, FloatAttr):
                values.append(a.value.data)
            else:
                entry = shape_entry(a)
                values.append(unifier.resolve(next(known)) if entry == DYNAMIC else entry)
        if values[2] == 0:
            return ShapeMismatch("arange: `step` must not be zero")
        element = TensorType.unranked().element_type if self.is_float() else i64
        return TensorType.from_dims([arange_length(*values)], element)


def _arange_problem(bounds: Sequence[Attribute]) -> CallProblem | None:
    """Constant bounds PyTorch rejects (pytorch_false_negatives/gen-6976: `arange(-0.5)`)."""
    values = [b.value.data for b in bounds if isinstance(b, IntegerAttr | FloatAttr)]
    if len(values) != 3:
        return None
    start, end, step = values
    if step == 0:
        return CallProblem("the step of `arange` must not be 0")
    if (end - start) * step < 0:
        return CallProblem(f"`arange` from {start} to {end} in steps of {step} never gets there")
    return None


def _bounds(args: CallArgs, values: Sequence[SSAValue]) -> tuple[list[Attribute], list[SSAValue]]:
    """arange's bounds: constant ints and floats fold, anything else is a `?`."""
    bounds: list[Attribute] = []
    dynamic: list[SSAValue] = []
    for value in values:
        const = args.constant_of(value)
        if isinstance(const, bool) or not isinstance(const, int | float):
            bounds.append(StringAttr(DYNAMIC))
            dynamic.append(value)
        elif isinstance(const, int):
            bounds.append(IntegerAttr(const, i64))
        else:
            bounds.append(FloatAttr(const, f64))
    return bounds, dynamic


SAMPLE_DISTRIBUTIONS = ("normal", "uniform", "integers")
"""`nml.sample`'s kinds: `randn`, `rand`, and `randint` (integers in [low, high))."""


@lazy_op_definition
class SampleOp(SizedOp):
    """`nml.sample "normal" [?, 16](%n)`: a new tensor of random samples of this shape:
    standard normal (`randn`), uniform in [0, 1) (`rand`), or, with `low` and `high`,
    integers in [low, high) as i64 (`randint`). A `"?"` size is the next dynamic operand."""

    name = "nml.sample"
    COST: ClassVar[Cost] = FREE
    RECORDS: ClassVar[tuple[str, ...]] = ("randn", "rand", "randint")

    distribution = prop_def(StringAttr)
    shape = prop_def(ArrayAttr)
    low = opt_prop_def(IntegerAttr[I64])
    high = opt_prop_def(IntegerAttr[I64])
    dynamic_sizes = var_operand_def()  # type: ignore[assignment]
    result = result_def()

    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$distribution $shape (`(` $dynamic_sizes^ `)`)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        distribution: str,
        shape: Sequence[Attribute],
        dynamic_sizes: Sequence[Value],
        result_type: Attribute,
        bounds: tuple[int, int] | None = None,
    ):
        properties: dict[str, Attribute | None] = {
            "distribution": StringAttr(distribution),
            "shape": ArrayAttr(shape),
        }
        if bounds is not None:
            properties["low"] = IntegerAttr(bounds[0], i64)
            properties["high"] = IntegerAttr(bounds[1], i64)
        super().__init__(
            operands=[dynamic_sizes], properties=properties, result_types=[result_type]
        )

    def verify_(self) -> None:
        if self.distribution.data not in SAMPLE_DISTRIBUTIONS:
            raise VerifyException(f"unknown distribution `{self.distribution.data}`")
        integers = self.distribution.data == "integers"
        if integers != (self.low is not None and self.high is not None):
            raise VerifyException("`low` and `high` go with the integers distribution only")
        if integers and self.low.value.data >= self.high.value.data:  # type: ignore[union-attr]
            raise VerifyException("`low` must be less than `high`")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        """`randn(B, 16)` or `randn([B, 16])`, `rand(...)`, `randint(low, high, [B])`: a new
        tensor of samples, its sizes constants or run-time integers (`x.size(0)`)."""
        bounds: tuple[int, int] | None = None
        sizes = args.positional
        if args.name == "randint":
            found = _randint_bounds(args)
            if isinstance(found, CallProblem):
                return found
            bounds, sizes = found, args.positional[2:]
        sizes = sizes or ([args.keywords["size"]] if "size" in args.keywords else [])
        if not sizes:
            usage = "randint(0, 10, [B])" if args.name == "randint" else f"{args.name}([B, 16])"
            return CallProblem(f"`{args.name}` needs the sizes of its result", f"write `{usage}`")
        found_sizes = args.sizes(sizes)
        if isinstance(found_sizes, CallProblem):
            return found_sizes
        shape, dynamic = found_sizes
        problem = args.unknown_keywords(("size", "low", "high", "device", "dtype"))
        distribution = SAMPLE_DISTRIBUTIONS[cls.RECORDS.index(args.name)]
        return problem or cls(distribution, shape, dynamic, unknown_type(), bounds)

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        dims = sized_entries(self.shape, sizes)
        if any(isinstance(d, int) and d < 0 for d in dims):
            return ShapeMismatch(f"a sample's sizes must not be negative, got {list(dims)}")
        if self.distribution.data == "integers":
            return TensorType.from_dims(dims, i64)
        return TensorType.from_dims(dims)


def _randint_bounds(args: CallArgs) -> tuple[int, int] | CallProblem:
    low, high = args.const(0, "low"), args.const(1, "high")
    if isinstance(high, Missing) and "high" not in args.keywords:
        return CallProblem(
            "`randint` takes low, high and the sizes", "write `randint(0, 1000, [x.size(0)])`"
        )
    if not all(is_int(v) for v in (low, high)):
        return CallProblem("the bounds of `randint` must be constant integers")
    if low >= high:  # type: ignore[operator]
        return CallProblem(f"`randint` draws from [low, high): {low} is not below {high}")
    return low, high  # type: ignore[return-value]


@lazy_op_definition
class LinspaceOp(FunctionalOp):
    """`nml.linspace 1.0e-04 to 2.0e-02 steps 1000`: `steps` evenly spaced f32 values from
    `start` to `end`, both included (`torch.linspace`)."""

    name = "nml.linspace"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "linspace"

    start = prop_def(FloatAttr)
    end = prop_def(FloatAttr)
    steps = prop_def(IntegerAttr[I64])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = "$start `to` $end `steps` $steps attr-dict `:` type($result)"

    def __init__(self, start: float, end: float, steps: int, result_type: Attribute):
        super().__init__(
            properties={
                "start": FloatAttr(start, f64),
                "end": FloatAttr(end, f64),
                "steps": IntegerAttr(steps, i64),
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.steps.value.data < 0:
            raise VerifyException("linspace's `steps` must not be negative")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        start, end = args.number(0, "start"), args.number(1, "end")
        steps = args.int_arg(2, "steps")
        for value in (start, end, steps):
            if isinstance(value, CallProblem):
                return value
        if start is None or end is None:
            return CallProblem(
                "`linspace` takes start, end and steps", "write `linspace(1e-4, 0.02, 1000)`"
            )
        if steps < 0:  # type: ignore[operator]
            return CallProblem(f"`steps` of `linspace` must not be negative, got {steps}")
        problem = args.unknown_keywords(("start", "end", "steps", "device", "dtype"))
        return problem or args.too_many(3) or cls(start, end, steps, unknown_type())  # type: ignore[arg-type]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return TensorType.from_dims([self.steps.value.data])


@lazy_op_definition
class MultinomialOp(SpelledOp):
    """`nml.multinomial %p samples 4 replacement false`: `num_samples` category indices (i64)
    per row of the non-negative weights `p` ([C] or [N, C]), drawn in proportion to them."""

    name = "nml.multinomial"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "multinomial"

    input = operand_def()
    num_samples = prop_def(IntegerAttr[I64])
    replacement = prop_def(IntegerAttr)
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `samples` $num_samples `replacement` $replacement attr-dict `:` "
        "functional-type($input, $result)"
    )

    def __init__(self, input: Value, num_samples: int, replacement: bool, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={
                "num_samples": IntegerAttr(num_samples, i64),
                "replacement": IntegerAttr(int(replacement), i1),
            },
            result_types=[result_type],
        )

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        x = args.first()
        if isinstance(x, CallProblem):
            return x
        count = args.int_arg(1, "num_samples")
        if isinstance(count, CallProblem):
            return count
        if count < 1:
            return CallProblem(f"`num_samples` of `multinomial` must be at least 1, got {count}")
        replacement = args.const(2, "replacement", False)
        if not isinstance(replacement, bool):
            return CallProblem("`replacement` of `multinomial` must be `true` or `false`")
        problem = args.rest(("num_samples", "replacement"), 3)
        return problem or cls(x, count, replacement, unknown_type())

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        replacement = [("replacement", True)] if self.replacement.value.data else []
        return [("", self.num_samples.value.data), *replacement]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        count = self.num_samples.value.data
        replacement = bool(self.replacement.value.data)

        def rule(dims: Dims) -> Shape | ShapeMismatch:
            if len(dims) not in (1, 2):
                return ShapeMismatch(
                    f"`multinomial` takes weights [C] or [N, C], not {len(dims)}-D"
                )
            classes = dims[-1]
            if not replacement and isinstance(classes, int) and count > classes:
                return ShapeMismatch(
                    f"`multinomial` draws {count} of {classes} categories without replacement",
                    "pass `replacement=true`, or draw at most as many as there are categories",
                )
            return (*dims[:-1], count)

        result = apply_rule(operand_types[0], rule)
        return TensorType(result.shape, i64) if isinstance(result, TensorType) else result
