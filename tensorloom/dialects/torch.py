"""The torch dialect: the Python a TensorLoom program becomes, one op per construct.

The vocabulary is deliberately close to the printed Python, so that the printer
(`tensorloom/backends/python_printer.py`) is a straight walk with one handler
per op. Every SSA value is an untyped Python object, `!torch.value`.

    torch.script from "examples/mnist.tl" {
      torch.import "torch"
      torch.from_import "torch" ["nn"]
      torch.module_class @Classifier(hidden = "256") : "nn.Module" {
        torch.submodule "fc1" = "nn.Linear"("784", "hidden")
        torch.submodule "fc2" = "nn.Linear"("hidden", "10")
        torch.method @forward(x) {
        ^bb0(%x : !torch.value):
          %0 = torch.call_module "fc1"(%x)
          %1 = torch.call_function "torch.relu"(%0)
          %2 = torch.call_module "fc2"(%1)
          torch.return %2
        }
      }
    }

prints as

    import torch
    from torch import nn


    class Classifier(nn.Module):
        def __init__(self, hidden=256):
            super().__init__()
            self.fc1 = nn.Linear(784, hidden)
            self.fc2 = nn.Linear(hidden, 10)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

Three kinds of op:

- Top level (`torch.script` and what it holds): imports, `torch.module_class`,
  `torch.def` (a helper function, with decorators), `torch.raw` (verbatim
  Python, such as the runtime helpers in `tensorloom/backends/runtime/`; see
  `runtime_ops`), and `torch.main` (the `if __name__ == "__main__":` block).
- Class level: `torch.param_default` (a parameter default computed from
  others), `torch.field` (`self.name = <source>` in `__init__`),
  `torch.submodule` (`self.fc1 = nn.Linear(...)`), `torch.method`.
- Value level, inside `torch.method`, `torch.def` and `torch.main` bodies:
  constants, `self.` attributes, calls of submodules, functions and methods,
  operators, indexing, containers, `torch.dropout`, `torch.kernel_launch`,
  `torch.return`.

Constructor arguments and defaults are Python source strings (`"d_model * 4"`):
they are produced from checked attribute expressions by the lowering and
printed verbatim. Keyword arguments of calls are a parallel `arg_names` array,
`""` for a positional argument, so source order is kept.

Extending the dialect (the training-script lowering adds its own ops): define
the op here (value ops get one `!torch.value` result; ops with no operands and
the `Pure` trait are inlined at every use), then register a printer handler as
described in the printer's docstring.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Sequence
from functools import lru_cache
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
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsTerminator,
    NoTerminator,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_format import LazyFormatOp

# ------------------------------------------------------------------ types


@irdl_attr_definition
class ValueType(ParametrizedAttribute, TypeAttribute):
    """`!torch.value`: any Python object (a tensor, a number, a list, None)."""

    name = "torch.value"


@irdl_attr_definition
class NoneAttr(ParametrizedAttribute):
    """`#torch.none`: the Python `None`."""

    name = "torch.none"


@irdl_attr_definition
class EllipsisAttr(ParametrizedAttribute):
    """`#torch.ellipsis`: the Python `...` (in an index, `x[..., 0]`)."""

    name = "torch.ellipsis"


VALUE = ValueType()
# The layer catalogue's `CallKind`s (tensorloom/catalogue/layers/base.py).
CALL_KINDS = ("plain", "first_of_tuple", "first_of_tuple_self_attention")
ARITHMETIC_OPERATORS = ("+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>")
COMPARISON_OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "and", "or", "is", "in")
BINARY_OPERATORS = frozenset((*ARITHMETIC_OPERATORS, *COMPARISON_OPERATORS))
UNARY_OPERATORS = frozenset(["-", "+", "~", "not"])


def _check_identifier(name: str, what: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise VerifyException(f"{what} `{name}` is not a Python identifier")


# ------------------------------------------------- shared custom syntax


def _print_string_list(printer: Printer, values: Sequence[str], names: Sequence[str]) -> None:
    """Prints `("784", bias = "False")`."""
    printer.print_string("(")
    for i, (value, name) in enumerate(zip(values, names, strict=True)):
        printer.print_string(", " if i else "")
        printer.print_string(f"{name} = " if name else "")
        printer.print_string_literal(value)
    printer.print_string(")")


def _parse_named_item(parser: Parser) -> tuple[str, str]:
    """`name = "value"` or `"value"`; returns (name, value) with "" for no name."""
    name = parser.parse_optional_identifier()
    if name is None:
        return "", parser.parse_str_literal()
    parser.parse_punctuation("=")
    return name, parser.parse_str_literal()


def _parse_string_list(parser: Parser) -> tuple[list[str], list[str]]:
    items = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: _parse_named_item(parser)
    )
    return [value for _, value in items], [name for name, _ in items]


def _print_operand_list(printer: Printer, args: Sequence[SSAValue], names: Sequence[str]) -> None:
    """Prints `(%x, dim = %d)`."""
    printer.print_string("(")
    for i, (arg, name) in enumerate(zip(args, names, strict=True)):
        printer.print_string(", " if i else "")
        printer.print_string(f"{name} = " if name else "")
        printer.print_operand(arg)
    printer.print_string(")")


def _parse_named_operand(parser: Parser) -> tuple[str, SSAValue]:
    name = parser.parse_optional_identifier()
    if name is not None:
        parser.parse_punctuation("=")
    return name or "", parser.parse_operand(VALUE)


def _parse_operand_list(parser: Parser) -> tuple[list[SSAValue], list[str]]:
    items = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, lambda: _parse_named_operand(parser)
    )
    return [value for _, value in items], [name for name, _ in items]


def _print_params(printer: Printer, names: Sequence[str], defaults: Sequence[str]) -> None:
    """Prints a Python parameter list `(x, mask = "None")`."""
    printer.print_string("(")
    for i, (name, default) in enumerate(zip(names, defaults, strict=True)):
        printer.print_string(", " if i else "")
        printer.print_string(name)
        if default:
            printer.print_string(" = ")
            printer.print_string_literal(default)
    printer.print_string(")")


def _parse_param(parser: Parser) -> tuple[str, str]:
    name = parser.parse_identifier()
    if parser.parse_optional_punctuation("=") is None:
        return name, ""
    return name, parser.parse_str_literal()


def _parse_params(parser: Parser) -> tuple[list[str], list[str]]:
    items = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, lambda: _parse_param(parser))
    return [name for name, _ in items], [default for _, default in items]


def _check_parallel(op: Operation, values: Sequence[object], names: ArrayAttr[StringAttr]) -> None:
    if len(values) != len(names):
        raise VerifyException(f"{op.name}: {len(values)} arguments but {len(names)} names")
    seen_keyword = False
    for name in names:
        if not name.data:
            if seen_keyword:
                raise VerifyException(f"{op.name}: a positional argument follows a keyword")
            continue
        _check_identifier(name.data, "keyword")
        seen_keyword = True


def _single_block(body: Sequence[Operation] | Region) -> Region:
    """A region of one block (an empty `{}` parses as a region with none)."""
    if not isinstance(body, Region):
        return Region(Block(body))
    if not body.blocks:
        body.add_block(Block())
    return body


_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _entry_block(arg_count: int, names: Sequence[str]) -> Block:
    block = Block(arg_types=[VALUE] * arg_count)
    for arg, name in zip(block.args, names, strict=True):
        # xDSL takes ASCII names only; the printer names parameters from `names` anyway.
        arg.name_hint = name if _ASCII_NAME.fullmatch(name) else None
    return block


# ------------------------------------------------------------- top level


@irdl_op_definition
class ScriptOp(IRDLOperation):
    """`torch.script from "file.tl" { ... }`: one emitted Python file."""

    name = "torch.script"
    source = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, ops: Sequence[Operation] | Region = (), source: str | None = None) -> None:
        props = {"source": StringAttr(source)} if source is not None else {}
        super().__init__(properties=props, regions=[_single_block(ops)])

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
    """`torch.import "torch.nn.functional" as "F"`: `import torch.nn.functional as F`."""

    name = "torch.import"
    module = prop_def(StringAttr)
    alias = opt_prop_def(StringAttr)
    ASSEMBLY_FORMAT: ClassVar[str] = "$module (`as` $alias^)? attr-dict"

    def __init__(self, module: str, alias: str | None = None) -> None:
        props: dict[str, Attribute] = {"module": StringAttr(module)}
        if alias is not None:
            props["alias"] = StringAttr(alias)
        super().__init__(properties=props)


@irdl_op_definition
class FromImportOp(LazyFormatOp):
    """`torch.from_import "torch" ["nn"]`: `from torch import nn`."""

    name = "torch.from_import"
    module = prop_def(StringAttr)
    names = prop_def(ArrayAttr[StringAttr])
    ASSEMBLY_FORMAT: ClassVar[str] = "$module $names attr-dict"

    def __init__(self, module: str, names: Sequence[str]) -> None:
        super().__init__(properties={"module": StringAttr(module), "names": string_array(names)})

    def verify_(self) -> None:
        for name in self.names:
            _check_identifier(name.data, "imported name")


@irdl_op_definition
class RawOp(LazyFormatOp):
    """`torch.raw "def f():\\n    ..."`: Python source printed verbatim.

    Top-level names it defines are reserved, so generated names never clash.
    """

    name = "torch.raw"
    source = prop_def(StringAttr)
    ASSEMBLY_FORMAT: ClassVar[str] = "$source attr-dict"

    def __init__(self, source: str) -> None:
        super().__init__(properties={"source": StringAttr(source)})

    def verify_(self) -> None:
        problem = _python_syntax_error(self.source.data)
        if problem is not None:
            raise VerifyException(f"torch.raw holds invalid Python: {problem}")


@lru_cache(maxsize=256)
def _python_syntax_error(source: str) -> str | None:
    """The SyntaxError's message for `source`, or None when it parses.

    Cached: the module is verified after every pass, and the same runtime
    helpers (thousands of lines) are in most scripts; parsing them each time
    was a third of `tlc compile`'s time.
    """
    try:
        ast.parse(source)
    except SyntaxError as err:
        return str(err.msg)
    return None


@irdl_op_definition
class MainOp(IRDLOperation):
    """`torch.main { ... }`: the `if __name__ == "__main__":` block."""

    name = "torch.main"
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, ops: Sequence[Operation] | Region = ()) -> None:
        super().__init__(regions=[_single_block(ops)])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls(parser.parse_region())
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)


class _FunctionLike(IRDLOperation):
    """Shared by `torch.method` and `torch.def`: a symbol, parameters, a body."""

    sym_name = prop_def(SymbolNameConstraint())
    arg_names = prop_def(ArrayAttr[StringAttr])
    arg_defaults = prop_def(ArrayAttr[StringAttr])
    decorators = prop_def(ArrayAttr[StringAttr], default_value=ArrayAttr([]))
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface())

    def __init__(
        self,
        name: str,
        arg_names: Sequence[str],
        arg_defaults: Sequence[str] | None = None,
        decorators: Sequence[str] = (),
        body: Region | None = None,
    ) -> None:
        defaults = arg_defaults if arg_defaults is not None else [""] * len(arg_names)
        region = body if body is not None else Region(_entry_block(len(arg_names), arg_names))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "arg_names": string_array(arg_names),
                "arg_defaults": string_array(defaults),
                "decorators": string_array(decorators),
            },
            regions=[region],
        )

    @property
    def params(self) -> list[tuple[str, str]]:
        """(name, default source or "") per parameter, self excluded."""
        return [(n.data, d.data) for n, d in zip(self.arg_names, self.arg_defaults, strict=True)]

    def verify_(self) -> None:
        if len(self.arg_names) != len(self.arg_defaults):
            raise VerifyException(f"{self.name}: arg_names and arg_defaults differ in length")
        if len(self.body.block.args) != len(self.arg_names):
            raise VerifyException(
                f"{self.name}: {len(self.arg_names)} parameters but "
                f"{len(self.body.block.args)} block arguments"
            )
        _check_identifier(self.sym_name.data, "function name")
        for name in self.arg_names:
            _check_identifier(name.data, "parameter")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name().data
        arg_names, arg_defaults = _parse_params(parser)
        decorators: list[str] = []
        if parser.parse_optional_keyword("decorators") is not None:
            decorators = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, parser.parse_str_literal
            )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(_entry_block(len(arg_names), arg_names))
        op = cls(name, arg_names, arg_defaults, decorators, region)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        names, defaults = zip(*self.params, strict=True) if self.params else ((), ())
        _print_params(printer, names, defaults)
        if self.decorators.data:
            printer.print_string(" decorators [")
            printer.print_list(self.decorators, lambda d: printer.print_string_literal(d.data))
            printer.print_string("]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)


@irdl_op_definition
class DefOp(_FunctionLike):
    """`torch.def @name(x, n = "1") decorators ["triton.jit"] { ... }`: a function."""

    name = "torch.def"


@irdl_op_definition
class MethodOp(_FunctionLike):
    """`torch.method @forward(x) { ... }`: a method of the enclosing class (`self` implied)."""

    name = "torch.method"
    traits = lazy_traits_def(lambda: (SymbolOpInterface(), HasParent(ModuleClassOp)))


# ------------------------------------------------------------ class level


@irdl_op_definition
class ModuleClassOp(IRDLOperation):
    """`torch.module_class @Name(d_model = "512") : "nn.Module" { ... }`.

    The parameters become `__init__` keyword arguments with their defaults; the
    body's fields and submodules, in order, become the rest of `__init__`.
    """

    name = "torch.module_class"
    sym_name = prop_def(SymbolNameConstraint())
    param_names = prop_def(ArrayAttr[StringAttr])
    param_defaults = prop_def(ArrayAttr[StringAttr])
    base = prop_def(StringAttr)
    doc = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        params: Sequence[tuple[str, str]] = (),
        body: Sequence[Operation] | Region = (),
        base: str = "nn.Module",
        doc: str | None = None,
    ) -> None:
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "param_names": string_array([n for n, _ in params]),
            "param_defaults": string_array([d for _, d in params]),
            "base": StringAttr(base),
        }
        if doc is not None:
            props["doc"] = StringAttr(doc)
        super().__init__(properties=props, regions=[_single_block(body)])

    @property
    def params(self) -> list[tuple[str, str]]:
        pairs = zip(self.param_names, self.param_defaults, strict=True)
        return [(n.data, d.data) for n, d in pairs]

    def verify_(self) -> None:
        if len(self.param_names) != len(self.param_defaults):
            raise VerifyException("torch.module_class: param_names and param_defaults differ")
        _check_identifier(self.sym_name.data, "class name")
        for name in self.param_names:
            _check_identifier(name.data, "parameter")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name().data
        names, defaults = _parse_params(parser)
        parser.parse_punctuation(":")
        base = parser.parse_str_literal()
        doc = parser.parse_str_literal() if parser.parse_optional_keyword("doc") else None
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        op = cls(name, list(zip(names, defaults, strict=True)), region, base, doc)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        names, defaults = zip(*self.params, strict=True) if self.params else ((), ())
        _print_params(printer, names, defaults)
        printer.print_string(" : ")
        printer.print_string_literal(self.base.data)
        if self.doc is not None:
            printer.print_string(" doc ")
            printer.print_string_literal(self.doc.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)


@irdl_op_definition
class FieldOp(LazyFormatOp):
    """`torch.field "d_model" = "d_model"`: `self.d_model = d_model` in `__init__`."""

    name = "torch.field"
    field_name = prop_def(StringAttr)
    value = prop_def(StringAttr)
    traits = traits_def(HasParent(ModuleClassOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$field_name `=` $value attr-dict"

    def __init__(self, field_name: str, value: str) -> None:
        super().__init__(
            properties={"field_name": StringAttr(field_name), "value": StringAttr(value)}
        )

    def verify_(self) -> None:
        _check_identifier(self.field_name.data, "field")


@irdl_op_definition
class ParamDefaultOp(LazyFormatOp):
    """`torch.param_default "d_ff" = "4 * d_model"`: a default computed from other parameters.

    The parameter's own default is `None`; `__init__` starts with
    `if d_ff is None: d_ff = 4 * d_model`, so that overriding `d_model` alone
    changes `d_ff` as the model's config says.
    """

    name = "torch.param_default"
    param = prop_def(StringAttr)
    value = prop_def(StringAttr)
    traits = traits_def(HasParent(ModuleClassOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$param `=` $value attr-dict"

    def __init__(self, param: str, value: str) -> None:
        super().__init__(properties={"param": StringAttr(param), "value": StringAttr(value)})

    def verify_(self) -> None:
        _check_identifier(self.param.data, "parameter")


@irdl_op_definition
class SubmoduleOp(IRDLOperation):
    """`torch.submodule "fc1" = "nn.Linear"("784", bias = "False")`.

    Arguments are Python source; `self.fc1 = nn.Linear(784, bias=False)`.
    """

    name = "torch.submodule"
    field_name = prop_def(StringAttr)
    cls = prop_def(StringAttr)
    args = prop_def(ArrayAttr[StringAttr])
    arg_names = prop_def(ArrayAttr[StringAttr])
    traits = traits_def(HasParent(ModuleClassOp))

    def __init__(
        self, field_name: str, cls: str, args: Sequence[str], arg_names: Sequence[str] | None = None
    ) -> None:
        names = arg_names if arg_names is not None else [""] * len(args)
        super().__init__(
            properties={
                "field_name": StringAttr(field_name),
                "cls": StringAttr(cls),
                "args": string_array(args),
                "arg_names": string_array(names),
            }
        )

    def verify_(self) -> None:
        _check_identifier(self.field_name.data, "submodule")
        _check_parallel(self, self.args.data, self.arg_names)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        field = parser.parse_str_literal()
        parser.parse_punctuation("=")
        callee = parser.parse_str_literal()
        args, names = _parse_string_list(parser)
        op = cls(field, callee, args, names)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.field_name.data)
        printer.print_string(" = ")
        printer.print_string_literal(self.cls.data)
        _print_string_list(printer, [a.data for a in self.args], [n.data for n in self.arg_names])
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class InitTensorOp(IRDLOperation):
    """`torch.init_tensor "wte" "weight" = "normal_"(std = "0.02")`, after the submodule.

    `nn.init.normal_(self.wte.weight, std=0.02)` in `__init__`. `tensor` is the
    parameter's name inside the submodule as `named_parameters()` spells it
    (`"c_proj.weight"`; `"0.weight"` in a `Sequential` is `self.mlp[0].weight`);
    `function` a function of `torch.nn.init`; the arguments are Python source. With
    `each`, the submodule is a layer list and every element's tensor is set
    (`for layer in self.h: nn.init.normal_(layer.weight, std=0.02)`).
    """

    name = "torch.init_tensor"
    field_name = prop_def(StringAttr)
    tensor = prop_def(StringAttr)
    function = prop_def(StringAttr)
    args = prop_def(ArrayAttr[StringAttr])
    arg_names = prop_def(ArrayAttr[StringAttr])
    each = opt_prop_def(UnitAttr)
    traits = traits_def(HasParent(ModuleClassOp))

    def __init__(
        self,
        field_name: str,
        tensor: str,
        function: str,
        kwargs: Sequence[tuple[str, str]] = (),
        each: bool = False,
    ) -> None:
        props: dict[str, Attribute] = {
            "field_name": StringAttr(field_name),
            "tensor": StringAttr(tensor),
            "function": StringAttr(function),
            "args": string_array([v for _, v in kwargs]),
            "arg_names": string_array([k for k, _ in kwargs]),
        }
        if each:
            props["each"] = UnitAttr()
        super().__init__(properties=props)

    @property
    def kwargs(self) -> list[tuple[str, str]]:
        return [(n.data, a.data) for n, a in zip(self.arg_names, self.args, strict=True)]

    def verify_(self) -> None:
        _check_identifier(self.field_name.data, "submodule")
        _check_identifier(self.function.data, "nn.init function")
        for part in self.tensor.data.split("."):
            if not part.isdigit():
                _check_identifier(part, "tensor name")
        _check_parallel(self, self.args.data, self.arg_names)
        if any(not n.data for n in self.arg_names):
            raise VerifyException("torch.init_tensor: its arguments are keywords")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        field = parser.parse_str_literal()
        tensor = parser.parse_str_literal()
        parser.parse_punctuation("=")
        function = parser.parse_str_literal()
        args, names = _parse_string_list(parser)
        each = parser.parse_optional_keyword("each") is not None
        op = cls(field, tensor, function, list(zip(names, args, strict=True)), each)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.field_name.data)
        printer.print_string(" ")
        printer.print_string_literal(self.tensor.data)
        printer.print_string(" = ")
        printer.print_string_literal(self.function.data)
        _print_string_list(printer, [a.data for a in self.args], [n.data for n in self.arg_names])
        if self.each is not None:
            printer.print_string(" each")
        printer.print_op_attributes(self.attributes)


# ------------------------------------------------------------ value level


@irdl_op_definition
class ConstantOp(LazyFormatOp):
    """`%c = torch.constant 0.1 : f64`: a literal (int, float, bool, str, None, `...`)."""

    name = "torch.constant"
    value = prop_def()
    result = result_def(ValueType)
    traits = traits_def(Pure())
    ASSEMBLY_FORMAT: ClassVar[str] = "$value attr-dict"

    def __init__(self, value: Attribute) -> None:
        super().__init__(properties={"value": value}, result_types=[VALUE])

    def verify_(self) -> None:
        allowed = (IntegerAttr, FloatAttr, StringAttr, NoneAttr, EllipsisAttr)
        if not isinstance(self.value, allowed):
            raise VerifyException(f"torch.constant cannot hold {self.value}")


@irdl_op_definition
class SelfAttrOp(LazyFormatOp):
    """`%d = torch.self_attr "d_model"`: `self.d_model` (also `self.training`)."""

    name = "torch.self_attr"
    attr_name = prop_def(StringAttr)
    result = result_def(ValueType)
    traits = traits_def(Pure(), HasAncestor(MethodOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$attr_name attr-dict"

    def __init__(self, attr_name: str) -> None:
        super().__init__(properties={"attr_name": StringAttr(attr_name)}, result_types=[VALUE])


@irdl_op_definition
class GlobalOp(LazyFormatOp):
    """`%t = torch.global "torch.float16"`: a module-level name or dotted path."""

    name = "torch.global"
    path = prop_def(StringAttr)
    result = result_def(ValueType)
    traits = traits_def(Pure())
    ASSEMBLY_FORMAT: ClassVar[str] = "$path attr-dict"

    def __init__(self, path: str) -> None:
        super().__init__(properties={"path": StringAttr(path)}, result_types=[VALUE])

    def verify_(self) -> None:
        for part in self.path.data.split("."):
            _check_identifier(part, "global name")


class _CallLike(IRDLOperation):
    """A call with positional and keyword operands: `"callee"(%a, dim = %b)`."""

    callee = prop_def(StringAttr)
    args = var_operand_def(ValueType)
    arg_names = prop_def(ArrayAttr[StringAttr])
    result = result_def(ValueType)

    def __init__(
        self, callee: str, args: Sequence[SSAValue], arg_names: Sequence[str] | None = None
    ) -> None:
        names = arg_names if arg_names is not None else [""] * len(args)
        super().__init__(
            operands=[args],
            properties={"callee": StringAttr(callee), "arg_names": string_array(names)},
            result_types=[VALUE],
        )

    @property
    def keywords(self) -> list[str]:
        return [n.data for n in self.arg_names]

    def verify_(self) -> None:
        _check_parallel(self, self.args, self.arg_names)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        callee = parser.parse_str_literal()
        args, names = _parse_operand_list(parser)
        op = cls(callee, args, names)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.callee.data)
        _print_operand_list(printer, self.args, self.keywords)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class CallFunctionOp(_CallLike):
    """`%y = torch.call_function "torch.softmax"(%x, dim = %d)`."""

    name = "torch.call_function"

    def verify_(self) -> None:
        super().verify_()
        for part in self.callee.data.split("."):
            _check_identifier(part, "function")


@irdl_op_definition
class KernelLaunchOp(_CallLike):
    """`%z = torch.kernel_launch "vector_add_launcher"(%x, %y, BLOCK = %b)`.

    A call of a Triton kernel's launcher, a function of the same script.
    """

    name = "torch.kernel_launch"

    def verify_(self) -> None:
        super().verify_()
        _check_identifier(self.callee.data, "launcher")


@irdl_op_definition
class CallModuleOp(_CallLike):
    """`%y = torch.call_module "lstm"(%x) kind "first_of_tuple"`: a submodule call.

    `kind` (the layer catalogue's `call_kind`) says how the call reads:
    `plain` (`self.fc1(x)`), `first_of_tuple` (the first element of the
    returned tuple, `self.lstm(x)[0]`: LSTM/GRU's output sequence) or
    `first_of_tuple_self_attention` (`self.attn(x, x, x, need_weights=False)[0]`,
    nn.MultiheadAttention built with batch_first=True, used as self-attention).
    """

    name = "torch.call_module"
    kind = prop_def(StringAttr, default_value=StringAttr("plain"))
    traits = traits_def(HasAncestor(MethodOp))

    def __init__(
        self,
        callee: str,
        args: Sequence[SSAValue],
        arg_names: Sequence[str] | None = None,
        kind: str = "plain",
    ) -> None:
        super().__init__(callee, args, arg_names)
        self.kind = StringAttr(kind)

    def verify_(self) -> None:
        super().verify_()
        _check_identifier(self.callee.data, "submodule")
        if self.kind.data not in CALL_KINDS:
            raise VerifyException(f"torch.call_module: unknown kind `{self.kind.data}`")
        if self.kind.data == "first_of_tuple_self_attention" and len(self.args) != 1:
            raise VerifyException("torch.call_module: a self-attention call takes one input")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        callee = parser.parse_str_literal()
        args, names = _parse_operand_list(parser)
        kind = parser.parse_str_literal() if parser.parse_optional_keyword("kind") else "plain"
        op = cls(callee, args, names, kind)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.callee.data)
        _print_operand_list(printer, self.args, self.keywords)
        if self.kind.data != "plain":
            printer.print_string(" kind ")
            printer.print_string_literal(self.kind.data)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class CallMethodOp(IRDLOperation):
    """`%y = torch.call_method %x, "view"(%b, %n)`: `x.view(b, n)`."""

    name = "torch.call_method"
    receiver = operand_def(ValueType)
    method = prop_def(StringAttr)
    args = var_operand_def(ValueType)
    arg_names = prop_def(ArrayAttr[StringAttr])
    result = result_def(ValueType)

    def __init__(
        self,
        receiver: SSAValue,
        method: str,
        args: Sequence[SSAValue] = (),
        arg_names: Sequence[str] | None = None,
    ) -> None:
        names = arg_names if arg_names is not None else [""] * len(args)
        super().__init__(
            operands=[receiver, args],
            properties={"method": StringAttr(method), "arg_names": string_array(names)},
            result_types=[VALUE],
        )

    @property
    def keywords(self) -> list[str]:
        return [n.data for n in self.arg_names]

    def verify_(self) -> None:
        _check_identifier(self.method.data, "method")
        _check_parallel(self, self.args, self.arg_names)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        receiver = parser.parse_operand(VALUE)
        parser.parse_punctuation(",")
        method = parser.parse_str_literal()
        args, names = _parse_operand_list(parser)
        op = cls(receiver, method, args, names)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.receiver)
        printer.print_string(", ")
        printer.print_string_literal(self.method.data)
        _print_operand_list(printer, self.args, self.keywords)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class BinaryOp(LazyFormatOp):
    """`%z = torch.binop "+" %x, %y`: a Python binary or comparison operator."""

    name = "torch.binop"
    operator = prop_def(StringAttr)
    lhs = operand_def(ValueType)
    rhs = operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$operator $lhs `,` $rhs attr-dict"

    def __init__(self, operator: str, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(
            operands=[lhs, rhs],
            properties={"operator": StringAttr(operator)},
            result_types=[VALUE],
        )

    def verify_(self) -> None:
        if self.operator.data not in BINARY_OPERATORS:
            raise VerifyException(f"torch.binop: unknown operator `{self.operator.data}`")


@irdl_op_definition
class UnaryOp(LazyFormatOp):
    """`%y = torch.unop "-" %x`."""

    name = "torch.unop"
    operator = prop_def(StringAttr)
    operand = operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$operator $operand attr-dict"

    def __init__(self, operator: str, operand: SSAValue) -> None:
        super().__init__(
            operands=[operand], properties={"operator": StringAttr(operator)}, result_types=[VALUE]
        )

    def verify_(self) -> None:
        if self.operator.data not in UNARY_OPERATORS:
            raise VerifyException(f"torch.unop: unknown operator `{self.operator.data}`")


@irdl_op_definition
class TernaryOp(LazyFormatOp):
    """`%y = torch.ternary %a if %c else %b`: `a if c else b`."""

    name = "torch.ternary"
    if_true = operand_def(ValueType)
    condition = operand_def(ValueType)
    if_false = operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$if_true `if` $condition `else` $if_false attr-dict"

    def __init__(self, condition: SSAValue, if_true: SSAValue, if_false: SSAValue) -> None:
        super().__init__(operands=[if_true, condition, if_false], result_types=[VALUE])


@irdl_op_definition
class GetItemOp(LazyFormatOp):
    """`%y = torch.getitem %x[%s, %i]`: `x[:, i]` (a `torch.slice` index prints as `a:b`)."""

    name = "torch.getitem"
    value = operand_def(ValueType)
    indices = var_operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value `[` $indices `]` attr-dict"

    def __init__(self, value: SSAValue, indices: Sequence[SSAValue]) -> None:
        super().__init__(operands=[value, indices], result_types=[VALUE])

    def verify_(self) -> None:
        if not self.indices:
            raise VerifyException("torch.getitem needs at least one index")


@irdl_op_definition
class SliceOp(LazyFormatOp):
    """`%s = torch.slice %lo, %hi, %step`: `lo:hi:step`; a `#torch.none` part is left out."""

    name = "torch.slice"
    lower = operand_def(ValueType)
    upper = operand_def(ValueType)
    step = operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$lower `,` $upper `,` $step attr-dict"

    def __init__(self, lower: SSAValue, upper: SSAValue, step: SSAValue) -> None:
        super().__init__(operands=[lower, upper, step], result_types=[VALUE])


@irdl_op_definition
class GetAttrOp(LazyFormatOp):
    """`%s = torch.getattr %x, "shape"`: `x.shape`."""

    name = "torch.getattr"
    value = operand_def(ValueType)
    attr_name = prop_def(StringAttr)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value `,` $attr_name attr-dict"

    def __init__(self, value: SSAValue, attr_name: str) -> None:
        super().__init__(
            operands=[value], properties={"attr_name": StringAttr(attr_name)}, result_types=[VALUE]
        )

    def verify_(self) -> None:
        _check_identifier(self.attr_name.data, "attribute")


@irdl_op_definition
class ListOp(LazyFormatOp):
    """`%l = torch.list [%a, %b]`: `[a, b]`."""

    name = "torch.list"
    elements = var_operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "`[` $elements `]` attr-dict"

    def __init__(self, elements: Sequence[SSAValue]) -> None:
        super().__init__(operands=[elements], result_types=[VALUE])


@irdl_op_definition
class TupleOp(LazyFormatOp):
    """`%t = torch.tuple [%a, %b]`: `(a, b)`."""

    name = "torch.tuple"
    elements = var_operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "`[` $elements `]` attr-dict"

    def __init__(self, elements: Sequence[SSAValue]) -> None:
        super().__init__(operands=[elements], result_types=[VALUE])


@irdl_op_definition
class DropoutOp(LazyFormatOp):
    """`%y = torch.dropout %x, %p`: `F.dropout(x, p=p, training=self.training)`."""

    name = "torch.dropout"
    input = operand_def(ValueType)
    p = operand_def(ValueType)
    result = result_def(ValueType)
    traits = traits_def(HasAncestor(MethodOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$input `,` $p attr-dict"

    def __init__(self, input: SSAValue, p: SSAValue) -> None:
        super().__init__(operands=[input, p], result_types=[VALUE])


@irdl_op_definition
class ReturnOp(LazyFormatOp):
    """`torch.return %x`: `return x` (several values return a tuple)."""

    name = "torch.return"
    values = var_operand_def(ValueType)
    traits = traits_def(IsTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "($values^)? attr-dict"

    def __init__(self, values: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[values])


# ------------------------------------------------------------ control flow


@irdl_op_definition
class ForOp(LazyFormatOp):
    """`%x = torch.for %layers iter_args(%x0) { ^bb0(%block, %x1): ... torch.yield %y }`.

    `for block in self.h: x = block(x)`: the body's first argument is the element
    (named after the loop variable), the others the values the loop reassigns;
    the printer gives each carried value one Python name.
    """

    name = "torch.for"
    iterable = operand_def(ValueType)
    inits = var_operand_def(ValueType)
    res = var_result_def(ValueType)
    body = region_def("single_block")
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$iterable (`iter_args` `(` $inits^ `)`)? (`->` type($res)^)? attr-dict-with-keyword $body"
    )

    def __init__(self, iterable: SSAValue, inits: Sequence[SSAValue], body: Region) -> None:
        super().__init__(
            operands=[iterable, inits], result_types=[[VALUE] * len(inits)], regions=[body]
        )


@irdl_op_definition
class IfOp(LazyFormatOp):
    """`%x = torch.if %c { ... torch.yield %a } else { ... torch.yield %b }`."""

    name = "torch.if"
    cond = operand_def(ValueType)
    res = var_result_def(ValueType)
    then_region = region_def("single_block")
    else_region = region_def("single_block")
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$cond (`->` `(` type($res)^ `)`)? $then_region `else` $else_region attr-dict"
    )

    def __init__(
        self, cond: SSAValue, results: int, then_region: Region, else_region: Region
    ) -> None:
        super().__init__(
            operands=[cond], result_types=[[VALUE] * results], regions=[then_region, else_region]
        )


@irdl_op_definition
class YieldOp(LazyFormatOp):
    """`torch.yield %a, %b`: the values a loop body or branch leaves in its names."""

    name = "torch.yield"
    values = var_operand_def(ValueType)
    traits = traits_def(IsTerminator(), HasParent(ForOp, IfOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "($values^)? attr-dict"

    def __init__(self, values: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[values])


@irdl_op_definition
class CallValueOp(LazyFormatOp):
    """`%y = torch.call_value %block(%x)`: call a value (a layer of a list)."""

    name = "torch.call_value"
    callee = operand_def(ValueType)
    args = var_operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$callee `(` $args `)` attr-dict"

    def __init__(self, callee: SSAValue, args: Sequence[SSAValue]) -> None:
        super().__init__(operands=[callee, args], result_types=[VALUE])


# --------------------------------------------------------- runtime sources


def runtime_ops(module_name: str) -> list[Operation]:
    """The ops that paste a runtime helper module into a script.

    `runtime_ops("checkpoint")` reads `tensorloom/backends/runtime/checkpoint.py`
    (as text, through `tensorloom.backends.runtime.split_module`): its plain
    imports become `torch.import` / `torch.from_import` ops, which the printer
    merges and sorts with the script's own; an import it cannot express (a
    `try:` block for an optional package) and the module's body become
    `torch.raw` ops, the body under a comment naming its file.
    """
    from tensorloom.backends.runtime import module_text, split_module

    docstring, imports, body = split_module(module_text(module_name))
    ops: list[Operation] = []
    for statement in imports:
        node = ast.parse(statement).body[0]
        if isinstance(node, ast.Import | ast.ImportFrom):
            ops.extend(_import_ops(node))
        else:
            ops.append(RawOp(statement))
    summary = docstring.splitlines()[0] if docstring else ""
    banner = f"# ---- runtime/{module_name}.py: {summary}".rstrip(": ")
    ops.append(RawOp(f"{banner}\n{body}"))
    return ops


def _import_ops(node: ast.Import | ast.ImportFrom) -> list[Operation]:
    if isinstance(node, ast.ImportFrom):
        return [FromImportOp(node.module or "", [alias.name for alias in node.names])]
    return [ImportOp(alias.name, alias.asname) for alias in node.names]


Torch = Dialect(
    "torch",
    [
        ScriptOp,
        ImportOp,
        FromImportOp,
        RawOp,
        MainOp,
        DefOp,
        MethodOp,
        ModuleClassOp,
        FieldOp,
        ParamDefaultOp,
        SubmoduleOp,
        InitTensorOp,
        ConstantOp,
        SelfAttrOp,
        GlobalOp,
        CallFunctionOp,
        KernelLaunchOp,
        CallModuleOp,
        CallMethodOp,
        BinaryOp,
        UnaryOp,
        TernaryOp,
        GetItemOp,
        SliceOp,
        GetAttrOp,
        ListOp,
        TupleOp,
        DropoutOp,
        ReturnOp,
        ForOp,
        IfOp,
        YieldOp,
        CallValueOp,
    ],
    [ValueType, NoneAttr, EllipsisAttr],
)
