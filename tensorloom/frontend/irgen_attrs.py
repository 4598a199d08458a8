"""Attribute expressions: compile-time values of layer arguments, configs and settings.

    Linear(d_model, 4 * d_model)   ->  [#nml.cfg<"d_model">,
                                        #nml.expr<"*", [4 : i64, #nml.cfg<"d_model">]>]
    optimizer = Adam(lr=0.001)     ->  #nml.call<"Adam", [], {lr = 1.000000e-03 : f64}>
    loss = CrossEntropy            ->  #nml.call<"CrossEntropy", [], {}>
    precision = fp16               ->  "fp16"

A bare name means a config parameter in a model (`#nml.cfg`); in a train
setting or dataset option a capitalised name is a constructor with no arguments
and any other name is a string. Expressions that need a runtime value are
reported as TL0134.
"""

from __future__ import annotations

from typing import Literal

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, StringAttr, f64, i1, i64
from xdsl.ir import Attribute

from tensorloom.diagnostics import Diagnostic
from tensorloom.diagnostics.ir import report
from tensorloom.dialects.nml import CallAttr, CfgAttr, ExprAttr, NoneValueAttr
from tensorloom.frontend import ast

NameMode = Literal["config", "setting"]

ARITHMETIC = ("+", "-", "*", "/", "%", "**")
CONDITIONS = ("==", "!=", "<", "<=", ">", ">=", "and", "or")
FLOOR_DIVISION = "floordiv"
"""`floordiv(a, b)` is Python's `a // b` (`#nml.expr<"//", ...>`): `//` starts a comment."""


def dotted_name(expr: ast.Expr) -> str | None:
    """`nn.ReLU` as "nn.ReLU"; None when `expr` is not a (dotted) name."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = dotted_name(expr.value)
        return f"{base}.{expr.attr}" if base is not None else None
    return None


def literal_attr(expr: ast.Expr) -> Attribute | None:
    """The attribute of a literal (`-3` included), or None when `expr` is not one."""
    match expr:
        case ast.BoolLit(value=value):
            return IntegerAttr(int(value), i1)
        case ast.IntLit(value=value):
            return IntegerAttr(value, i64)
        case ast.FloatLit(value=value):
            return FloatAttr(value, f64)
        case ast.StrLit(value=value):
            return StringAttr(value)
        case ast.NoneLit():
            return NoneValueAttr()
        case ast.Unary(op="-", operand=ast.IntLit(value=value)):
            return IntegerAttr(-value, i64)
        case ast.Unary(op="-", operand=ast.FloatLit(value=value)):
            return FloatAttr(-value, f64)
        case _:
            return None


class AttrBuilder:
    """Turns expressions into attribute expressions; `aliases` renames imported models."""

    def __init__(self, mode: NameMode, aliases: dict[str, str] | None = None):
        self.mode: NameMode = mode
        self.aliases = aliases or {}

    def build(self, expr: ast.Expr) -> Attribute:
        """The attribute for `expr`; on an error, reports it and returns `#nml.none`."""
        result = self._build(expr)
        if result is None:
            report(_not_constant(expr))
            return NoneValueAttr()
        return result

    def build_layer(self, expr: ast.Expr) -> Attribute:
        """A layer constructor as an argument: `Linear(d, d)`, or `GELU` with no arguments."""
        if isinstance(expr, ast.Name) and expr.id[:1].isupper():
            return CallAttr.get(self.aliases.get(expr.id, expr.id))
        return self.build(expr)

    def _build(self, expr: ast.Expr) -> Attribute | None:
        if (literal := literal_attr(expr)) is not None:
            return literal
        match expr:
            case ast.Name(id=name):
                return self._name(name)
            case ast.Attribute(value=ast.Name(id="self"), attr=attr):
                return CfgAttr.get(attr)
            case ast.Unary() | ast.Binary() | ast.IfExp():
                return self._operator(expr)
            case ast.Index(value=value, indices=[index]) if self.mode == "config" and not (
                isinstance(index, ast.Slice)
            ):
                return ExprAttr.get("[]", [self.build(value), self.build(index)])  # widths[k]
            case ast.Call():
                return self.call(expr)
            case ast.ListExpr(elts=elts) | ast.TupleExpr(elts=elts):
                return ArrayAttr([self.build(e) for e in elts])
            case ast.Attribute() | ast.Index() if self.mode == "setting":
                path = layer_path(expr)
                return StringAttr(path) if path is not None else None
            case _:
                return None

    def _operator(self, expr: ast.Unary | ast.Binary | ast.IfExp) -> Attribute | None:
        """Arithmetic, comparisons, `and`/`or`/`not` and `a if cond else b`."""
        match expr:
            case ast.Unary(op="-", operand=operand):
                return ExprAttr.get("neg", [self.build(operand)])
            case ast.Unary(op="+", operand=operand):
                return self.build(operand)
            case ast.Unary(op="not", operand=operand):
                return ExprAttr.get("not", [self.build(operand)])
            case ast.Binary(op=op, left=left, right=right) if op in ARITHMETIC + CONDITIONS:
                return ExprAttr.get(op, [self.build(left), self.build(right)])
            case ast.IfExp(test=test, body=body, orelse=orelse):
                return ExprAttr.get("if", [self.build(test), self.build(body), self.build(orelse)])
            case _:
                return None

    def _name(self, name: str) -> Attribute:
        if self.mode == "config":
            return CfgAttr.get(name)
        if name[:1].isupper():
            return CallAttr.get(self.aliases.get(name, name))
        return StringAttr(name)

    def call(self, expr: ast.Call) -> Attribute | None:
        callee = dotted_name(expr.func)
        if callee is None:
            return None
        if callee == FLOOR_DIVISION and len(expr.args) == 2 and not expr.kwargs:
            return ExprAttr.get("//", [self.build(a) for a in expr.args])  # `//` is a comment
        args = [self.build(a) for a in expr.args]
        kwargs = {k.name: self.build(k.value) for k in expr.kwargs}
        return CallAttr.get(self.aliases.get(callee, callee), args, kwargs)


def layer_path(expr: ast.Expr) -> str | None:
    """A train setting's layer path as text: `h.attn`, `h[3]` as `h.3`, `h[0:6]` as `h[0:6]`
    (`freeze = [wte, h[0:6]]`); None for anything else."""
    match expr:
        case ast.Name(id=name):
            return name
        case ast.Attribute(value=value, attr=attr):
            base = layer_path(value)
            return None if base is None else f"{base}.{attr}"
        case ast.Index(value=value, indices=[index]):
            base = layer_path(value)
            if base is None:
                return None
            if isinstance(index, ast.Slice) and index.step is None:
                bounds = [_int_text(index.lower), _int_text(index.upper)]
                return None if None in bounds else f"{base}[{bounds[0]}:{bounds[1]}]"
            number = _int_text(index)
            return None if not number else f"{base}.{number}"
        case _:
            return None


def _int_text(expr: ast.Expr | None) -> str | None:
    """`3` as "3", an absent bound as "", anything else None."""
    if expr is None:
        return ""
    literal = literal_attr(expr)
    if isinstance(literal, IntegerAttr) and literal.type != i1:
        return str(literal.value.data)
    return None


def _not_constant(expr: ast.Expr) -> Diagnostic:
    return Diagnostic.error(
        "TL0134",
        "this expression must be known at compile time",
        expr.span,
        help="use literals, config parameters and arithmetic on them",
    )
