"""Ops whose declarative assembly format is compiled when first printed or parsed.

    @irdl_op_definition
    class SetOp(LazyFormatOp):
        name = "train.set"
        key = prop_def(StringAttr)
        value = prop_def()
        ASSEMBLY_FORMAT: ClassVar[str] = "$key `=` $value attr-dict"

xDSL compiles an op's `assembly_format` when the class is defined, and that,
with importing the format compiler, was about a third of a cold `tlc check`,
which never prints or parses IR. `ASSEMBLY_FORMAT` holds the same format text
(xDSL allows upper-case `ClassVar` constants on an op); `print` and `parse`
compile it on first use and keep the result. tests/unit/dialects/test_formats.py
compiles every op's format, so a bad one still fails in the tests.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, ClassVar, Self

from tensorloom.dialects.lazy_definition import LazyOp

if TYPE_CHECKING:
    from xdsl.irdl.declarative_assembly_format import FormatProgram
    from xdsl.parser import Parser
    from xdsl.printer import Printer


class LazyFormatOp(LazyOp):
    """An op printed and parsed with its `ASSEMBLY_FORMAT`, compiled on first use."""

    ASSEMBLY_FORMAT: ClassVar[str]

    @classmethod
    def format_text(cls) -> str:
        """The format's text: `ASSEMBLY_FORMAT`, unless a family makes it from its fields."""
        return cls.ASSEMBLY_FORMAT

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        return format_program(cls).parse(parser, cls)

    def print(self, printer: Printer) -> None:
        format_program(type(self)).print(printer, self)


@functools.cache
def format_program(op_type: type[LazyFormatOp]) -> FormatProgram:
    """The op's format (its `format_text()`, `ASSEMBLY_FORMAT`), compiled once per op class."""
    from xdsl.irdl.declarative_assembly_format import FormatProgram
    from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

    try:
        return FormatProgram.from_str(op_type.format_text(), op_type.get_irdl_definition())
    except ParseError as error:
        raise PyRDLOpDefinitionError(
            f"`{op_type.name}`: error in the assembly format: {error}"
        ) from error
