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

from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tensorloom.diagnostics import Diagnostic
from tensorloom.diagnostics.ir import loc_of, report
from tensorloom.dialects import nml
from tensorloom.frontend import ast
from tensorloom.frontend.irgen_attrs import dotted_name, literal_attr
from tensorloom.source import Span

UNRANKED = nml.TensorType.unranked()
# A left spine longer than this is evaluated bottom-up (see `BodyBuilder.expr`).
_SPINE_DIRECT = 40


def _error(code: str, message: str, span: Span, help: str | None = None) -> None:
    report(Diagnostic.error(code, message, span, help=help))


class BodyBuilder:
    """Appends the ops of statements to `block`; `scope` maps local names to values.

    `layer_lists` are the model's layer lists (`h = [Block(d) for _ in range(n)]`):
    `for block in h:` binds `block` to the element at the loop's counter
    (`layer_vars`), and `block(x)` or `h[i](x)` is an `nml.apply_at`.
    """

    def __init__(
        self,
        block: Block,
        scope: dict[str, SSAValue],
        kernels: frozenset[str],
        layer_lists: frozenset[str] = frozenset(),
    ):
        self.block = block
        self.scope = scope
        self.kernels = kernels
        self.layer_lists = layer_lists
        self.layer_vars: dict[str, tuple[str, SSAValue]] = {}
        self.returned: list[SSAValue] | None = None
        self.return_span: Span | None = None
        self.nested = False  # inside a loop or branch: `return` is not allowed
        # Dims as values (`forward(idx: Tensor[B, T])`): name -> (argument, axis), and the
        # `nml.dim` made at the function's entry on first use, shared with nested bodies.
        self.members: set[str] = set()  # the model's configs and layers
        self.dims: dict[str, tuple[SSAValue, int, Span]] = {}
        self.dim_values: dict[str, SSAValue] = {}
        self.entry = block
        self._memo: dict[int, SSAValue] = {}  # spine links evaluated ahead, by id
        # Names bound inside a loop or in only some branches, which do not exist after
        # it: name -> "loop" or "branch", for check-scopes' TL0301 help (shared).
        self.bound_inside: dict[str, str] = {}
        # A top-level function's parameters: calling one (`net(x)`) runs the model a train
        # block passes an objective there (`nml.model_call`).
        self.callable_params: frozenset[str] = frozenset()

    def child(self, block: Block, scope: dict[str, SSAValue]) -> BodyBuilder:
        inner = BodyBuilder(block, scope, self.kernels, self.layer_lists)
        inner.layer_vars = dict(self.layer_vars)
        inner.nested = True
        inner.dims, inner.dim_values, inner.entry = self.dims, self.dim_values, self.entry
        inner.members = self.members
        inner.bound_inside = self.bound_inside
        inner.callable_params = self.callable_params
        return inner

    def dim_value(self, name: str) -> SSAValue:
        """`T` of `x: Tensor[B, T]`: an `nml.dim` at the function's entry, made once."""
        if name not in self.dim_values:
            arg, axis, span = self.dims[name]
            op = nml.DimOp(arg, axis)
            op.location = loc_of(span)
            op.result.name_hint = name if valid_hint(name) else None
            made = [v.owner for v in self.dim_values.values()]
            after = made[-1] if made else None
            if isinstance(after, Operation):
                self.entry.insert_op_after(op, after)
            elif self.entry.first_op is not None:
                self.entry.insert_op_before(op, self.entry.first_op)
            else:
                self.entry.add_op(op)
            self.dim_values[name] = op.result
        return self.dim_values[name]

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
    def _let_tuple(self, stmt: ast.LetTupleStmt) -> None:
        """`let (a, b) = t`; nested, `let (out, (h, c)) = lstm(x, state)`: each inner tuple
        taken once, then its elements."""
        taken: dict[tuple[int, ...], SSAValue] = {(): self.expr(stmt.value)}
        paths = [stmt.path_of(i) for i in range(len(stmt.names))]
        for name, span, path in zip(stmt.names, stmt.name_spans, paths, strict=True):
            for depth in range(1, len(path) + 1):
                if path[:depth] not in taken:
                    inner = nml.TupleGetOp(taken[path[: depth - 1]], path[depth - 1], nml.AnyType())
                    taken[path[:depth]] = self.value_of(inner, span)
            self.bind(name, taken[path])
        for prefix, value in taken.items():  # `h_c = out_h_c[1]`: a tuple named for its names
            names = zip(stmt.names, paths, strict=True)
            hint = "_".join(n for n, p in names if p[: len(prefix)] == prefix)
            if stmt.paths is not None and value.name_hint is None and valid_hint(hint):
                value.name_hint = hint

    # ------------------------------------------------------------ control flow

    @statement.register
    def _for(self, stmt: ast.ForStmt) -> None:
        layers = self._layer_list_named(stmt.iter)
        bounds: list[SSAValue] = []
        if layers is None:
            range_args = _range_arguments(stmt.iter)
            if range_args is None:
                _error(
                    "TL0145",
                    "`for` iterates over a layer list or a `range(...)`",
                    stmt.iter.span,
                    help="declare a layer list, `h = [Block(d) for _ in range(n)]`, "
                    "and write `for block in h:`, or loop `for i in range(n):`",
                )
                return
            bounds = [self.expr(a) for a in range_args]
        carried = [n for n in _assigned_names(stmt.body) if n in self.scope and n != stmt.var]
        inits = [self.scope[n] for n in carried]
        body = Block(arg_types=[i64, *(v.type for v in inits)])
        counter = body.args[0]
        counter.name_hint = stmt.var if valid_hint(stmt.var) and layers is None else "i"
        scope = dict(self.scope)
        for name, arg in zip(carried, body.args[1:], strict=True):
            arg.name_hint = name if valid_hint(name) else None
            scope[name] = arg
        inner = self.child(body, scope)
        if layers is not None:
            inner.layer_vars[stmt.var] = (layers, counter)
            scope.pop(stmt.var, None)
        else:
            scope[stmt.var] = counter
        inner.statements(stmt.body)
        body.add_op(_at_span(nml.YieldOp([scope[n] for n in carried]), stmt.span))
        op = nml.ForOp(inits, Region(body), layers=layers, bounds=bounds)
        if layers is not None and valid_hint(stmt.var):
            op.var = StringAttr(stmt.var)
        self.add(op, stmt.span)
        for name, result in zip(carried, op.results, strict=True):
            self.bind(name, result)
        for name in _assigned_names(stmt.body):
            if name not in self.scope:
                self.bound_inside.setdefault(name, "loop")

    def _layer_list_named(self, expr: ast.Expr) -> str | None:
        name = _self_name(expr)
        return name if name is not None and name in self.layer_lists else None

    @statement.register
    def _if(self, stmt: ast.IfStmt) -> None:
        self._branches(stmt.branches, stmt.orelse, stmt.span)

    def _branches(
        self,
        branches: Sequence[tuple[ast.Expr, list[ast.Stmt]]],
        orelse: list[ast.Stmt] | None,
        span: Span,
    ) -> None:
        cond_expr, then_body = branches[0]
        cond = self.expr(cond_expr)
        rest = branches[1:]
        statements = [*then_body, *(orelse or [])]
        for _, body in rest:
            statements += body
        # A name bound on every path (each branch, and an `else`) exists after the `if`,
        # as in Python; one bound on some paths only does not.
        everywhere = _bound_on_every_path(branches, orelse)
        carried = [n for n in _assigned_names(statements) if n in self.scope or n in everywhere]
        regions: list[Region] = []
        for build in (then_body, None):
            block = Block()
            scope = dict(self.scope)
            inner = self.child(block, scope)
            if build is not None:
                inner.statements(build)
            elif rest:
                inner._branches(rest, orelse, span)
            elif orelse is not None:
                inner.statements(orelse)
            yielded = [scope.get(n) for n in carried]
            if any(v is None for v in yielded):  # an error in the branch already said why
                return
            block.add_op(_at_span(nml.YieldOp(yielded), span))  # type: ignore[arg-type]
            regions.append(Region(block))
        then_yield = regions[0].block.last_op
        assert isinstance(then_yield, nml.YieldOp)
        types = [v.type for v in then_yield.operands]
        op = nml.IfOp(cond, types, regions[0], regions[1])
        op.location = loc_of(cond_expr.span)
        self.block.add_op(op)
        for name, result in zip(carried, op.results, strict=True):
            self.bind(name, result)
        for name in _assigned_names(statements):
            if name not in self.scope:
                self.bound_inside.setdefault(name, "branch")

    @statement.register
    def _assign(self, stmt: ast.AssignStmt) -> None:
        target = stmt.target
        if isinstance(target, ast.Index) and isinstance(target.value, ast.Name):
            self._assign_index(stmt, target, target.value)
            return
        if not isinstance(target, ast.Name):
            _error(
                "TL0132",
                "only a plain name or an index of one can be assigned to",
                target.span,
                help="bind a new name with `let`, or assign into a tensor the forward "
                "named (`x[:, 0] = y`)",
            )
            return
        self.bind(target.id, self.expr(stmt.combined_value()))

    def _assign_index(self, stmt: ast.AssignStmt, target: ast.Index, root: ast.Name) -> None:
        """`x[:, 0] = y`, `results[idx] += v`: `x` is bound to the tensor with the region
        replaced (`nml.index_put`); the lowering writes it in place where nothing else
        sees `x` (convert-nml-to-torch's `mark_in_place`)."""
        if root.id not in self.scope:
            _error(
                "TL0132",
                f"`{root.id}` is not a value of this forward, so it cannot be assigned into",
                root.span,
                help="assign into a tensor the forward computed: `let y = ...` first",
            )
            return
        base = self.scope[root.id]
        dynamic: list[SSAValue] = []
        items = [self._index_item(item, dynamic) for item in target.indices]
        value = self.expr(stmt.value)
        put = nml.IndexPutOp(base, items, dynamic, value, stmt.operator, base.type)
        self.bind(root.id, self.value_of(put, stmt.span))

    @statement.register
    def _expr_stmt(self, stmt: ast.ExprStmt) -> None:
        self.expr(stmt.expr)

    @statement.register
    def _return(self, stmt: ast.ReturnStmt) -> None:
        if self.nested:
            _error(
                "TL0142",
                "`return` inside a loop or a branch is not supported",
                stmt.span,
                help="assign the result to a name in each branch and `return` it after",
            )
            return
        values = [] if stmt.value is None else [self.expr(stmt.value)]
        self.add(nml.ReturnOp(values), stmt.span)
        self.returned, self.return_span = values, stmt.span

    def bind(self, name: str, value: SSAValue) -> None:
        # `let residual = x` names nothing new: the value keeps its first name.
        if value.name_hint is None and valid_hint(name):
            value.name_hint = name
        self.scope[name] = value
        self.layer_vars.pop(name, None)

    # ----------------------------------------------------------- expressions

    def expr(self, expr: ast.Expr) -> SSAValue:
        """The value of `expr`. A long left spine (`x.abs().abs()...`, `a + b + ...`,
        `x |> f |> ...`, `x[0][0]...`, and any mix of them) is evaluated bottom-up without
        recursion: 10,000 links are a long line, not a crash."""
        memo = self._memo
        if memo and (done := memo.pop(id(expr), None)) is not None:
            return done
        spine: list[ast.Expr] = []
        node = self._spine_child(expr)
        while node is not None:
            spine.append(node)
            node = self._spine_child(node)
        if len(spine) > _SPINE_DIRECT:
            for link in reversed(spine):
                memo[id(link)] = self._expr(link)
        return self._expr(expr)

    def _spine_child(self, expr: ast.Expr) -> ast.Expr | None:
        """The operand that `_expr(expr)` evaluates first, when it evaluates one."""
        match expr:
            case ast.Binary(left=left):
                return left
            case ast.Pipe(value=value):
                return value
            case ast.Index(value=value):
                return value
            case ast.Attribute(value=ast.Name(id="self")):
                return None
            case ast.Attribute(value=value):
                return value
            case ast.Call(func=ast.Attribute() as func) if self._is_method(func):
                return func.value
            case _:
                return None

    @functools.singledispatchmethod
    def _expr(self, expr: ast.Expr) -> SSAValue:
        if (literal := literal_attr(expr)) is not None:
            return self.value_of(nml.ConstantOp(literal), expr.span)
        _error("TL0134", "this expression is not supported here", expr.span)
        return self.value_of(nml.ConstantOp(nml.NoneValueAttr()), expr.span)

    @_expr.register
    def _name(self, expr: ast.Name) -> SSAValue:
        if expr.id in self.scope:
            return self.scope[expr.id]
        if expr.id in self.dims:
            return self.dim_value(expr.id)
        if expr.id == "self":
            _error(
                "TL0331",
                "`self` cannot be used as a value",
                expr.span,
                help="use one of its layers or config parameters, as in `self.fc1`",
            )
        ref = nml.RefOp(expr.id)
        if expr.id in self.bound_inside:
            ref.bound_inside = StringAttr(self.bound_inside[expr.id])
        return self.value_of(ref, expr.span)

    @_expr.register
    def _attribute(self, expr: ast.Attribute) -> SSAValue:
        if isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return self.value_of(nml.RefOp(expr.attr), expr.span)
        base = self.expr(expr.value)
        return self.value_of(nml.GetAttrOp(base, expr.attr), expr.span)

    @_expr.register
    def _unary(self, expr: ast.Unary) -> SSAValue:
        if (literal := literal_attr(expr)) is not None:
            return self.value_of(nml.ConstantOp(literal), expr.span)
        operand = self.expr(expr.operand)
        if expr.op == "-":
            return self.value_of(nml.NegOp(operand), expr.span)
        return self.value_of(nml.CallOp(expr.op, [operand]), expr.span)

    @_expr.register
    def _binary(self, expr: ast.Binary | ast.Pipe) -> SSAValue:
        if isinstance(expr, ast.Binary):
            return self._apply_binary(expr, self.expr(expr.left))
        return self._apply_pipe(expr, self.expr(expr.value))

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

    @_expr.register
    def _call(self, expr: ast.Call) -> SSAValue:
        func = expr.func
        element = self._layer_element(func)
        if element is not None:
            layers, index = element
            args, names = self.arguments(expr)
            if any(names):
                _error(
                    "TL0143",
                    "a layer of a layer list takes its inputs by position",
                    expr.span,
                    help="options such as `causal=true` belong in the layer's constructor",
                )
            return self.value_of(nml.ApplyAtOp(layers, index, args, UNRANKED), expr.span)
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
        if callee in self.callable_params and callee in self.scope:
            if any(names):
                _error("TL0143", "a model takes its inputs by position", expr.span)
            call = nml.ModelCallOp(self.scope[callee], args, UNRANKED)
            return self.value_of(call, expr.span)
        if (kernel := self._kernel_named(callee)) is not None:
            call = nml.KernelCallOp(kernel, args, names, [nml.AnyType()])
            return self.value_of(call, expr.span)
        if callee == "floordiv" and len(args) == 2 and not any(names):
            return self.value_of(nml.CallOp("//", args), expr.span)  # `//` is a comment
        return self.value_of(nml.CallOp(callee, args, names), expr.span)

    def _layer_element(self, func: ast.Expr) -> tuple[str, SSAValue] | None:
        """`block` (a loop over a layer list) or `h[i]`: the list and the index value."""
        if isinstance(func, ast.Name) and func.id in self.layer_vars and func.id not in self.scope:
            return self.layer_vars[func.id]
        if isinstance(func, ast.Index) and len(func.indices) == 1:
            layers = self._layer_list_named(func.value)
            if layers is not None and not isinstance(func.indices[0], ast.Slice):
                return layers, self.expr(func.indices[0])
        return None

    def _is_method(self, func: ast.Attribute) -> bool:
        """`x.view(...)` on a value, or on a model's tensor (`cls_token.expand(...)`,
        `self.pos.expand(...)`), as opposed to `self.fc1(...)` or `F.relu(...)`."""
        root: ast.Expr = func.value
        depth = 1
        while isinstance(root, ast.Attribute):
            root = root.value
            depth += 1
        if not isinstance(root, ast.Name):
            return True
        if root.id == "self":
            return depth >= 2
        return root.id in self.scope or root.id in self.members

    def _kernel_named(self, callee: str) -> str | None:
        name = callee.removesuffix("_launcher")
        return name if name in self.kernels else None

    def arguments(self, call: ast.Call) -> tuple[list[SSAValue], list[str]]:
        args = [self.expr(a) for a in call.args]
        kwargs = [self.expr(k.value) for k in call.kwargs]
        return args + kwargs, [""] * len(args) + [k.name for k in call.kwargs]

    @_expr.register
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
            return self._slice(item, dynamic)
        literal = literal_attr(item)
        if isinstance(literal, IntegerAttr) and literal.type == i64:
            return literal
        dynamic.append(self.expr(item))
        return StringAttr(nml.DYNAMIC)

    def _slice(self, item: ast.Slice, dynamic: list[SSAValue]) -> Attribute:
        if item.lower is None and item.upper is None and item.step is None:
            return StringAttr(":")
        parts = [self._slice_bound(p, dynamic) for p in (item.lower, item.upper, item.step)]
        return nml.SliceAttr(*parts)

    def _slice_bound(self, part: ast.Expr | None, dynamic: list[SSAValue]) -> Attribute:
        """An integer literal, or `"?"` with the bound computed as a value (`x[:, :L]`,
        `w[:, i:i + 1]`): shape inference reads its value where it is known."""
        if part is None:
            return nml.NoneValueAttr()
        literal = literal_attr(part)
        if isinstance(literal, IntegerAttr) and literal.type == i64:
            return literal
        if literal is not None:
            _error(
                "TL0138",
                "slice bounds must be integers",
                part.span,
                help="write an integer, a config or a size (`x[:, :T]`), or arithmetic on them",
            )
            return nml.NoneValueAttr()
        dynamic.append(self.expr(part))
        return StringAttr(nml.DYNAMIC)

    @_expr.register
    def _if_exp(self, expr: ast.IfExp) -> SSAValue:
        _error(
            "TL0134",
            "a conditional expression is allowed only in configs and layer arguments",
            expr.span,
            help="write an `if`/`else` statement, or `where(cond, a, b)` on tensors",
        )
        return self.value_of(nml.ConstantOp(nml.NoneValueAttr()), expr.span)

    @_expr.register
    def _list_comp(self, expr: ast.ListComp) -> SSAValue:
        _error(
            "TL0134",
            "a list comprehension is only allowed as a layer list in `@layers`",
            expr.span,
            help="declare `h = [Block(d) for _ in range(n)]` with the layers and loop over it",
        )
        return self.value_of(nml.ConstantOp(nml.NoneValueAttr()), expr.span)

    @_expr.register
    def _list(self, expr: ast.ListExpr) -> SSAValue:
        return self.value_of(nml.ListOp([self.expr(e) for e in expr.elts]), expr.span)

    @_expr.register
    def _tuple(self, expr: ast.TupleExpr) -> SSAValue:
        op = nml.ListOp([self.expr(e) for e in expr.elts])
        op.tuple = UnitAttr()
        return self.value_of(op, expr.span)


def _at_span(op: Operation, span: Span) -> Operation:
    op.location = loc_of(span)
    return op


def _self_name(expr: ast.Expr) -> str | None:
    """`h` or `self.h`."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return expr.attr if expr.value.id == "self" else None
    return None


def _range_arguments(expr: ast.Expr) -> list[ast.Expr] | None:
    """The bounds of `range(n)`, `range(a, b)` or `range(a, b, step)`."""
    if not isinstance(expr, ast.Call) or expr.kwargs:
        return None
    if not isinstance(expr.func, ast.Name) or expr.func.id != "range":
        return None
    return list(expr.args) if 1 <= len(expr.args) <= 3 else None


def _bound_on_every_path(
    branches: Sequence[tuple[ast.Expr, list[ast.Stmt]]], orelse: list[ast.Stmt] | None
) -> set[str]:
    """Names every branch of an `if`/`elif`/`else` binds; none without an `else`."""
    if orelse is None:
        return set()
    bound = _bound_by(orelse)
    for _, body in branches:
        bound &= _bound_by(body)
    return bound


def _bound_by(body: Sequence[ast.Stmt]) -> set[str]:
    """Names a statement list binds on every path through it (not inside loops)."""
    names: set[str] = set()
    for stmt in body:
        match stmt:
            case ast.LetStmt(name=name) | ast.AssignStmt(target=ast.Name(id=name)):
                names.add(name)
            case ast.LetTupleStmt(names=tuple_names):
                names.update(tuple_names)
            case ast.IfStmt(branches=branches, orelse=orelse):
                names |= _bound_on_every_path(branches, orelse)
            case _:
                pass
    return names


def _assigned_names(body: Sequence[ast.Stmt]) -> list[str]:
    """Names a statement list binds, in order, looking into nested loops and branches."""
    names: list[str] = []

    def add(name: str) -> None:
        if name not in names:
            names.append(name)

    def visit(stmts: Sequence[ast.Stmt]) -> None:
        for stmt in stmts:
            match stmt:
                case ast.LetStmt(name=name):
                    add(name)
                case ast.LetTupleStmt(names=tuple_names):
                    for name in tuple_names:
                        add(name)
                case ast.AssignStmt(target=ast.Name(id=name) | ast.Index(value=ast.Name(id=name))):
                    add(name)
                case ast.ForStmt(body=inner):
                    visit(inner)
                case ast.IfStmt(branches=branches, orelse=orelse):
                    for _, inner in branches:
                        visit(inner)
                    visit(orelse or [])
                case _:
                    pass

    visit(body)
    return names


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
