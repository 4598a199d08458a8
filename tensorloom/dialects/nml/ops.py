"""nml structural ops: models, configs, layers, methods, calls and instances.

    nml.model @Classifier from "mnist.tl" {
      nml.config @hidden = 256 : i64
      nml.layer @fc1 = "Linear" [784 : i64, #nml.cfg<"hidden">] {}
      nml.func @forward(%x : !nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32>
          attributes {arg_names = ["x"]} {
        %0 = nml.pipe %x into "self.fc1"() {arg_names = []}
            : (!nml.tensor<[B, 784], f32>) -> !nml.tensor<*, f32>
        nml.return %0 : !nml.tensor<*, f32>
      }
    }
    nml.instance @net = @Classifier {hidden = 128 : i64}

The functional builtins (`nml.relu`, `nml.softmax`, ...) derive from `builtins.py`'s
`FunctionalOp` and live in the modules named after their theme (`arithmetic.py`,
`activations.py`, `reshaping.py`, ...; see `__init__.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
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
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_definition import LazyOp, lazy_op_definition
from tensorloom.dialects.lazy_format import LazyFormatOp
from tensorloom.dialects.nml.shape_trait import FromInstantiation
from tensorloom.dialects.nml.types import AnyType, NoneType, NoneValueAttr, StrType

# Only printed or parsed IR needs xDSL's printer and parser.
if TYPE_CHECKING:
    from xdsl.parser import Parser
    from xdsl.printer import Printer

Value = SSAValue | IRDLOperation


def _check_arg_names(arg_names: ArrayAttr[StringAttr], count: int, what: str) -> None:
    if len(arg_names.data) != count:
        raise VerifyException(
            f"`arg_names` has {len(arg_names.data)} entries but the {what} has {count}"
        )


def _check_nonempty(name: StringAttr, what: str) -> None:
    if not name.data:
        raise VerifyException(f"{what} must not be empty")


def _check_locs(locs: ArrayAttr | None, count: int, what: str) -> None:
    if locs is not None and len(locs.data) != count:
        raise VerifyException(f"`{what}` has {len(locs.data)} entries, expected {count}")


@lazy_op_definition
class ModelOp(LazyFormatOp):
    """A model: a symbol table of configs, layers and methods."""

    name = "nml.model"

    sym_name = prop_def(SymbolNameConstraint())
    origin = opt_prop_def(StringAttr)
    specializes = opt_prop_def(StringAttr)
    """On a copy that `instantiate` made for one instance or nested layer:
    the model it copies (`"ResBlock"`)."""
    config = opt_prop_def(DictionaryAttr)
    """On such a copy: the configuration it is specialised for, folded to literals."""
    sequential = opt_prop_def(StringAttr)
    """On the model irgen makes of a `Sequential(...)` that holds a model of the program:
    the name of the model that holds it (`"ResNet"`). Its layers are the elements, named
    `0`, `1`, ... as `nn.Sequential` names them, and its forward applies each in turn.
    The script builds no class for it: the layer that holds it is `nn.Sequential(...)`
    of the elements."""
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), SymbolTable(), NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name (`from` $origin^)? attr-dict-with-keyword $body"

    def __init__(self, sym_name: str, origin: str | None = None, body: Region | None = None):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "origin": StringAttr(origin) if origin is not None else None,
            },
            regions=[body or Region(Block())],
        )

    def verify_(self) -> None:
        _check_nonempty(self.sym_name, "model name")
        if self.config is not None and self.specializes is None:
            raise VerifyException("only a specialised copy (`specializes`) has a `config`")


@lazy_op_definition
class ConfigOp(LazyFormatOp):
    """`nml.config @d_model = 512 : i64`: a config parameter and its default."""

    name = "nml.config"

    sym_name = prop_def(SymbolNameConstraint())
    value = prop_def()

    traits = traits_def(SymbolOpInterface(), HasParent(ModelOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name `=` $value attr-dict"

    def __init__(self, sym_name: str, value: Attribute):
        super().__init__(properties={"sym_name": StringAttr(sym_name), "value": value})


@lazy_op_definition
class LayerOp(LazyFormatOp):
    """`nml.layer @fc1 = "Linear" [784 : i64, 256 : i64] {bias = true}`.

    `arg_locs` and `kwarg_locs` hold one location per argument, so that a
    diagnostic can point at the third argument rather than the whole line.
    """

    name = "nml.layer"

    sym_name = prop_def(SymbolNameConstraint())
    kind = prop_def(StringAttr)
    args = prop_def(ArrayAttr)
    kwargs = prop_def(DictionaryAttr)
    count = opt_prop_def()
    var = opt_prop_def(StringAttr)
    items = opt_prop_def()
    when = opt_prop_def()
    arg_locs = opt_prop_def(ArrayAttr)
    kwarg_locs = opt_prop_def(ArrayAttr)
    specialized = opt_prop_def(SymbolRefAttr)
    """On a nested-model layer of a specialised module: its own copy of the model
    (`@"ResNet.block2"`); `kind` keeps the model's name, for diagnostics and display."""
    positions = opt_prop_def(ArrayAttr[SymbolRefAttr])
    """On a per-position list of a nested model in a specialised module: each position's
    own copy, under that position's arguments (`[@"Net.stages.0", @"Net.stages.1"]`);
    `specialized` is the first."""

    traits = traits_def(SymbolOpInterface(), HasParent(ModelOp))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name `=` $kind $args $kwargs attr-dict"

    @property
    def is_list(self) -> bool:
        """A layer list, `h = [Block(d) for _ in range(n)]`: `count` copies."""
        return self.count is not None

    # A per-position list names its loop variable `var`, which its arguments read as a
    # config: the position (`[Block(d, stride=2 if i == 0 else 1) for i in range(n)]`),
    # or the position's element of `items` (`[Stage(w) for w in widths]`, `count` then
    # `len(widths)`).
    # A conditional layer (`if downsample:` in `@layers`) has `when`, the condition under
    # which it is built (an attribute expression); otherwise it is `None`.

    def __init__(
        self,
        sym_name: str,
        kind: str,
        args: Sequence[Attribute] = (),
        kwargs: dict[str, Attribute] | None = None,
        *,
        arg_locs: Sequence[Attribute] | None = None,
        kwarg_locs: Sequence[Attribute] | None = None,
        count: Attribute | None = None,
        var: str | None = None,
        items: Attribute | None = None,
        when: Attribute | None = None,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "kind": StringAttr(kind),
                "args": ArrayAttr(args),
                "kwargs": DictionaryAttr(kwargs or {}),
                "count": count,
                "var": StringAttr(var) if var is not None else None,
                "items": items,
                "when": when,
                "arg_locs": ArrayAttr(arg_locs) if arg_locs is not None else None,
                "kwarg_locs": ArrayAttr(kwarg_locs) if kwarg_locs is not None else None,
            }
        )

    def verify_(self) -> None:
        _check_nonempty(self.kind, "layer kind")
        _check_locs(self.arg_locs, len(self.args.data), "arg_locs")
        _check_locs(self.kwarg_locs, len(self.kwargs.data), "kwarg_locs")
        if (self.var is not None or self.items is not None) and self.count is None:
            raise VerifyException("only a layer list has a loop variable or items")
        if self.items is not None and self.var is None:
            raise VerifyException("a layer list over items needs its loop variable")
        if self.positions is not None and self.var is None:
            raise VerifyException("only a per-position list has a copy per position")


@lazy_op_definition
class FuncOp(LazyOp):
    """A method of a model; `arg_names` are the source parameter names (no `self`)."""

    name = "nml.func"

    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    arg_names = prop_def(ArrayAttr[StringAttr])
    specializes = opt_prop_def(StringAttr)
    """On a copy that `instantiate` made for one call site of a method (`@"helper.2"`): the
    method it copies (`"helper"`)."""
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    def __init__(
        self,
        sym_name: str,
        function_type: FunctionType,
        arg_names: Sequence[str],
        body: Region | None = None,
    ):
        if body is None:
            body = Region(Block(arg_types=function_type.inputs.data))
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "function_type": function_type,
                "arg_names": string_array(arg_names),
            },
            regions=[body],
        )

    @property
    def names(self) -> list[str]:
        return [n.data for n in self.arg_names.data]

    def verify_(self) -> None:
        _check_nonempty(self.sym_name, "function name")
        inputs = self.function_type.inputs.data
        _check_arg_names(self.arg_names, len(inputs), "function type")
        if tuple(self.body.block.arg_types) != tuple(inputs):
            raise VerifyException("entry block arguments must match the function type's inputs")

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        # Imported here: xdsl.dialects.utils loads all of xDSL's format helpers (~50 ms),
        # which only reading and writing IR text needs, not `tlc check`.
        from xdsl.dialects.utils import parse_func_op_like

        name, inputs, outputs, body, extra, _, _ = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type")
        )
        attrs = dict(extra.data) if extra is not None else {}
        names = attrs.pop("arg_names", None)
        if not isinstance(names, ArrayAttr):
            parser.raise_error("`nml.func` needs `attributes {arg_names = [...]}`")
        op = FuncOp(name, FunctionType.from_lists(inputs, outputs), [], body)
        op.arg_names = names  # type: ignore[assignment]
        specializes = attrs.pop("specializes", None)
        if specializes is not None and not isinstance(specializes, StringAttr):
            parser.raise_error("`specializes` of `nml.func` must be a string")
        op.specializes = specializes
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        from xdsl.dialects.utils import print_func_op_like  # see `parse`

        specializes = {"specializes": self.specializes} if self.specializes is not None else {}
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            {"arg_names": self.arg_names, **specializes, **self.attributes},
            reserved_attr_names=("sym_name", "function_type"),
        )


@lazy_op_definition
class ReturnOp(LazyFormatOp):
    """`nml.return %x : !nml.tensor<...>` ends a method body."""

    name = "nml.return"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(FuncOp))
    ASSEMBLY_FORMAT: ClassVar[str] = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[Value] = ()):
        super().__init__(operands=[values])


def constant_type(value: Attribute) -> Attribute:
    """The result type of `nml.constant` holding `value`."""
    if isinstance(value, IntegerAttr | FloatAttr):
        return value.type
    if isinstance(value, StringAttr):
        return StrType()
    if isinstance(value, NoneValueAttr):
        return NoneType()
    return AnyType()


@lazy_op_definition
class ConstantOp(LazyOp):
    """`%c = nml.constant 0.2 : f64`; also strings (`!nml.str`) and `#nml.none`."""

    name = "nml.constant"

    value = prop_def()
    result = result_def()

    def __init__(self, value: Attribute):
        super().__init__(properties={"value": value}, result_types=[constant_type(value)])

    def verify_(self) -> None:
        if self.result.type != constant_type(self.value):
            raise VerifyException(
                f"result type {self.result.type} does not match the value {self.value}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        value = parser.parse_attribute()
        attrs = parser.parse_optional_attr_dict()
        op = ConstantOp(value)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)


@lazy_op_definition
class CallOp(LazyFormatOp):
    """An unresolved call, before `resolve-nml`.

        %y = nml.call "softmax"(%x, %d) {arg_names = ["", "dim"]} : (...) -> !nml.any
        %v = nml.call "view"(%x, %b) {arg_names = ["", ""], method} : ...

    `callee` is the dotted name as written (`self.fc1`, `F.relu`); with `method`
    the first operand is the receiver (`x.view(...)`). Operators that have no op
    of their own (`%`, `==`, `and`, `not`, ...) are calls named by the operator.
    """

    name = "nml.call"

    callee = prop_def(StringAttr)
    args = var_operand_def()
    arg_names = prop_def(ArrayAttr[StringAttr])
    method = opt_prop_def(UnitAttr)
    specialized = opt_prop_def(SymbolRefAttr)
    """On a call of a method of the model that `instantiate` gave this call site its own copy
    of: the copy (`@"helper.2"`), which shape inference types for this call alone."""
    result = result_def()

    traits = traits_def(FromInstantiation("call"))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$callee `(` $args `)` attr-dict `:` functional-type($args, $result)"
    )

    def __init__(
        self,
        callee: str,
        args: Sequence[Value],
        arg_names: Sequence[str] | None = None,
        *,
        method: bool = False,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            operands=[args],
            properties={
                "callee": StringAttr(callee),
                "arg_names": string_array(arg_names if arg_names is not None else [""] * len(args)),
                "method": UnitAttr() if method else None,
            },
            result_types=[result_type or AnyType()],
        )

    def verify_(self) -> None:
        _check_nonempty(self.callee, "callee")
        _check_arg_names(self.arg_names, len(self.args), "call")
        if self.method is None:
            return
        if not self.args or self.arg_names.data[0].data:
            raise VerifyException("a method call needs its receiver as the first operand")


@lazy_op_definition
class PipeOp(LazyFormatOp):
    """One pipe stage, `x |> callee(extra...)`, kept until `desugar-pipes`.

    %0 = nml.pipe %x into "dropout"(%p) {arg_names = [""]} : (...) -> ...
    """

    name = "nml.pipe"

    input = operand_def()
    callee = prop_def(StringAttr)
    args = var_operand_def()
    arg_names = prop_def(ArrayAttr[StringAttr])
    result = result_def()

    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input `into` $callee `(` $args `)` attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        input: Value,
        callee: str,
        args: Sequence[Value] = (),
        arg_names: Sequence[str] | None = None,
        *,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            operands=[input, args],
            properties={
                "callee": StringAttr(callee),
                "arg_names": string_array(arg_names if arg_names is not None else [""] * len(args)),
            },
            result_types=[result_type or AnyType()],
        )

    def verify_(self) -> None:
        _check_nonempty(self.callee, "pipe stage")
        _check_arg_names(self.arg_names, len(self.args), "stage's extra argument list")


@lazy_op_definition
class ApplyOp(LazyFormatOp):
    """`%y = nml.apply @fc1(%x) : (...) -> ...`: apply a layer of the enclosing model."""

    name = "nml.apply"

    layer = prop_def(SymbolRefAttr)
    args = var_operand_def()
    arg_names = opt_prop_def(ArrayAttr[StringAttr])
    result = result_def()

    traits = traits_def(FromInstantiation("apply"))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$layer `(` $args `)` attr-dict `:` functional-type($args, $result)"
    )

    def __init__(
        self,
        layer: str,
        args: Sequence[Value],
        result_type: Attribute,
        arg_names: Sequence[str] | None = None,
    ):
        super().__init__(
            operands=[args],
            properties={
                "layer": SymbolRefAttr(layer),
                "arg_names": string_array(arg_names) if arg_names is not None else None,
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.arg_names is not None:
            _check_arg_names(self.arg_names, len(self.args), "application")


@lazy_op_definition
class KernelCallOp(LazyFormatOp):
    """`nml.kernel_call @vector_add(%x, %y) : (...) -> ...`: call a kernel's launcher."""

    name = "nml.kernel_call"
    traits = traits_def(FromInstantiation("kernel_call"))

    kernel = prop_def(SymbolRefAttr)
    args = var_operand_def()
    arg_names = prop_def(ArrayAttr[StringAttr])
    res = var_result_def()

    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$kernel `(` $args `)` attr-dict `:` functional-type($args, $res)"
    )

    def __init__(
        self,
        kernel: str,
        args: Sequence[Value],
        arg_names: Sequence[str],
        result_types: Sequence[Attribute] = (),
    ):
        super().__init__(
            operands=[args],
            properties={"kernel": SymbolRefAttr(kernel), "arg_names": string_array(arg_names)},
            result_types=[result_types],
        )

    def verify_(self) -> None:
        _check_arg_names(self.arg_names, len(self.args), "kernel call")


@lazy_op_definition
class InstanceOp(LazyFormatOp):
    """`nml.instance @net = @Classifier {hidden = 128 : i64}`: a model with overrides."""

    name = "nml.instance"

    sym_name = prop_def(SymbolNameConstraint())
    model = prop_def(SymbolRefAttr)
    overrides = prop_def(DictionaryAttr)
    override_locs = opt_prop_def(ArrayAttr)
    config = opt_prop_def(DictionaryAttr)
    """The instance's configuration folded to literals, the model's defaults in order and then
    the overrides (written by instantiate; shape-inference, check-train and `tlc info` read it)."""

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name `=` $model $overrides attr-dict"

    def __init__(
        self,
        sym_name: str,
        model: str,
        overrides: dict[str, Attribute] | None = None,
        override_locs: Sequence[Attribute] | None = None,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "model": SymbolRefAttr(model),
                "overrides": DictionaryAttr(overrides or {}),
                "override_locs": ArrayAttr(override_locs) if override_locs is not None else None,
            }
        )

    def verify_(self) -> None:
        _check_locs(self.override_locs, len(self.overrides.data), "override_locs")


@lazy_op_definition
class RefOp(LazyFormatOp):
    """`%v = nml.ref @d_model : !nml.any`: a name that is not a local value.

    A config, layer or top-level symbol (`net`, `data`) used as a value; `resolve-nml`
    and `check-scopes` decide what it names.
    """

    name = "nml.ref"

    symbol = prop_def(SymbolRefAttr)
    bound_inside = opt_prop_def(StringAttr)
    """A name the body binds only inside a `"loop"` or some `"branch"`es of an `if`, used after
    it (irgen; check-scopes says so when it names nothing else)."""
    result = result_def()

    traits = traits_def(FromInstantiation("ref"))
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$symbol attr-dict `:` type($result)"

    def __init__(self, symbol: str, result_type: Attribute | None = None):
        super().__init__(
            properties={"symbol": SymbolRefAttr(symbol)}, result_types=[result_type or AnyType()]
        )

    def verify_(self) -> None:
        if self.bound_inside is not None and self.bound_inside.data not in ("loop", "branch"):
            raise VerifyException('`bound_inside` is "loop" or "branch"')


@lazy_op_definition
class GetAttrOp(LazyFormatOp):
    """`%s = nml.getattr %x "shape" : (...) -> !nml.any`: attribute access on a value."""

    name = "nml.getattr"

    input = operand_def()
    attr_name = prop_def(StringAttr)
    result = result_def()

    traits = traits_def(FromInstantiation("getattr"))
    ASSEMBLY_FORMAT: ClassVar[str] = (
        "$input $attr_name attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: Value, attr_name: str, result_type: Attribute | None = None):
        super().__init__(
            operands=[input],
            properties={"attr_name": StringAttr(attr_name)},
            result_types=[result_type or AnyType()],
        )

    def verify_(self) -> None:
        _check_nonempty(self.attr_name, "attribute name")
