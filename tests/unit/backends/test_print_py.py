"""The py dialect through the printer: IR built with the op constructors (as a lowering
builds it), printed, compared with the expected text, and executed."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Operation, SSAValue

from tensorloom.backends.python_printer import print_python
from tensorloom.dialects import py


class Body:
    """Appends ops to a list; each helper returns the op's result."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def name(self, id: str) -> SSAValue:
        return self.add(py.NameOp(id))

    def int(self, value: int) -> SSAValue:
        return self.add(py.ConstantOp(IntegerAttr(value, i64)))

    def str(self, value: str) -> SSAValue:
        return self.add(py.ConstantOp(StringAttr(value)))

    def call(self, callee: str | SSAValue, *args: SSAValue, **kwargs: SSAValue) -> SSAValue:
        function = self.name(callee) if isinstance(callee, str) else callee
        names = [""] * len(args) + list(kwargs)
        return self.add(py.CallOp(function, [*args, *kwargs.values()], names))

    def stmt(self, op: Operation) -> None:
        self.ops.append(op)


def program(ops: Sequence[Operation]) -> str:
    return print_python(ModuleOp([py.ModuleOp(list(ops))]))


def run(text: str) -> dict[str, object]:
    scope: dict[str, object] = {}
    exec(compile(text, "<printed>", "exec"), scope)
    return scope


def test_name_based_loop_and_ssa_expressions() -> None:
    # def total(xs, *, scale=2):
    #     """Sums xs, scaled."""
    #     s = 0
    #     for x in xs:
    #         s += x * scale
    #     return s + 1
    top = Body()
    two = top.int(2)
    total = py.DefOp("total", ["xs", ("scale", "kw")], defaults={"scale": two})
    xs, scale = total.body.block.args
    body = Body()
    body.stmt(py.ExprOp(body.str("Sums xs, scaled.")))
    body.stmt(py.AssignOp(body.name("s"), body.int(0)))
    loop = py.ForOp(xs)
    loop.body.block.args[0].name_hint = "x"
    inner = Body()
    product = inner.add(py.BinOp("*", loop.body.block.args[0], scale))
    inner.stmt(py.AugAssignOp("+=", inner.name("s"), product))
    loop.body.block.add_ops(inner.ops)
    body.stmt(loop)
    result = body.add(py.BinOp("+", body.name("s"), body.int(1)))
    body.stmt(py.ReturnOp([result]))
    total.body.block.add_ops(body.ops)
    text = program([*top.ops, total])
    assert text.endswith(
        "def total(xs, *, scale=2):\n"
        '    """Sums xs, scaled."""\n'
        "    s = 0\n"
        "    for x in xs:\n"
        "        s += x * scale\n"
        "    return s + 1\n"
    )
    assert run(text)["total"]([1, 2, 3]) == 13  # type: ignore[operator]


def test_class_try_with_while_fstring_lambda_comprehension() -> None:
    top = Body()
    top.stmt(py.FromImportOp("dataclasses", ["dataclass"]))
    counter = py.ClassOp("Counter", decorators=[top.name("dataclass")])
    fields = Body()
    fields.stmt(py.AssignOp(fields.name("step"), fields.int(0), fields.name("int")))
    counter.body.block.add_ops(fields.ops)
    top.stmt(counter)

    f = py.DefOp("describe", ["items"])
    (items,) = f.body.block.args
    b = Body()
    # c = Counter(); while c.step < 3: c.step += 1
    b.stmt(py.AssignOp(b.name("c"), b.call("Counter")))
    cond = Body()
    step = cond.add(py.AttributeOp(cond.name("c"), "step"))
    test = cond.add(py.CompareOp("<", [step, cond.int(3)]))
    cond.stmt(py.ConditionOp(test))
    grow = Body()
    grow.stmt(py.AugAssignOp("+=", grow.add(py.AttributeOp(grow.name("c"), "step")), grow.int(1)))
    b.stmt(py.WhileOp(cond.ops, grow.ops))
    # squares = [v * v for v in items if v > 1]
    comp = py.ComprehensionOp("list", items)
    v = comp.body.block.args[0]
    v.name_hint = "v"
    square = py.BinOp("*", v, v)
    one = py.ConstantOp(IntegerAttr(1, i64))
    keep = py.CompareOp(">", [v, one.result])
    comp.body.block.add_ops([square, one, keep, py.YieldOp([square.result, keep.result])])
    b.stmt(py.AssignOp(b.name("squares"), b.add(comp)))
    # double = lambda y: y * 2
    lam = py.LambdaOp(["y"])
    (y,) = lam.body.block.args
    twice = py.BinOp("*", y, b.int(2))
    lam.body.block.add_ops([twice, py.ReturnOp([twice.result])])
    b.stmt(py.AssignOp(b.name("double"), b.add(lam)))
    # try: out = {"n": double(c.step), **{}} except KeyError as e: raise ValueError() from e
    trial = Body()
    n = trial.call(trial.name("double"), trial.add(py.AttributeOp(trial.name("c"), "step")))
    mapping = trial.add(py.DictOp([(trial.str("n"), n), (None, trial.add(py.DictOp()))]))
    trial.stmt(py.AssignOp(trial.name("out"), mapping))
    handler = py.single_block(args=1)
    handler.block.args[0].name_hint = "e"
    error = py.CallOp(py.NameOp("ValueError").result)
    handler.block.add_ops(
        [error.callee.owner, error, py.RaiseOp(error.result, handler.block.args[0])]  # type: ignore[list-item]
    )
    b.stmt(py.TryOp(trial.ops, [(b.name("KeyError"), handler)]))
    # with open(...) is not needed: a context manager from contextlib
    manager = b.call("contextlib.nullcontext", b.str("ctx"))
    scope = py.WithOp(manager, binds=True)
    scope.body.block.args[0].name_hint = "label"
    inner = Body()
    inner.stmt(py.AssignOp(inner.name("tag"), scope.body.block.args[0]))
    scope.body.block.add_ops(inner.ops)
    b.stmt(scope)
    text_value = b.add(
        py.FStringOp(
            'step {} of "{}": {!r} {:.1f} {{x}}',
            [
                b.name("c.step"),
                b.name("tag"),
                b.name("squares"),
                b.add(py.SubscriptOp(b.name("out"), [b.str("n")])),
            ],
        )
    )
    b.stmt(py.ReturnOp([text_value]))
    f.body.block.add_ops(b.ops)
    source = program([py.ImportOp("contextlib"), *top.ops, f])
    assert "@dataclass\nclass Counter:\n    step: int = 0\n" in source
    assert "    while c.step < 3:\n        c.step += 1\n" in source
    assert "    squares = [v * v for v in items if v > 1]\n" in source
    assert "    double = lambda y: y * 2\n" in source
    assert '        out = {"n": double(c.step), **{}}\n' in source
    assert "    except KeyError as e:\n        raise ValueError() from e\n" in source
    assert '    with contextlib.nullcontext("ctx") as label:\n        tag = label\n' in source
    # the field holds a quote-free subscript, so the f-string keeps its double quotes
    assert 'return f\'step {c.step} of "{tag}": {squares!r} {out["n"]:.1f} {{x}}\'' in source
    assert run(source)["describe"]([1, 2, 3]) == 'step 3 of "ctx": [4, 9] 6.0 {x}'  # type: ignore[operator]


def test_tuple_targets_slices_and_elif() -> None:
    f = py.DefOp("pick", ["pairs", "k"])
    pairs, k = f.body.block.args
    b = Body()
    first = b.add(py.SubscriptOp(pairs, [b.int(0)]))
    target = b.add(py.TupleOp([b.name("a"), b.name("rest")]))
    b.stmt(py.AssignOp(target, first))
    tail = b.add(py.SubscriptOp(pairs, [b.add(py.SliceOp(b.int(1), None, b.int(2)))]))
    b.stmt(py.AssignOp(b.name("odd"), tail))
    is_zero = b.add(py.CompareOp("==", [k, b.int(0)]))
    then = Body()
    then.stmt(py.ReturnOp([then.name("a")]))
    is_one = py.CompareOp("==", [k, py.ConstantOp(IntegerAttr(1, i64)).result])
    inner_then = Body()
    inner_then.stmt(py.ReturnOp([inner_then.name("rest")]))
    inner_else = Body()
    inner_else.stmt(py.ReturnOp([inner_else.name("odd")]))
    nested = py.IfOp(is_one.result, inner_then.ops, inner_else.ops)
    one_const = is_one.operands[1].owner
    b.stmt(py.IfOp(is_zero, then.ops, [one_const, is_one, nested]))  # type: ignore[list-item]
    f.body.block.add_ops(b.ops)
    source = program([f])
    assert source.endswith(
        "def pick(pairs, k):\n"
        "    a, rest = pairs[0]\n"
        "    odd = pairs[1::2]\n"
        "    if k == 0:\n"
        "        return a\n"
        "    elif k == 1:\n"
        "        return rest\n"
        "    else:\n"
        "        return odd\n"
    )
    pick = run(source)["pick"]
    assert [pick([(1, 2), 3, 4, 5], k) for k in (0, 1, 2)] == [1, 2, [3, 5]]  # type: ignore[operator]


def test_record_class_wrapped_call_and_sole_generator() -> None:
    from tensorloom.passes.support.py_builder import PyBuilder

    # @dataclass class Run: a docstring, a blank line (PEP 257), then the fields together,
    # a note on a comment line above its field
    record = PyBuilder()
    record.expr(record.const("One run."))
    record.stmt(py.AssignOp(record.name("name"), None, annotation=record.name("str")))
    record.comment("steps so far")
    record.stmt(py.AssignOp(record.name("step"), record.const(0), annotation=record.name("int")))
    top = PyBuilder()
    top.stmt(py.FromImportOp("dataclasses", ["dataclass"]))
    top.stmt(py.ClassOp("Run", body=record.ops, decorators=[top.name("dataclass")]))
    # a call too wide for one line whose arguments are calls and operators of names wraps
    # (rather than naming its arguments); a generator, the one argument, keeps no brackets
    body = PyBuilder()
    sizes = py.ComprehensionOp("generator", body.name("items"))
    (item,) = sizes.body.block.args
    item.name_hint = "item"
    each = PyBuilder()
    each.stmt(py.YieldOp([each.call("len", item)]))
    sizes.body.block.add_ops(each.ops)
    total = body.call("sum", body.add(sizes))
    half = body.binop("//", body.call("len", body.name("items")), body.const(2))
    label = body.add(py.IfExpOp(body.name("verbose"), body.const("long"), body.const("short")))
    least = body.call("min", body.name("items"))
    title = body.const("a report of the items, of a good length")
    made = body.call("make_report", title, total=total, half=half, label=label, first=least)
    body.ret(made)
    top.def_("report", [("items", "list"), ("verbose", "bool")], body, "dict")
    source = program(top.ops)
    fields = '    """One run."""\n\n    name: str\n    # steps so far\n    step: int = 0\n'
    assert fields in source
    assert (
        '    return make_report("a report of the items, of a good length",\n'
        "                       total=sum(len(item) for item in items), half=len(items) // 2,\n"
        '                       label="long" if verbose else "short", first=min(items))\n'
    ) in source
    scope = run(source + "\ndef make_report(title, **parts):\n    return parts\n")
    parts = scope["report"](["ab", "c", "def"], False)  # type: ignore[operator]
    assert parts == {"total": 6, "half": 1, "label": "short", "first": "ab"}
    assert scope["Run"]("x").step == 0  # type: ignore[operator]


def test_dict_comprehension_and_displays_too_wide_for_one_line() -> None:
    f = py.DefOp("summary", ["items"])
    (items,) = f.body.block.args
    b = Body()
    # kept = {f"k_{key}": value for key, value in items.items() if value is not None}
    pairs = b.call(b.add(py.AttributeOp(items, "items")))
    kept = py.ComprehensionOp("dict", pairs, targets=2)
    key, value = kept.body.block.args
    key.name_hint, value.name_hint = "key", "value"
    renamed = py.FStringOp("k_{}", [key])
    none = py.ConstantOp(py.NoneAttr())
    is_set = py.CompareOp("is not", [value, none.result])
    element = py.YieldOp([renamed.result, value, is_set.result])
    kept.body.block.add_ops([renamed, none, is_set, element])
    b.stmt(py.AssignOp(b.name("kept"), b.add(kept)))
    # one entry a line: the display is too wide for one
    long = [b.str(f"a fairly long string number {i}") for i in range(4)]
    b.stmt(py.AssignOp(b.name("names"), b.add(py.ListOp(long))))
    entries = [(b.str(f"entry_{i}"), b.call("len", b.name("names"))) for i in range(5)]
    mapping = b.add(py.DictOp([*entries, (None, b.name("kept"))]))
    b.stmt(py.ReturnOp([mapping]))
    f.body.block.add_ops(b.ops)
    source = program([f])
    kept_line = 'kept = {f"k_{key}": value for key, value in items.items() if value is not None}'
    assert f"    {kept_line}\n" in source
    assert '    names = [\n        "a fairly long string number 0",\n' in source
    assert '    return {\n        "entry_0": len(names),\n' in source
    assert '        **kept,\n    }\n' in source
    result = run(source)["summary"]({"a": 1, "b": None})  # type: ignore[operator]
    assert result == {**{f"entry_{i}": 4 for i in range(5)}, "k_a": 1}


def test_hanging_call_and_an_argument_too_wide_for_a_line() -> None:
    f = py.DefOp("report", ["items"])
    (items,) = f.body.block.args
    b = Body()
    # a keyword argument wider than a line: one argument a line, each with its comma
    wide = b.str("w" * 120)
    made = b.call("make_report", items, title=wide, count=b.int(3))
    b.stmt(py.AssignOp(b.name("report"), made))
    # too wide aligned under its bracket, fits on one indented line: black's hanging form,
    # no comma after the last argument
    parts = [b.str(f"part {i} of the report") for i in range(3)]
    again = b.call("make_report_for_everyone_who_asked_for_it", *parts, count=b.int(2))
    b.stmt(py.AssignOp(b.name("the_report_every_reader_of_it_wanted"), again))
    b.stmt(py.ReturnOp([b.name("the_report_every_reader_of_it_wanted")]))
    f.body.block.add_ops(b.ops)
    source = program([f])
    assert '    report = make_report(\n        items,\n        title="www' in source
    assert '",\n        count=3,\n    )\n' in source
    assert (
        "    the_report_every_reader_of_it_wanted = make_report_for_everyone_who_asked_for_it(\n"
        '        "part 0 of the report", "part 1 of the report", "part 2 of the report", count=2\n'
        "    )\n"
    ) in source
    helpers = (
        "\n\ndef make_report_for_everyone_who_asked_for_it(*parts, **named):\n"
        "    return parts, named\n\n\ndef make_report(*parts, **named):\n    return 0\n"
    )
    scope = run(source + helpers)
    parts_, named = scope["report"]([1, 2])  # type: ignore[operator,misc]
    assert parts_ == ("part 0 of the report", "part 1 of the report", "part 2 of the report")
    assert named == {"count": 2}
