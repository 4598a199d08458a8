"""A few helpers that build `py` ops in order, for the lowerings that write Python.

    b = PyBuilder()
    parser = b.call("argparse.ArgumentParser", description=b.const("Train Net."))
    b.assign("parser", parser)
    b.expr(b.call(b.attr(b.name("parser"), "add_argument"), b.const("--epochs"),
                  type=b.name("int")))
    b.ops    # the ops, in order: expressions before the statements that use them

Each expression helper appends its op and returns its value; a statement helper
appends the statement. The printer (backends/python_printer.py) inlines each
single-use value into the statement that uses it.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f64, i1, i64
from xdsl.ir import Attribute, Operation, SSAValue

from tensorloom.dialects import py

Literal = int | float | str | bool | None
# A plan's setting as a Python value: `(0.9, 0.999)`, `{"seq_len": 64, "sizes": [1, 2]}`.
Value = Literal | tuple["Value", ...] | list["Value"] | dict[str, "Value"]


class PyBuilder:
    """Appends `py` ops to `ops`; see the module docstring."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def stmt(self, op: Operation) -> None:
        self.ops.append(op)

    # --- expressions

    def name(self, id: str) -> SSAValue:
        return self.add(py.NameOp(id))

    def const(self, value: Literal) -> SSAValue:
        return self.add(py.ConstantOp(literal_attr(value)))

    def value(self, value: Value | SSAValue) -> SSAValue:
        """A literal (a tuple, list or str-keyed dict of them too) as a value; a value as it is."""
        if isinstance(value, SSAValue):
            return value
        if isinstance(value, tuple):
            return self.add(py.TupleOp([self.value(v) for v in value]))
        if isinstance(value, list):
            return self.add(py.ListOp([self.value(v) for v in value]))
        if isinstance(value, dict):
            return self.add(py.DictOp([(self.const(k), self.value(v)) for k, v in value.items()]))
        return self.const(value)

    def attr(self, value: SSAValue, name: str) -> SSAValue:
        return self.add(py.AttributeOp(value, name))

    def path(self, root: str, *attrs: str) -> SSAValue:
        """`trainer.ctx.device`: a name and its attributes."""
        value = self.name(root)
        for attr in attrs:
            value = self.attr(value, attr)
        return value

    def call(
        self,
        callee: str | SSAValue,
        *args: SSAValue,
        **kwargs: SSAValue,
    ) -> SSAValue:
        return self.call_with(callee, [("", a) for a in args] + list(kwargs.items()))

    def call_with(self, callee: str | SSAValue, args: list[tuple[str, SSAValue]]) -> SSAValue:
        """A call of (keyword, value) arguments: "" for a positional one, "*" or "**" to
        unpack (`save(path, **checkpoint_state(trainer))`)."""
        function = self.name(callee) if isinstance(callee, str) else callee
        return self.add(py.CallOp(function, [v for _, v in args], [k for k, _ in args]))

    def method(self, value: SSAValue, name: str, *args: SSAValue, **kwargs: SSAValue) -> SSAValue:
        """`value.name(args)`."""
        return self.call(self.attr(value, name), *args, **kwargs)

    def subscript(self, value: SSAValue, *indices: SSAValue) -> SSAValue:
        return self.add(py.SubscriptOp(value, list(indices)))

    def binop(self, operator: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.add(py.BinOp(operator, lhs, rhs))

    def compare(self, lhs: SSAValue, operator: str, rhs: SSAValue) -> SSAValue:
        return self.add(py.CompareOp(operator, [lhs, rhs]))

    def not_(self, value: SSAValue) -> SSAValue:
        return self.add(py.UnaryOp("not", value))

    def fstring(self, template: str, *values: SSAValue) -> SSAValue:
        """`f"epoch {epoch}"` of `fstring("epoch {}", epoch)`."""
        return self.add(py.FStringOp(template, list(values)))

    def tuple_of(self, *elements: SSAValue) -> SSAValue:
        return self.add(py.TupleOp(list(elements)))

    def is_set(self, value: SSAValue) -> SSAValue:
        """`value is not None`."""
        return self.compare(value, "is not", self.const(None))

    # --- annotations: a type given as a string is a name

    def type_(self, kind: str | SSAValue) -> SSAValue:
        return self.name(kind) if isinstance(kind, str) else kind

    def optional(self, kind: str | SSAValue) -> SSAValue:
        """`kind | None`."""
        return self.binop("|", self.type_(kind), self.const(None))

    def generic(self, base: str, *params: str | SSAValue) -> SSAValue:
        """`dict[str, Any]` of `generic("dict", "str", "Any")`."""
        return self.subscript(self.name(base), *(self.type_(p) for p in params))

    # --- statements

    def comment(self, text: str) -> None:
        self.stmt(py.CommentOp(text))

    def expr(self, value: SSAValue) -> None:
        self.stmt(py.ExprOp(value))

    def assign(
        self,
        target: str | SSAValue,
        value: SSAValue | None,
        *,
        annotation: SSAValue | None = None,
        comment: str | None = None,
    ) -> None:
        """`target: annotation = value  # comment` (each but the target optional)."""
        target = self.name(target) if isinstance(target, str) else target
        self.stmt(py.AssignOp(target, value, annotation=annotation, comment=comment))

    def def_(
        self,
        name: str,
        params: Sequence[tuple[str, str | SSAValue]],
        body: PyBuilder,
        returns: str | SSAValue | None,
        defaults: dict[str, SSAValue] | None = None,
        decorators: Sequence[SSAValue] = (),
    ) -> None:
        """`def name(p: T, ...) -> R:` with `body`'s ops. A type given as a string is a name
        (`"Trainer"`; `""`: no annotation), `returns=None` is `-> None`."""
        annotations = {param: self.type_(kind) for param, kind in params if kind != ""}
        result = self.const(None) if returns is None else self.type_(returns)
        self.stmt(py.DefOp(name, [p for p, _ in params], body.ops, annotations=annotations,
                           returns=result, defaults=defaults,
                           decorators=list(decorators)))  # fmt: skip

    def ret(self, value: SSAValue | None = None) -> None:
        self.stmt(py.ReturnOp([value] if value is not None else []))

    def if_(self, condition: SSAValue, then: PyBuilder, orelse: PyBuilder | None = None) -> None:
        self.stmt(py.IfOp(condition, then.ops, orelse.ops if orelse is not None else []))


def literal_attr(value: Literal) -> Attribute:
    """The `py.constant` attribute of a Python literal."""
    if value is None:
        return py.NoneAttr()
    if isinstance(value, bool):
        return IntegerAttr(int(value), i1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    return StringAttr(value)
