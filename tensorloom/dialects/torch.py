"""The torch dialect: PyTorch's own constructs in an emitted script, around `py` code.

    torch.script from "examples/mnist.tl" {
      %c256 = py.constant 256 : i64
      torch.module_class @Classifier(hidden = %c256) : "nn.Module" {
        %linear = py.name "nn.Linear"
        %in = py.constant 784 : i64
        %hidden = py.name "hidden"
        %0 = py.call %linear(%in, %hidden)
        torch.submodule "fc1" = %0
        ...
        py.def @forward(self, x) {
        ^bb0(%self : !py.object, %x : !py.object):
          %s = py.name "self"
          %fc1 = py.attribute %s, "fc1"
          %1 = py.call %fc1(%x)
          ...
          py.return %2
        }
      }
    }

prints as

    class Classifier(nn.Module):
        def __init__(self, hidden=256):
            super().__init__()
            self.fc1 = nn.Linear(784, hidden)
            ...

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

The statements and expressions are the `py` dialect's (tensorloom/dialects/py.py);
this dialect keeps what is PyTorch's or the script's own:

- `torch.script` (the emitted file), `torch.raw` (verbatim Python: the training
  loop's templates until they move onto `py`), `torch.runtime` (where the helpers
  of `tensorloom/backends/runtime/` that the script reaches are pasted),
  `torch.main` (the `if __name__ == "__main__":` block);
- `torch.module_class` (an `nn.Module` subclass: `__init__` parameters with their
  default values as operands, then its body) and, in its body, what `__init__`
  does: `torch.param_default` (a default computed from other parameters),
  `torch.field` (`self.name = value`), `torch.submodule` (`self.fc1 = nn.Linear(...)`),
  each storing a value computed by `py` ops before it; and its methods, `py.def`s
  whose first parameter is `self`.
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar, Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    StringAttr,
    SymbolNameConstraint,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    NoTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_format import LazyFormatOp
from tensorloom.dialects.py import OBJECT, ObjectType

# ------------------------------------------------------------------ types


def _check_identifier(name: str, what: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise VerifyException(f"{what} `{name}` is not a Python identifier")


def _single_block(body: Sequence[Operation] | Region) -> Region:
    """A region of one block (an empty `{}` parses as a region with none)."""
    if not isinstance(body, Region):
        return Region(Block(body))
    if not body.blocks:
        body.add_block(Block())
    return body


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


# ------------------------------------------------------------ class level


@irdl_op_definition
class ModuleClassOp(IRDLOperation):
    """`torch.module_class @Name(d_model = %c512) : "nn.Module" doc "..." { ... }`.

    The parameters become `__init__` keyword arguments; their defaults are
    operands, evaluated where the class is (as Python evaluates them). The body's
    `torch.param_default`, `torch.field` and `torch.submodule` ops, with the `py`
    ops computing their values, are the rest of `__init__`; its `py.def`s are the
    methods (`self` first).
    """

    name = "torch.module_class"
    sym_name = prop_def(SymbolNameConstraint())
    param_names = prop_def(ArrayAttr[StringAttr])
    defaults = var_operand_def(ObjectType)
    base = prop_def(StringAttr)
    doc = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        params: Sequence[tuple[str, SSAValue]] = (),
        body: Sequence[Operation] | Region = (),
        base: str = "nn.Module",
        doc: str | None = None,
    ) -> None:
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "param_names": string_array([n for n, _ in params]),
            "base": StringAttr(base),
        }
        if doc is not None:
            props["doc"] = StringAttr(doc)
        super().__init__(
            operands=[[v for _, v in params]], properties=props, regions=[_single_block(body)]
        )

    @property
    def params(self) -> list[tuple[str, SSAValue]]:
        return [(n.data, d) for n, d in zip(self.param_names, self.defaults, strict=True)]

    def verify_(self) -> None:
        if len(self.param_names) != len(self.defaults):
            raise VerifyException("torch.module_class: one default per parameter")
        _check_identifier(self.sym_name.data, "class name")
        for name in self.param_names:
            _check_identifier(name.data, "parameter")
        for part in self.base.data.split("."):
            _check_identifier(part, "base class")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name().data

        def param() -> tuple[str, SSAValue]:
            key = parser.parse_identifier()
            parser.parse_punctuation("=")
            return key, parser.parse_operand(OBJECT)

        params = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, param)
        parser.parse_punctuation(":")
        base = parser.parse_str_literal()
        doc = parser.parse_str_literal() if parser.parse_optional_keyword("doc") else None
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        op = cls(name, params, region, base, doc)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        for i, (key, value) in enumerate(self.params):
            printer.print_string(f"{', ' if i else ''}{key} = ")
            printer.print_operand(value)
        printer.print_string(") : ")
        printer.print_string_literal(self.base.data)
        if self.doc is not None:
            printer.print_string(" doc ")
            printer.print_string_literal(self.doc.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)


@irdl_op_definition
class FieldOp(LazyFormatOp):
    """`torch.field "d_model" = %v`: `self.d_model = v` in `__init__`."""

    name = "torch.field"
    field_name = prop_def(StringAttr)
    value = operand_def(ObjectType)
    traits = traits_def(HasParent(ModuleClassOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$field_name `=` $value attr-dict"

    def __init__(self, field_name: str, value: SSAValue) -> None:
        super().__init__(operands=[value], properties={"field_name": StringAttr(field_name)})

    def verify_(self) -> None:
        _check_identifier(self.field_name.data, "field")


@irdl_op_definition
class ParamDefaultOp(LazyFormatOp):
    """`torch.param_default "d_ff" = %v`: a default computed from other parameters.

    The parameter's own default is `None`; `__init__` starts with
    `if d_ff is None: d_ff = 4 * d_model`, so that overriding `d_model` alone
    changes `d_ff` as the model's config says.
    """

    name = "torch.param_default"
    param = prop_def(StringAttr)
    value = operand_def(ObjectType)
    traits = traits_def(HasParent(ModuleClassOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$param `=` $value attr-dict"

    def __init__(self, param: str, value: SSAValue) -> None:
        super().__init__(operands=[value], properties={"param": StringAttr(param)})

    def verify_(self) -> None:
        _check_identifier(self.param.data, "parameter")


@irdl_op_definition
class SubmoduleOp(LazyFormatOp):
    """`torch.submodule "fc1" = %layer`: `self.fc1 = nn.Linear(784, 256)` (the `py`
    ops before it compute the module)."""

    name = "torch.submodule"
    field_name = prop_def(StringAttr)
    value = operand_def(ObjectType)
    traits = traits_def(HasParent(ModuleClassOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$field_name `=` $value attr-dict"

    def __init__(self, field_name: str, value: SSAValue) -> None:
        super().__init__(operands=[value], properties={"field_name": StringAttr(field_name)})

    def verify_(self) -> None:
        _check_identifier(self.field_name.data, "submodule")


# --------------------------------------------------------- runtime helpers


@irdl_op_definition
class RuntimeOp(LazyFormatOp):
    """`torch.runtime ["load_digits"]`: the runtime helpers the script reaches, pasted here.

    The printer pastes the definitions of `tensorloom/backends/runtime/` that the
    rest of the script reads, plus `roots`, closed over their own references
    (`tensorloom.backends.runtime.paste`), with the imports they need. One per script.
    """

    name = "torch.runtime"
    roots = prop_def(ArrayAttr[StringAttr])
    ASSEMBLY_FORMAT: ClassVar[str] = "$roots attr-dict"

    def __init__(self, roots: Sequence[str] = ()) -> None:
        super().__init__(properties={"roots": string_array(roots)})


Torch = Dialect(
    "torch",
    [ScriptOp, RawOp, RuntimeOp, MainOp, ModuleClassOp, FieldOp, ParamDefaultOp, SubmoduleOp],
    [],
)
