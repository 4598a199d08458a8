"""Parser: the AST of each construct, error recovery, limits and file handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.frontend import ast
from tensorloom.frontend.parser import MAX_NESTING, parse_file, parse_text
from tensorloom.source import SourceMap


def parse(text: str, path: str = "t.tl") -> ast.Module:
    sink = DiagnosticSink()
    module = parse_text(text, path, sink)
    assert not sink.diagnostics, [(d.code, d.message) for d in sink]
    return module


def errors(text: str, path: str = "t.tl") -> list[tuple[str, int, int]]:
    sink = DiagnosticSink()
    parse_text(text, path, sink)
    return [(d.code, d.primary.span.line, d.primary.span.col) for d in sink.sorted()]


def expr(text: str) -> ast.Expr:
    item = parse(f"let v = {text}\n").items[0]
    assert isinstance(item, ast.LetStmt)
    return item.value


def show(node: ast.Expr) -> str:
    """A compact fully-parenthesised rendering, to assert on precedence."""
    match node:
        case ast.Binary(op=op, left=left, right=right):
            return f"({show(left)} {op} {show(right)})"
        case ast.Unary(op=op, operand=operand):
            return f"({op} {show(operand)})"
        case ast.Pipe(value=value, stage=stage):
            return f"({show(value)} |> {show(stage)})"
        case ast.Name(id=name):
            return name
        case ast.IntLit(value=value) | ast.FloatLit(value=value):
            return str(value)
        case ast.Call(func=func, args=args, kwargs=kwargs):
            parts = [show(a) for a in args] + [f"{k.name}={show(k.value)}" for k in kwargs]
            return f"{show(func)}({', '.join(parts)})"
        case ast.Attribute(value=value, attr=attr):
            return f"{show(value)}.{attr}"
        case _:
            return type(node).__name__


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("1 + 2 * 3", "(1 + (2 * 3))"),
        ("1 - 2 - 3", "((1 - 2) - 3)"),
        ("2 ** 3 ** 2", "(2 ** (3 ** 2))"),
        ("-x ** 2", "(- (x ** 2))"),
        ("2 ** -1", "(2 ** -1)"),
        ("a @ b + c", "((a @ b) + c)"),
        ("a < b and not c or d", "(((a < b) and (not c)) or d)"),
        ("a or b |> f", "((a or b) |> f)"),
        ("x + 1 |> relu |> self.fc(2)", "(((x + 1) |> relu) |> self.fc(2))"),
        ("f(1, k=2)", "f(1, k=2)"),
        ("-(3)", "-3"),
        ("+x", "(+ x)"),
        ("a % b / c", "((a % b) / c)"),
    ],
)
def test_precedence(text: str, tree: str) -> None:
    assert show(expr(text)) == tree


def test_negative_number_is_one_literal() -> None:
    value = expr("-1.5")
    assert isinstance(value, ast.FloatLit) and value.value == -1.5
    assert (value.span.col, value.span.end_col) == (9, 13)


def test_indexing_and_slices() -> None:
    index = expr("x[:, 0, ..., 1:3, ::2, -1]")
    assert isinstance(index, ast.Index)
    a, b, c, d, e, f = index.indices
    assert isinstance(a, ast.Slice) and (a.lower, a.upper, a.step) == (None, None, None)
    assert isinstance(b, ast.IntLit) and b.value == 0
    assert isinstance(c, ast.EllipsisLit)
    assert isinstance(d, ast.Slice) and isinstance(d.lower, ast.IntLit) and d.step is None
    assert isinstance(e, ast.Slice) and e.lower is None and isinstance(e.step, ast.IntLit)
    assert isinstance(f, ast.IntLit) and f.value == -1


def test_lists_tuples_and_grouping() -> None:
    assert isinstance(expr("[1, 2,]"), ast.ListExpr)
    assert isinstance(expr("(1)"), ast.IntLit)
    single = expr("(1,)")
    assert isinstance(single, ast.TupleExpr) and len(single.elts) == 1
    assert isinstance(expr("()"), ast.TupleExpr)
    assert isinstance(expr("[]"), ast.ListExpr)


def test_literals() -> None:
    values = expr('["s\\n", true, false, none, 3, 1e-4]')
    assert isinstance(values, ast.ListExpr)
    kinds = [type(e) for e in values.elts]
    assert kinds == [ast.StrLit, ast.BoolLit, ast.BoolLit, ast.NoneLit, ast.IntLit, ast.FloatLit]


def test_imports() -> None:
    module = parse(
        'import blocks.resnet.nml as Res\nimport transformer.nml\nimport "../x.nml" as X\n'
    )
    first, second, third = module.imports()
    assert (first.path, first.alias) == ("blocks/resnet.nml", "Res")
    assert (first.path_span.col, first.path_span.end_col) == (8, 25)
    assert (second.path, second.alias, second.alias_span) == ("transformer.nml", None, None)
    assert (third.path, third.alias) == ("../x.nml", "X")


def test_model_with_layers_and_typed_method() -> None:
    module = parse(
        "model Net:\n"
        "    layer fc = Linear(784, 10)\n"
        "    layer act = ReLU\n"
        "    fn forward(self, x: Tensor[B, 784], k: int = 2) -> Tensor[B, 10]:\n"
        "        return x |> self.fc\n"
    )
    (model,) = module.models()
    assert (model.name, model.syntax, [layer.name for layer in model.layers]) == (
        "Net",
        "tl",
        ["fc", "act"],
    )
    (forward,) = model.methods
    assert [p.name for p in forward.params] == ["self", "x", "k"]
    x_type = forward.params[1].type
    assert x_type is not None and x_type.dims is not None
    assert [d.value for d in x_type.dims] == ["B", 784]
    assert isinstance(forward.params[2].default, ast.IntLit)
    assert forward.return_type is not None and forward.return_type.name == "Tensor"


def test_train_block() -> None:
    module = parse(
        "train net on data:\n"
        "    epochs = 10\n"
        "    optimizer = Adam(lr=0.001)\n"
        "    distributed = true\n"
        "    checkpoint every 500 steps\n"
    )
    (train,) = module.items
    assert isinstance(train, ast.TrainDecl)
    assert [s.key for s in train.settings] == ["epochs", "optimizer", "distributed"]
    assert train.checkpoint is not None
    assert (train.checkpoint.every, train.checkpoint.unit) == (500, "steps")


def test_kernel() -> None:
    module = parse(
        "@kernel def add(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    let pid = tl.program_id(axis=0)\n"
        "    for i in range(0, n):\n"
        "        if i < pid:\n"
        "            tl.store(x_ptr + i, 0.0)\n"
        "        else:\n"
        "            i = i\n"
    )
    (kernel,) = module.items
    assert isinstance(kernel, ast.KernelDecl)
    block = kernel.params[2].type
    assert block is not None and block.name == "tl.constexpr"
    assert isinstance(kernel.body[1], ast.ForStmt)


def test_if_elif_else() -> None:
    module = parse(
        "model M:\n    fn f(self, x):\n        if x:\n            return 1\n"
        "        elif y:\n            return 2\n        else:\n            return\n"
    )
    stmt = module.models()[0].methods[0].body[0]
    assert isinstance(stmt, ast.IfStmt)
    assert len(stmt.branches) == 2
    assert stmt.orelse is not None and isinstance(stmt.orelse[0], ast.ReturnStmt)


def test_nml_sections_in_any_order() -> None:
    module = parse(
        "@model Block:\n"
        "    @forward(x: Tensor[B, 8]):\n"
        "        return fc(x)\n"
        "    @layers:\n"
        "        fc = Linear(d, d)\n"
        "        act = GELU\n"
        "    @config:\n"
        "        d = 8\n"
        "        eps = -1e-5\n"
        '        name = "block"\n',
        "b.nml",
    )
    (model,) = module.models()
    assert model.syntax == "nml"
    assert [c.name for c in model.config] == ["d", "eps", "name"]
    assert isinstance(model.config[1].value, ast.FloatLit) and model.config[1].value.value == -1e-5
    assert [layer.name for layer in model.layers] == ["fc", "act"]
    (forward,) = model.methods
    assert (forward.name, [p.name for p in forward.params]) == ("forward", ["x"])


def test_nml_weights_map_and_the_tl_line_that_applies_it() -> None:
    module = parse(
        "@model Net:\n"
        "    @layers:\n"
        "        fc = Linear(8, 2)\n"
        "@weights hf for Net:\n"
        '    config "hidden_size" -> d\n'
        '    ignore "mask"\n'
        '    "model.{l}.{p}" -> "{l}.{p}" transposed\n',
        "n.nml",
    )
    (found,) = module.weights_maps()
    assert (found.name, found.model) == ("hf", "Net")
    assert (found.name_span.col, found.model_span.col) == (10, 17)
    assert [(r.sources, r.targets, r.transposed) for r in found.rules] == [
        (["mask"], [], False), (["model.{l}.{p}"], ["{l}.{p}"], True),
    ]  # fmt: skip
    assert [(c.key, c.name, c.span.line) for c in found.configs] == [("hidden_size", "d", 5)]
    alone, named, both = parse(
        'weights net from "gpt2"\n'
        'weights net from "gpt2" using hf\n'
        'weights net from "gpt2" using hf:\n    ignore "x"\n'
    ).items
    assert isinstance(alone, ast.WeightsDecl) and (alone.using, alone.rules) == (None, [])
    assert isinstance(named, ast.WeightsDecl) and named.using == "hf" and not named.rules
    assert isinstance(both, ast.WeightsDecl) and both.using == "hf" and len(both.rules) == 1
    assert named.using_span is not None and named.using_span.col == 31


def test_empty_files_parse_to_empty_modules() -> None:
    assert parse("").items == []
    assert parse("// only a comment\n/* and a block */\n").items == []
    assert parse("", "e.nml").language == "nml"


# ---------------------------------------------------------------- errors


def test_every_error_in_a_file_is_reported() -> None:
    text = (
        "let a = \n"
        "let b = (1 +\n"
        "model M\n"
        "    layer x = Linear(1, 2)\n"
        "    fn f(self):\n"
        "        return )\n"
        "let c = 1 2\n"
    )
    assert errors(text) == [
        ("TL0101", 1, 8),
        ("TL0102", 2, 9),
        ("TL0103", 3, 8),
        ("TL0101", 6, 16),
        ("TL0101", 7, 11),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("let x = f(1, 2\n", ("TL0102", 1, 10)),
        ("let x = [1, 2\n", ("TL0102", 1, 9)),
        ("let x = f(1 2)\n", ("TL0101", 1, 13)),
        ("let x = f(a[1)\n", ("TL0101", 1, 14)),
        ("model M\n    layer a = A()\n", ("TL0103", 1, 8)),
        ("train net on data   // c\n    epochs = 1\n", ("TL0103", 1, 18)),
        ("let x = 1\n    let y = 2\n", ("TL0104", 2, 1)),
        ("model M:\nlet x = 1\n", ("TL0105", 1, 9)),
        ("let x = a |> 1\n", ("TL0109", 1, 14)),
        ("f(x) = 1\n", ("TL0110", 1, 1)),
        ("let x = a < b < c\n", ("TL0112", 1, 15)),
        ("let x = f(k=1, 2)\n", ("TL0113", 1, 16)),
        (
            "train n on d:\n    checkpoint every 1 epochs\n    checkpoint every 2 epochs\n",
            ("TL0111", 3, 5),
        ),
        ("train n on d:\n    checkpoint every 5 hours\n", ("TL0101", 2, 24)),
        ("fn f(self, x):\n    return x\n", ("TL0101", 1, 6)),
        ("@model M:\n    @config:\n        a = 1\n", ("TL0101", 1, 2)),
        ("import resnet as R\n", ("TL0101", 1, 8)),
    ],
)
def test_syntax_errors(text: str, expected: tuple[str, int, int]) -> None:
    assert errors(text) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@model M:\n    @layer:\n        a = A()\n", ("TL0107", 2, 6)),
        ("@model M:\n    @config:\n        a = f(1)\n", ("TL0108", 3, 13)),
        ("@model M:\n    @config:\n        a = 1\n    @config:\n        b = 2\n", ("TL0111", 4, 6)),
        ("model M:\n    layer a = A()\n", ("TL0101", 1, 1)),
    ],
)
def test_nml_errors(text: str, expected: tuple[str, int, int]) -> None:
    assert errors(text, "m.nml") == [expected]


def test_unknown_section_suggests_the_closest() -> None:
    sink = DiagnosticSink()
    parse_text("@model M:\n    @layer:\n        a = A()\n", "m.nml", sink)
    assert sink.diagnostics[0].help == "did you mean `@layers`?"


def test_a_lexical_error_is_not_reported_twice() -> None:
    assert errors("let x = 3 $ 4\nlet y = ?\n") == [("TL0005", 1, 11), ("TL0005", 2, 9)]


def test_missing_block_does_not_swallow_the_next_line() -> None:
    sink = DiagnosticSink()
    module = parse_text("model M:\nlet x = 1\n", "t.tl", sink)
    assert [type(item) for item in module.items] == [ast.LetStmt]


def test_recovery_continues_inside_blocks() -> None:
    text = "model M:\n    fn f(self):\n        let = 1\n        return x +\n    layer a = A()\n"
    sink = DiagnosticSink()
    module = parse_text(text, "t.tl", sink)
    assert [(d.line, d.col) for d in (x.primary.span for x in sink.sorted())] == [(3, 13), (4, 19)]
    assert [layer.name for layer in module.models()[0].layers] == ["a"]


# ---------------------------------------------------------------- limits


def test_deep_nesting_is_a_diagnostic_not_a_crash() -> None:
    depth = 1000
    got = errors("let x = " + "(" * depth + "1" + ")" * depth + "\nlet y = 2\n")
    assert got == [("TL0106", 1, 9 + MAX_NESTING)]


def test_nesting_within_the_limit_parses() -> None:
    depth = MAX_NESTING - 5
    value = expr("(" * depth + "1" + ")" * depth)
    assert isinstance(value, ast.IntLit)


def test_ten_thousand_lines_parse() -> None:
    """Scale, not speed: bench/check_speed.py times the parser."""
    block = (
        "model Net{i}:\n"
        "    layer fc = Linear(784, 10)\n"
        "    fn forward(self, x: Tensor[B, 784]) -> Tensor:\n"
        "        return x |> self.fc |> relu |> dropout(0.1)\n"
        "let net{i} = Net{i}()\n"
        "let y{i} = net{i}(x[:, 0] * 2 + 1e-4) ** 2\n"
        "train net{i} on data:\n"
        "    epochs = 10\n"
        "    optimizer = Adam(lr=0.001)\n"
        "    checkpoint every 5 epochs\n"
    )
    text = "".join(block.format(i=i) for i in range(1000))
    assert text.count("\n") == 10_000
    module = parse(text)
    assert len(module.items) == 4000


# ---------------------------------------------------------------- files


def read(path: Path) -> tuple[ast.Module | None, SourceMap, list[tuple[str, int, int]]]:
    sources = SourceMap()
    sink = DiagnosticSink()
    module = parse_file(path, sources, sink)
    return module, sources, [(d.code, d.primary.span.line, d.primary.span.col) for d in sink]


def test_parse_file_registers_the_source(tmp_path: Path) -> None:
    path = tmp_path / "net.nml"
    path.write_text("@model M:\n    @config:\n        a = 1\n")
    module, sources, found = read(path)
    assert found == []
    assert module is not None and module.language == "nml"
    assert str(path) in sources


def test_missing_file(tmp_path: Path) -> None:
    assert read(tmp_path / "nope.tl")[2] == [("TL0601", 1, 1)]


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "blob.tl"
    path.write_bytes(b"\x7fELF\x00\x01\x02")
    module, _, found = read(path)
    assert module is None
    assert found == [("TL0602", 1, 1)]


def test_invalid_utf8_points_at_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.tl"
    path.write_bytes(b'let x = 1\nlet s = "caf\xe9"\n')
    module, _, found = read(path)
    assert module is None
    assert found == [("TL0603", 2, 13)]


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text("print(1)\n")
    assert read(path)[2] == [("TL0604", 1, 1)]


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.tl"
    path.write_bytes(b"")
    module, _, found = read(path)
    assert found == []
    assert module is not None and module.items == []
