"""Each pass's declared requirements: the driver's stages meet them, and each pass's own
`pending` says its work is done once it ran (so IR printed after it reads back)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.diagnostics.ir import reporting
from tensorloom.passes import get_all_passes
from tensorloom.passes.support.prerequisites import TLPass, requirements, unmet
from tensorloom.pipeline import CHECK_PASSES, STAGES, compile_file, make_context, run_passes

ROOT = Path(__file__).resolve().parents[3]
PIPELINE = [name for stage in STAGES for name in stage.passes]


@pytest.mark.parametrize("order", [PIPELINE, list(CHECK_PASSES)], ids=["compile", "check"])
def test_every_requirement_runs_earlier(order: list[str]) -> None:
    registry = get_all_passes()
    for index, name in enumerate(order):
        pass_class = registry[name]()
        assert unmet(requirements(pass_class), order[:index], None, registry) == [], name


def test_every_pass_declares_its_requirements() -> None:
    for name, load in get_all_passes().items():
        pass_class = load()
        assert issubclass(pass_class, TLPass), name
        assert all(r in get_all_passes() for r in pass_class.requires), name


@pytest.mark.parametrize("example", ["mnist.tl", "train_gpt.tl", "vector_add.tl", "train_vae.tl"])
def test_a_pass_leaves_nothing_pending(example: str) -> None:
    result = compile_file(ROOT / "examples" / example, until="irgen")
    assert result.module is not None
    module, ctx, registry = result.module, make_context(), get_all_passes()
    with reporting(DiagnosticSink()):
        for name in PIPELINE:
            assert run_passes(ctx, module, [name], example, ran=PIPELINE[: PIPELINE.index(name)])
            pass_class = registry[name]()
            assert issubclass(pass_class, TLPass)
            assert not pass_class.pending(module), f"{name} left work for itself"


def test_the_driver_refuses_a_stage_list_out_of_order() -> None:
    result = compile_file(ROOT / "examples" / "mnist.tl", until="irgen")
    assert result.module is not None
    sink = DiagnosticSink()
    with reporting(sink):
        assert not run_passes(make_context(), result.module, ["shape-inference"], "mnist.tl")
    (error,) = sink.errors()
    assert error.code == "TL0901"
    assert error.message == (
        "internal compiler error: the pipeline runs `shape-inference` before `desugar-pipes`, "
        "`resolve-nml`, `instantiate`, which it needs"
    )
