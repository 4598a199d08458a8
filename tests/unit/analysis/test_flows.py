"""`tlc check`'s flows are a query over the typed, specialised IR (analysis/flows.py), not a
fact a pass leaves: each instance's own copy of its model carries its own types."""

from __future__ import annotations

from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from tensorloom.analysis.flows import flows
from tensorloom.dialects.nml import ApplyOp, ModelOp, TensorType
from tensorloom.passes.shape_inference import set_type
from tensorloom.pipeline import Compilation, compile_text, python_source

BLOCKS = """
@model Block:
    @config:
        c = 4
    @layers:
        conv = Conv2d(c, c, 3, padding=1)
    @forward(x):
        return relu(conv(x))

@model Net:
    @config:
        width = 4
    @layers:
        first = Block(width)
        down  = MaxPool2d(2)
        again = Block(width)
    @forward(x: Tensor[B, width, 8, 8]):
        return again(down(first(x)))
"""

TWO = """import "blocks.nml" as Net

let net = Net()
let wide = Net(width=8)
"""


def _compile(tmp_path: Path, until: str = "nml") -> Compilation:
    (tmp_path / "blocks.nml").write_text(BLOCKS)
    result = compile_text(TWO, str(tmp_path / "two.tl"), until=until)
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    return result


def _module(tmp_path: Path, until: str = "nml") -> ModuleOp:
    module = _compile(tmp_path, until).module
    assert module is not None
    return module


def test_each_instance_and_block_shows_its_own_shapes(tmp_path: Path) -> None:
    found = {f.name: f for f in flows(_module(tmp_path))}
    assert list(found) == ["net", "wide"]
    assert found["wide"].model == "Net"  # its copy (`Net#wide`) is shown as the model it is
    assert [(s.name, s.op, s.shape) for s in found["net"].steps] == [
        ("first", "Block", "[B, 4, 8, 8]"),
        ("down", "MaxPool2d(2)", "[B, 4, 4, 4]"),
        ("again", "Block", "[B, 4, 4, 4]"),
    ]
    assert [s.shape for s in found["wide"].steps] == [
        "[B, 8, 8, 8]",
        "[B, 8, 4, 4]",
        "[B, 8, 4, 4]",
    ]
    assert found["net"].params == 2 * (4 * 4 * 9 + 4)


def test_the_flow_reads_the_types_on_the_ir(tmp_path: Path) -> None:
    module = _module(tmp_path)
    assert "tl.flows" not in module.attributes
    net = next(m for m in module.walk() if isinstance(m, ModelOp) and m.sym_name.data == "Net")
    down = next(
        op for op in net.walk() if isinstance(op, ApplyOp) and op.layer.string_value() == "down"
    )
    set_type(down.result, TensorType.from_dims(("B", 4, 2, 2)))
    found = {f.name: f for f in flows(module)}
    assert found["net"].steps[1].shape == "[B, 4, 2, 2]"


def test_the_script_has_one_class_per_model(tmp_path: Path) -> None:
    """The copies are the same class under other arguments: merge-specializations drops them."""
    text = python_source(_module(tmp_path, until="torch"))
    assert text.count("class Net(") == 1 and text.count("class Block(") == 1
    assert "Net.first" not in text and "Net#wide" not in text
    compile(text, "two.py", "exec")
