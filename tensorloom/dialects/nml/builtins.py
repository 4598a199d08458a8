"""What every nml builtin op is: `FunctionalOp`, `SpelledOp`, `SizedOp`, and their registry.

    %1 = nml.relu %0 : (!nml.tensor<[B, 256], f32>) -> !nml.tensor<[B, 256], f32>
    %2 = nml.softmax %1 dim -1 : (...) -> ...
    %3 = nml.reshape %2 to [B, -1] : (!nml.tensor<[B, 4, 64], f32>) -> ...
    %4 = nml.add %a, %b : (!nml.tensor<[B, T, 512], f32>, ...) -> ...

Every builtin implements `infer_shape(operand_types, unifier)`, returning the result
type or a `ShapeMismatch`; the shape-inference pass calls it and supplies the
`Unifier` of symbolic dims. The rules themselves are the plain Python helpers of
`tensorloom/catalogue/shapes.py`, which the layer catalogue shares. Defining a concrete
builtin registers it (`BUILTIN_OPS`, `OP_OF_RECORD`); the builtins live beside this
module, one theme a file: `arithmetic.py`, `activations.py`, `attention.py`,
`reshaping.py`, `joining.py`, `reductions.py`, `indexing.py`, `creation.py`,
`tensor_ops.py` and `losses.py`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    traits_def,
)

from tensorloom.catalogue.costs import (
    Cost,
)
from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.catalogue.shapes import (
    Shape,
    ShapeMismatch,
    Unifier,
)
from tensorloom.dialects.lazy_format import LazyFormatOp
from tensorloom.dialects.nml.calls import (
    DYNAMIC,
    CallArgs,
    CallProblem,
)
from tensorloom.dialects.nml.shape_trait import FromOperands
from tensorloom.dialects.nml.types import (
    AnyType,
    Dim,
    Dims,
    TensorType,
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


def int_values(attr: ArrayAttr | None) -> list[int] | None:
    """The ints of an array property (`dims [0, 2, 1]`); None where it is absent."""
    if attr is None:
        return None
    return [a.value.data for a in attr.data if isinstance(a, IntegerAttr)]


def int_array(values: Sequence[int]) -> ArrayAttr[IntegerAttr]:
    """Ints as an array property of i64s."""
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


def shape_entry(attr: Attribute) -> Dim | str:
    """A `sizes` entry: an int, a symbolic name or `"?"` (a string), else None."""
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


def sizes_in_order(shape: ArrayAttr, dynamic: Sequence[SSAValue]) -> list[SSAValue | int]:
    """A `sizes` property's entries as the script passes them: an int, or for a `"?"`
    the next dynamic operand."""
    values = iter(dynamic)
    return [a.value.data if isinstance(a, IntegerAttr) else next(values) for a in shape.data]


def sized_entries(shape: ArrayAttr, sizes: Sequence[Dim]) -> list[Dim]:
    """The entries of a `sizes` property with each `"?"` replaced by the next known size."""
    known = iter(sizes)
    return [next(known) if (e := shape_entry(a)) == DYNAMIC else e for a in shape.data]


def tensor_operands(
    operand_types: Sequence[Attribute], what: str
) -> list[TensorType] | ShapeMismatch:
    """The operands' tensor types, or a mismatch when `what` is given anything else."""
    tensors = [t for t in operand_types if isinstance(t, TensorType)]
    return (
        tensors
        if len(tensors) == len(operand_types)
        else ShapeMismatch(f"{what} takes tensors only")
    )
