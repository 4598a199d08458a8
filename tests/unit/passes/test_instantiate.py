"""`instantiate` and what reads it: each instance's configuration folded to literals."""

from __future__ import annotations

from pathlib import Path

from xdsl.dialects.builtin import DictionaryAttr

from tensorloom.analysis.flows import flows as flows_of
from tensorloom.dialects.nml import InstanceOp
from tensorloom.passes.support.model_env import config_attr, evaluate_kwargs
from tensorloom.pipeline import Compilation, compile_text

NET = """@model Net:
    @config:
        hidden = 64
        p = 0.1

    @layers:
        fc1 = Linear(8, hidden)
        fc2 = Linear(hidden, 3)
        drop = Dropout(p)

    @forward(x: Tensor[B, 8]):
        return fc2(drop(relu(fc1(x))))
"""

TWO_SIZES = """import net.nml as Net

let small = Net(hidden=8)
let big = Net()
"""


def _compile(tmp_path: Path) -> Compilation:
    (tmp_path / "net.nml").write_text(NET)
    return compile_text(TWO_SIZES, str(tmp_path / "two.tl"), until="nml")


def _configs(tmp_path: Path) -> dict[str, object]:
    result = _compile(tmp_path)
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    found: dict[str, object] = {}
    for op in result.module.body.block.ops:
        if isinstance(op, InstanceOp):
            attr = op.config
            assert isinstance(attr, DictionaryAttr)
            found[op.sym_name.data] = evaluate_kwargs(attr.data, {})
    return found


def test_each_instance_gets_its_folded_configuration(tmp_path: Path) -> None:
    assert _configs(tmp_path) == {
        "small": {"hidden": 8, "p": 0.1},
        "big": {"hidden": 64, "p": 0.1},
    }


def test_shape_inference_checks_each_instance_under_its_configuration(tmp_path: Path) -> None:
    result = _compile(tmp_path)
    assert result.module is not None
    flows = {f.name: f for f in flows_of(result.module)}
    assert [s.shape for s in flows["small"].steps] == ["[B, 8]", "[B, 8]", "[B, 8]", "[B, 3]"]
    assert [s.shape for s in flows["big"].steps] == ["[B, 64]", "[B, 64]", "[B, 64]", "[B, 3]"]
    assert flows["small"].params == (8 * 8 + 8) + (8 * 3 + 3)


def test_a_value_no_attribute_holds_leaves_the_instance_unfolded() -> None:
    assert config_attr({"n": 2**70}) is None
    assert config_attr({"n": [1, 2**70]}) is None
    folded = config_attr({"n": 3, "p": 0.5, "on": True, "name": "gelu", "dims": [1, 2], "x": None})
    assert folded is not None
    assert evaluate_kwargs(folded.data, {}) == {
        "n": 3, "p": 0.5, "on": True, "name": "gelu", "dims": [1, 2], "x": None,
    }  # fmt: skip
