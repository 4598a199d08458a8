"""The Python printer: names, inlining order, precedence, imports, determinism.

Every test runs the printed Python and checks what it computes, or parses it
with `ast` to check its structure.
"""

from __future__ import annotations

import ast
import builtins
import keyword
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue

from tensorloom.backends.python_printer import Import, NameScope, format_imports, print_python
from tensorloom.dialects import py
from tensorloom.dialects import torch as t

# ------------------------------------------------------------------ helpers


def function(
    name: str, params: Sequence[str], build: Callable[[list[SSAValue]], list[Operation]]
) -> ModuleOp:
    """A module holding `py.def @name(params)` whose body `build` makes."""
    op = py.DefOp(name, params)
    block = op.body.block
    block.add_ops(build(list(block.args)))
    return ModuleOp([t.ScriptOp([op], "test.tl")])


def run(module: ModuleOp, name: str, *args: Any, env: dict[str, Any] | None = None) -> Any:
    namespace: dict[str, Any] = dict(env or {})
    exec(compile(print_python(module), "<printed>", "exec"), namespace)
    return namespace[name](*args)


def const(value: int) -> py.ConstantOp:
    return py.ConstantOp(IntegerAttr(value, i64))


def binop(operator: str, lhs: SSAValue, rhs: SSAValue) -> Operation:
    if operator in py.COMPARISON_OPERATORS:
        return py.CompareOp(operator, [lhs, rhs])
    return py.BinOp(operator, lhs, rhs)


def call(callee: str, args: Sequence[SSAValue]) -> tuple[list[Operation], SSAValue]:
    """`callee(args)`: its ops, and its value."""
    name = py.NameOp(callee)
    made = py.CallOp(name.result, args)
    return [name, made], made.result


def hinted(op: Operation, hint: str) -> Operation:
    op.results[0].name_hint = hint
    return op


def assigned_names(module: ModuleOp) -> list[str]:
    tree = ast.parse(print_python(module))
    return [
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]


# -------------------------------------------------------------------- names

RESERVED = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins))


@given(st.lists(st.sampled_from([*sorted(RESERVED)[:40], "x", "h", "0", "a.b", ""]), max_size=30))
def test_fresh_names_are_identifiers_never_reserved_never_repeated(hints: list[str]) -> None:
    scope = NameScope()
    names = [scope.fresh(hint) for hint in hints]
    assert len(set(names)) == len(names)
    for name in names:
        assert name.isidentifier()
        assert name not in RESERVED


def test_child_scope_avoids_the_parents_names() -> None:
    parent = NameScope()
    parent.reserve("F")
    child = NameScope(parent)
    assert child.fresh("F") == "F_1"


def test_hints_that_are_keywords_or_builtins_get_other_names() -> None:
    def body(args: list[SSAValue]) -> list[Operation]:
        one = const(1)
        a = hinted(binop("+", args[0], one.result), "class")
        b = hinted(binop("*", a.results[0], args[0]), "list")
        c = hinted(binop("-", b.results[0], a.results[0]), "print")
        return [one, a, b, c, py.ReturnOp([c.results[0], a.results[0]])]

    module = function("f", ["x"], body)
    assert run(module, "f", 3) == ((3 + 1) * 3 - 4, 4)
    names = assigned_names(module)
    assert names and not set(names) & RESERVED


def test_a_dead_name_is_reused_and_a_live_one_is_not() -> None:
    """`x = x + 1` when the old `x` is dead; a fresh name while it is still read."""

    def body(args: list[SSAValue]) -> list[Operation]:
        one = const(1)
        x1 = hinted(binop("+", args[0], one.result), "x")  # old x still read below
        x2 = hinted(binop("*", x1.results[0], args[0]), "x")  # last read of the param
        x3 = hinted(binop("-", x2.results[0], one.result), "x")
        return [one, x1, x2, x3, py.ReturnOp([x3.results[0]])]

    module = function("f", ["x"], body)
    assert run(module, "f", 5) == (5 + 1) * 5 - 1
    assert assigned_names(module) == ["x_1", "x", "x"]


def test_module_level_names_are_not_shadowed() -> None:
    """A local never takes the name of a class, function or import of the file."""
    helper = t.RawOp("def scale(v):\n    return 2 * v\n")
    f = py.DefOp("f", ["x"])
    (x,) = f.body.block.args
    first_ops, first = call("scale", [x])
    again_ops, again = call("scale", [first])
    first.name_hint, again.name_hint = "scale", "torch"
    f.body.block.add_ops([*first_ops, *again_ops, py.ReturnOp([again, first])])
    module = ModuleOp([t.ScriptOp([py.ImportOp("math"), helper, f])])
    assert run(module, "f", 3) == (12, 6)
    assert not {"scale", "torch", "math"} & set(assigned_names(module))


# ---------------------------------------------------------- inlining order


def test_inlining_keeps_the_order_of_calls_with_effects() -> None:
    """`record(b)` comes before `record(a)` in the IR; Python must call them so too."""

    def body(args: list[SSAValue]) -> list[Operation]:
        b_ops, b = call("record", [args[1]])
        a_ops, a = call("record", [args[0]])
        pair_ops, pair = call("pair", [a, b])
        return [*b_ops, *a_ops, *pair_ops, py.ReturnOp([pair])]

    calls: list[str] = []

    def record(v: str) -> str:
        calls.append(v)
        return v

    env = {"record": record, "pair": lambda p, q: p + q}
    assert run(function("f", ["a", "b"], body), "f", "A", "B", env=env) == "AB"
    assert calls == ["B", "A"]


def test_single_use_values_inline_into_one_expression() -> None:
    def body(args: list[SSAValue]) -> list[Operation]:
        one = const(1)
        a = binop("+", args[0], one.result)
        b_ops, b = call("abs", [a.results[0]])
        c = py.UnaryOp("-", b)
        return [one, a, *b_ops, c, py.ReturnOp([c.result])]

    module = function("f", ["x"], body)
    assert run(module, "f", -5) == -4
    assert assigned_names(module) == []


def test_short_circuit_right_sides_are_not_evaluated_early() -> None:
    """`a and g(b)`: the call on the right must not run when `a` is false."""

    def body(args: list[SSAValue]) -> list[Operation]:
        boom_ops, boom = call("boom", [args[1]])
        both = binop("and", args[0], boom)
        return [*boom_ops, both, py.ReturnOp([both.results[0]])]

    called: list[int] = []
    env = {"boom": lambda v: called.append(v) or v}
    # The IR calls `boom` before the `and`, unconditionally; so must Python.
    assert run(function("f", ["a", "b"], body), "f", False, 7, env=env) is False
    assert called == [7]


# -------------------------------------------------------------- precedence

OPERATORS = ["+", "-", "*", "<", "=="]


def trees(depth: int) -> st.SearchStrategy[Any]:
    leaf = st.integers(min_value=-3, max_value=3)
    if depth == 0:
        return leaf
    inner = trees(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(OPERATORS), inner, inner),
        st.tuples(st.just("neg"), inner),
        st.tuples(st.just("**"), inner, st.integers(min_value=0, max_value=2)),
    )


def evaluate(tree: Any) -> Any:
    if isinstance(tree, int):
        return tree
    if tree[0] == "neg":
        return -evaluate(tree[1])
    left, right = evaluate(tree[1]), evaluate(tree[2])
    table: dict[str, Callable[[Any, Any], Any]] = {
        "+": lambda a, b: a + b,
        "-": lambda a, b: a - b,
        "*": lambda a, b: a * b,
        "<": lambda a, b: a < b,
        "==": lambda a, b: a == b,
        "**": lambda a, b: a**b,
    }
    return table[tree[0]](left, right)


def build(tree: Any, ops: list[Operation]) -> SSAValue:
    if isinstance(tree, int):
        ops.append(leaf := const(tree))
        return leaf.result
    if tree[0] == "neg":
        operand = build(tree[1], ops)
        ops.append(neg := py.UnaryOp("-", operand))
        return neg.result
    lhs = build(tree[1], ops)
    rhs = build(tree[2], ops)
    ops.append(binary := binop(tree[0], lhs, rhs))
    return binary.results[0]


@settings(max_examples=60, deadline=None)
@given(trees(4))
def test_printed_expressions_keep_the_tree_s_meaning(tree: Any) -> None:
    def body(_: list[SSAValue]) -> list[Operation]:
        ops: list[Operation] = []
        result = build(tree, ops)
        return [*ops, py.ReturnOp([result])]

    assert run(function("f", [], body), "f") == evaluate(tree)


# -------------------------------------------------- indexing and containers


def test_indexing_slices_and_containers() -> None:
    def body(args: list[SSAValue]) -> list[Operation]:
        one, minus = const(1), const(-1)
        sl = py.SliceOp(one.result)
        item = py.SubscriptOp(args[0], [sl.result, minus.result])
        full = py.SliceOp(step=minus.result)
        rev = py.SubscriptOp(args[0], [full.result])
        pair = py.TupleOp([item.result])
        lst = py.ListOp([pair.result, rev.result])
        return [one, minus, sl, item, full, rev, pair, lst, py.ReturnOp([lst.result])]

    class Grid:
        def __getitem__(self, key: Any) -> Any:
            return key

    result = run(function("f", ["g"], body), "f", Grid())
    assert result == [((slice(1, None, None), -1),), slice(None, None, -1)]


# --------------------------------------------------------- imports, files


def test_imports_are_sorted_in_sections() -> None:
    imports = {
        Import("torch"),
        Import("torch.nn.functional", alias="F"),
        Import("torch", name="nn"),
        Import("argparse"),
        Import("pathlib", name="Path"),
        Import("__future__", name="annotations"),
    }
    assert format_imports(imports) == [
        "from __future__ import annotations",
        "",
        "import argparse",
        "from pathlib import Path",
        "",
        "import torch",
        "import torch.nn.functional as F",
        "from torch import nn",
    ]


def self_attr(name: str) -> list[Operation]:
    self_name = py.NameOp("self")
    return [self_name, py.AttributeOp(self_name.result, name)]


def test_output_is_deterministic_and_valid_python() -> None:
    def make() -> ModuleOp:
        four = py.NameOp("width")
        lin = call("Lin", [four.result])
        cls = t.ModuleClassOp(
            "Net", [("width", (width := const(4)).result)],
            [four, *lin[0], t.SubmoduleOp("fc", lin[1])],
        )  # fmt: skip
        method = py.DefOp("forward", ["self", "x"])
        (_, x) = method.body.block.args
        fc = self_attr("fc")
        forward = py.CallOp(fc[-1].results[0], [x])
        p = py.ConstantOp(py.NoneAttr())
        method.body.block.add_ops([*fc, forward, p, py.ReturnOp([forward.result])])
        cls.body.block.add_op(method)
        ops = [py.ImportOp("torch"), width, cls, t.MainOp()]
        return ModuleOp([t.ScriptOp(ops, "net.tl")])

    first, second = print_python(make()), print_python(make())
    assert first == second
    tree = ast.parse(first)
    # `import torch` is left out: nothing in the file reads `torch` (`nn` comes from torch)
    assert [type(node).__name__ for node in tree.body] == ["ImportFrom", "ClassDef", "If"]
    assert first.splitlines()[0].startswith("# Generated by TensorLoom")
    assert "net.tl" in first.splitlines()[0]
    assert "    def __init__(self, width=4):\n        super().__init__()\n" in first
    assert "        self.fc = Lin(width)\n\n    def forward(self, x):\n" in first
    assert "        return self.fc(x)\n" in first


def test_a_module_class_runs_like_a_hand_written_one() -> None:
    one, none = const(1), py.ConstantOp(py.NoneAttr())
    two = const(2)
    doubled = binop("*", (start := py.NameOp("start")).result, two.result)
    total = binop("+", (start2 := py.NameOp("start")).result, (step := py.NameOp("step")).result)
    cls = t.ModuleClassOp(
        "Counter",
        [("start", one.result), ("step", none.result)],
        [start, doubled, t.ParamDefaultOp("step", doubled.results[0]),
         start2, step, total, t.FieldOp("total", total.results[0])],
    )  # fmt: skip
    method = py.DefOp("forward", ["self", "x"])
    (_, x) = method.body.block.args
    read = self_attr("total")
    add = binop("+", x, read[-1].results[0])
    method.body.block.add_ops([*read, add, py.ReturnOp([add.results[0]])])
    cls.body.block.add_op(method)

    class Base:
        def __init__(self) -> None:
            pass

    namespace: dict[str, Any] = {"nn": type("nn", (), {"Module": Base})}
    module = ModuleOp([t.ScriptOp([one, none, two, cls])])
    text = print_python(module)
    assert "    def __init__(self, start=1, step=None):\n" in text
    assert "        if step is None:\n            step = start * 2\n" in text
    exec(compile(text, "<printed>", "exec"), namespace)
    assert namespace["Counter"]().forward(10) == 10 + 1 + 2
    assert namespace["Counter"](start=3, step=1).forward(0) == 4
