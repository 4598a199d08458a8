"""The kernel dialect: `@kernel def` blocks as IR, close to the Triton source.

Variables are named, not SSA: `let x = e` is `kernel.let "x" = %e` and a use of
`x` is `kernel.read "x"`, so `kernel.if` and `kernel.for` need no block
arguments and lowering back to Python is a walk. The README's vector_add

    @kernel def vector_add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
        let pid = tl.program_id(axis=0)
        ...
        tl.store(z_ptr + offsets, x + y, mask=mask)

becomes

    kernel.func @vector_add {arg_names = ["x_ptr", ..., "BLOCK"],
                             param_kinds = ["ptr", "ptr", "ptr", "scalar", "constexpr"], ...} {
      %0 = kernel.constant 0 : i64
      %1 = kernel.tl_call "program_id"(%0) {arg_names = ["axis"]}
      kernel.let "pid" = %1
      ...
      kernel.store(%p, %v, %m) {arg_names = ["", "", "mask"]}
    }

`synthesize-launchers` adds a `kernel.launcher @vector_add_launcher` next to
each func, describing how the launcher binds every kernel parameter
(see docs/kernels.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
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
    ParsePropInAttrDict,
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from tensorloom.dialects.builders import string_array
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.lazy_format import LazyFormatOp

PARAM_KINDS = ("ptr", "scalar", "constexpr")
BINARY_OPS = (
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "<<",
    ">>",
    "&",
    "|",
    "^",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "and",
    "or",
)
UNARY_OPS = ("-", "+", "not", "~")
INDEX_ITEMS = ("expr", ":", "None")
BINDING_KINDS = (
    "input",
    "inout",
    "output",
    "accumulator",
    "scalar",
    "numel",
    "dim",
    "constexpr",
)
TUNING_OPTIONS = ("num_warps", "num_stages")
DTYPES = ("float32", "float16", "bfloat16", "int32", "int64")
SCALAR_TYPES = ("float", "int")


@irdl_attr_definition
class ValueType(ParametrizedAttribute, TypeAttribute):
    """A Triton value: a block of scalars, a pointer block or a constexpr."""

    name = "kernel.value"


@lazy_op_definition
class FuncOp(LazyFormatOp):
    """A kernel. Parameters are named variables of the body; `param_kinds`
    says which are pointers, runtime scalars and `tl.constexpr`s; `defaults`
    holds constexpr defaults written in the source, `param_locs` where each
    parameter's default (or, without one, the parameter) was written.

    From the source's annotations and decorator, when given: `shapes` maps a
    pointer parameter to its dims (`x_ptr: Tensor[M, N]` is `x_ptr = ["M", "N"]`),
    `types` a parameter to its element type (`mean_ptr: float32[M]`) or a scalar to
    `int`/`float`; `tune` maps a constexpr, `num_warps` or `num_stages` to its
    candidate values (`BLOCK: tl.constexpr = [64, 128]`, `@kernel(num_warps=[4, 8])`);
    `backward` names the kernel that computes this one's gradients
    (`@kernel(backward=k_bwd)`), written at `backward_loc`."""

    name = "kernel.func"
    sym_name = prop_def(SymbolNameConstraint())
    arg_names = prop_def(ArrayAttr[StringAttr])
    param_kinds = prop_def(ArrayAttr[StringAttr])
    defaults = prop_def(DictionaryAttr)
    param_locs = prop_def(ArrayAttr)
    shapes = opt_prop_def(DictionaryAttr)
    types = opt_prop_def(DictionaryAttr)
    tune = opt_prop_def(DictionaryAttr)
    backward = opt_prop_def(SymbolRefAttr)
    backward_loc = opt_prop_def(Attribute)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), IsolatedFromAbove(), SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name attr-dict-with-keyword $body"

    @staticmethod
    def make(
        name: str,
        params: Sequence[tuple[str, str]],
        defaults: dict[str, Attribute],
        param_locs: Sequence[Attribute],
        body: Block,
    ) -> FuncOp:
        return FuncOp.build(
            properties={
                "sym_name": StringAttr(name),
                "arg_names": string_array([p for p, _ in params]),
                "param_kinds": string_array([k for _, k in params]),
                "defaults": DictionaryAttr(defaults),
                "param_locs": ArrayAttr(param_locs),
            },
            regions=[Region(body)],
        )

    def params(self) -> list[str]:
        return [a.data for a in self.arg_names.data]

    def kinds(self) -> dict[str, str]:
        return {
            a.data: k.data for a, k in zip(self.arg_names.data, self.param_kinds.data, strict=True)
        }

    def shape_of(self, param: str) -> list[str] | None:
        """The dims `param` is annotated with, or None."""
        dims = self.shapes.data.get(param) if self.shapes is not None else None
        return [d.data for d in dims.data] if isinstance(dims, ArrayAttr) else None

    def type_of(self, param: str) -> str | None:
        """`param`'s annotated element or scalar type (`float32`, `int`), or None."""
        kind = self.types.data.get(param) if self.types is not None else None
        return kind.data if isinstance(kind, StringAttr) else None

    def tuned(self) -> dict[str, list[int]]:
        """Each tuned constexpr (and `num_warps`/`num_stages`) and its candidates."""
        if self.tune is None:
            return {}
        return {
            name: [v.value.data for v in values.data if isinstance(v, IntegerAttr)]
            for name, values in self.tune.data.items()
            if isinstance(values, ArrayAttr)
        }

    def arange_constexprs(self) -> set[str]:
        """The constexpr parameters used as `tl.arange` bounds (powers of two in Triton)."""
        constexprs = {p for p, k in self.kinds().items() if k == "constexpr"}
        used: set[str] = set()
        for op in self.walk():
            if isinstance(op, TlCallOp) and op.callee.data == "arange":
                reads = [a.owner for a in op.args if isinstance(a.owner, ReadOp)]
                used |= {r.var.data for r in reads} & constexprs
        return used

    def verify_(self) -> None:
        if len(self.arg_names.data) != len(self.param_kinds.data):
            raise VerifyException("`param_kinds` must give one kind per parameter")
        for kind in self.param_kinds.data:
            if kind.data not in PARAM_KINDS:
                raise VerifyException(f"unknown parameter kind `{kind.data}`")
        for name in self.tuned():
            if name not in self.params() and name not in TUNING_OPTIONS:
                raise VerifyException(f"`tune` names `{name}`, which is no parameter")


@lazy_op_definition
class LetOp(LazyFormatOp):
    """`let x = e` and `x = e`: bind a named variable."""

    name = "kernel.let"
    var = prop_def(StringAttr, prop_name="name")
    value = operand_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$name `=` $value attr-dict"

    def __init__(self, var: str, value: SSAValue) -> None:
        super().__init__(operands=[value], properties={"name": StringAttr(var)})


@lazy_op_definition
class ReadOp(LazyFormatOp):
    """A use of a named variable or parameter."""

    name = "kernel.read"
    var = prop_def(StringAttr, prop_name="name")
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$name attr-dict"

    def __init__(self, var: str) -> None:
        super().__init__(result_types=[ValueType()], properties={"name": StringAttr(var)})


@lazy_op_definition
class ConstantOp(LazyFormatOp):
    """A literal: `1024 : i64`, `0.5 : f64`, `true`, `"evict_last"`, or `#builtin.none`."""

    name = "kernel.constant"
    value = prop_def(Attribute)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value attr-dict"

    def __init__(self, value: Attribute) -> None:
        super().__init__(result_types=[ValueType()], properties={"value": value})


@lazy_op_definition
class BinOp(LazyFormatOp):
    """`lhs op rhs` with Python's meaning (Triton overloads the operators)."""

    name = "kernel.binop"
    op = prop_def(StringAttr)
    lhs = operand_def(ValueType)
    rhs = operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$op $lhs `,` $rhs attr-dict"

    def __init__(self, op: str, lhs: SSAValue, rhs: SSAValue) -> None:
        super().__init__(
            operands=[lhs, rhs], result_types=[ValueType()], properties={"op": StringAttr(op)}
        )

    def verify_(self) -> None:
        if self.op.data not in BINARY_OPS:
            raise VerifyException(f"unknown binary operator `{self.op.data}`")


@lazy_op_definition
class UnaryOp(LazyFormatOp):
    name = "kernel.unop"
    op = prop_def(StringAttr)
    operand = operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$op $operand attr-dict"

    def __init__(self, op: str, operand: SSAValue) -> None:
        super().__init__(
            operands=[operand], result_types=[ValueType()], properties={"op": StringAttr(op)}
        )

    def verify_(self) -> None:
        if self.op.data not in UNARY_OPS:
            raise VerifyException(f"unknown unary operator `{self.op.data}`")


class _CallBase(LazyFormatOp):
    """Calls keep positional and keyword arguments in one list; `arg_names` is
    `""` for a positional argument and the keyword otherwise."""

    args = var_operand_def(ValueType)
    arg_names = prop_def(ArrayAttr[StringAttr])

    def names(self) -> list[str]:
        return [n.data for n in self.arg_names.data]

    def argument(self, keyword: str, position: int) -> SSAValue | None:
        """The argument passed as `keyword=...` or as the `position`-th positional."""
        pairs = list(zip(self.args, self.names(), strict=True))
        for arg, name in pairs:
            if name == keyword:
                return arg
        positional = [arg for arg, name in pairs if name == ""]
        return positional[position] if position < len(positional) else None

    def verify_(self) -> None:
        if len(self.arg_names.data) != len(self.args):
            raise VerifyException("`arg_names` must name every argument")


@lazy_op_definition
class TlCallOp(_CallBase):
    """`tl.<callee>(args)`; `callee` may be dotted (`math.exp`)."""

    name = "kernel.tl_call"
    callee = prop_def(StringAttr)
    result = result_def(ValueType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$callee `(` $args `)` attr-dict"

    def __init__(self, callee: str, args: Sequence[SSAValue], names: Sequence[str]) -> None:
        super().__init__(
            operands=[args],
            result_types=[ValueType()],
            properties={"callee": StringAttr(callee), "arg_names": string_array(names)},
        )


@lazy_op_definition
class LoadOp(_CallBase):
    """`tl.load(pointer, mask=..., other=..., ...)`."""

    name = "kernel.load"
    result = result_def(ValueType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "`(` $args `)` attr-dict"

    def __init__(self, args: Sequence[SSAValue], names: Sequence[str]) -> None:
        super().__init__(
            operands=[args],
            result_types=[ValueType()],
            properties={"arg_names": string_array(names)},
        )

    def pointer(self) -> SSAValue | None:
        return self.argument("pointer", 0)

    def mask(self) -> SSAValue | None:
        return self.argument("mask", 1)


@lazy_op_definition
class StoreOp(_CallBase):
    """`tl.store(pointer, value, mask=..., ...)`."""

    name = "kernel.store"
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "`(` $args `)` attr-dict"

    def __init__(self, args: Sequence[SSAValue], names: Sequence[str]) -> None:
        super().__init__(operands=[args], properties={"arg_names": string_array(names)})

    def pointer(self) -> SSAValue | None:
        return self.argument("pointer", 0)

    def mask(self) -> SSAValue | None:
        return self.argument("mask", 2)


@lazy_op_definition
class CallOp(_CallBase):
    """A call of a Python builtin allowed in kernels (`min`, `float`, ...)."""

    name = "kernel.call"
    callee = prop_def(StringAttr)
    result = result_def(ValueType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$callee `(` $args `)` attr-dict"

    def __init__(self, callee: str, args: Sequence[SSAValue], names: Sequence[str]) -> None:
        super().__init__(
            operands=[args],
            result_types=[ValueType()],
            properties={"callee": StringAttr(callee), "arg_names": string_array(names)},
        )


@lazy_op_definition
class MethodOp(_CallBase):
    """`receiver.method(args)`, as in `x.to(tl.float16)`."""

    name = "kernel.method"
    method = prop_def(StringAttr)
    receiver = operand_def(ValueType)
    result = result_def(ValueType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$method $receiver `(` $args `)` attr-dict"

    def __init__(
        self, receiver: SSAValue, method: str, args: Sequence[SSAValue], names: Sequence[str]
    ) -> None:
        super().__init__(
            operands=[receiver, args],
            result_types=[ValueType()],
            properties={"method": StringAttr(method), "arg_names": string_array(names)},
        )


@lazy_op_definition
class TlAttrOp(LazyFormatOp):
    """A `tl.` name used as a value: `tl.float32`, `tl.math`."""

    name = "kernel.tl_attr"
    attr = prop_def(StringAttr)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$attr attr-dict"

    def __init__(self, attr: str) -> None:
        super().__init__(result_types=[ValueType()], properties={"attr": StringAttr(attr)})


@lazy_op_definition
class GetAttrOp(LazyFormatOp):
    """`value.attr`, as in `x.dtype`."""

    name = "kernel.getattr"
    attr = prop_def(StringAttr)
    value = operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "$attr $value attr-dict"

    def __init__(self, value: SSAValue, attr: str) -> None:
        super().__init__(
            operands=[value], result_types=[ValueType()], properties={"attr": StringAttr(attr)}
        )


@lazy_op_definition
class TupleOp(LazyFormatOp):
    """`(a, b)` or `[a, b]`, as in the shape of `tl.zeros((BLOCK_M, BLOCK_N), ...)`."""

    name = "kernel.tuple"
    elements = var_operand_def(ValueType)
    result = result_def(ValueType)
    ASSEMBLY_FORMAT: ClassVar[str] = "`(` $elements `)` attr-dict"

    def __init__(self, elements: Sequence[SSAValue]) -> None:
        super().__init__(operands=[elements], result_types=[ValueType()])


@lazy_op_definition
class IndexOp(LazyFormatOp):
    """`value[items]`: each item of `items` is `expr` (the next index operand),
    `:` or `None`, as in `offs[:, None]`."""

    name = "kernel.index"
    value = operand_def(ValueType)
    indices = var_operand_def(ValueType)
    items = prop_def(ArrayAttr[StringAttr])
    result = result_def(ValueType)
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$value `[` $indices `]` attr-dict"

    def __init__(self, value: SSAValue, indices: Sequence[SSAValue], items: Sequence[str]) -> None:
        super().__init__(
            operands=[value, indices],
            result_types=[ValueType()],
            properties={"items": string_array(items)},
        )

    def verify_(self) -> None:
        kinds = [i.data for i in self.items.data]
        if any(k not in INDEX_ITEMS for k in kinds):
            raise VerifyException("index items are `expr`, `:` or `None`")
        if kinds.count("expr") != len(self.indices):
            raise VerifyException("one index operand per `expr` item")


@lazy_op_definition
class IfOp(LazyFormatOp):
    """`if cond: then else: orelse`; `elif` nests another `kernel.if` in `orelse`."""

    name = "kernel.if"
    cond = operand_def(ValueType)
    then = region_def("single_block")
    orelse = region_def()  # empty when there is no `else`
    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "$cond $then `else` $orelse attr-dict"

    def __init__(self, cond: SSAValue, then: Block, orelse: Block | None) -> None:
        other = Region(orelse) if orelse is not None else Region()
        super().__init__(operands=[cond], regions=[Region(then), other])


@lazy_op_definition
class ForOp(LazyFormatOp):
    """`for var in iterator(args): body`, iterator `range`, `tl.range` or `tl.static_range`."""

    name = "kernel.for"
    var = prop_def(StringAttr)
    iterator = prop_def(StringAttr)
    args = var_operand_def(ValueType)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    ASSEMBLY_FORMAT: ClassVar[str] = "$var `in` $iterator `(` $args `)` $body attr-dict"

    def __init__(self, var: str, iterator: str, args: Sequence[SSAValue], body: Block) -> None:
        super().__init__(
            operands=[args],
            regions=[Region(body)],
            properties={"var": StringAttr(var), "iterator": StringAttr(iterator)},
        )


@lazy_op_definition
class ReturnOp(LazyFormatOp):
    """A bare `return`: the program instance stops early."""

    name = "kernel.return"
    ASSEMBLY_FORMAT: ClassVar[str] = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@lazy_op_definition
class LauncherOp(LazyFormatOp):
    """How `<kernel>_launcher(...)` binds each kernel parameter, and the grid.

    `bindings` has one entry per kernel parameter: `["input", "x"]` (a
    launcher tensor argument), `["inout", "acc"]` (an input the kernel also
    stores to, returned), `["output", "z"]` (a keyword tensor, allocated
    like the first input when not passed), `["scalar", "alpha"]`,
    `["numel", "x"]` (`x.numel()`), `["dim", "x", "0"]` (`x.shape[0]`) or
    `["constexpr", "BLOCK"]`. `grid` has one entry per program_id axis:
    `["n", "BLOCK"]` is `triton.cdiv(n, BLOCK)`, `["n"]` is `n` (kernel
    parameter names). `defaults` gives constexpr defaults (an int, or the
    name of a size parameter whose next power of two is taken);
    `pow2` lists the constexprs checked to be powers of two.

    Optional: `allocations` gives an output's shape as `[tensor, dim]` pairs
    (`{mean = [["x", "0"]]}` is `torch.empty((x.shape[0],), ...)`; without an entry
    an output is allocated like the first input), `dtypes` an output's element type
    or a scalar's Python type; an `["accumulator", "dw"]` binding is an output that
    the kernel only `tl.atomic_add`s into, allocated zeroed. `tune` holds the
    candidates of the tuned constexprs and `num_warps`/`num_stages`, `tune_key` the
    sizes the chosen configuration is keyed on. `entry` is the function a model's
    forward calls: the launcher registered as the custom op `<kernel>_op`
    (`torch.library`). `backward` names the kernel of the gradients:
    `backward_args` gives its positional arguments in order (`["grad", "y"]` the
    upstream gradient of output `y`, `["saved", "x"]` a tensor the forward saves,
    `["scalar", "eps"]`), `backward_results` pairs each of its outputs with the
    forward input it is the gradient of (`["dx", "x"]`).
    """

    name = "kernel.launcher"
    sym_name = prop_def(SymbolNameConstraint())
    kernel = prop_def(SymbolRefAttr)
    bindings = prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    grid = prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    defaults = prop_def(DictionaryAttr)
    pow2 = prop_def(ArrayAttr[StringAttr])
    allocations = opt_prop_def(DictionaryAttr)
    dtypes = opt_prop_def(DictionaryAttr)
    tune = opt_prop_def(DictionaryAttr)
    tune_key = opt_prop_def(ArrayAttr[StringAttr])
    entry = opt_prop_def(StringAttr)
    backward = opt_prop_def(SymbolRefAttr)
    backward_args = opt_prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    backward_results = opt_prop_def(ArrayAttr[ArrayAttr[StringAttr]])
    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    ASSEMBLY_FORMAT: ClassVar[str] = "$sym_name `for` $kernel attr-dict"

    @staticmethod
    def make(
        kernel: str,
        bindings: Sequence[Sequence[str]],
        grid: Sequence[Sequence[str]],
        defaults: dict[str, Attribute],
        pow2: Sequence[str],
    ) -> LauncherOp:
        return LauncherOp.build(
            properties={
                "sym_name": StringAttr(f"{kernel}_launcher"),
                "kernel": SymbolRefAttr(kernel),
                "bindings": ArrayAttr([string_array(b) for b in bindings]),
                "grid": ArrayAttr([string_array(g) for g in grid]),
                "defaults": DictionaryAttr(defaults),
                "pow2": string_array(pow2),
            }
        )

    def binding_list(self) -> list[list[str]]:
        return [[s.data for s in b.data] for b in self.bindings.data]

    def grid_list(self) -> list[list[str]]:
        return [[s.data for s in g.data] for g in self.grid.data]

    def verify_(self) -> None:
        verify_launcher(self.binding_list(), self.backward_args)


def verify_launcher(bindings: list[list[str]], backward_args: ArrayAttr | None) -> None:
    """The invariants `kernel.launcher` and `triton.launcher` share."""
    for binding in bindings:
        if not binding or binding[0] not in BINDING_KINDS:
            raise VerifyException(f"unknown launcher binding {binding}")
    for arg in backward_args.data if backward_args is not None else ():
        kind = arg.data[0].data if isinstance(arg, ArrayAttr) and arg.data else None
        if not isinstance(kind, str) or kind not in ("grad", "saved", "scalar"):
            raise VerifyException("a backward argument is `grad`, `saved` or `scalar`")


Kernel = Dialect(
    "kernel",
    [
        FuncOp,
        LetOp,
        ReadOp,
        ConstantOp,
        BinOp,
        UnaryOp,
        TlCallOp,
        LoadOp,
        StoreOp,
        CallOp,
        MethodOp,
        TlAttrOp,
        GetAttrOp,
        TupleOp,
        IndexOp,
        IfOp,
        ForOp,
        ReturnOp,
        LauncherOp,
    ],
    [ValueType],
)
