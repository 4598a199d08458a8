"""IR generation: what each construct becomes, and the diagnostics for what it cannot be."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import IntegerAttr, ModuleOp

from tensorloom.diagnostics.ir import span_of
from tensorloom.diagnostics.render_text import render
from tensorloom.dialects import nml, train
from tensorloom.pipeline import Compilation, compile_file, compile_text


def irgen(text: str, path: str = "t.tl") -> Compilation:
    return compile_text(text, path, until="irgen")


def module_of(text: str, path: str = "t.tl") -> ModuleOp:
    result = irgen(text, path)
    assert not result.sink.diagnostics, [d.message for d in result.sink]
    assert result.module is not None
    return result.module


def only_error(text: str, path: str = "t.tl") -> list[str]:
    """The rendered text of the single diagnostic `text` produces."""
    result = irgen(text, path)
    assert result.module is None
    (diag,) = result.sink.diagnostics
    return render(diag, result.sources).splitlines()


def ops_of(module: ModuleOp, kind: type) -> list:  # type: ignore[type-arg]
    return [op for op in module.walk() if isinstance(op, kind)]


MODEL = """\
model Net:
    layer fc = Linear(4, 2)
    fn forward(self, x: Tensor[B, 4]) -> Tensor[B, 2]:
        return self.fc(x)
"""


def test_a_model_becomes_a_symbol_table_with_a_typed_method() -> None:
    module = module_of(MODEL)
    (model,) = ops_of(module, nml.ModelOp)
    (func,) = ops_of(module, nml.FuncOp)
    assert model.sym_name.data == "Net"
    assert func.names == ["x"]
    assert func.function_type.inputs.data == (nml.TensorType.from_dims(["B", 4]),)
    assert func.function_type.outputs.data == (nml.TensorType.from_dims(["B", 2]),)
    module.verify()


def test_every_op_carries_its_source_span() -> None:
    module = module_of(MODEL)
    (call,) = ops_of(module, nml.CallOp)
    span = span_of(call)
    assert span is not None
    assert (span.line, span.col, span.end_line, span.end_col) == (4, 16, 4, 26)
    (layer,) = ops_of(module, nml.LayerOp)
    assert layer.arg_locs is not None
    first = span_of(layer.arg_locs.data[0])
    assert first is not None and (first.line, first.col, first.end_col) == (2, 23, 24)


def test_instance_overrides_keep_their_order_and_locations() -> None:
    module = module_of(MODEL + "let net = Net(b=2, a=1)\n")
    (instance,) = ops_of(module, nml.InstanceOp)
    assert list(instance.overrides.data) == ["b", "a"]
    assert instance.overrides.data["a"] == IntegerAttr(1, 64)
    assert instance.override_locs is not None
    locs = [span_of(loc) for loc in instance.override_locs.data]
    assert [(s.line, s.col) for s in locs if s is not None] == [(5, 15), (5, 20)]


def test_dataset_and_train_block() -> None:
    text = MODEL + 'let net = Net()\nlet d = load_dataset("digits", flatten=true)\n'
    text += "train net on d:\n    epochs = 3\n    loss = CrossEntropy\n    precision = fp16\n"
    module = module_of(text)
    (dataset,) = ops_of(module, train.DatasetOp)
    (loop,) = ops_of(module, train.LoopOp)
    assert dataset.source is not None and dataset.source.data == "digits"
    assert loop.setting("epochs") == IntegerAttr(3, 64)
    assert loop.setting("loss") == nml.CallAttr.get("CrossEntropy")
    assert str(loop.setting("precision")) == '"fp16"'
    assert not ops_of(module, train.MainOp)


def test_plain_statements_go_to_train_main_in_order() -> None:
    module = module_of(MODEL + 'let net = Net()\nprint("a")\nlet y = net\nprint(y)\n')
    (main,) = ops_of(module, train.MainOp)
    calls = [op for op in main.body.block.ops if isinstance(op, nml.CallOp)]
    assert [c.callee.data for c in calls] == ["print", "print"]
    (ref,) = [op for op in main.body.block.ops if isinstance(op, nml.RefOp)]
    assert calls[1].args[0] is ref.result


def test_an_alias_instance_names_the_imported_model(tmp_path: Path) -> None:
    (tmp_path / "block.nml").write_text("@model Block:\n    @config:\n        d = 4\n")
    root = tmp_path / "main.tl"
    root.write_text("import block.nml as Custom\nlet net = Custom(d=8)\n")
    result = compile_file(root, until="irgen")
    assert result.module is not None, [d.message for d in result.sink]
    (model,) = ops_of(result.module, nml.ModelOp)
    (instance,) = ops_of(result.module, nml.InstanceOp)
    assert model.origin is not None and model.origin.data == str(tmp_path / "block.nml")
    assert instance.model.root_reference.data == "Block"


def test_return_inside_a_branch_is_reported() -> None:
    text = "model M:\n    fn forward(self, x):\n        if x:\n            return x\n"
    lines = only_error(text)
    assert lines[0] == "error[TL0142]: `return` inside a loop or a branch is not supported"
    assert lines[1] == " --> t.tl:4:13"


def test_a_method_without_self_is_reported() -> None:
    lines = only_error("model M:\n    fn forward(x):\n        return x\n")
    assert lines == [
        "error[TL0330]: method `forward` must take `self` first",
        " --> t.tl:2:8",
        "  |",
        "2 |     fn forward(x):",
        "  |        ^^^^^^^",
        "  |",
        "  = help: write `fn forward(self, ...)`",
    ]


def test_positional_model_arguments_are_reported() -> None:
    lines = only_error(MODEL + "let net = Net(4)\n")
    assert lines[:5] == [
        "error[TL0140]: config overrides must be given by keyword",
        " --> t.tl:5:15",
        "  |",
        "5 | let net = Net(4)",
        "  |               ^",
    ]


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        ("model M:\n    layer fc = Linear(x[0:1], 2)\n", "TL0134", (2, 23)),
        ("model M:\n    fn f(self, x=1):\n        return x\n", "TL0133", (2, 18)),
        ("model M:\n    fn f(self, x):\n        x.y = 1\n        return x\n", "TL0132", (3, 9)),
        ("model M:\n    fn f(self, x):\n        return x\n        x\n", "TL0135", (4, 9)),
        ("model M:\n    fn f(self, x: Matrix):\n        return x\n", "TL0139", (2, 19)),
        ('let d = load_dataset("a", "b")\n', "TL0141", (1, 27)),
        (
            "model M:\n    layer a = Linear(1, 2)\nmodel M:\n    layer b = Linear(1, 2)\n",
            "TL0615",
            (3, 7),
        ),
    ],
)
def test_irgen_diagnostics(text: str, code: str, where: tuple[int, int]) -> None:
    result = irgen(text)
    assert [d.code for d in result.sink.diagnostics] == [code]
    span = result.sink.diagnostics[0].primary.span
    assert (span.line, span.col) == where
