"""The triton emission dialect: Python statements and expressions of a Triton module.

Each op is one Python construct, so the printer is one handler per op:

    triton.jit_func @vector_add attributes {arg_names = [...], param_kinds = [...]} {
      %0 = triton.name "pid"
      %1 = triton.name "BLOCK"
      %2 = triton.binop "*" %0, %1
      triton.assign "offsets" = %2           # offsets = pid * BLOCK
      %3 = triton.call "tl.store"(...) {arg_names = ["", "", "mask"]}
      triton.expr_stmt %3                    # tl.store(..., mask=mask)
    }
    triton.launcher @vector_add_launcher for @vector_add {bindings = ..., grid = ...}

Expression ops are printed inline where their result is used; statement ops
(`assign`, `expr_stmt`, `if`, `for`, `return`) become lines. The launcher op
carries the same description as `kernel.launcher` (see docs/kernels.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsolatedFromAbove, NoTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_format import LazyFormatOp


@irdl_attr_definition
class ExprType(ParametrizedAttribute, TypeAttribute):
    """A Python expression of the emitted module."""

    name = "triton.expr"


@irdl_op_definition
class JitFuncOp(LazyFormatOp):
    """`@triton.jit def name(params):`; constexpr parameters are annotated."""

    name = "triton.jit_func"
    sym_name = prop_def(SymbolNameConstraint())
    arg_names = prop_def(ArrayAttr[StringAttr])
    param_kinds = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), IsolatedFromAbove(), SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str, params: Sequence[str], kinds: Sequence[str], body: Region):
        super().__init__(
            regions=[body],
            properties={
                "sym_name": StringAttr(name),
                "arg_names": string_array(params),
                "param_kinds": string_array(kinds),
            },
        )

    def params(self) -> list[tuple[str, str]]:
        return [(a.data, k.data) for a, k in zip(self.arg_names, self.param_kinds, strict=True)]


@irdl_op_definition
class AssignOp(LazyFormatOp):
    """`name = value`."""

    name = "triton.assign"
    target = prop_def(StringAttr)
    value = operand_def(ExprType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$target `=` $value attr-dict"

    def __init__(self, target: str, value: SSAValue) -> None:
        super().__init__(operands=[value], properties={"target": StringAttr(target)})


@irdl_op_definition
class ExprStmtOp(LazyFormatOp):
    """An expression evaluated for its effect, as `tl.store(...)`."""

    name = "triton.expr_stmt"
    value = operand_def(ExprType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value attr-dict"

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value])


@irdl_op_definition
class NameOp(LazyFormatOp):
    """A (possibly dotted) name: `offsets`, `tl.float32`."""

    name = "triton.name"
    id = prop_def(StringAttr)
    result = result_def(ExprType)
    traits = traits_def(Pure())
    ASSEMBLY_FORMAT: ClassVar[str] = "$id attr-dict"

    def __init__(self, id: str) -> None:
        super().__init__(result_types=[ExprType()], properties={"id": StringAttr(id)})


@irdl_op_definition
class ConstantOp(LazyFormatOp):
    """A Python literal."""

    name = "triton.constant"
    value = prop_def(Attribute)
    result = result_def(ExprType)
    traits = traits_def(Pure())
    ASSEMBLY_FORMAT: ClassVar[str] = "$value attr-dict"

    def __init__(self, value: Attribute) -> None:
        super().__init__(result_types=[ExprType()], properties={"value": value})


@irdl_op_definition
class BinOp(LazyFormatOp):
    name = "triton.binop"
    op = prop_def(StringAttr)
    lhs = operand_def(ExprType)
    rhs = operand_def(ExprType)
    result = result_def(ExprType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$op $lhs `,` $rhs attr-dict"

    def __init__(self, op: str, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(
            operands=[lhs, rhs], result_types=[ExprType()], properties={"op": StringAttr(op)}
        )


@irdl_op_definition
class UnaryOp(LazyFormatOp):
    name = "triton.unop"
    op = prop_def(StringAttr)
    operand = operand_def(ExprType)
    result = result_def(ExprType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$op $operand attr-dict"

    def __init__(self, op: str, operand: SSAValue) -> None:
        super().__init__(
            operands=[operand], result_types=[ExprType()], properties={"op": StringAttr(op)}
        )


class _ArgsBase(LazyFormatOp):
    args = var_operand_def(ExprType)
    arg_names = prop_def(ArrayAttr[StringAttr])

    def names(self) -> list[str]:
        return [n.data for n in self.arg_names]

    def verify_(self) -> None:
        if len(self.arg_names) != len(self.args):
            raise VerifyException("`arg_names` must name every argument")


@irdl_op_definition
class CallOp(_ArgsBase):
    """`callee(args)` with a dotted callee: `tl.load`, `min`."""

    name = "triton.call"
    callee = prop_def(StringAttr)
    result = result_def(ExprType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$callee `(` $args `)` attr-dict"

    def __init__(self, callee: str, args: Sequence[SSAValue], names: Sequence[str]) -> None:
        super().__init__(
            operands=[args],
            result_types=[ExprType()],
            properties={"callee": StringAttr(callee), "arg_names": string_array(names)},
        )


@irdl_op_definition
class MethodOp(_ArgsBase):
    """`receiver.method(args)`."""

    name = "triton.method"
    method = prop_def(StringAttr)
    receiver = operand_def(ExprType)
    result = result_def(ExprType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$method $receiver `(` $args `)` attr-dict"

    def __init__(
        self, receiver: SSAValue, method: str, args: Sequence[SSAValue], names: Sequence[str]
    ) -> None:
        super().__init__(
            operands=[receiver, args],
            result_types=[ExprType()],
            properties={"method": StringAttr(method), "arg_names": string_array(names)},
        )


@irdl_op_definition
class GetAttrOp(LazyFormatOp):
    """`value.attr`."""

    name = "triton.getattr"
    attr = prop_def(StringAttr)
    value = operand_def(ExprType)
    result = result_def(ExprType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$attr $value attr-dict"

    def __init__(self, value: SSAValue, attr: str) -> None:
        super().__init__(
            operands=[value], result_types=[ExprType()], properties={"attr": StringAttr(attr)}
        )


@irdl_op_definition
class TupleOp(LazyFormatOp):
    """`(a, b)`."""

    name = "triton.tuple"
    elements = var_operand_def(ExprType)
    result = result_def(ExprType)
    ASSEMBLY_FORMAT: ClassVar[str] = "`(` $elements `)` attr-dict"

    def __init__(self, elements: Sequence[SSAValue]) -> None:
        super().__init__(operands=[elements], result_types=[ExprType()])


@irdl_op_definition
class IndexOp(LazyFormatOp):
    """`value[items]`, items `expr` (next operand), `:` or `None`."""

    name = "triton.index"
    value = operand_def(ExprType)
    indices = var_operand_def(ExprType)
    items = prop_def(ArrayAttr[StringAttr])
    result = result_def(ExprType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value `[` $indices `]` attr-dict"

    def __init__(self, value: SSAValue, indices: Sequence[SSAValue], items: Sequence[str]) -> None:
        super().__init__(
            operands=[value, indices],
            result_types=[ExprType()],
            properties={"items": string_array(items)},
        )


@irdl_op_definition
class IfOp(LazyFormatOp):
    """`if cond:` with an optional `else:` (an empty `orelse` region prints none)."""

    name = "triton.if"
    cond = operand_def(ExprType)
    then = region_def("single_block")
    orelse = region_def()
    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "$cond $then `else` $orelse attr-dict"

    def __init__(self, cond: SSAValue, then: Region, orelse: Region) -> None:
        super().__init__(operands=[cond], regions=[then, orelse])


@irdl_op_definition
class ForOp(LazyFormatOp):
    """`for var in iterator(args):`."""

    name = "triton.for"
    var = prop_def(StringAttr)
    iterator = prop_def(StringAttr)
    args = var_operand_def(ExprType)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "$var `in` $iterator `(` $args `)` $body attr-dict"

    def __init__(self, var: str, iterator: str, args: Sequence[SSAValue], body: Region) -> None:
        super().__init__(
            operands=[args],
            regions=[body],
            properties={"var": StringAttr(var), "iterator": StringAttr(iterator)},
        )


@irdl_op_definition
class ReturnOp(LazyFormatOp):
    """A bare `return`."""

    name = "triton.return"
    ASSEMBLY_FORMAT: ClassVar[str] = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class LauncherOp(LazyFormatOp):
    """`def <kernel>_launcher(...)`: checks, allocations, grid and the launch.

    Properties as on `kernel.launcher`.
    """

    name = "triton.launcher"
    sym_name = prop_def(SymbolNameConstraint())
    kernel = prop_def(SymbolRefAttr)
    bindings = prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    grid = prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    defaults = prop_def(DictionaryAttr)
    pow2 = prop_def(ArrayAttr[StringAttr])
    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name `for` $kernel attr-dict"

    def binding_list(self) -> list[list[str]]:
        return [[s.data for s in b] for b in self.bindings]

    def grid_list(self) -> list[list[str]]:
        return [[s.data for s in g] for g in self.grid]


def body_ops(region: Region) -> list[IRDLOperation]:
    """The statements of a region; an empty region has none."""
    block: Block | None = region.blocks.first
    return [] if block is None else [op for op in block.ops if isinstance(op, IRDLOperation)]


Triton = Dialect(
    "triton",
    [
        JitFuncOp,
        AssignOp,
        ExprStmtOp,
        NameOp,
        ConstantOp,
        BinOp,
        UnaryOp,
        CallOp,
        MethodOp,
        GetAttrOp,
        TupleOp,
        IndexOp,
        IfOp,
        ForOp,
        ReturnOp,
        LauncherOp,
    ],
    [ExprType],
)
