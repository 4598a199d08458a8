"""A builtin is its catalogue record and its op: nothing else names it.

The test adds one, `logit(x, eps=1e-6)`, as a `FunctionSpec` and an `nml.PlainOp`
(which registers itself as it is defined) and nothing more; a model that calls it
checks, compiles, and computes what `torch.logit` computes, and `tlc info` counts its
declared cost. A second, `hardtanh(x, min_val=-1.0, max_val=1.0)`, checks its call its
own way (`check_call`: min_val below max_val), reported at the call.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import pytest
import torch
from xdsl.dialects.builtin import Float64Type, FloatAttr
from xdsl.ir import Attribute
from xdsl.irdl import prop_def

from tensorloom.analysis.profile import ProfileOptions, profile_file
from tensorloom.catalogue import functions
from tensorloom.catalogue.costs import INPUT, Cost, per_element
from tensorloom.catalogue.shapes import ShapeMismatch, Unifier, same_shape
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml import tensor_ops
from tensorloom.dialects.nml.builtins import Literal, apply_rule
from tensorloom.dialects.nml.calls import CallProblem
from tensorloom.pipeline import compile_file, python_source


@lazy_op_definition
class LogitOp(tensor_ops.PlainOp):
    """`nml.logit %x eps 1.0e-06`: log(p / (1 - p)), p clamped to [eps, 1 - eps]."""

    name = "nml.logit"
    FUNCTION: ClassVar[str] = "logit"
    COST: ClassVar[Cost] = per_element(3, saves=INPUT)

    eps = prop_def(FloatAttr[Float64Type])

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return apply_rule(operand_types[0], lambda dims: same_shape(dims, -1))


PROGRAM = """
model Odds:
    fn forward(self, p: Tensor[B, 8]) -> Tensor:
        return logit(p, eps=0.01) + p.logit()
"""


@pytest.fixture
def logit(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = functions.FunctionSpec("logit", "x, eps=1e-6", "log(x / (1 - x))", "torch.logit")
    monkeypatch.setitem(functions.FUNCTIONS, "logit", spec)


def test_a_new_plain_builtin_checks_compiles_and_runs(logit: None, tmp_path: Path) -> None:
    path = tmp_path / "odds.tl"
    path.write_text(PROGRAM)
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    source = python_source(result.module)
    assert "torch.logit(p, eps=0.01) + torch.logit(p, eps=1e-06)" in source
    module = ModuleType("emitted_odds")
    sys.modules[module.__name__] = module
    exec(compile(source, "<emitted odds.tl>", "exec"), module.__dict__)
    p = torch.rand(4, 8)
    expected = torch.logit(p, eps=0.01) + torch.logit(p, eps=1e-6)
    torch.testing.assert_close(module.Odds()(p), expected)


def test_tlc_info_counts_the_cost_it_declares(logit: None, tmp_path: Path) -> None:
    path = tmp_path / "odds.tl"
    path.write_text(PROGRAM)
    _, profiles = profile_file(path, ProfileOptions(batch_size=4))
    logits = [layer for layer in profiles[0].layers if layer.kind == "logit"]
    assert [layer.flops for layer in logits] == [3 * 4 * 8, 3 * 4 * 8]
    assert logits[0].activation_bytes == 4 * 8 * 4  # its input, saved once


def test_a_bad_argument_is_reported_from_the_signature(logit: None, tmp_path: Path) -> None:
    path = tmp_path / "odds.tl"
    path.write_text(PROGRAM.replace("eps=0.01", 'eps="small"'))
    result = compile_file(path, until="nml")
    messages = [d.message for d in result.sink]
    assert messages == ["`eps` of `logit` must be a constant number"]


@lazy_op_definition
class HardtanhOp(tensor_ops.PlainOp):
    """`nml.hardtanh %x min_val -1.0 max_val 1.0`: x limited to [min_val, max_val]; its call
    is checked its own way (`check_call`: min_val below max_val)."""

    name = "nml.hardtanh"
    FUNCTION: ClassVar[str] = "hardtanh"
    COST: ClassVar[Cost] = per_element(saves=INPUT)

    min_val = prop_def(FloatAttr[Float64Type])
    max_val = prop_def(FloatAttr[Float64Type])

    @classmethod
    def check_call(cls, constants: Mapping[str, Literal]) -> CallProblem | None:
        low, high = constants["min_val"], constants["max_val"]
        assert isinstance(low, float) and isinstance(high, float)
        if low < high:
            return None
        return CallProblem(f"`min_val` of `hardtanh` must be below `max_val`, got {low} and {high}")

    def infer_shape(
        self, operand_types: Sequence[Attribute], unifier: Unifier | None = None
    ) -> Attribute | ShapeMismatch:
        return apply_rule(operand_types[0], tuple)


CLIPPED = """
model Clip:
    layer fc = Linear(8, 8)

    fn forward(self, x: Tensor[B, 8]) -> Tensor:
        return hardtanh(self.fc(x), min_val=0.0, max_val=6.0) + x.hardtanh()
"""


@pytest.fixture
def hardtanh(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = functions.FunctionSpec(
        "hardtanh", "x, min_val=-1.0, max_val=1.0", "x limited to [min_val, max_val]", "F.hardtanh"
    )
    monkeypatch.setitem(functions.FUNCTIONS, "hardtanh", spec)


def test_a_builtin_checked_its_own_way_is_its_record_and_its_op(
    hardtanh: None, tmp_path: Path
) -> None:
    path = tmp_path / "clip.tl"
    path.write_text(CLIPPED)
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    module = ModuleType("emitted_clip")
    sys.modules[module.__name__] = module
    exec(compile(python_source(result.module), "<emitted clip.tl>", "exec"), module.__dict__)
    net, x = module.Clip(), 4 * torch.randn(4, 8)
    expected = torch.clamp(net.fc(x), 0.0, 6.0) + torch.clamp(x, -1.0, 1.0)
    torch.testing.assert_close(net(x), expected)


def test_its_own_check_is_reported_at_the_call(hardtanh: None, tmp_path: Path) -> None:
    path = tmp_path / "clip.tl"
    path.write_text(CLIPPED.replace("min_val=0.0, max_val=6.0", "min_val=2.0, max_val=1.0"))
    result = compile_file(path, until="nml")
    found = [(d.code, d.message, d.primary.span.line, d.primary.span.col) for d in result.sink]
    message = "`min_val` of `hardtanh` must be below `max_val`, got 2.0 and 1.0"
    assert found == [("TL0308", message, 6, 16)]
