"""IR generation for statement lists: method bodies and a script's top-level statements.

    let h = norm1(x)          %h = nml.call "norm1"(%x) {arg_names = [""]} : ... -> !nml.any
    x = h + x                 %x_1 = nml.add %h, %x : (...) -> ...
    return x |> self.fc1      %0 = nml.pipe %x_1 into "self.fc1"() ... ; nml.return %0

Local names are SSA values (the source name is kept as the value's name hint);
any other name is an `nml.ref` of a symbol (a config or layer in a model, an
instance or dataset in a script), which `resolve-nml`/`check-scopes` check.
Calls stay unresolved (`nml.call`) except calls of a `@kernel`'s launcher.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tensorloom.diagnostics import Diagnostic
from tensorloom.diagnostics.ir import loc_of, report
from tensorloom.dialects import nml
from tensorloom.frontend import ast
from tensorloom.frontend.irgen_attrs import dotted_name, literal_attr
from tensorloom.source import Span

UNRANKED = nml.TensorType.unranked()


def _error(code: str, message: str, span: Span, help: str | None = None) -> None:
    report(Diagnostic.error(code, message, span, help=help))


class BodyBuilder:
    """Appends the ops of statements to `block`; `scope` maps local names to values."""

    def __init__(self, block: Block, scope: dict[str, SSAValue], kernels: frozenset[str]):
        self.block = block
        self.scope = scope
        self.kernels = kernels
        self.returned: list[SSAValue] | None = None
        self.return_span: Span | None = None

    def add(self, op: Operation, span: Span) -> Operation:
        op.location = loc_of(span)
        self.block.add_op(op)
        return op

    def value_of(self, op: Operation, span: Span) -> SSAValue:
        return self.add(op, span).results[0]

    # ------------------------------------------------------------ statements

    def statements(self, body: Sequence[ast.Stmt]) -> None:
        for stmt in body:
            if self.return_span is not None:
                _error(
                    "TL0135",
                    "code after `return` never runs",
                    stmt.span,
                    help="remove it, or move the `return` after it",
                )
                return
            self.statement(stmt)

    @functools.singledispatchmethod
    def statement(self, stmt: ast.Stmt) -> None:
        what = type(stmt).__name__.removesuffix("Stmt").removesuffix("Decl").lower()
        _error(
            "TL0130",
            f"`{what}` is not supported here",
            stmt.span,
            help="write straight-line code; branch on values with arithmetic or masks",
        )

    @statement.register
    def _let(self, stmt: ast.LetStmt) -> None:
        if stmt.name in ("None", "True", "False"):
            message = f"`{stmt.name}` is a Python keyword, so it cannot be a name"
            _error("TL0009", message, stmt.name_span, help="choose another name")
        self.bind(stmt.name, self.expr(stmt.value))

    @statement.register
    def _assign(self, stmt: ast.AssignStmt) -> None:
        if not isinstance(stmt.target, ast.Name):
            _error(
                "TL0132",
                "only a plain name can be assigned to",
                stmt.target.span,
                help="bind a new name with `let`",
            )
            return
        self.bind(stmt.target.id, self.expr(stmt.value))

    @statement.register
    def _expr_stmt(self, stmt: ast.ExprStmt) -> None:
        self.expr(stmt.expr)

    @statement.register
    def _return(self, stmt: ast.ReturnStmt) -> None:
        values = [] if stmt.value is None else [self.expr(stmt.value)]
        self.add(nml.ReturnOp(values), stmt.span)
        self.returned, self.return_span = values, stmt.span

    def bind(self, name: str, value: SSAValue) -> None:
        # `let residual = x` names nothing new: the value keeps its first name.
        if value.name_hint is None and valid_hint(name):
            value.name_hint = name
        self.scope[name] = value

    # ----------------------------------------------------------- expressions

    @functools.singledispatchmethod
    def expr(self, expr: ast.Expr) -> SSAValue:
        if (literal := literal_attr(expr)) is not None:
            return self.value_of(nml.ConstantOp(literal), expr.span)
        _error("TL0134", "this expression is not supported here", expr.span)
        return self.value_of(nml.ConstantOp(nml.NoneValueAttr()), expr.span)

    @expr.register
    def _name(self, expr: ast.Name) -> SSAValue:
        if expr.id in self.scope:
            return self.scope[expr.id]
        if expr.id == "self":
            _error(
                "TL0331",
                "`self` cannot be used as a value",
                expr.span,
                help="use one of its layers or config parameters, as in `self.fc1`",
            )
        return self.value_of(nml.RefOp(expr.id), expr.span)

    @expr.register
    def _attribute(self, expr: ast.Attribute) -> SSAValue:
        if isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return self.value_of(nml.RefOp(expr.attr), expr.span)
        base = self.expr(expr.value)
        return self.value_of(nml.GetAttrOp(base, expr.attr), expr.span)

    @expr.register
    def _unary(self, expr: ast.Unary) -> SSAValue:
        if (literal := literal_attr(expr)) is not None:
            return self.value_of(nml.ConstantOp(literal), expr.span)
        operand = self.expr(expr.operand)
        if expr.op == "-":
            return self.value_of(nml.NegOp(operand), expr.span)
        return self.value_of(nml.CallOp(expr.op, [operand]), expr.span)

    @expr.register
    def _binary(self, expr: ast.Binary | ast.Pipe) -> SSAValue:
        # Left-associative chains (`a + b + ...`, `x |> f |> ...`) are walked down
        # their left spine without recursion: 10,000 terms are a long line, not a crash.
        spine: list[ast.Binary | ast.Pipe] = []
        node: ast.Expr = expr
        while isinstance(node, ast.Binary | ast.Pipe):
            spine.append(node)
            node = node.left if isinstance(node, ast.Binary) else node.value
        value = self.expr(node)
        for link in reversed(spine):
            if isinstance(link, ast.Binary):
                value = self._apply_binary(link, value)
            else:
                value = self._apply_pipe(link, value)
        return value

    def _apply_binary(self, expr: ast.Binary, left: SSAValue) -> SSAValue:
        right = self.expr(expr.right)
        op_class = nml.BINARY_OPS.get(expr.op)
        if op_class is None:
            return self.value_of(nml.CallOp(expr.op, [left, right]), expr.span)
        return self.value_of(op_class(left, right, _combined(left, right)), expr.span)

    def _apply_pipe(self, expr: ast.Pipe, value: SSAValue) -> SSAValue:
        stage = expr.stage
        func = stage.func if isinstance(stage, ast.Call) else stage
        callee = dotted_name(func)
        if callee is None:
            _error(
                "TL0136",
                "a pipe stage must name a function or a layer",
                stage.span,
                help="write `x |> relu`, `x |> self.fc1` or `x |> dropout(0.1)`",
            )
            return value
        args, names = self.arguments(stage) if isinstance(stage, ast.Call) else ([], [])
        pipe = nml.PipeOp(value, callee, args, names, result_type=UNRANKED)
        return self.value_of(pipe, stage.span)

    @expr.register
    def _call(self, expr: ast.Call) -> SSAValue:
        func = expr.func
        if isinstance(func, ast.Attribute) and self._is_method(func):
            receiver = self.expr(func.value)
            args, names = self.arguments(expr)
            call = nml.CallOp(func.attr, [receiver, *args], ["", *names], method=True)
            return self.value_of(call, expr.span)
        callee = dotted_name(func)
        if callee is None:
            _error("TL0136", "only a named function, layer or method can be called", func.span)
            return self.value_of(nml.ConstantOp(nml.NoneValueAttr()), expr.span)
        args, names = self.arguments(expr)
        if (kernel := self._kernel_named(callee)) is not None:
            call = nml.KernelCallOp(kernel, args, names, [nml.AnyType()])
            return self.value_of(call, expr.span)
        return self.value_of(nml.CallOp(callee, args, names), expr.span)

    def _is_method(self, func: ast.Attribute) -> bool:
        """`x.view(...)` on a value, as opposed to `self.fc1(...)` or `F.relu(...)`."""
        root: ast.Expr = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return True
        return root.id in self.scope

    def _kernel_named(self, callee: str) -> str | None:
        name = callee.removesuffix("_launcher")
        return name if name in self.kernels else None

    def arguments(self, call: ast.Call) -> tuple[list[SSAValue], list[str]]:
        args = [self.expr(a) for a in call.args]
        kwargs = [self.expr(k.value) for k in call.kwargs]
        return args + kwargs, [""] * len(args) + [k.name for k in call.kwargs]

    @expr.register
    def _index(self, expr: ast.Index) -> SSAValue:
        base = self.expr(expr.value)
        items: list[Attribute] = []
        dynamic: list[SSAValue] = []
        for item in expr.indices:
            items.append(self._index_item(item, dynamic))
        result = UNRANKED if isinstance(base.type, nml.TensorType) else nml.AnyType()
        return self.value_of(nml.IndexOp(base, items, dynamic, result), expr.span)

    def _index_item(self, item: ast.Expr, dynamic: list[SSAValue]) -> Attribute:
        if isinstance(item, ast.EllipsisLit):
            return StringAttr("...")
        if isinstance(item, ast.NoneLit):
            return nml.NoneValueAttr()
        if isinstance(item, ast.Slice):
            return self._slice(item)
        literal = literal_attr(item)
        if isinstance(literal, IntegerAttr) and literal.type == i64:
            return literal
        dynamic.append(self.expr(item))
        return StringAttr(nml.DYNAMIC)

    def _slice(self, item: ast.Slice) -> Attribute:
        if item.lower is None and item.upper is None and item.step is None:
            return StringAttr(":")
        parts = [self._slice_bound(p) for p in (item.lower, item.upper, item.step)]
        return nml.SliceAttr(*parts)

    def _slice_bound(self, part: ast.Expr | None) -> Attribute:
        if part is None:
            return nml.NoneValueAttr()
        literal = literal_attr(part)
        if isinstance(literal, IntegerAttr) and literal.type == i64:
            return literal
        _error(
            "TL0138",
            "slice bounds must be integer literals",
            part.span,
            help="reshape or use `narrow(...)` for a computed range",
        )
        return nml.NoneValueAttr()

    @expr.register
    def _list(self, expr: ast.ListExpr) -> SSAValue:
        return self.value_of(nml.ListOp([self.expr(e) for e in expr.elts]), expr.span)

    @expr.register
    def _tuple(self, expr: ast.TupleExpr) -> SSAValue:
        return self.value_of(nml.ListOp([self.expr(e) for e in expr.elts]), expr.span)


def _combined(left: SSAValue, right: SSAValue) -> Attribute:
    """Before shape inference: a tensor of unknown shape if either side is a tensor."""
    for side in (left, right):
        if isinstance(side.type, nml.TensorType):
            return side.type.with_dims(None)
    return nml.AnyType()


_HINT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def valid_hint(name: str) -> bool:
    """Whether xDSL takes `name` as a value's name (ASCII only); other names stay unnamed."""
    return _HINT.fullmatch(name) is not None
