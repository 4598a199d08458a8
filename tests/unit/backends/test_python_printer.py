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
from tensorloom.dialects import torch as t

# ------------------------------------------------------------------ helpers


def function(
    name: str, params: Sequence[str], build: Callable[[list[SSAValue]], list[Operation]]
) -> ModuleOp:
    """A module holding `torch.def @name(params)` whose body `build` makes."""
    op = t.DefOp(name, params)
    block = op.body.block
    block.add_ops(build(list(block.args)))
    return ModuleOp([t.ScriptOp([op], "test.tl")])


def run(module: ModuleOp, name: str, *args: Any, env: dict[str, Any] | None = None) -> Any:
    namespace: dict[str, Any] = dict(env or {})
    exec(compile(print_python(module), "<printed>", "exec"), namespace)
    return namespace[name](*args)


def const(value: int) -> t.ConstantOp:
    return t.ConstantOp(IntegerAttr(value, i64))


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
        a = hinted(t.BinaryOp("+", args[0], one.result), "class")
        b = hinted(t.BinaryOp("*", a.results[0], args[0]), "list")
        c = hinted(t.BinaryOp("-", b.results[0], a.results[0]), "print")
        return [one, a, b, c, t.ReturnOp([c.results[0], a.results[0]])]

    module = function("f", ["x"], body)
    assert run(module, "f", 3) == ((3 + 1) * 3 - 4, 4)
    names = assigned_names(module)
    assert names and not set(names) & RESERVED


def test_a_dead_name_is_reused_and_a_live_one_is_not() -> None:
    """`x = x + 1` when the old `x` is dead; a fresh name while it is still read."""

    def body(args: list[SSAValue]) -> list[Operation]:
        one = const(1)
        x1 = hinted(t.BinaryOp("+", args[0], one.result), "x")  # old x still read below
        x2 = hinted(t.BinaryOp("*", x1.results[0], args[0]), "x")  # last read of the param
        x3 = hinted(t.BinaryOp("-", x2.results[0], one.result), "x")
        return [one, x1, x2, x3, t.ReturnOp([x3.results[0]])]

    module = function("f", ["x"], body)
    assert run(module, "f", 5) == (5 + 1) * 5 - 1
    assert assigned_names(module) == ["x_1", "x", "x"]


def test_module_level_names_are_not_shadowed() -> None:
    """A local never takes the name of a class, function or import of the file."""
    helper = t.RawOp("def scale(v):\n    return 2 * v\n")
    f = t.DefOp("f", ["x"])
    (x,) = f.body.block.args
    call = hinted(t.CallFunctionOp("scale", [x]), "scale")
    again = hinted(t.CallFunctionOp("scale", [call.results[0]]), "torch")
    f.body.block.add_ops([call, again, t.ReturnOp([again.results[0], call.results[0]])])
    module = ModuleOp([t.ScriptOp([t.ImportOp("math"), helper, f])])
    assert run(module, "f", 3) == (12, 6)
    assert not {"scale", "torch", "math"} & set(assigned_names(module))


# ---------------------------------------------------------- inlining order


def test_inlining_keeps_the_order_of_calls_with_effects() -> None:
    """`record(b)` comes before `record(a)` in the IR; Python must call them so too."""

    def body(args: list[SSAValue]) -> list[Operation]:
        b = t.CallFunctionOp("record", [args[1]])
        a = t.CallFunctionOp("record", [args[0]])
        pair = t.CallFunctionOp("pair", [a.result, b.result])
        return [b, a, pair, t.ReturnOp([pair.result])]

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
        a = t.BinaryOp("+", args[0], one.result)
        b = t.CallFunctionOp("abs", [a.result])
        c = t.UnaryOp("-", b.result)
        return [one, a, b, c, t.ReturnOp([c.result])]

    module = function("f", ["x"], body)
    assert run(module, "f", -5) == -4
    assert assigned_names(module) == []


def test_short_circuit_right_sides_are_not_evaluated_early() -> None:
    """`a and g(b)`: the call on the right must not run when `a` is false."""

    def body(args: list[SSAValue]) -> list[Operation]:
        call = t.CallFunctionOp("boom", [args[1]])
        both = t.BinaryOp("and", args[0], call.result)
        return [call, both, t.ReturnOp([both.result])]

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
        ops.append(neg := t.UnaryOp("-", operand))
        return neg.result
    lhs = build(tree[1], ops)
    rhs = build(tree[2], ops)
    ops.append(binary := t.BinaryOp(tree[0], lhs, rhs))
    return binary.result


@settings(max_examples=60, deadline=None)
@given(trees(4))
def test_printed_expressions_keep_the_tree_s_meaning(tree: Any) -> None:
    def body(_: list[SSAValue]) -> list[Operation]:
        ops: list[Operation] = []
        result = build(tree, ops)
        return [*ops, t.ReturnOp([result])]

    assert run(function("f", [], body), "f") == evaluate(tree)


# -------------------------------------------------- indexing and containers


def test_indexing_slices_and_containers() -> None:
    def body(args: list[SSAValue]) -> list[Operation]:
        none = t.ConstantOp(t.NoneAttr())
        one, minus = const(1), const(-1)
        sl = t.SliceOp(one.result, none.result, none.result)
        item = t.GetItemOp(args[0], [sl.result, minus.result])
        full = t.SliceOp(none.result, none.result, minus.result)
        rev = t.GetItemOp(args[0], [full.result])
        pair = t.TupleOp([item.result])
        lst = t.ListOp([pair.result, rev.result])
        return [none, one, minus, sl, item, full, rev, pair, lst, t.ReturnOp([lst.result])]

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


def test_output_is_deterministic_and_valid_python() -> None:
    def make() -> ModuleOp:
        cls = t.ModuleClassOp("Net", [("width", "4")], [t.SubmoduleOp("fc", "Lin", ["width"])])
        method = t.MethodOp("forward", ["x"])
        (x,) = method.body.block.args
        call = t.CallModuleOp("fc", [x])
        p = t.ConstantOp(t.NoneAttr())
        method.body.block.add_ops([call, p, t.ReturnOp([call.result])])
        cls.body.block.add_op(method)
        return ModuleOp([t.ScriptOp([t.ImportOp("torch"), cls, t.MainOp()], "net.tl")])

    first, second = print_python(make()), print_python(make())
    assert first == second
    tree = ast.parse(first)
    assert [type(node).__name__ for node in tree.body] == ["Import", "ImportFrom", "ClassDef", "If"]
    assert first.splitlines()[0].startswith("# Generated by TensorLoom")
    assert "net.tl" in first.splitlines()[0]


def test_a_module_class_runs_like_a_hand_written_one() -> None:
    cls = t.ModuleClassOp(
        "Counter",
        [("start", "1"), ("step", "None")],
        [t.ParamDefaultOp("step", "start * 2"), t.FieldOp("total", "start + step")],
    )
    method = t.MethodOp("forward", ["x"])
    (x,) = method.body.block.args
    total = t.SelfAttrOp("total")
    add = t.BinaryOp("+", x, total.result)
    method.body.block.add_ops([total, add, t.ReturnOp([add.result])])
    cls.body.block.add_op(method)

    class Base:
        def __init__(self) -> None:
            pass

    namespace: dict[str, Any] = {"nn": type("nn", (), {"Module": Base})}
    module = ModuleOp([t.ScriptOp([cls])])
    exec(compile(print_python(module), "<printed>", "exec"), namespace)
    assert namespace["Counter"]().forward(10) == 10 + 1 + 2
    assert namespace["Counter"](start=3, step=1).forward(0) == 4
