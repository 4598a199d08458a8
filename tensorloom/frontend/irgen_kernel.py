"""IR generation for `@kernel def` blocks: a `KernelDecl` becomes a `kernel.func`.

Statements map one to one: `let x = e` and `x = e` become `kernel.let "x"`,
a name becomes `kernel.read`, `tl.load`/`tl.store` become `kernel.load` /
`kernel.store`, other `tl.` calls `kernel.tl_call`, `if` and `for` keep their
structure as `kernel.if` / `kernel.for`. Every op carries the location of the
source it came from. Parameters annotated `tl.constexpr` get kind `constexpr`,
the others `scalar`; `synthesize-launchers` later marks the pointers.

Syntax that Triton kernels cannot express (a `return` with a value, an
assignment to an attribute, a pipe) is reported as TL0506 and skipped.
"""

from __future__ import annotations

import functools
import keyword
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tensorloom.diagnostics import Diagnostic
from tensorloom.diagnostics.core import did_you_mean
from tensorloom.diagnostics.ir import loc_of, report
from tensorloom.dialects import kernel
from tensorloom.dialects.builders import string_array
from tensorloom.frontend import ast
from tensorloom.source import Span

CONSTEXPR_TYPES = ("tl.constexpr", "constexpr", "triton.language.constexpr")
ITERATORS = ("range", "tl.range", "tl.static_range")


def build_kernel(decl: ast.KernelDecl) -> Operation:
    """The `kernel.func` for one `@kernel def`."""
    return _KernelBuilder().build(decl)


def _unsupported(span: Span, what: str, help: str | None = None) -> None:
    report(Diagnostic.error("TL0506", f"{what} is not supported in a kernel", span, help=help))


def _check_name(name: str, span: Span, what: str) -> None:
    """A Python keyword as a name, attribute or method (`x.None(...)`, `let True = 1`):
    the Triton source cannot spell it (fuzz-findings/30)."""
    if keyword.iskeyword(name):
        report(
            Diagnostic.error(
                "TL0009",
                f"`{name}` is a Python keyword, so it cannot be {what}",
                span,
                help="the compiled script is Python: choose another name",
            )
        )


def _dotted(expr: ast.Expr) -> str | None:
    """`tl.math.exp` as "tl.math.exp"; None when `expr` is not a dotted name."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = _dotted(expr.value)
        return f"{base}.{expr.attr}" if base is not None else None
    return None


def _tl_member(expr: ast.Expr) -> str | None:
    """ "load" for `tl.load`, "math.exp" for `tl.math.exp`, else None."""
    name = _dotted(expr)
    if name is None or not name.startswith("tl."):
        return None
    return name.removeprefix("tl.")


PYTHON_CONSTANTS: dict[str, Attribute] = {
    "None": NoneAttr(),
    "True": IntegerAttr(1, i1),
    "False": IntegerAttr(0, i1),
}


def _literal(expr: ast.Expr) -> Attribute | None:
    """The constant `expr` spells; Triton code writes Python's `None`, `True`, `False`."""
    match expr:
        case ast.Name(id=name) if name in PYTHON_CONSTANTS:
            return PYTHON_CONSTANTS[name]
        case ast.BoolLit(value=value):
            return IntegerAttr(int(value), i1)
        case ast.IntLit(value=value):
            return IntegerAttr(value, i64)
        case ast.FloatLit(value=value):
            return FloatAttr(value, f64)
        case ast.StrLit(value=value):
            return StringAttr(value)
        case ast.NoneLit():
            return NoneAttr()
        case _:
            return None


def _option_error(node: ast.Node, message: str, help: str | None = None) -> None:
    report(Diagnostic.error("TL0509", message, node.span, help=help))


def _candidates(expr: ast.Expr) -> list[Attribute] | None:
    """The positive whole numbers of a tuning list `[32, 64]`, or a diagnostic."""
    elements = expr.elts if isinstance(expr, ast.ListExpr | ast.TupleExpr) else [expr]
    values = [e.value for e in elements if isinstance(e, ast.IntLit) and e.value > 0]
    if not elements or len(values) != len(elements):
        _option_error(
            expr,
            "tuning candidates are a list of positive whole numbers",
            "write them as `[32, 64, 128]`",
        )
        return None
    return [IntegerAttr(v, i64) for v in values]


def _options(func: kernel.FuncOp, options: ast.Call) -> dict[str, list[Attribute]]:
    """`@kernel(backward=k_bwd, num_warps=[4, 8], num_stages=[2, 3])`: sets `backward` on
    `func`; returns the tuned launch options."""
    tune: dict[str, list[Attribute]] = {}
    for arg in options.args:
        _option_error(
            arg,
            "`@kernel` takes keyword options only",
            "write `@kernel(backward=k_bwd)` or `@kernel(num_warps=[4, 8])`",
        )
    for option in options.kwargs:
        if option.name == "backward" and isinstance(option.value, ast.Name):
            func.backward = SymbolRefAttr(option.value.id)
            func.backward_loc = loc_of(option.value.span)
        elif option.name == "backward":
            _option_error(
                option.value, "`backward=` names a kernel", "write `backward=<kernel name>`"
            )
        elif option.name in kernel.TUNING_OPTIONS:
            values = _candidates(option.value)
            if values is not None:
                tune[option.name] = values
        else:
            guess = did_you_mean(option.name, ["backward", *kernel.TUNING_OPTIONS])
            _option_error(
                option,
                f"`@kernel` has no option `{option.name}`",
                f"did you mean `{guess}`?"
                if guess
                else "the options are `backward=`, `num_warps=` and `num_stages=`",
            )
    return tune


def _annotations(func: kernel.FuncOp, params: Sequence[ast.Param]) -> None:
    """`x_ptr: Tensor[M, N]`, `mean_ptr: float32[M]`, `n: int`: into `shapes` and `types`."""
    shapes: dict[str, Attribute] = {}
    types: dict[str, Attribute] = {}
    for param in params:
        annotation = param.type
        if annotation is None or annotation.name in CONSTEXPR_TYPES:
            continue
        if annotation.dims is not None and annotation.name in ("Tensor", *kernel.DTYPES):
            shapes[param.name] = string_array([str(d.value) for d in annotation.dims])
        if annotation.name in (*kernel.DTYPES, *kernel.SCALAR_TYPES):
            types[param.name] = StringAttr(annotation.name)
    if shapes:
        func.shapes = DictionaryAttr(shapes)
    if types:
        func.types = DictionaryAttr(types)


class _KernelBuilder:
    """Appends ops for statements to the current block."""

    def __init__(self) -> None:
        self.block = Block()
        self.tuned: dict[str, list[Attribute]] = {}

    def build(self, decl: ast.KernelDecl) -> kernel.FuncOp:
        params = [(p.name, self._kind(p)) for p in decl.params]
        defaults = self._defaults(decl.params)
        self._statements(decl.body)
        locs = [loc_of((p.default or p).span) for p in decl.params]
        func = kernel.FuncOp.make(decl.name, params, defaults, locs, self.block)
        func.location = loc_of(decl.name_span)
        _annotations(func, decl.params)
        tune = {p.name: self.tuned[p.name] for p in decl.params if p.name in self.tuned}
        if decl.options is not None:
            tune |= _options(func, decl.options)
        if tune:
            func.tune = DictionaryAttr({k: ArrayAttr(v) for k, v in tune.items()})
        return func

    @staticmethod
    def _kind(param: ast.Param) -> str:
        if param.type is not None and param.type.name in CONSTEXPR_TYPES:
            return "constexpr"
        return "scalar"

    def _defaults(self, params: Sequence[ast.Param]) -> dict[str, Attribute]:
        defaults: dict[str, Attribute] = {}
        for param in params:
            if param.default is None:
                continue
            if isinstance(param.default, ast.ListExpr):
                self._tuned(param, param.default)
                continue
            value = _literal(param.default)
            if value is None or self._kind(param) != "constexpr":
                _unsupported(
                    param.default.span,
                    "a default other than a literal `tl.constexpr`",
                    help="give defaults only to `tl.constexpr` parameters",
                )
                continue
            defaults[param.name] = value
        return defaults

    def _tuned(self, param: ast.Param, candidates: ast.ListExpr) -> None:
        """`BLOCK: tl.constexpr = [64, 128]`: the values the autotuner tries."""
        if self._kind(param) != "constexpr":
            _option_error(
                param.default or param,
                f"`{param.name}` is tuned, so it must be a `tl.constexpr`",
                f"annotate it: `{param.name}: tl.constexpr = [...]`",
            )
            return
        values = _candidates(candidates)
        if values is not None:
            self.tuned[param.name] = values

    # ------------------------------------------------------------ statements

    def _in_block(self, body: Sequence[ast.Stmt]) -> Block:
        return self._nested(lambda: self._statements(body))

    def _add(self, op: Operation, span: Span) -> Operation:
        op.location = loc_of(span)
        self.block.add_op(op)
        return op

    def _statements(self, body: Sequence[ast.Stmt]) -> None:
        for stmt in body:
            self._statement(stmt)

    @functools.singledispatchmethod
    def _statement(self, stmt: ast.Stmt) -> None:
        _unsupported(stmt.span, "this statement")

    @_statement.register
    def _let(self, stmt: ast.LetStmt) -> None:
        _check_name(stmt.name, stmt.name_span, "a name")
        self._add(kernel.LetOp(stmt.name, self._expr(stmt.value)), stmt.span)

    @_statement.register
    def _assign(self, stmt: ast.AssignStmt) -> None:
        if not isinstance(stmt.target, ast.Name):
            _unsupported(
                stmt.target.span,
                "assigning to an attribute or an element",
                help="write memory with `tl.store(pointer, value, mask=mask)`",
            )
            return
        _check_name(stmt.target.id, stmt.target.span, "a name")
        value = self._expr(stmt.combined_value())
        self._add(kernel.LetOp(stmt.target.id, value), stmt.span)

    @_statement.register
    def _expr_stmt(self, stmt: ast.ExprStmt) -> None:
        if isinstance(stmt.expr, ast.Call):
            self._add(self._call_op(stmt.expr), stmt.expr.func.span)
            return
        self._expr(stmt.expr)

    @_statement.register
    def _return(self, stmt: ast.ReturnStmt) -> None:
        if stmt.value is not None:
            _unsupported(
                stmt.value.span,
                "returning a value",
                help="a kernel returns nothing: store results with `tl.store`",
            )
            return
        self._add(kernel.ReturnOp(), stmt.span)

    @_statement.register
    def _if(self, stmt: ast.IfStmt) -> None:
        self._if_chain(stmt.branches, stmt.orelse, stmt.span)

    def _if_chain(
        self,
        branches: Sequence[tuple[ast.Expr, list[ast.Stmt]]],
        orelse: list[ast.Stmt] | None,
        span: Span,
    ) -> None:
        (cond, body), rest = branches[0], branches[1:]
        value = self._expr(cond)
        then = self._in_block(body)
        other: Block | None = None
        if rest:
            other = self._nested(lambda: self._if_chain(rest, orelse, rest[0][0].span))
        elif orelse is not None:
            other = self._in_block(orelse)
        self._add(kernel.IfOp(value, then, other), span)

    def _nested(self, emit: Callable[[], None]) -> Block:
        outer, self.block = self.block, Block()
        try:
            emit()
            return self.block
        finally:
            self.block = outer

    @_statement.register
    def _for(self, stmt: ast.ForStmt) -> None:
        iterator = _dotted(stmt.iter.func) if isinstance(stmt.iter, ast.Call) else None
        if not isinstance(stmt.iter, ast.Call) or iterator not in ITERATORS:
            _unsupported(
                stmt.iter.span,
                "this loop iterator",
                help="loop over `range(...)`, `tl.range(...)` or `tl.static_range(...)`",
            )
            return
        args = [self._expr(a) for a in stmt.iter.args]
        body = self._in_block(stmt.body)
        _check_name(stmt.var, stmt.var_span, "a loop variable")
        self._add(kernel.ForOp(stmt.var, iterator, args, body), stmt.span)

    # ----------------------------------------------------------- expressions

    def _value(self, op: Operation, span: Span) -> SSAValue:
        return self._add(op, span).results[0]

    def _expr(self, expr: ast.Expr) -> SSAValue:
        literal = _literal(expr)
        if literal is not None:
            return self._value(kernel.ConstantOp(literal), expr.span)
        return self._expr_node(expr)

    @functools.singledispatchmethod
    def _expr_node(self, expr: ast.Expr) -> SSAValue:
        _unsupported(expr.span, "this expression")
        return self._value(kernel.ConstantOp(NoneAttr()), expr.span)

    @_expr_node.register
    def _name(self, expr: ast.Name) -> SSAValue:
        return self._value(kernel.ReadOp(expr.id), expr.span)

    @_expr_node.register
    def _unary(self, expr: ast.Unary) -> SSAValue:
        return self._value(kernel.UnaryOp(expr.op, self._expr(expr.operand)), expr.span)

    @_expr_node.register
    def _binary(self, expr: ast.Binary) -> SSAValue:
        lhs, rhs = self._expr(expr.left), self._expr(expr.right)
        if expr.op not in kernel.BINARY_OPS:
            hint = "multiply blocks with `tl.dot(a, b)`" if expr.op == "@" else None
            _unsupported(expr.op_span, f"the operator `{expr.op}`", hint)
            return self._value(kernel.ConstantOp(NoneAttr()), expr.span)
        return self._value(kernel.BinOp(expr.op, lhs, rhs), expr.span)

    @_expr_node.register
    def _attribute(self, expr: ast.Attribute) -> SSAValue:
        member = _tl_member(expr)
        if member is not None:
            return self._value(kernel.TlAttrOp(member), expr.span)
        value = self._expr(expr.value)
        _check_name(expr.attr, expr.attr_span, "an attribute")
        return self._value(kernel.GetAttrOp(value, expr.attr), expr.attr_span)

    @_expr_node.register
    def _tuple(self, expr: ast.TupleExpr | ast.ListExpr) -> SSAValue:
        elts = [self._expr(e) for e in expr.elts]
        return self._value(kernel.TupleOp(elts), expr.span)

    @_expr_node.register
    def _index(self, expr: ast.Index) -> SSAValue:
        value = self._expr(expr.value)
        items: list[str] = []
        indices: list[SSAValue] = []
        for item in expr.indices:
            kind = self._index_item(item)
            items.append(kind)
            if kind == "expr":
                indices.append(self._expr(item))
        return self._value(kernel.IndexOp(value, indices, items), expr.span)

    @staticmethod
    def _index_item(item: ast.Expr) -> str:
        if isinstance(_literal(item), NoneAttr):
            return "None"
        if isinstance(item, ast.Slice):
            if item.lower or item.upper or item.step:
                _unsupported(
                    item.span,
                    "a slice with bounds",
                    help="Triton blocks take only `:` and `None` as indices",
                )
            return ":"
        if isinstance(item, ast.EllipsisLit):
            _unsupported(item.span, "`...` in an index")
            return ":"
        return "expr"

    @_expr_node.register
    def _call(self, expr: ast.Call) -> SSAValue:
        op = self._add(self._call_op(expr), expr.func.span)  # diagnostics point at the callee
        if not op.results:
            _unsupported(expr.span, "using the result of `tl.store`")
            return self._value(kernel.ConstantOp(NoneAttr()), expr.span)
        return op.results[0]

    def _call_op(self, expr: ast.Call) -> Operation:
        func = expr.func
        member = _tl_member(func)
        # Python evaluates a method's receiver before its arguments.
        receiver = (
            self._expr(func.value) if isinstance(func, ast.Attribute) and member is None else None
        )
        args = [self._expr(a) for a in expr.args] + [self._expr(k.value) for k in expr.kwargs]
        names = [""] * len(expr.args) + [k.name for k in expr.kwargs]
        for k in expr.kwargs:
            _check_name(k.name, k.span, "a keyword argument")
        if member == "load":
            return kernel.LoadOp(args, names)
        if member == "store":
            return kernel.StoreOp(args, names)
        if member is not None:
            return kernel.TlCallOp(member, args, names)
        if isinstance(func, ast.Attribute) and receiver is not None:
            _check_name(func.attr, func.attr_span, "a method")
            return kernel.MethodOp(receiver, func.attr, args, names)
        if isinstance(func, ast.Name):
            return kernel.CallOp(func.id, args, names)
        _unsupported(func.span, "calling this expression")
        return kernel.ConstantOp(NoneAttr())
