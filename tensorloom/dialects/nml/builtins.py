"""nml functional builtins: relu, softmax, reshape, matmul, ... with their shape rules.

    %1 = nml.relu %0 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
    %2 = nml.softmax %1 dim -1 : (...) -> ...
    %3 = nml.reshape %2 to [B, -1] : (!nml.tensor<[B, 4, 64], f32>) -> ...
    %4 = nml.add %a, %b : (!nml.tensor<[B, T, 512], f32>, ...) -> ...

Every op here implements `infer_shape(operand_types, unifier)`, returning the result
type or a `ShapeMismatch`; the shape-inference pass calls it and supplies the
`Unifier` of symbolic dims. The rules themselves are the plain Python helpers of
`tensorloom/catalogue/shapes.py`, which the layer catalogue shares.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
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
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.catalogue.costs import (
    ATTENTION,
    DROPOUT,
    FREE,
    INPUT,
    MATMUL,
    OUTPUT,
    PER_VALUE_ELEMENT,
    PRODUCT,
    VIEW,
    Cost,
    per_element,
    reduction,
)
from tensorloom.catalogue.functions import ELEMENTWISE, FUNCTIONS, SCALAR_MATH, Elementwise
from tensorloom.catalogue.shapes import (
    UNKNOWN_BOUND,
    Index,
    MaskIndex,
    Shape,
    ShapeMismatch,
    Slice,
    TensorIndex,
    Unifier,
    arange_length,
    assigned_region,
    attention_shape,
    broadcast,
    broadcast_into,
    cat_shape,
    chunk_shapes,
    einsum_shape,
    expand_shape,
    flatten_shape,
    index_shape,
    matmul_shape,
    normalize_dim,
    permute_shape,
    reduce_shape,
    repeat_shape,
    reshape_shape,
    same_shape,
    split_shapes,
    squeeze_shape,
    stack_shape,
    value_into_region,
)
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.lazy_format import LazyFormatOp
from tensorloom.dialects.nml.calls import (
    DYNAMIC,
    CallArgs,
    CallProblem,
    Const,
    Missing,
    is_int,
    unknown_type,
)
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.shape_trait import FromOperands
from tensorloom.dialects.nml.types import (
    AnyType,
    CfgAttr,
    Dim,
    Dims,
    ListType,
    NoneType,
    NoneValueAttr,
    SliceAttr,
    TensorType,
    TupleType,
    element_type_name,
)

DimsRule = Callable[[Dims], "Shape | ShapeMismatch"]

BUILTIN_OPS: list[type[FunctionalOp]] = []
"""Every concrete builtin op, in the order they are defined: the dialect registers them."""

OP_OF_RECORD: dict[str, type[FunctionalOp]] = {}
"""The op a call of a catalogue record builds, by the record's name."""


def apply_rule(operand: Attribute, rule: DimsRule) -> Attribute | ShapeMismatch:
    """Apply a dims rule to a tensor type; unknown rank stays unknown, and so does a
    value of unknown type (a call already reported)."""
    if isinstance(operand, AnyType):
        return TensorType.unranked()
    if not isinstance(operand, TensorType):
        return ShapeMismatch(f"expected a tensor, got {operand}")
    dims = operand.dims
    if dims is None:  # unknown rank, or `[..., 16]`: a rule of dims tells nothing here
        return operand.with_dims(None)
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
    """A builtin with a shape rule: its `FromOperands` trait gives the shape-inference
    pass `result_type`, which calls `infer_shape` with the pass's `Unifier` (without
    one, a fresh unifier binds the symbols).

    Defining a concrete one registers it: the dialect lists every op of `BUILTIN_OPS`,
    and resolve-nml builds a call of a catalogue record from the op that names the
    record (`FUNCTION`, or one of `RECORDS`) with its `from_call`. So a builtin is its
    record (tensorloom/catalogue/functions.py) and its op class, nothing else."""

    traits = traits_def(FromOperands())

    COST: ClassVar[Cost]
    """Its FLOPs and saved tensors in `tlc info` (tensorloom/catalogue/costs.py); every
    concrete builtin declares one (tests/unit/dialects/test_builtin_costs.py)."""

    FUNCTION: ClassVar[str]
    """The catalogue record that spells it (its PyTorch), where a call of one builds it."""

    RECORDS: ClassVar[tuple[str, ...]] = ()
    """The catalogue records whose calls it builds, when more than its `FUNCTION`."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in vars(cls):  # an abstract family base
            return
        BUILTIN_OPS.append(cls)
        records = cls.RECORDS or ((cls.FUNCTION,) if hasattr(cls, "FUNCTION") else ())
        for record in records:
            OP_OF_RECORD[record] = cls

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        """The op for a call of one of its records (see `tensorloom.dialects.nml.calls`)."""
        raise NotImplementedError(f"compiler bug: `{cls.name}` is built from no call")

    def cost(self) -> Cost:
        """Its cost rule in `tlc info`: its class's `COST` (a loss's depends on its kind).
        One without is a compiler bug, never 0 FLOPs."""
        cost = getattr(type(self), "COST", None)
        if not isinstance(cost, Cost):
            raise AssertionError(f"compiler bug: builtin `{self.name}` declares no `COST`")
        return cost

    @abstractmethod
    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch: ...

    def result_type(
        self,
        operand_types: Sequence[Attribute],
        size_of: Callable[[SSAValue], Dim],
        unifier: Unifier,
    ) -> Attribute | ShapeMismatch:
        """The rule `FromOperands` applies: the result's type for these operand types."""
        return self.infer_shape(operand_types, unifier)


Literal = int | float | bool | str | None


@dataclass(frozen=True, slots=True)
class Member:
    """`self.<name>` in the script: the module's `training` flag, or a config (`self.p`)."""

    name: str


@dataclass(frozen=True, slots=True)
class PyName:
    """A dotted Python name in the script: `torch.int64`."""

    dotted: str


@dataclass(frozen=True, slots=True)
class SizeOf:
    """`x.size(axis)` in the script: a size of a tensor, read where the call runs."""

    tensor: SSAValue
    axis: int


@dataclass(frozen=True, slots=True)
class InTraining:
    """`p if self.training else 0.0`: a rate (a number, or `self.<config>`) that applies
    only in training."""

    rate: float | Member


TorchArgument = (
    SSAValue
    | Literal
    | tuple[SSAValue | int, ...]
    | list[SSAValue | int]
    | Member
    | PyName
    | SizeOf
    | InTraining
)
"""One argument of the PyTorch call: a value, a constant, a tuple or a list of ints and
values, `self.<name>`, a Python name, a tensor's size, or a rate only in training."""


class SpelledOp(FunctionalOp, ABC):
    """A builtin whose lowering is its catalogue record's PyTorch spelling, called on
    `tensor` (its first operand) with `torch_arguments` (name "" for a positional one):
    `torch.cumsum(x, dim=1)`, `x.flatten(1)`, `F.dropout(x, p=0.1, training=self.training)`.
    convert-nml-to-torch has one pattern for all of them, so such a builtin needs no
    lowering of its own."""

    @property
    def tensor(self) -> SSAValue | None:
        """What the call is made on: the receiver of `x.name(...)`, else the first argument;
        None for a call of `torch_arguments` alone (`torch.cat([a, b], dim=1)`)."""
        return self.operands[0]

    @abstractmethod
    def torch_arguments(self) -> list[tuple[str, TorchArgument]]: ...

    def spelling(self) -> str:
        """The PyTorch it lowers to: its catalogue record's (`F.gelu`, `x.flatten`)."""
        return FUNCTIONS[self.FUNCTION].torch


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


def _shape_entry(attr: Attribute) -> Dim | str:
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    return None


class SizedOp(FunctionalOp, ABC):
    """An op whose sizes may be runtime integers (`dynamic_sizes`): the shape-inference
    pass passes what it knows of each (`x.size(0)` is the input's symbol, a config its
    value) to `infer_sized`."""

    @abstractmethod
    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch: ...

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return self.infer_sized(
            operand_types, [None] * len(self.dynamic_sizes), unifier or Unifier()
        )

    def result_type(
        self,
        operand_types: Sequence[Attribute],
        size_of: Callable[[SSAValue], Dim],
        unifier: Unifier,
    ) -> Attribute | ShapeMismatch:
        """Sizes known only at run time are often known here: `x.size(0)` is a symbol
        of the input, a config reference is the config's value."""
        sizes = [size_of(v) for v in self.dynamic_sizes]
        return self.infer_sized(operand_types, sizes, unifier)

    @property
    @abstractmethod
    def dynamic_sizes(self) -> Sequence[SSAValue]: ...


def _sizes_in_order(shape: ArrayAttr, dynamic: Sequence[SSAValue]) -> list[SSAValue | int]:
    """A `sizes` property's entries as the script passes them: an int, or for a `"?"`
    the next dynamic operand."""
    values = iter(dynamic)
    return [a.value.data if isinstance(a, IntegerAttr) else next(values) for a in shape.data]


def _sized_entries(shape: ArrayAttr, sizes: Sequence[Dim]) -> list[Dim]:
    """The entries of a `sizes` property with each `"?"` replaced by the next known size."""
    known = iter(sizes)
    return [next(known) if (e := _shape_entry(a)) == DYNAMIC else e for a in shape.data]


class ReshapeLikeOp(SizedOp, SpelledOp, ABC):
    """`nml.reshape %x to [B, -1, 64] (%n)`: sizes are ints (one may be -1),
    symbolic names, or `"?"` for a runtime size taken, in order, from `dynamic_sizes`.
    `x.reshape(x.size(0), -1, 64)`: a symbolic size reads the input's own size."""

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

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        target = _sized_entries(self.shape, sizes)
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
            operands=[input], properties={"dims": _int_array(dims)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        order = _ints(self.dims) or []
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
        return [("", d) for d in _ints(self.dims) or []]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        order = _ints(self.dims) or []
        return apply_rule(operand_types[0], lambda dims: permute_shape(dims, order))


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
                "dims": _int_array(dims) if dims is not None else None,
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
        dims = _ints(self.dims)
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
        axes, keep = _ints(self.dims), self.keepdim is not None
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


class _SizesOp(SizedOp, SpelledOp, ABC):
    """`nml.expand %x to [-1, "?", 4](%n)`: sizes are ints or `"?"` (the next dynamic operand);
    `x.expand(B, -1, -1)`, `x.repeat(1, 4)`, given as separate arguments or one list."""

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

    def verify_(self) -> None:
        dynamic = [_shape_entry(a) for a in self.shape.data].count(DYNAMIC)
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
        return [("", size) for size in _sizes_in_order(self.shape, self.dynamic_sizes)]


@lazy_op_definition
class ExpandOp(_SizesOp):
    name = "nml.expand"
    COST: ClassVar[Cost] = VIEW
    FUNCTION: ClassVar[str] = "expand"

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        target = _sized_entries(self.shape, sizes)
        return apply_rule(operand_types[0], lambda dims: expand_shape(dims, target, unifier))


@lazy_op_definition
class RepeatOp(_SizesOp):
    name = "nml.repeat"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "repeat"

    def infer_sized(
        self, operand_types: Sequence[Attribute], sizes: Sequence[Dim], unifier: Unifier
    ) -> Attribute | ShapeMismatch:
        counts = _sized_entries(self.shape, sizes)
        return apply_rule(operand_types[0], lambda dims: repeat_shape(dims, counts))


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
                entry = _shape_entry(a)
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
        dims = _sized_entries(self.shape, sizes)
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
            properties={"dims": _int_array(dims) if dims is not None else None},
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
        dims = _ints(self.dims)
        if dims is None:
            return []
        return [("", dims[0] if len(dims) == 1 else tuple(dims))]

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        axes, u = _ints(self.dims), unifier or Unifier()
        return apply_rule(operand_types[0], lambda dims: squeeze_shape(dims, axes, u))


def _tensors(operand_types: Sequence[Attribute], what: str) -> list[TensorType] | ShapeMismatch:
    tensors = [t for t in operand_types if isinstance(t, TensorType)]
    return (
        tensors
        if len(tensors) == len(operand_types)
        else ShapeMismatch(f"{what} takes tensors only")
    )


@lazy_op_definition
class StackOp(JoinOp):
    name = "nml.stack"
    COST: ClassVar[Cost] = FREE
    FUNCTION: ClassVar[str] = "stack"

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        tensors = _tensors(operand_types, "stack")
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
        sizes = _sizes_in_order(self.sizes, self.dynamic_sizes)
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
        entries = _sized_entries(self.sizes, sizes)
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
        tensors = _tensors(operand_types, "einsum")
        if isinstance(tensors, ShapeMismatch):
            return tensors
        result = einsum_shape(self.equation.data, [t.dims for t in tensors], unifier or Unifier())
        return result if isinstance(result, ShapeMismatch) else tensors[0].with_dims(result)


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


@lazy_op_definition
class AttentionOp(SpelledOp):
    """`nml.attention %q, %k, %v mask(%m) causal dropout 0.1`: scaled dot-product
    attention (`F.scaled_dot_product_attention(q, k, v, is_causal=True)`: PyTorch picks
    the fused flash or memory-efficient kernel); [..., L, E] x [..., S, E] x [..., S, Ev]
    -> [..., L, Ev]. Dropout applies only in training, as `F.dropout` does."""

    name = "nml.attention"
    FUNCTION: ClassVar[str] = "scaled_dot_product_attention"
    COST: ClassVar[Cost] = ATTENTION

    query = operand_def()
    key = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    causal = opt_prop_def(UnitAttr)
    dropout = opt_prop_def(FloatAttr[Float64Type])
    dropout_rate = opt_prop_def(CfgAttr)
    scale = opt_prop_def(FloatAttr[Float64Type])
    result = result_def()

    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$query `,` $key `,` $value (`mask` `(` $mask^ `)`)? (`causal` $causal^)? "
        "(`dropout` $dropout^)? (`dropout_rate` $dropout_rate^)? (`scale` $scale^)? attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(
        self,
        qkv: Sequence[Value],
        mask: Value | None,
        causal: bool,
        dropout: float | CfgAttr,
        scale: float | None,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[*qkv, [mask] if mask is not None else []],
            properties={
                "causal": UnitAttr() if causal else None,
                **(rate_props(dropout, "dropout", "dropout_rate") if dropout else {}),
                "scale": None if scale is None else FloatAttr(scale, Float64Type()),
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.causal is not None and self.mask is not None:
            raise VerifyException("attention takes a mask or `causal`, not both")

    @classmethod
    def from_call(cls, args: CallArgs) -> Operation | CallProblem:
        qkv = args.positional[:3]
        if len(qkv) != 3:
            return CallProblem(
                f"`{args.name}` takes q, k and v, got {len(qkv)} tensors",
                "write `scaled_dot_product_attention(q, k, v, causal=true)`",
            )
        mask = args.value(3, "attn_mask")
        causal = args.const(5, "causal", args.const(5, "is_causal", False))
        keyword = "dropout" if "dropout_p" not in args.keywords else "dropout_p"
        rate = args.config_rate(args.value(4, keyword))
        dropout = args.number(4, keyword) if rate is None else None
        scale = args.number(6, "scale")
        if not isinstance(causal, bool):
            return CallProblem(f"`causal` of `{args.name}` must be `true` or `false`")
        for number in (rate, dropout, scale):
            if isinstance(number, CallProblem):
                return number
        if isinstance(dropout, float) and not 0.0 <= dropout < 1.0:
            return CallProblem(f"`dropout` of `{args.name}` must be in [0, 1), got {dropout}")
        if causal and mask is not None:
            return CallProblem(
                f"`{args.name}` takes `attn_mask` or `causal=true`, not both",
                "fold the causal mask into `attn_mask`, or drop `attn_mask`",
            )
        allowed = ("attn_mask", "dropout", "dropout_p", "causal", "is_causal", "scale")
        problem = args.rest(allowed, 4)
        p = rate or dropout or 0.0
        return problem or cls(qkv, mask, causal, p, scale, unknown_type())  # type: ignore[arg-type]

    def torch_arguments(self) -> list[tuple[str, TorchArgument]]:
        arguments: list[tuple[str, TorchArgument]] = [("", self.key), ("", self.value)]
        if self.mask is not None:
            arguments.append(("attn_mask", self.mask))
        rate = self.dropout or self.dropout_rate
        if rate is not None:
            arguments.append(("dropout_p", InTraining(rate_argument(rate))))  # type: ignore[arg-type]
        if self.causal is not None:
            arguments.append(("is_causal", True))
        if self.scale is not None:
            arguments.append(("scale", self.scale.value.data))
        return arguments

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        tensors = _tensors(operand_types, "scaled_dot_product_attention")
        if isinstance(tensors, ShapeMismatch):
            return tensors
        u = unifier or Unifier()
        q, k, v = (t.dims for t in tensors[:3])
        result = attention_shape(q, k, v, u)
        if isinstance(result, ShapeMismatch) or result is None or len(tensors) < 4:
            return result if isinstance(result, ShapeMismatch) else tensors[0].with_dims(result)
        scores = (*result[:-1], k[-2]) if k is not None else None  # type: ignore[index]
        mask = broadcast_into(scores, tensors[3].dims, u)
        if isinstance(mask, ShapeMismatch):
            return ShapeMismatch(
                f"attention mask: {mask.message}", mask.expected, mask.got, 3, None, mask.help
            )
        return tensors[0].with_dims(result)


UNARY_OPS: dict[str, type[UnaryOp]] = dict(_FAMILY)
BINARY_OPS: dict[str, type[BinaryOp]] = {
    "+": AddOp, "-": SubOp, "*": MulOp, "/": DivOp, "**": PowOp, "@": MatmulOp,
}  # fmt: skip


def _verify_index(entries: Sequence[IndexEntry], dynamic: int) -> None:
    """An index (of `nml.index` or `nml.index_put`) holds at most one `...`, and one dynamic
    operand per `?` item."""
    if entries.count(Ellipsis) > 1:
        raise VerifyException("an index may hold at most one `...`")
    if dynamic_count(entries) != dynamic:
        raise VerifyException(
            f"index has {dynamic_count(entries)} `?` items but {dynamic} dynamic operands"
        )
