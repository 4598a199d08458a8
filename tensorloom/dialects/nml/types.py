"""nml types and attribute expressions: tensors with symbolic shapes, config refs.

    !nml.tensor<[B, 784], f32>      a tensor; dims are ints, names or `?`
    !nml.tensor<*, f32>             a tensor of unknown rank
    !nml.str  !nml.none  !nml.list  !nml.any
    #nml.cfg<"d_model">             a reference to a config parameter
    #nml.expr<"*", [#nml.cfg<"d_model">, 4 : i64]>
    #nml.call<"Adam", [], {lr = 1.0e-03 : f64}>
    #nml.slice<1 : i64, #nml.none, #nml.none>    `1:` inside an index
    #nml.none                       the `none` literal

In Python a dim is an `int`, a `str` (symbolic) or `None` (unknown);
`TensorType.dims` is `None` when the rank is unknown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    IntAttr,
    NoneAttr,
    StringAttr,
    f32,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.exceptions import VerifyException

# Only a printed or parsed type needs xDSL's printer and parser.
if TYPE_CHECKING:
    from xdsl.parser import AttrParser
    from xdsl.printer import Printer

Dim = int | str | None
"""One tensor dimension: a size, a symbolic name (`B`) or unknown (`None`)."""

Dims = tuple[Dim, ...]

ELEMENT_TYPE_NAMES = ("f32", "f16", "bf16", "i64", "i1")


def _dim_to_attr(dim: Dim) -> Attribute:
    if dim is None:
        return NoneAttr()
    if isinstance(dim, str):
        return StringAttr(dim)
    return IntAttr(dim)


def _attr_to_dim(attr: Attribute) -> Dim:
    if isinstance(attr, IntAttr):
        return attr.data
    if isinstance(attr, StringAttr):
        return attr.data
    return None


PREFIX = "..."
"""The first entry of a shape whose leading dims are unknown: `[..., 256]`."""


def format_dims(dims: Dims | None, *, prefixed: bool = False, quoted: bool = False) -> str:
    """`[B, 784]` as the IR and diagnostics print it; `*` for unknown rank;
    `[..., 256]` for a known suffix after unknown leading dims. A dim that is an
    expression of symbols (`H+4`, catalogue/dim_expr.py) is quoted in the IR
    (`quoted`): `[B, 32, "H+4", "H+4"]`."""
    if dims is None:
        return "*"
    entries = ["?" if d is None else _quoted(d) if quoted else str(d) for d in dims]
    return "[" + ", ".join([PREFIX, *entries] if prefixed else entries) + "]"


def _quoted(dim: int | str) -> str:
    if isinstance(dim, int) or _IDENTIFIER.match(dim):
        return str(dim)
    return '"' + dim.replace("\\", "\\\\").replace('"', '\\"') + '"'


_IDENTIFIER = re.compile(r"[A-Za-z_][\w$.]*\Z")


def _dim_text_ok(text: str) -> bool:
    """A name (any text without arithmetic), or an expression that parses."""
    if not any(c in text for c in "+-*/()"):
        return True
    from tensorloom.catalogue import dim_expr

    return dim_expr.parse(text) is not None


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A tensor whose shape is partly known: `!nml.tensor<[B, 784], f32>`."""

    name = "nml.tensor"

    shape: Attribute  # ArrayAttr of IntAttr | StringAttr | NoneAttr, or NoneAttr if unranked
    element_type: Attribute

    @staticmethod
    def from_dims(dims: Sequence[Dim] | None, element_type: Attribute = f32) -> TensorType:
        """Build from plain Python dims; `None` for dims means unknown rank."""
        if dims is None:
            return TensorType(NoneAttr(), element_type)
        return TensorType(ArrayAttr([_dim_to_attr(d) for d in dims]), element_type)

    @staticmethod
    def unranked(element_type: Attribute = f32) -> TensorType:
        return TensorType(NoneAttr(), element_type)

    @staticmethod
    def from_suffix(suffix: Sequence[Dim], element_type: Attribute = f32) -> TensorType:
        """`[..., *suffix]`: the trailing dims known, the leading ones (any number) not."""
        entries = [StringAttr(PREFIX), *(_dim_to_attr(d) for d in suffix)]
        return TensorType(ArrayAttr(entries), element_type)

    @property
    def prefixed(self) -> bool:
        """Whether the leading dims are unknown (`[..., 256]`)."""
        if not isinstance(self.shape, ArrayAttr) or not self.shape.data:
            return False
        first = self.shape.data[0]
        return isinstance(first, StringAttr) and first.data == PREFIX

    @property
    def dims(self) -> Dims | None:
        """The dims as Python values, or `None` when the rank is unknown (also for
        `[..., 256]`, whose known trailing dims are `suffix`)."""
        if not isinstance(self.shape, ArrayAttr) or self.prefixed:
            return None
        return tuple(_attr_to_dim(a) for a in self.shape.data)

    @property
    def suffix(self) -> Dims | None:
        """The known trailing dims: all of them for a ranked tensor, those after `...`
        for a prefixed one, None for unknown rank."""
        if self.prefixed:
            assert isinstance(self.shape, ArrayAttr)
            return tuple(_attr_to_dim(a) for a in self.shape.data[1:])
        return self.dims

    @property
    def rank(self) -> int | None:
        dims = self.dims
        return None if dims is None else len(dims)

    def with_dims(self, dims: Sequence[Dim] | None) -> TensorType:
        return TensorType.from_dims(dims, self.element_type)

    def verify(self) -> None:
        if isinstance(self.shape, NoneAttr):
            return
        if not isinstance(self.shape, ArrayAttr):
            raise VerifyException("tensor shape must be a list of dims or `*`")
        for index, attr in enumerate(self.shape.data):
            if isinstance(attr, StringAttr) and attr.data == PREFIX and index > 0:
                raise VerifyException("`...` may only open a tensor shape")
            if not isinstance(attr, IntAttr | StringAttr | NoneAttr):
                raise VerifyException(f"invalid tensor dim {attr}")
            if isinstance(attr, StringAttr) and attr.data != PREFIX and not _dim_text_ok(attr.data):
                raise VerifyException(
                    f'invalid tensor dim "{attr.data}": a dim is a size, a name or an '
                    "expression of names such as `H+4`, `2*T`, `(H-1)//2+1`"
                )
            if isinstance(attr, IntAttr) and int(attr.data) < 0:
                raise VerifyException(f"tensor dims must be non-negative, got {attr.data}")

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(format_dims(self.suffix, prefixed=self.prefixed, quoted=True))
            printer.print_string(", ")
            printer.print_attribute(self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            shape = _parse_shape(parser)
            parser.parse_punctuation(",")
            element_type = parser.parse_type()
        return (shape, element_type)


def _parse_shape(parser: AttrParser) -> Attribute:
    if parser.parse_optional_punctuation("*") is not None:
        return NoneAttr()
    dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_dim(parser))
    return ArrayAttr([_dim_to_attr(d) for d in dims])


def _parse_dim(parser: AttrParser) -> Dim:
    if parser.parse_optional_punctuation("?") is not None:
        return None
    if parser.parse_optional_punctuation("...") is not None:
        return PREFIX
    if (name := parser.parse_optional_identifier()) is not None:
        return name
    if (expression := parser.parse_optional_str_literal()) is not None:
        return expression  # `"H+4"`: an expression of symbols
    return parser.parse_integer(allow_boolean=False, allow_negative=False)


@irdl_attr_definition
class StrType(ParametrizedAttribute, TypeAttribute):
    """A string value in a forward body or script: `!nml.str`."""

    name = "nml.str"


@irdl_attr_definition
class NoneType(ParametrizedAttribute, TypeAttribute):
    """The `none` value: `!nml.none`."""

    name = "nml.none"


@irdl_attr_definition
class ListType(ParametrizedAttribute, TypeAttribute):
    """A list or tuple value: `!nml.list`."""

    name = "nml.list"


@irdl_attr_definition
class TupleType(ParametrizedAttribute, TypeAttribute):
    """A tuple whose elements' types are known: `!nml.tuple<[!nml.tensor<[B, 10], f32>, i64]>`.

    A forward's `return (recon, mu, logvar)` and `split`/`chunk` produce one;
    `let (a, b) = t` and `t[0]` take it apart (`nml.tuple_get`).
    """

    name = "nml.tuple"

    elements: ArrayAttr[Attribute]

    @staticmethod
    def of(elements: Sequence[Attribute]) -> TupleType:
        return TupleType(ArrayAttr(elements))

    @property
    def types(self) -> tuple[Attribute, ...]:
        return tuple(self.elements.data)


@irdl_attr_definition
class AnyType(ParametrizedAttribute, TypeAttribute):
    """A value whose type is not known yet (an unresolved call's result): `!nml.any`."""

    name = "nml.any"


# ------------------------------------------------------ attribute expressions


@irdl_attr_definition
class NoneValueAttr(ParametrizedAttribute):
    """The `none` literal in an attribute expression: `#nml.none`."""

    name = "nml.none"


@irdl_attr_definition
class CfgAttr(ParametrizedAttribute):
    """A reference to a config parameter: `#nml.cfg<"d_model">`."""

    name = "nml.cfg"

    param: StringAttr

    @staticmethod
    def get(name: str) -> CfgAttr:
        return CfgAttr(StringAttr(name))


EXPR_OPERATORS = (
    "+", "-", "*", "/", "//", "%", "**", "neg",
    "==", "!=", "<", "<=", ">", ">=", "and", "or", "not", "if", "[]",
)  # fmt: skip
"""`if` is `a if cond else b` (operands cond, a, b); `neg` and `not` take one operand;
`[]` is `items[i]`, an element of a list config."""
EXPR_ARITY = {"neg": 1, "not": 1, "if": 3}


@irdl_attr_definition
class ExprAttr(ParametrizedAttribute):
    """Arithmetic over attribute expressions: `#nml.expr<"*", [a, b]>`."""

    name = "nml.expr"

    op: StringAttr
    operands: ArrayAttr

    @staticmethod
    def get(op: str, operands: Sequence[Attribute]) -> ExprAttr:
        return ExprAttr(StringAttr(op), ArrayAttr(operands))

    def verify(self) -> None:
        if self.op.data not in EXPR_OPERATORS:
            raise VerifyException(f"unknown expression operator {self.op.data!r}")
        arity = EXPR_ARITY.get(self.op.data, 2)
        if len(self.operands.data) != arity:
            raise VerifyException(f"operator {self.op.data!r} takes {arity} operand(s)")


@irdl_attr_definition
class CallAttr(ParametrizedAttribute):
    """A constructor call as a value: `#nml.call<"Adam", [], {lr = 1.0e-03 : f64}>`.

    Keyword arguments keep their source order.
    """

    name = "nml.call"

    callee: StringAttr
    args: ArrayAttr
    kwargs: DictionaryAttr

    @staticmethod
    def get(
        callee: str, args: Sequence[Attribute] = (), kwargs: dict[str, Attribute] | None = None
    ) -> CallAttr:
        return CallAttr(StringAttr(callee), ArrayAttr(args), DictionaryAttr(kwargs or {}))


@irdl_attr_definition
class SliceAttr(ParametrizedAttribute):
    """`lower:upper:step` in an index; each part an integer attribute or `#nml.none`."""

    name = "nml.slice"

    lower: Attribute
    upper: Attribute
    step: Attribute


def is_attribute_expression(attr: Attribute) -> bool:
    """Whether `attr` is something a layer argument or setting may hold."""
    if isinstance(attr, ArrayAttr):
        return all(is_attribute_expression(a) for a in attr.data)
    return not isinstance(attr, TypeAttribute)


def element_type_name(attr: Attribute) -> str:
    return "f32" if isinstance(attr, Float32Type) else str(attr)
