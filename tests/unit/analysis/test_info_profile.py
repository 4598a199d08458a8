"""The profile's activation accounting and the memory budget, by hand."""

from __future__ import annotations

from pathlib import Path

from tensorloom.analysis.memory import Training, parse_size, training_budget
from tensorloom.analysis.profile import ProfileOptions, profile_file

MLP = """
model MLP:
    layer fc1 = Linear(8, 16)
    layer fc2 = Linear(16, 4)
    fn forward(self, x: Tensor[B, 8]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2
"""


def profile(tmp_path: Path, batch: int | None, precision: str = "fp32"):
    path = tmp_path / "mlp.tl"
    path.write_text(MLP)
    result, models = profile_file(path, ProfileOptions(batch, precision))
    assert result.ok
    return models[0]


def test_relu_output_and_fc2_input_count_once(tmp_path: Path) -> None:
    p = profile(tmp_path, 2)
    fc1, relu, fc2 = p.layers
    assert (fc1.activation_bytes, relu.activation_bytes, fc2.activation_bytes) == (64, 128, 0)
    assert p.activation_bytes == 64 + 128  # the input batch is fc1's saved input
    assert p.flops == (2 * 2 * 16 * 8 + 32) + 32 + (2 * 2 * 4 * 16 + 8)
    assert p.params == 8 * 16 + 16 + 16 * 4 + 4


def test_amp_saves_half_precision_copies(tmp_path: Path) -> None:
    p = profile(tmp_path, 2, "bf16")
    fc1, relu, fc2 = p.layers
    assert (fc1.activation_bytes, relu.activation_bytes, fc2.activation_bytes) == (32, 64, 0)
    assert p.low_precision_params == p.params


def test_unbound_batch_is_reported(tmp_path: Path) -> None:
    p = profile(tmp_path, None)
    assert p.unknown == ["B"] and p.flops is None and p.params == 212
    assert training_budget(p, Training()) is None


def test_budget_terms(tmp_path: Path) -> None:
    b = training_budget(profile(tmp_path, 2), Training(optimizer="Adam"))
    assert b is not None
    assert (b.weights, b.gradients, b.optimizer_state) == (848, 848, 1696)
    assert b.peak == max(b.backward_peak, b.step_peak) + b.workspace


def test_parse_size() -> None:
    assert parse_size("80GB") == parse_size("80GiB") == 80 << 30
    assert parse_size("512M") == 512 << 20
    assert parse_size("lots") is None


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_model_with_convolutions_says_their_workspace_is_not_counted() -> None:
    from tensorloom.analysis.report import InfoRequest, info_json

    models = {
        m["name"]: m for m in info_json(EXAMPLES / "train_resnet.tl", InfoRequest())["models"]
    }
    assert "convolution workspace is not in the budget" in models["net"]["notes"][0]
    lstm = info_json(EXAMPLES / "train_lstm.tl", InfoRequest())["models"]
    assert [m["notes"] for m in lstm] == [[]]


def test_amp_frees_the_output_before_backward(tmp_path: Path) -> None:
    """Under AMP the loss runs on autocast's fp32 copy: the bf16 output is not alive then."""
    p = profile(tmp_path, 2, "bf16")
    with_loss = training_budget(p, Training(precision="bf16", loss="CrossEntropy"))
    fp32 = training_budget(profile(tmp_path, 2), Training(loss="CrossEntropy"))
    assert with_loss is not None and fp32 is not None
    assert with_loss.output_in_backward == 0 and with_loss.output == 2 * 4 * 2
    assert fp32.output_in_backward == fp32.output == 2 * 4 * 4


# Measured on one H200 (bench/RESULTS.md, GPT-2 124M, 2026-12-01, torch 2.11): the peak
# `torch.cuda.max_memory_allocated()` of bench/programs/gpt2.tl's step, B=16, bf16.
GPT2_EAGER_PEAK = 15_574_349_824  # the emitted script, bf16 eager
GPT2_COMPILED_PEAK = 10_662_006_784  # the emitted script, bf16 + compile(default)


def test_gpt2_budget_is_within_15_percent_of_the_h200() -> None:
    from tensorloom.analysis.report import InfoRequest, info_json

    root = Path(__file__).resolve().parents[3]
    info = info_json(root / "bench" / "programs" / "gpt2.tl", InfoRequest())
    memory = next(m for m in info["models"] if m["model"] == "GPT")["memory"]
    assert abs(memory["peak"] / GPT2_EAGER_PEAK - 1) < 0.15
    assert abs(memory["compiled_peak"] / GPT2_COMPILED_PEAK - 1) < 0.15
    assert memory["compiled_peak"] < memory["peak"]  # no fp32 copy of the logits
