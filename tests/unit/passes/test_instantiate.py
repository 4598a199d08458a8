"""`instantiate` and what reads it: each instance's configuration folded to literals."""

from __future__ import annotations

import re
from pathlib import Path

from xdsl.dialects.builtin import DictionaryAttr, StringAttr, SymbolRefAttr
from xdsl.parser import Parser

from tensorloom.analysis.flows import flows as flows_of
from tensorloom.dialects.nml import InstanceOp
from tensorloom.passes.support.model_env import config_attr, evaluate_kwargs
from tensorloom.pipeline import Compilation, compile_text, make_context

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


HELPER_TWICE = """model Two:
    layer a = Linear(16, 8)
    layer b = Linear(32, 8)

    fn helper(self, h: Tensor) -> Tensor:
        return relu(h) * 2.0

    fn forward(self, x: Tensor[B, 16], y: Tensor[B, 32]) -> Tensor:
        let p = self.helper(x) |> self.a
        let q = self.helper(y) |> self.b
        return p + q

let net = Two()
"""


def test_a_method_called_at_two_shapes_shows_each_calls_own(tmp_path: Path) -> None:
    """`instantiate` gives the second call site its own copy of `helper`: `tlc check`'s flow,
    `tlc graph` and `tlc info` show [B, 16] through the first call, [B, 32] through the
    second (the IR held only the last call's types before)."""
    from click.testing import CliRunner

    from tensorloom.tools import tlc
    from tensorloom.tools.check import check_file

    path = tmp_path / "helper.tl"
    path.write_text(HELPER_TWICE)
    result, flows = check_file(path)
    assert result.ok
    steps = [(s.name, s.op.removeprefix("nml."), s.shape) for s in flows[0].steps]
    assert steps == [
        ("", "relu", "[B, 16]"), ("", "mul", "[B, 16]"), ("a", "Linear(16, 8)", "[B, 8]"),
        ("", "relu", "[B, 32]"), ("", "mul", "[B, 32]"), ("b", "Linear(32, 8)", "[B, 8]"),
        ("", "add", "[B, 8]"),
    ]  # fmt: skip
    dot = CliRunner().invoke(tlc.cli, ["graph", str(path), "--format", "dot"]).stdout
    edges = re.findall(r'(n\d+) -> (n\d+) \[label="([^"]*)"', dot)
    labels = dict(re.findall(r'^\s*(n\d+) \[label="?([^"\s]*)', dot, re.MULTILINE))
    into = sorted((labels[b], shape) for _, b, shape in edges if labels[b] in ("relu", "mul"))
    assert into == [("mul", "[B, 16]"), ("mul", "[B, 32]"), ("relu", "[B, 16]"),
                    ("relu", "[B, 32]")]  # fmt: skip
    info = CliRunner().invoke(tlc.cli, ["info", str(path)]).stdout
    rows = [line.split("│")[2:4] for line in info.splitlines() if "relu" in line]
    assert [[c.strip() for c in row] for row in rows] == [["relu", "[B, 16]"], ["relu", "[B, 32]"]]


def test_a_shape_error_in_the_second_call_has_its_shapes(tmp_path: Path) -> None:
    """The first call is fine; the second's error says [B, 32], at the line in `helper`."""
    source = HELPER_TWICE.replace("relu(h) * 2.0", "self.a(relu(h))").replace(
        "self.helper(x) |> self.a", "self.helper(x)").replace("self.helper(y) |> self.b",
        "self.helper(y)").replace("    layer b = Linear(32, 8)\n", "")  # fmt: skip
    result = compile_text(source, str(tmp_path / "bad.tl"), until="nml")
    errors = [(d.code, d.message, d.primary.message, d.primary.span.line) for d in result.sink]
    assert errors == [("TL0201", "`a` expects 16 input features, got 32", "input is [B, 32]", 5)]


def test_method_copies_are_merged_before_the_script(tmp_path: Path) -> None:
    """The copy (`nml.func @"helper.2" {specializes = "helper"}`) is in the checked IR, and
    gone from the script: the same script as without it."""
    from tensorloom.dialects.nml import CallOp, FuncOp, ModelOp

    checked = compile_text(HELPER_TWICE, str(tmp_path / "h.tl"), until="nml")
    assert checked.module is not None
    model = next(m for m in checked.module.walk() if isinstance(m, ModelOp))
    methods = {f.sym_name.data: f.specializes for f in model.walk() if isinstance(f, FuncOp)}
    assert methods == {"helper": None, "forward": None, "helper.2": StringAttr("helper")}
    calls = [c.specialized for c in model.walk() if isinstance(c, CallOp)]
    assert calls == [None, SymbolRefAttr("helper.2")]
    text = str(checked.module)
    assert 'specializes = "helper"' in text and "specialized = @helper.2" in text
    reread = Parser(make_context(), text).parse_module()  # the properties read back
    assert str(reread) == text
    merged = compile_text(HELPER_TWICE, str(tmp_path / "h.tl"), until="torch")
    assert merged.module is not None
    assert "helper.2" not in str(merged.module) and "specializ" not in str(merged.module)
