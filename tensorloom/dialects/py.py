"""The py dialect: Python statements and expressions, the vocabulary every emitted file shares.

The model's forward, the training loop, the Triton kernels and their launchers are
all Python; their lowerings build `py` ops, and the domain dialects keep only what
is theirs (`torch.module_class`, `torch.submodule`, `triton.jit_func`, ...). The
printer (`tensorloom/backends/python_printer.py`) prints each op as the construct
it names:

    py.def @scale(x, factor = %two) -> %float {
    ^bb0(%x : !py.object, %factor : !py.object):
      %0 = py.binop "*" %x, %factor
      py.return %0
    }

prints as

    def scale(x, factor=2) -> float:
        return x * factor

Values. Every SSA value is a Python object, `!py.object`. An expression op
(`py.call`, `py.binop`, `py.attribute`, ...) has one result; the printer inlines a
value with one use into the statement that uses it, in evaluation order, and
assigns any other to a name (from its `name_hint`). `py.constant` and `py.name`
have no operands and are `Pure`: they are printed at each use, so a `py.name "x"`
reads the variable `x` where its value is used; so is a `py.attribute` of one
(`self.fc1`, `torch.float16`, `trainer.step`).

Two ways to hold a value across statements, freely mixed:
- SSA, as the model's forward does: the printer picks the Python names; a loop's
  carried values and a branch's results are the op's results, `py.yield` gives them.
- Python variables, as a training loop does: `py.assign %target = %value` where
  the target is a `py.name`, `py.attribute`, `py.subscript` or a `py.tuple` of
  those (Python's "store" context); later reads are `py.name` ops.

Statements: `py.module`, `py.comment` (a `# ...` line), `py.import`, `py.from_import`,
`py.def`, `py.class`, `py.assign` (with an optional annotation), `py.augassign`, `py.expr` (an
expression evaluated for its effect; a value op with no uses prints as one too),
`py.for`, `py.while`, `py.if`, `py.with`, `py.try`, `py.return`, `py.raise`,
`py.break`, `py.continue`, `py.pass`, `py.yield` (a loop body's or branch's values),
`py.condition` (a `py.while` condition's value).

Expressions: `py.constant`, `py.name`, `py.attribute`, `py.subscript`, `py.slice`,
`py.call` (positional, keyword, `*` and `**` operands), `py.binop` (also `and`,
`or`), `py.unop`, `py.compare` (a chain), `py.ifexp`, `py.tuple`, `py.list`,
`py.dict`, `py.fstring`, `py.lambda`, `py.comprehension`.

A region an expression needs (a `py.while` condition, a `py.lambda` or
`py.comprehension` body) holds only expression ops; the printer prints it inline.
"""

from __future__ import annotations

import keyword
import string
from collections.abc import Sequence
from typing import ClassVar, Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    UnitAttr,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_format import LazyFormatOp

# ------------------------------------------------------------------ types


@irdl_attr_definition
class ObjectType(ParametrizedAttribute, TypeAttribute):
    """`!py.object`: any Python value (a tensor, a number, a module, a function, None)."""

    name = "py.object"


@irdl_attr_definition
class NoneAttr(ParametrizedAttribute):
    """`#py.none`: the Python `None`."""

    name = "py.none"


@irdl_attr_definition
class EllipsisAttr(ParametrizedAttribute):
    """`#py.ellipsis`: the Python `...`."""

    name = "py.ellipsis"


OBJECT = ObjectType()
ARITHMETIC_OPERATORS = ("+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>")
BOOLEAN_OPERATORS = ("and", "or")
BINARY_OPERATORS = frozenset((*ARITHMETIC_OPERATORS, *BOOLEAN_OPERATORS))
COMPARISON_OPERATORS = frozenset(["==", "!=", "<", "<=", ">", ">=", "is", "is not", "in", "not in"])
UNARY_OPERATORS = frozenset(["-", "+", "~", "not"])
AUGMENTED_OPERATORS = frozenset(f"{o}=" for o in ARITHMETIC_OPERATORS)
PARAM_KINDS = ("", "kw", "*", "**")
"""A parameter is positional-or-keyword (""), keyword-only ("kw"), `*args` or `**kwargs`."""
COMPREHENSION_KINDS = ("list", "set", "generator", "dict")


def check_identifier(name: str, what: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise VerifyException(f"{what} `{name}` is not a Python identifier")


def check_dotted(path: str, what: str) -> None:
    for part in path.split("."):
        check_identifier(part, what)


def single_block(body: Sequence[Operation] | Region | None = None, args: int = 0) -> Region:
    """A region of one block (an empty `{}` parses as a region with none)."""
    if body is None or not isinstance(body, Region):
        return Region(Block(body or (), arg_types=[OBJECT] * args))
    if not body.blocks:
        body.add_block(Block(arg_types=[OBJECT] * args))
    return body


def _check_call_names(op: Operation, count: int, names: ArrayAttr[StringAttr]) -> None:
    """`""` positional, `"*"` / `"**"` unpacked, else a keyword; positionals come first."""
    if count != len(names):
        raise VerifyException(f"{op.name}: {count} arguments but {len(names)} names")
    seen_keyword = False
    for name in (n.data for n in names):
        if name in ("", "*"):
            if seen_keyword:
                raise VerifyException(f"{op.name}: a positional argument follows a keyword")
        elif name != "**":
            check_identifier(name, "keyword")
            seen_keyword = True
        else:
            seen_keyword = True
    keywords = [n.data for n in names if n.data not in ("", "*", "**")]
    if len(set(keywords)) != len(keywords):
        raise VerifyException(f"{op.name}: a keyword argument is repeated")


def _print_call_arguments(printer: Printer, args: Sequence[SSAValue], names: Sequence[str]) -> None:
    """`(%x, dim = %d, *%rest, **%options)`."""
    printer.print_string("(")
    for i, (arg, name) in enumerate(zip(args, names, strict=True)):
        printer.print_string(", " if i else "")
        if name in ("*", "**"):
            printer.print_string(name)
        elif name:
            printer.print_string(f"{name} = ")
        printer.print_operand(arg)
    printer.print_string(")")


def _parse_call_argument(parser: Parser) -> tuple[str, SSAValue]:
    if parser.parse_optional_punctuation("*") is not None:
        star = "**" if parser.parse_optional_punctuation("*") is not None else "*"
        return star, parser.parse_operand(OBJECT)
    name = parser.parse_optional_identifier()
    if name is not None:
        parser.parse_punctuation("=")
    return name or "", parser.parse_operand(OBJECT)


def _parse_call_arguments(parser: Parser) -> tuple[list[SSAValue], list[str]]:
    items = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: _parse_call_argument(parser)
    )
    return [value for _, value in items], [name for name, _ in items]


def _parse_attrs_into(parser: Parser, op: Operation, keyword: bool = False) -> None:
    attrs = (
        parser.parse_optional_attr_dict_with_keyword()
        if keyword
        else parser.parse_optional_attr_dict()
    )
    if attrs is None:
        return
    op.attributes |= attrs if isinstance(attrs, dict) else attrs.data


def _print_region_if_any(printer: Printer, keyword: str, region: Region) -> None:
    if region.blocks and region.block.ops:
        printer.print_string(f" {keyword} ")
        printer.print_region(region)


# ------------------------------------------------------------- top level


@irdl_op_definition
class ModuleOp(IRDLOperation):
    """`py.module from "mnist.tl" { ... }`: one Python file."""

    name = "py.module"
    source = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, ops: Sequence[Operation] | Region = (), source: str | None = None) -> None:
        props = {"source": StringAttr(source)} if source is not None else {}
        super().__init__(properties=props, regions=[single_block(ops)])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        source = parser.parse_str_literal() if parser.parse_optional_keyword("from") else None
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(parser.parse_region(), source)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        if self.source is not None:
            printer.print_string(" from ")
            printer.print_string_literal(self.source.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)


@irdl_op_definition
class ImportOp(LazyFormatOp):
    """`py.import "torch.nn.functional" as "F"`: `import torch.nn.functional as F`."""

    name = "py.import"
    module = prop_def(StringAttr)
    alias = opt_prop_def(StringAttr)
    ASSEMBLY_FORMAT: ClassVar[str] = "$module (`as` $alias^)? attr-dict"

    def __init__(self, module: str, alias: str | None = None) -> None:
        props: dict[str, Attribute] = {"module": StringAttr(module)}
        if alias is not None:
            props["alias"] = StringAttr(alias)
        super().__init__(properties=props)

    def verify_(self) -> None:
        check_dotted(self.module.data, "module")
        if self.alias is not None:
            check_identifier(self.alias.data, "alias")


@irdl_op_definition
class FromImportOp(LazyFormatOp):
    """`py.from_import "torch" ["nn"]`: `from torch import nn`."""

    name = "py.from_import"
    module = prop_def(StringAttr)
    names = prop_def(ArrayAttr[StringAttr])
    ASSEMBLY_FORMAT: ClassVar[str] = "$module $names attr-dict"

    def __init__(self, module: str, names: Sequence[str]) -> None:
        super().__init__(properties={"module": StringAttr(module), "names": string_array(names)})

    def verify_(self) -> None:
        if not self.names.data:
            raise VerifyException("py.from_import imports at least one name")
        for name in self.names:
            check_identifier(name.data, "imported name")


# ------------------------------------------------------------ functions


@irdl_op_definition
class DefOp(IRDLOperation):
    """`py.def @f(x, n : %int = %one, *, scale = %two) -> %ret decorators [%d] { ... }`.

    One entry-block argument per parameter. `arg_kinds` says what each parameter is
    (`PARAM_KINDS`); `defaulted` and `annotated` name the parameters that have a
    default or an annotation, whose values are the `defaults` and `annotations`
    operands in parameter order (evaluated where the `def` is, as in Python).
    """

    name = "py.def"
    sym_name = prop_def(SymbolNameConstraint())
    arg_names = prop_def(ArrayAttr[StringAttr])
    arg_kinds = prop_def(ArrayAttr[StringAttr])
    defaulted = prop_def(ArrayAttr[StringAttr], default_value=ArrayAttr([]))
    annotated = prop_def(ArrayAttr[StringAttr], default_value=ArrayAttr([]))
    decorators = var_operand_def(ObjectType)
    defaults = var_operand_def(ObjectType)
    annotations = var_operand_def(ObjectType)
    returns = opt_operand_def(ObjectType)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolOpInterface())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        name: str,
        params: Sequence[str | tuple[str, str]],
        body: Sequence[Operation] | Region | None = None,
        *,
        defaults: dict[str, SSAValue] | None = None,
        annotations: dict[str, SSAValue] | None = None,
        returns: SSAValue | None = None,
        decorators: Sequence[SSAValue] = (),
    ) -> None:
        """`params`: names, or (name, kind) pairs; `body`: ops, or a region whose entry
        block has one argument per parameter (made when omitted)."""
        pairs = [(p, "") if isinstance(p, str) else p for p in params]
        names = [n for n, _ in pairs]
        defaults = defaults or {}
        annotations = annotations or {}
        region = body if isinstance(body, Region) else single_block(body, len(names))
        if not isinstance(body, Region):
            for arg, param in zip(region.block.args, names, strict=True):
                # xDSL's value names are ASCII: `é` gets none (the Python name is the op's)
                arg.name_hint = param if SSAValue.is_valid_name(param) else None
        super().__init__(
            operands=[
                list(decorators),
                [defaults[n] for n in names if n in defaults],
                [annotations[n] for n in names if n in annotations],
                [returns] if returns is not None else [],
            ],
            properties={
                "sym_name": StringAttr(name),
                "arg_names": string_array(names),
                "arg_kinds": string_array([k for _, k in pairs]),
                "defaulted": string_array([n for n in names if n in defaults]),
                "annotated": string_array([n for n in names if n in annotations]),
            },
            regions=[region],
        )

    @property
    def params(self) -> list[tuple[str, str]]:
        """(name, kind) per parameter."""
        return [(n.data, k.data) for n, k in zip(self.arg_names, self.arg_kinds, strict=True)]

    def default_of(self) -> dict[str, SSAValue]:
        return dict(zip((n.data for n in self.defaulted), self.defaults, strict=True))

    def annotation_of(self) -> dict[str, SSAValue]:
        return dict(zip((n.data for n in self.annotated), self.annotations, strict=True))

    def verify_(self) -> None:
        verify_params(self, self.arg_names, self.arg_kinds, self.body)
        names = [n.data for n in self.arg_names]
        check_identifier(self.sym_name.data, "function name")
        for prop, values in ((self.defaulted, self.defaults), (self.annotated, self.annotations)):
            chosen = [n.data for n in prop]
            if len(chosen) != len(values) or any(n not in names for n in chosen):
                raise VerifyException(f"{self.name}: defaults or annotations name no parameter")
            if chosen != [n for n in names if n in chosen]:
                raise VerifyException(f"{self.name}: defaults or annotations out of order")
        kinds = dict(self.params)
        if any(kinds[n.data] in ("*", "**") for n in self.defaulted):
            raise VerifyException(f"{self.name}: `*args` or `**kwargs` has a default")
        positional = [n for n, k in self.params if k == ""]
        with_default = [n for n in positional if n in {d.data for d in self.defaulted}]
        if with_default and positional[-len(with_default) :] != with_default:
            raise VerifyException(f"{self.name}: a parameter without a default follows one with")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name().data
        params, defaults, annotations = parse_params(parser)
        returns = parser.parse_operand(OBJECT) if parser.parse_optional_punctuation("->") else None
        decorators: list[SSAValue] = []
        if parser.parse_optional_keyword("decorators") is not None:
            decorators = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: parser.parse_operand(OBJECT)
            )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = single_block(parser.parse_region(), len(params))
        op = cls(
            name,
            params,
            region,
            defaults=defaults,
            annotations=annotations,
            returns=returns,
            decorators=decorators,
        )
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        print_params(printer, self.params, self.default_of(), self.annotation_of())
        if self.returns is not None:
            printer.print_string(" -> ")
            printer.print_operand(self.returns)
        if self.decorators:
            printer.print_string(" decorators [")
            printer.print_list(self.decorators, printer.print_operand)
            printer.print_string("]")
        printer.print_op_attributes(
            self.attributes, print_keyword=True, reserved_attr_names=("operandSegmentSizes",)
        )
        printer.print_string(" ")
        printer.print_region(self.body)


def verify_params(
    op: Operation, names: ArrayAttr[StringAttr], kinds: ArrayAttr[StringAttr], body: Region
) -> None:
    if len(names) != len(kinds):
        raise VerifyException(f"{op.name}: arg_names and arg_kinds differ in length")
    if len(body.block.args) != len(names):
        raise VerifyException(
            f"{op.name}: {len(names)} parameters but {len(body.block.args)} block arguments"
        )
    seen: set[str] = set()
    order = {"": 0, "*": 1, "kw": 2, "**": 3}
    last = 0
    for name, kind in zip((n.data for n in names), (k.data for k in kinds), strict=True):
        check_identifier(name, "parameter")
        if name in seen:
            raise VerifyException(f"{op.name}: parameter `{name}` is repeated")
        seen.add(name)
        if kind not in order:
            raise VerifyException(f"{op.name}: unknown parameter kind `{kind}`")
        if order[kind] < last or (kind in ("*", "**") and order[kind] == last and last):
            raise VerifyException(f"{op.name}: parameters out of order at `{name}`")
        last = order[kind]


def print_params(
    printer: Printer,
    params: Sequence[tuple[str, str]],
    defaults: dict[str, SSAValue],
    annotations: dict[str, SSAValue],
) -> None:
    """`(x, n : %int = %one, *, scale = %two, **options)`."""
    printer.print_string("(")
    starred = any(k == "*" for _, k in params)
    first_kw = next((n for n, k in params if k == "kw"), None)
    for i, (name, kind) in enumerate(params):
        printer.print_string(", " if i else "")
        if name == first_kw and not starred:
            printer.print_string("*, ")
        printer.print_string(f"{kind if kind in ('*', '**') else ''}{name}")
        if name in annotations:
            printer.print_string(" : ")
            printer.print_operand(annotations[name])
        if name in defaults:
            printer.print_string(" = ")
            printer.print_operand(defaults[name])
    printer.print_string(")")


def parse_params(
    parser: Parser,
) -> tuple[list[tuple[str, str]], dict[str, SSAValue], dict[str, SSAValue]]:
    """The parameter list `print_params` prints."""
    params: list[tuple[str, str]] = []
    defaults: dict[str, SSAValue] = {}
    annotations: dict[str, SSAValue] = {}
    keyword_only = False

    def one() -> None:
        nonlocal keyword_only
        kind = "kw" if keyword_only else ""
        name: str | None = None
        if parser.parse_optional_punctuation("*") is not None:
            if parser.parse_optional_punctuation("*") is not None:
                kind = "**"
            else:
                keyword_only = True
                name = parser.parse_optional_identifier()
                if name is None:
                    return  # a bare `*`: the parameters after it are keyword-only
                kind = "*"
        name = name or parser.parse_identifier()
        params.append((name, kind))
        if parser.parse_optional_punctuation(":") is not None:
            annotations[name] = parser.parse_operand(OBJECT)
        if parser.parse_optional_punctuation("=") is not None:
            defaults[name] = parser.parse_operand(OBJECT)

    parser.parse_comma_separated_list(Parser.Delimiter.PAREN, one)
    return params, defaults, annotations


@irdl_op_definition
class ClassOp(IRDLOperation):
    """`py.class @Trainer(%base) decorators [%dataclass] { ... }`: a class statement."""

    name = "py.class"
    sym_name = prop_def(SymbolNameConstraint())
    bases = var_operand_def(ObjectType)
    decorators = var_operand_def(ObjectType)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolOpInterface())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        name: str,
        bases: Sequence[SSAValue] = (),
        body: Sequence[Operation] | Region = (),
        decorators: Sequence[SSAValue] = (),
    ) -> None:
        super().__init__(
            operands=[list(bases), list(decorators)],
            properties={"sym_name": StringAttr(name)},
            regions=[single_block(body)],
        )

    def verify_(self) -> None:
        check_identifier(self.sym_name.data, "class name")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name().data
        bases = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_operand(OBJECT)
        )
        decorators: list[SSAValue] = []
        if parser.parse_optional_keyword("decorators") is not None:
            decorators = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: parser.parse_operand(OBJECT)
            )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(name, bases, parser.parse_region(), decorators)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.bases, printer.print_operand)
        printer.print_string(")")
        if self.decorators:
            printer.print_string(" decorators [")
            printer.print_list(self.decorators, printer.print_operand)
            printer.print_string("]")
        printer.print_op_attributes(
            self.attributes, print_keyword=True, reserved_attr_names=("operandSegmentSizes",)
        )
        printer.print_string(" ")
        printer.print_region(self.body)


@irdl_op_definition
class ReturnOp(LazyFormatOp):
    """`py.return %x, %y`: `return x, y` (no value: a bare `return`)."""

    name = "py.return"
    values = var_operand_def(ObjectType)
    traits = traits_def(IsTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "($values^)? attr-dict"

    def __init__(self, values: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[values])


# ------------------------------------------------------------ statements


# What an assignment may store into: Python's "store" context.
def _check_target(op: Operation, value: SSAValue) -> None:
    owner = value.owner
    if isinstance(owner, NameOp):
        if "." in owner.id.data:
            raise VerifyException(f"{op.name}: cannot assign to the dotted name `{owner.id.data}`")
        return
    if isinstance(owner, AttributeOp | SubscriptOp):
        return
    if isinstance(owner, TupleOp | ListOp) and owner.elements:
        for element in owner.elements:
            _check_target(op, element)
        return
    raise VerifyException(
        f"{op.name}: the target is a `{getattr(owner, 'name', 'block argument')}`; "
        "expected a py.name, py.attribute, py.subscript or a py.tuple of them"
    )


@irdl_op_definition
class AssignOp(LazyFormatOp):
    """`py.assign %target = %value`, `py.assign %target : %ann = %value`, `py.assign %t : %ann`.

    The target is a `py.name`, `py.attribute`, `py.subscript` or a `py.tuple` of
    those (`a, b = ...`); an annotated target is one name or attribute. `comment`
    ends the statement's line (`EPOCHS = 10  # the train block's`).
    """

    name = "py.assign"
    target = operand_def(ObjectType)
    annotation = opt_operand_def(ObjectType)
    value = opt_operand_def(ObjectType)
    comment = opt_prop_def(StringAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$target (`:` $annotation^)? (`=` $value^)? (`comment` $comment^)? attr-dict"
    )

    def __init__(
        self,
        target: SSAValue,
        value: SSAValue | None,
        annotation: SSAValue | None = None,
        comment: str | None = None,
    ) -> None:
        super().__init__(
            operands=[
                target,
                [annotation] if annotation is not None else [],
                [value] if value is not None else [],
            ],
            properties={"comment": StringAttr(comment)} if comment is not None else {},
        )

    def verify_(self) -> None:
        if self.comment is not None and any(c in self.comment.data for c in "\r\n"):
            raise VerifyException("py.assign: its comment is one line")
        _check_target(self, self.target)
        if self.value is None and self.annotation is None:
            raise VerifyException("py.assign needs a value or an annotation")
        if self.annotation is not None and isinstance(self.target.owner, TupleOp | ListOp):
            raise VerifyException("py.assign: an annotated target is one name")


@irdl_op_definition
class AugAssignOp(LazyFormatOp):
    """`py.augassign "+=" %target, %value`: `target += value`."""

    name = "py.augassign"
    operator = prop_def(StringAttr)
    target = operand_def(ObjectType)
    value = operand_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$operator $target `,` $value attr-dict"

    def __init__(self, operator: str, target: SSAValue, value: SSAValue) -> None:
        super().__init__(operands=[target, value], properties={"operator": StringAttr(operator)})

    def verify_(self) -> None:
        if self.operator.data not in AUGMENTED_OPERATORS:
            raise VerifyException(f"py.augassign: unknown operator `{self.operator.data}`")
        if isinstance(self.target.owner, TupleOp | ListOp):
            raise VerifyException("py.augassign: the target is one name, attribute or item")
        _check_target(self, self.target)


@irdl_op_definition
class ExprOp(LazyFormatOp):
    """`py.expr %v`: an expression evaluated for its effect (a call, a docstring)."""

    name = "py.expr"
    value = operand_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value attr-dict"

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value])


class _NoOperandStatement(LazyFormatOp):
    ASSEMBLY_FORMAT: ClassVar[str] = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class CommentOp(LazyFormatOp):
    """`py.comment "---- the loop ----"`: a `# ...` line, printed right above the statement
    after it (a section's title). Text of several lines is a paragraph of `#` lines that
    stands alone, blank lines around it (a file's header)."""

    name = "py.comment"
    text = prop_def(StringAttr)
    ASSEMBLY_FORMAT: ClassVar[str] = "$text attr-dict"

    def __init__(self, text: str) -> None:
        super().__init__(properties={"text": StringAttr(text)})

    def verify_(self) -> None:
        if "\r" in self.text.data:
            raise VerifyException("a py.comment's lines end in `\\n`")


@irdl_op_definition
class PassOp(_NoOperandStatement):
    """`py.pass`."""

    name = "py.pass"


@irdl_op_definition
class BreakOp(_NoOperandStatement):
    """`py.break`, inside a `py.for` or `py.while`."""

    name = "py.break"

    def verify_(self) -> None:
        _check_in_loop(self)


@irdl_op_definition
class ContinueOp(_NoOperandStatement):
    """`py.continue`, inside a `py.for` or `py.while`."""

    name = "py.continue"

    def verify_(self) -> None:
        _check_in_loop(self)


def _check_in_loop(op: Operation) -> None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ForOp | WhileOp):
        if isinstance(parent, DefOp | ClassOp | LambdaOp):
            parent = None
            break
        parent = parent.parent_op()
    if parent is None:
        raise VerifyException(f"{op.name} outside a loop")


@irdl_op_definition
class RaiseOp(LazyFormatOp):
    """`py.raise %error from %cause`, `py.raise %error`, or a bare `py.raise`."""

    name = "py.raise"
    exception = opt_operand_def(ObjectType)
    cause = opt_operand_def(ObjectType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    ASSEMBLY_FORMAT: ClassVar[str] = "($exception^)? (`from` $cause^)? attr-dict"

    def __init__(self, exception: SSAValue | None = None, cause: SSAValue | None = None) -> None:
        super().__init__(
            operands=[
                [exception] if exception is not None else [],
                [cause] if cause is not None else [],
            ]
        )

    def verify_(self) -> None:
        if self.cause is not None and self.exception is None:
            raise VerifyException("py.raise: `from` needs an exception")


# ------------------------------------------------------------ control flow


@irdl_op_definition
class ForOp(LazyFormatOp):
    """`%r = py.for %iterable iter_args(%x0) { ^bb0(%item, %x): ... py.yield %y }`.

    `for item in iterable:`. The entry block's first `targets` arguments are the
    loop variables (several unpack: `for name, tensor in pairs:`; one with `unpack`
    unpacks a 1-tuple: `for (image,) in batches:`), named after their name hints; the
    rest are the values the loop carries (one Python name each), given back by the
    body's `py.yield` and then the op's results. A loop that carries nothing needs no
    `py.yield`.
    """

    name = "py.for"
    iterable = operand_def(ObjectType)
    inits = var_operand_def(ObjectType)
    targets = prop_def(IntegerAttr, default_value=IntegerAttr(1, 64))
    unpack = opt_prop_def(UnitAttr)
    res = var_result_def(ObjectType)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$iterable (`iter_args` `(` $inits^ `)`)? (`->` type($res)^)? attr-dict-with-keyword $body"
    )

    def __init__(
        self,
        iterable: SSAValue,
        body: Region | Sequence[Operation] = (),
        inits: Sequence[SSAValue] = (),
        targets: int = 1,
        unpack: bool = False,
    ) -> None:
        region = body if isinstance(body, Region) else single_block(body, targets + len(inits))
        props: dict[str, Attribute] = {} if targets == 1 else {"targets": IntegerAttr(targets, 64)}
        if unpack:
            props["unpack"] = UnitAttr()
        super().__init__(
            operands=[iterable, inits],
            result_types=[[OBJECT] * len(inits)],
            properties=props,
            regions=[region],
        )

    @property
    def target_count(self) -> int:
        return self.targets.value.data

    def verify_(self) -> None:
        count = self.target_count
        if count < 1:
            raise VerifyException("py.for binds at least one loop variable")
        if self.unpack is not None and count != 1:
            raise VerifyException("py.for: `unpack` is for one loop variable (a 1-tuple)")
        if len(self.body.block.args) != count + len(self.inits):
            raise VerifyException(
                f"py.for: {count} loop variables and {len(self.inits)} carried values, but "
                f"{len(self.body.block.args)} block arguments"
            )
        _check_yield(self, self.body, len(self.inits))


def _check_yield(op: Operation, region: Region, count: int) -> None:
    last = region.block.last_op if region.blocks else None
    if count and not isinstance(last, YieldOp):
        raise VerifyException(f"{op.name}: a body that gives {count} values ends in py.yield")
    if isinstance(last, YieldOp) and len(last.values) != count:
        raise VerifyException(
            f"{op.name}: py.yield gives {len(last.values)} values, the op has {count} results"
        )


@irdl_op_definition
class IfOp(LazyFormatOp):
    """`%x = py.if %c -> (!py.object) { ... py.yield %a } else { ... py.yield %b }`.

    `if c: ... else: ...`; an empty `else` region prints nothing, and an `else`
    holding only another `py.if` prints as `elif`.
    """

    name = "py.if"
    cond = operand_def(ObjectType)
    res = var_result_def(ObjectType)
    then_region = region_def("single_block")
    else_region = region_def()
    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$cond (`->` `(` type($res)^ `)`)? $then_region `else` $else_region attr-dict"
    )

    def __init__(
        self,
        cond: SSAValue,
        then_region: Region | Sequence[Operation] = (),
        else_region: Region | Sequence[Operation] = (),
        results: int = 0,
    ) -> None:
        super().__init__(
            operands=[cond],
            result_types=[[OBJECT] * results],
            regions=[single_block(then_region), single_block(else_region)],
        )

    def verify_(self) -> None:
        if len(self.else_region.blocks) > 1:
            raise VerifyException("py.if: the else region has one block")
        if self.then_region.block.args or (self.else_region.blocks and self.else_region.block.args):
            raise VerifyException("py.if: its regions take no arguments")
        _check_yield(self, self.then_region, len(self.res))
        if self.res:
            _check_yield(self, self.else_region, len(self.res))


@irdl_op_definition
class YieldOp(LazyFormatOp):
    """`py.yield %a, %b`: the values a loop body or branch leaves in its names."""

    name = "py.yield"
    values = var_operand_def(ObjectType)
    traits = traits_def(IsTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "($values^)? attr-dict"

    def __init__(self, values: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[values])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), ForOp | IfOp | ComprehensionOp):
            raise VerifyException("py.yield ends a py.for, py.if or py.comprehension body")


@irdl_op_definition
class WhileOp(LazyFormatOp):
    """`py.while { ... py.condition %c } do { ... }`: `while c:`, the condition's
    ops (expressions only) evaluated before each iteration."""

    name = "py.while"
    before = region_def("single_block")
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "$before `do` $body attr-dict"

    def __init__(self, before: Region | Sequence[Operation], body: Region | Sequence[Operation]):
        super().__init__(regions=[single_block(before), single_block(body)])

    def verify_(self) -> None:
        if not isinstance(self.before.block.last_op, ConditionOp):
            raise VerifyException("py.while: the condition region ends in py.condition")


@irdl_op_definition
class ConditionOp(LazyFormatOp):
    """`py.condition %c`: the value a `py.while` tests."""

    name = "py.condition"
    value = operand_def(ObjectType)
    traits = traits_def(IsTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "$value attr-dict"

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), WhileOp):
            raise VerifyException("py.condition ends a py.while condition")


@irdl_op_definition
class WithOp(LazyFormatOp):
    """`py.with %manager { ^bb0(%f): ... }`: `with manager as f:` (no block argument: no `as`)."""

    name = "py.with"
    manager = operand_def(ObjectType)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "$manager attr-dict-with-keyword $body"

    def __init__(
        self, manager: SSAValue, body: Region | Sequence[Operation] = (), binds: bool = False
    ) -> None:
        region = body if isinstance(body, Region) else single_block(body, int(binds))
        super().__init__(operands=[manager], regions=[region])

    def verify_(self) -> None:
        if len(self.body.block.args) > 1:
            raise VerifyException("py.with binds at most one name")


@irdl_op_definition
class TryOp(IRDLOperation):
    """`py.try { ... } except [%E1, %E2] { ^bb0(%err): ... } { ... } else { } finally { }`.

    One handler region per exception type operand (a `py.tuple` catches several);
    a handler with a block argument binds it (`except E as err:`).
    """

    name = "py.try"
    types = var_operand_def(ObjectType)
    body = region_def("single_block")
    handlers = var_region_def("single_block")
    orelse = region_def()
    finalbody = region_def()
    traits = traits_def(NoTerminator())

    def __init__(
        self,
        body: Region | Sequence[Operation],
        handlers: Sequence[tuple[SSAValue, Region]] = (),
        orelse: Region | Sequence[Operation] = (),
        finalbody: Region | Sequence[Operation] = (),
    ) -> None:
        super().__init__(
            operands=[[t for t, _ in handlers]],
            regions=[
                single_block(body),
                [single_block(r) for _, r in handlers],
                single_block(orelse),
                single_block(finalbody),
            ],
        )

    def verify_(self) -> None:
        if len(self.types) != len(self.handlers):
            raise VerifyException("py.try: one exception type per handler")
        for handler in self.handlers:
            if len(handler.block.args) > 1:
                raise VerifyException("py.try: a handler binds at most one name")
        has_final = bool(self.finalbody.blocks and self.finalbody.block.ops)
        if not self.handlers and not has_final:
            raise VerifyException("py.try needs a handler or a finally")
        if self.orelse.blocks and self.orelse.block.ops and not self.handlers:
            raise VerifyException("py.try: an else needs a handler")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        body = parser.parse_region()
        handlers: list[tuple[SSAValue, Region]] = []
        if parser.parse_optional_keyword("except") is not None:
            types = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: parser.parse_operand(OBJECT)
            )
            handlers = [(t, parser.parse_region()) for t in types]
        orelse: Region | Sequence[Operation] = ()
        finalbody: Region | Sequence[Operation] = ()
        if parser.parse_optional_keyword("else") is not None:
            orelse = parser.parse_region()
        if parser.parse_optional_keyword("finally") is not None:
            finalbody = parser.parse_region()
        op = cls(body, handlers, orelse, finalbody)
        _parse_attrs_into(parser, op, keyword=True)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_region(self.body)
        if self.handlers:
            printer.print_string(" except [")
            printer.print_list(self.types, printer.print_operand)
            printer.print_string("]")
            for handler in self.handlers:
                printer.print_string(" ")
                printer.print_region(handler, print_entry_block_args=True)
        _print_region_if_any(printer, "else", self.orelse)
        _print_region_if_any(printer, "finally", self.finalbody)
        printer.print_op_attributes(self.attributes, print_keyword=True)


# ------------------------------------------------------------ expressions


@irdl_op_definition
class ConstantOp(LazyFormatOp):
    """`%c = py.constant 0.1 : f64`: a literal (int, float, `true`/`false` as i1, str,
    `#py.none`, `#py.ellipsis`)."""

    name = "py.constant"
    value = prop_def()
    result = result_def(ObjectType)
    traits = traits_def(Pure())
    ASSEMBLY_FORMAT: ClassVar[str] = "$value attr-dict"

    def __init__(self, value: Attribute) -> None:
        super().__init__(properties={"value": value}, result_types=[OBJECT])

    def verify_(self) -> None:
        allowed = (IntegerAttr, FloatAttr, StringAttr, NoneAttr, EllipsisAttr)
        if not isinstance(self.value, allowed):
            raise VerifyException(f"py.constant cannot hold {self.value}")


@irdl_op_definition
class NameOp(LazyFormatOp):
    """`%x = py.name "x"`: reads a variable (or a dotted module path, `torch.float16`)
    where its value is used."""

    name = "py.name"
    id = prop_def(StringAttr)
    result = result_def(ObjectType)
    traits = traits_def(Pure())
    ASSEMBLY_FORMAT: ClassVar[str] = "$id attr-dict"

    def __init__(self, id: str) -> None:
        super().__init__(properties={"id": StringAttr(id)}, result_types=[OBJECT])

    def verify_(self) -> None:
        check_dotted(self.id.data, "name")


@irdl_op_definition
class AttributeOp(LazyFormatOp):
    """`%s = py.attribute %x, "shape"`: `x.shape`."""

    name = "py.attribute"
    value = operand_def(ObjectType)
    attr = prop_def(StringAttr)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value `,` $attr attr-dict"

    def __init__(self, value: SSAValue, attr: str) -> None:
        super().__init__(
            operands=[value], properties={"attr": StringAttr(attr)}, result_types=[OBJECT]
        )

    def verify_(self) -> None:
        check_identifier(self.attr.data, "attribute")


@irdl_op_definition
class SubscriptOp(LazyFormatOp):
    """`%y = py.subscript %x[%s, %i]`: `x[a:b, i]` (a `py.slice` index prints as `a:b`)."""

    name = "py.subscript"
    value = operand_def(ObjectType)
    indices = var_operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value `[` $indices `]` attr-dict"

    def __init__(self, value: SSAValue, indices: Sequence[SSAValue]) -> None:
        super().__init__(operands=[value, indices], result_types=[OBJECT])

    def verify_(self) -> None:
        if not self.indices:
            raise VerifyException("py.subscript needs at least one index")


@irdl_op_definition
class SliceOp(LazyFormatOp):
    """`%s = py.slice lower %a upper %b step %c`: `a:b:c`, each part optional (`:`)."""

    name = "py.slice"
    lower = opt_operand_def(ObjectType)
    upper = opt_operand_def(ObjectType)
    step = opt_operand_def(ObjectType)
    result = result_def(ObjectType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "(`lower` $lower^)? (`upper` $upper^)? (`step` $step^)? attr-dict"
    )

    def __init__(
        self,
        lower: SSAValue | None = None,
        upper: SSAValue | None = None,
        step: SSAValue | None = None,
    ) -> None:
        parts = [[v] if v is not None else [] for v in (lower, upper, step)]
        super().__init__(operands=parts, result_types=[OBJECT])


@irdl_op_definition
class CallOp(IRDLOperation):
    """`%y = py.call %f(%x, dim = %d, *%rest, **%options)`.

    `arg_names` is parallel to the arguments: `""` positional, `"*"` and `"**"`
    unpacked, else the keyword.
    """

    name = "py.call"
    callee = operand_def(ObjectType)
    args = var_operand_def(ObjectType)
    arg_names = prop_def(ArrayAttr[StringAttr])
    result = result_def(ObjectType)

    def __init__(
        self,
        callee: SSAValue,
        args: Sequence[SSAValue] = (),
        arg_names: Sequence[str] | None = None,
    ) -> None:
        names = arg_names if arg_names is not None else [""] * len(args)
        super().__init__(
            operands=[callee, args],
            properties={"arg_names": string_array(names)},
            result_types=[OBJECT],
        )

    @property
    def keywords(self) -> list[str]:
        return [n.data for n in self.arg_names]

    def verify_(self) -> None:
        _check_call_names(self, len(self.args), self.arg_names)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        callee = parser.parse_operand(OBJECT)
        args, names = _parse_call_arguments(parser)
        op = cls(callee, args, names)
        _parse_attrs_into(parser, op)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.callee)
        _print_call_arguments(printer, self.args, self.keywords)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("arg_names",))


@irdl_op_definition
class BinOp(LazyFormatOp):
    """`%z = py.binop "+" %x, %y`: an arithmetic, bitwise or boolean (`and`, `or`) operator."""

    name = "py.binop"
    operator = prop_def(StringAttr)
    lhs = operand_def(ObjectType)
    rhs = operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$operator $lhs `,` $rhs attr-dict"

    def __init__(self, operator: str, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(
            operands=[lhs, rhs],
            properties={"operator": StringAttr(operator)},
            result_types=[OBJECT],
        )

    def verify_(self) -> None:
        if self.operator.data not in BINARY_OPERATORS:
            raise VerifyException(f"py.binop: unknown operator `{self.operator.data}`")


@irdl_op_definition
class UnaryOp(LazyFormatOp):
    """`%y = py.unop "not" %x`."""

    name = "py.unop"
    operator = prop_def(StringAttr)
    operand = operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$operator $operand attr-dict"

    def __init__(self, operator: str, operand: SSAValue) -> None:
        super().__init__(
            operands=[operand], properties={"operator": StringAttr(operator)}, result_types=[OBJECT]
        )

    def verify_(self) -> None:
        if self.operator.data not in UNARY_OPERATORS:
            raise VerifyException(f"py.unop: unknown operator `{self.operator.data}`")


@irdl_op_definition
class CompareOp(LazyFormatOp):
    """`%b = py.compare ["<", "<="] %a, %x, %b`: `a < x <= b` (one operator per pair)."""

    name = "py.compare"
    operators = prop_def(ArrayAttr[StringAttr])
    operands_ = var_operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$operators $operands_ attr-dict"

    def __init__(self, operators: Sequence[str] | str, operands: Sequence[SSAValue]) -> None:
        ops = [operators] if isinstance(operators, str) else list(operators)
        super().__init__(
            operands=[operands], properties={"operators": string_array(ops)}, result_types=[OBJECT]
        )

    def verify_(self) -> None:
        if not self.operators.data or len(self.operands_) != len(self.operators) + 1:
            raise VerifyException("py.compare: one operator between each two operands")
        for operator in self.operators:
            if operator.data not in COMPARISON_OPERATORS:
                raise VerifyException(f"py.compare: unknown operator `{operator.data}`")


@irdl_op_definition
class IfExpOp(LazyFormatOp):
    """`%y = py.ifexp %a if %c else %b`: `a if c else b`."""

    name = "py.ifexp"
    if_true = operand_def(ObjectType)
    condition = operand_def(ObjectType)
    if_false = operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$if_true `if` $condition `else` $if_false attr-dict"

    def __init__(self, condition: SSAValue, if_true: SSAValue, if_false: SSAValue) -> None:
        super().__init__(operands=[if_true, condition, if_false], result_types=[OBJECT])


@irdl_op_definition
class TupleOp(LazyFormatOp):
    """`%t = py.tuple [%a, %b]`: `(a, b)`."""

    name = "py.tuple"
    elements = var_operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "`[` $elements `]` attr-dict"

    def __init__(self, elements: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[elements], result_types=[OBJECT])


@irdl_op_definition
class ListOp(LazyFormatOp):
    """`%l = py.list [%a, %b]`: `[a, b]`."""

    name = "py.list"
    elements = var_operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "`[` $elements `]` attr-dict"

    def __init__(self, elements: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[elements], result_types=[OBJECT])


@irdl_op_definition
class DictOp(IRDLOperation):
    """`%d = py.dict {%k1 : %v1, ** : %more}`: `{k1: v1, **more}`.

    Keys and values alternate in the operands; `unpacked` lists the (value)
    positions that are `**mapping` entries, which have no key operand.
    """

    name = "py.dict"
    items = var_operand_def(ObjectType)
    unpacked = prop_def(ArrayAttr[IntegerAttr], default_value=ArrayAttr([]))
    result = result_def(ObjectType)

    def __init__(self, entries: Sequence[tuple[SSAValue | None, SSAValue]] = ()) -> None:
        operands: list[SSAValue] = []
        unpacked: list[int] = []
        for i, (key, value) in enumerate(entries):
            if key is None:
                unpacked.append(i)
            else:
                operands.append(key)
            operands.append(value)
        super().__init__(
            operands=[operands],
            properties={"unpacked": ArrayAttr([IntegerAttr(i, 64) for i in unpacked])},
            result_types=[OBJECT],
        )

    def entries(self) -> list[tuple[SSAValue | None, SSAValue]]:
        unpacked = {i.value.data for i in self.unpacked}
        items = list(self.items)
        out: list[tuple[SSAValue | None, SSAValue]] = []
        while items:
            if len(out) in unpacked:
                out.append((None, items.pop(0)))
            else:
                key, value = items.pop(0), items.pop(0) if items else None
                if value is None:
                    raise VerifyException("py.dict: a key without a value")
                out.append((key, value))
        return out

    def verify_(self) -> None:
        unpacked = [i.value.data for i in self.unpacked]
        count = len(self.entries())
        if any(i < 0 or i >= count for i in unpacked) or len(self.items) != 2 * count - len(
            unpacked
        ):
            raise VerifyException("py.dict: its operands are not key-value pairs")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        def entry() -> tuple[SSAValue | None, SSAValue]:
            if parser.parse_optional_punctuation("*") is not None:
                parser.parse_punctuation("*")
                parser.parse_punctuation(":")
                return None, parser.parse_operand(OBJECT)
            key = parser.parse_operand(OBJECT)
            parser.parse_punctuation(":")
            return key, parser.parse_operand(OBJECT)

        entries = parser.parse_comma_separated_list(Parser.Delimiter.BRACES, entry)
        op = cls(entries)
        _parse_attrs_into(parser, op)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" {")
        for i, (key, value) in enumerate(self.entries()):
            printer.print_string(", " if i else "")
            if key is None:
                printer.print_string("**")
            else:
                printer.print_operand(key)
            printer.print_string(" : ")
            printer.print_operand(value)
        printer.print_string("}")
        printer.print_op_attributes(self.attributes, reserved_attr_names=("unpacked",))


def format_fields(template: str) -> list[tuple[str, bool, str, str]]:
    """(literal text, whether a field follows, its conversion, its format spec) per
    part of `template` (literal text with braces undoubled)."""
    parts: list[tuple[str, bool, str, str]] = []
    for text, field, spec, conversion in string.Formatter().parse(template):
        if field:
            raise ValueError(f"a field names `{field}`: fields are empty, `{{}}`, `{{:.2f}}`")
        parts.append((text, field is not None, conversion or "", spec or ""))
    return parts


@irdl_op_definition
class FStringOp(LazyFormatOp):
    """`%s = py.fstring "epoch {} loss {:.4f}" (%epoch, %loss)`: `f"epoch {epoch} loss {loss:.4f}"`.

    The template is the f-string with each replacement field left empty but for its
    conversion and format spec (`{}`, `{!r}`, `{:>5}`); literal braces are doubled.
    """

    name = "py.fstring"
    template = prop_def(StringAttr)
    values = var_operand_def(ObjectType)
    result = result_def(ObjectType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$template `(` $values `)` attr-dict"

    def __init__(self, template: str, values: Sequence[SSAValue]) -> None:
        super().__init__(
            operands=[values], properties={"template": StringAttr(template)}, result_types=[OBJECT]
        )

    def fields(self) -> list[tuple[str, bool, str, str]]:
        return format_fields(self.template.data)

    def verify_(self) -> None:
        try:
            count = sum(1 for _, has_field, _, _ in self.fields() if has_field)
        except ValueError as error:
            raise VerifyException(f"py.fstring: {error}") from error
        if count != len(self.values):
            raise VerifyException(f"py.fstring: {count} fields but {len(self.values)} values")


@irdl_op_definition
class LambdaOp(IRDLOperation):
    """`%f = py.lambda (x, y) { ^bb0(%x, %y): ... py.return %v }`: `lambda x, y: v`.

    Its body holds expressions only and ends in `py.return` of one value.
    """

    name = "py.lambda"
    arg_names = prop_def(ArrayAttr[StringAttr])
    arg_kinds = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    result = result_def(ObjectType)

    def __init__(self, params: Sequence[str], body: Region | Sequence[Operation] = ()) -> None:
        region = body if isinstance(body, Region) else single_block(body, len(params))
        if not isinstance(body, Region):
            for arg, param in zip(region.block.args, params, strict=True):
                arg.name_hint = param if SSAValue.is_valid_name(param) else None
        super().__init__(
            properties={
                "arg_names": string_array(params),
                "arg_kinds": string_array([""] * len(params)),
            },
            regions=[region],
            result_types=[OBJECT],
        )

    def verify_(self) -> None:
        verify_params(self, self.arg_names, self.arg_kinds, self.body)
        last = self.body.block.last_op
        if not isinstance(last, ReturnOp) or len(last.values) != 1:
            raise VerifyException("py.lambda: the body ends in py.return of one value")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        names = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_identifier)
        op = cls(names, single_block(parser.parse_region(), len(names)))
        _parse_attrs_into(parser, op, keyword=True)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" ({', '.join(n.data for n in self.arg_names)}) ")
        printer.print_region(self.body)
        printer.print_op_attributes(
            self.attributes, print_keyword=True, reserved_attr_names=("arg_names", "arg_kinds")
        )


@irdl_op_definition
class ComprehensionOp(LazyFormatOp):
    """`%l = py.comprehension "list" %items { ^bb0(%b): ... py.yield %elem (, %cond) }`.

    `[elem for b in items if cond]` (`set`: `{...}`, `generator`: `(...)`); a `dict`
    one yields a key and a value (`{k: v for ...}`), then the filter if any. The body
    holds expressions only. `targets` loop variables unpack as in `py.for`.
    """

    name = "py.comprehension"
    kind = prop_def(StringAttr)
    iterable = operand_def(ObjectType)
    targets = prop_def(IntegerAttr, default_value=IntegerAttr(1, 64))
    body = region_def("single_block")
    result = result_def(ObjectType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$kind $iterable attr-dict-with-keyword $body"

    def __init__(
        self,
        kind: str,
        iterable: SSAValue,
        body: Region | Sequence[Operation] = (),
        targets: int = 1,
    ) -> None:
        region = body if isinstance(body, Region) else single_block(body, targets)
        props: dict[str, Attribute] = {"kind": StringAttr(kind)}
        if targets != 1:
            props["targets"] = IntegerAttr(targets, 64)
        super().__init__(
            operands=[iterable], properties=props, regions=[region], result_types=[OBJECT]
        )

    def verify_(self) -> None:
        if self.kind.data not in COMPREHENSION_KINDS:
            raise VerifyException(f"py.comprehension: unknown kind `{self.kind.data}`")
        if len(self.body.block.args) != self.targets.value.data or not self.body.block.args:
            raise VerifyException("py.comprehension: one block argument per loop variable")
        last = self.body.block.last_op
        element = 2 if self.kind.data == "dict" else 1  # a key and a value, or the element
        if not isinstance(last, YieldOp) or len(last.values) not in (element, element + 1):
            what = "a key and a value" if element == 2 else "the element"
            raise VerifyException(f"py.comprehension: the body yields {what} (and a filter)")


Py = Dialect(
    "py",
    [
        ModuleOp,
        CommentOp,
        ImportOp,
        FromImportOp,
        DefOp,
        ClassOp,
        ReturnOp,
        AssignOp,
        AugAssignOp,
        ExprOp,
        PassOp,
        BreakOp,
        ContinueOp,
        RaiseOp,
        ForOp,
        IfOp,
        YieldOp,
        WhileOp,
        ConditionOp,
        WithOp,
        TryOp,
        ConstantOp,
        NameOp,
        AttributeOp,
        SubscriptOp,
        SliceOp,
        CallOp,
        BinOp,
        UnaryOp,
        CompareOp,
        IfExpOp,
        TupleOp,
        ListOp,
        DictOp,
        FStringOp,
        LambdaOp,
        ComprehensionOp,
    ],
    [ObjectType, NoneAttr, EllipsisAttr],
)
