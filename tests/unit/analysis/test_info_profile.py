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
