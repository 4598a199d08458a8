"""nml control flow and structured values: loops, branches, layer lists, tuples.

    %x_2 = nml.for @h iter_args(%x : !nml.tensor<[B, T, 64], f32>) -> !nml.tensor<...> {
    ^bb0(%i : i64, %x_1 : !nml.tensor<[B, T, 64], f32>):
      %y = nml.apply_at @h[%i](%x_1) : (i64, !nml.tensor<...>) -> !nml.tensor<...>
      nml.yield %y : !nml.tensor<...>
    }
    %r = nml.for range(%n) iter_args(%x : ...) -> ... { ^bb0(%i : i64, %x_1 : ...): ... }
    %z = nml.if %c : i1 -> !nml.tensor<...> { ...; nml.yield %a } else { ...; nml.yield %b }
    %mu = nml.tuple_get %out 1 : (!nml.tuple<[...]>) -> !nml.tensor<[B, 16], f32>

A loop carries the values it reassigns as `iter_args`, as MLIR's `scf.for` does:
the body's block takes the counter (an `i64`: the position in the layer list, or
the range's value) and one argument per carried value, and yields their next
values; the loop's results are their values after the last iteration. A branch
yields, from each region, the values that either side reassigns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, SymbolRefAttr, i64
from xdsl.ir import Attribute, Block, BlockArgument, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.lazy_format import LazyFormatOp
from tensorloom.dialects.nml.ops import Value
from tensorloom.dialects.nml.shape_trait import FromInstantiation


@lazy_op_definition
class ForOp(LazyFormatOp):
    """A loop over a layer list (`layers`) or over `range(bounds...)`."""

    name = "nml.for"

    layers = opt_prop_def(SymbolRefAttr)
    var = opt_prop_def(StringAttr)
    """The source's loop variable (`block` in `for block in self.h`), for the emitted loop."""
    iterations = opt_prop_def(IntegerAttr[I64])
    """On a specialised module: how many iterations shape inference followed (`tlc info`
    follows the same)."""
    bounds = var_operand_def()
    inits = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")

    traits = traits_def(FromInstantiation("for"))
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "($layers^)? (`range` `(` $bounds^ `:` type($bounds) `)`)?"
        " (`iter_args` `(` $inits^ `:` type($inits) `)`)? (`->` type($res)^)?"
        " attr-dict-with-keyword $body"
    )

    def __init__(
        self,
        inits: Sequence[Value],
        body: Region,
        *,
        layers: str | None = None,
        bounds: Sequence[Value] = (),
        result_types: Sequence[Attribute] | None = None,
    ):
        types = result_types if result_types is not None else [SSAValue.get(v).type for v in inits]
        super().__init__(
            operands=[bounds, inits],
            properties={"layers": SymbolRefAttr(layers) if layers is not None else None},
            result_types=[types],
            regions=[body],
        )

    @property
    def counter(self) -> BlockArgument:
        return self.body.block.args[0]

    @property
    def carried(self) -> tuple[BlockArgument, ...]:
        return tuple(self.body.block.args[1:])

    def verify_(self) -> None:
        if (self.layers is None) == (not self.bounds):
            raise VerifyException("`nml.for` iterates either a layer list or a range")
        if len(self.bounds) > 3:
            raise VerifyException("`range` takes at most three bounds")
        block = self.body.block
        if len(block.args) != 1 + len(self.inits):
            raise VerifyException("the body takes the counter and one argument per carried value")
        if len(self.res) != len(self.inits):
            raise VerifyException("`nml.for` has one result per carried value")
        if self.iterations is not None and self.iterations.value.data < 0:
            raise VerifyException("`iterations` must not be negative")


@lazy_op_definition
class IfOp(LazyFormatOp):
    """`nml.if %c : i1 -> T { ... nml.yield %a } else { ... nml.yield %b }`."""

    name = "nml.if"

    cond = operand_def()
    res = var_result_def()
    then_region = region_def("single_block")
    else_region = region_def("single_block")
    branches = opt_prop_def(IntegerAttr[I64])
    """On a specialised module: the branch shape inference followed, 0 the then branch,
    1 the else branch, 2 both (`tlc info` follows the same)."""

    traits = traits_def(FromInstantiation("if"))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$cond `:` type($cond) (`->` type($res)^)? $then_region `else` $else_region attr-dict"
    )

    def __init__(
        self,
        cond: Value,
        result_types: Sequence[Attribute],
        then_region: Region,
        else_region: Region,
    ):
        super().__init__(
            operands=[cond], result_types=[result_types], regions=[then_region, else_region]
        )

    def verify_(self) -> None:
        if self.branches is not None and self.branches.value.data not in (0, 1, 2):
            raise VerifyException("`branches` is 0 (then), 1 (else) or 2 (both)")


@lazy_op_definition
class YieldOp(LazyFormatOp):
    """`nml.yield %a, %b : T, U` ends a loop body or a branch."""

    name = "nml.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(ForOp, IfOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[Value] = ()):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and len(self.values) != len(parent.results):
            raise VerifyException(
                f"yields {len(self.values)} values, but its `{parent.name}` has "
                f"{len(parent.results)} results"
            )


@lazy_op_definition
class ApplyAtOp(LazyFormatOp):
    """`%y = nml.apply_at @h[%i](%x)`: apply element `%i` of the layer list `@h`."""

    name = "nml.apply_at"

    layer = prop_def(SymbolRefAttr)
    index = operand_def()
    args = var_operand_def()
    result = result_def()

    traits = traits_def(FromInstantiation("apply_at"))
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$layer `[` $index `]` `(` $args `)` attr-dict `:` functional-type(operands, $result)"
    )

    def __init__(self, layer: str, index: Value, args: Sequence[Value], result_type: Attribute):
        super().__init__(
            operands=[index, args],
            properties={"layer": SymbolRefAttr(layer)},
            result_types=[result_type],
        )


@lazy_op_definition
class ModelCallOp(LazyFormatOp):
    """`%y = nml.model_call %net(%x)`: an objective runs a model it receives.

    `%net` is a parameter of a top-level function that a train block names as an objective
    (`fn ddpm(net, x, y)`, `objective = ddpm`); the block binds it to one of its model
    instances, whose forward shape-inference follows for the arguments' types.
    """

    name = "nml.model_call"

    model = operand_def()
    args = var_operand_def()
    result = result_def()

    traits = traits_def(FromInstantiation("model_call"))
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$model `(` $args `)` attr-dict `:` functional-type(operands, $result)"
    )

    def __init__(self, model: Value, args: Sequence[Value], result_type: Attribute):
        super().__init__(operands=[model, args], result_types=[result_type])


@lazy_op_definition
class TupleGetOp(LazyFormatOp):
    """`%mu = nml.tuple_get %out 1 : (...) -> ...`: one element of a tuple."""

    name = "nml.tuple_get"

    input = operand_def()
    index = prop_def(IntegerAttr)
    result = result_def()

    traits = traits_def(FromInstantiation("tuple_get"))
    ASSEMBLY_FORMAT: ClassVar[str] = "$input $index attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: Value, index: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            properties={"index": IntegerAttr(index, i64)},
            result_types=[result_type],
        )


def new_body(arg_types: Sequence[Attribute]) -> Region:
    return Region(Block(arg_types=arg_types))


CONTROL_OPS = (ForOp, IfOp, YieldOp, ApplyAtOp, ModelCallOp, TupleGetOp)
