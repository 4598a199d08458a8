"""The check passes in-process: config evaluation, settings, shape flows, all errors at once."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, i64

from tensorloom.analysis.flows import flows as flows_of
from tensorloom.diagnostics.ir import reporting
from tensorloom.dialects.nml import CfgAttr, ExprAttr
from tensorloom.passes.check_train import SETTINGS
from tensorloom.passes.shape_inference import infer_shapes
from tensorloom.passes.support.model_env import EvalError, evaluate
from tensorloom.pipeline import CHECK_PASSES, compile_text, make_context, run_passes

MLP = """model Classifier:
    layer fc1 = Linear(64, {hidden})
    layer fc2 = Linear({fc2_in}, 10)
    fn forward(self, x: Tensor) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = Classifier()
let data = load_dataset("digits", flatten=true)
train net on data:
    {key} = 2
    optimizer = Adam(lr=0.001)
    loss = CrossEntropy
"""


def check(text: str, path: str = "prog.tl") -> tuple[list[str], list[object]]:
    """Every diagnostic code the check passes report, and the shape flows."""
    result = compile_text(text, path, until="irgen")
    assert result.module is not None, [d.message for d in result.sink]
    with reporting(result.sink):
        run_passes(make_context(), result.module, CHECK_PASSES, path)
    flows = flows_of(result.module) if not result.sink.has_errors else []
    return [d.code for d in result.sink.sorted()], list(flows)


def test_config_expressions_evaluate_under_the_environment() -> None:
    four = IntegerAttr(4, i64)
    expr = ExprAttr.get("*", [four, CfgAttr.get("d_model")])
    assert evaluate(expr, {"d_model": 256}) == 1024
    missing = evaluate(expr, {})
    assert isinstance(missing, EvalError) and missing.config == "d_model"


def test_flow_takes_the_input_from_the_dataset_and_counts_parameters() -> None:
    codes, flows = check(MLP.format(hidden=32, fc2_in=32, key="epochs"))
    assert codes == []
    (flow,) = flows
    assert flow.inputs == ["[B, 64]"] and flow.output == "[B, 10]"  # type: ignore[attr-defined]
    assert flow.params == (64 * 32 + 32) + (32 * 10 + 10)  # type: ignore[attr-defined]


def test_every_error_in_a_file_is_reported() -> None:
    codes, _ = check(MLP.format(hidden=32, fc2_in=48, key="epoch"))
    assert codes == ["TL0201", "TL0401"]


def test_settings_accept_documented_values_and_reject_others() -> None:
    assert SETTINGS["precision"].check("precision", "bf16") is None
    assert SETTINGS["compile"].check("compile", "max-autotune") is None
    assert SETTINGS["compile"].check("compile", True) is None
    problem = SETTINGS["epochs"].check("epochs", 0)
    assert problem is not None and problem.code == "TL0403"
    assert SETTINGS["distributed"].check("distributed", "fsdp") is None
    assert SETTINGS["distributed"].check("distributed", True) is None
    problem = SETTINGS["distributed"].check("distributed", 1)
    assert problem is not None and problem.code == "TL0407"
    problem = SETTINGS["distributed"].check("distributed", "fdsp")
    assert problem is not None and problem.help == "did you mean `fsdp`?"


def test_shape_inference_reruns_on_the_same_module() -> None:
    """Re-running is idempotent (the editor does it); bench/check_speed.py times it."""
    result = compile_text(MLP.format(hidden=32, fc2_in=32, key="epochs"), "p.tl", until="nml")
    assert result.module is not None
    before = str(result.module)
    for _ in range(3):
        infer_shapes(result.module, quiet=True)
    assert str(result.module) == before


def test_train_block_doc_lists_every_key() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "train-block.md").read_text()
    missing = [key for key in SETTINGS if f"| `{key}` |" not in doc]
    assert missing == []
