"""The runtime's serving helpers: predict equals forward, exported programs equal the module,
inputs from .npz/.pt/.csv/images, byte-level generation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tensorloom.backends.runtime.serve import (
    ExportError,
    PredictInputError,
    export_model,
    generate_text,
    predict,
    read_predict_inputs,
    write_predictions,
)


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))


def test_predict_equals_the_models_forward_in_eval_mode() -> None:
    net, x = _net(), torch.randn(10, 4)
    whole = predict(net, x, batch_size=16)
    net.eval()
    assert torch.equal(whole, net(x).detach())
    batched = predict(net, x, batch_size=3)  # other matmul sizes: equal up to rounding
    assert torch.allclose(batched, net(x).detach(), atol=1e-6)


def test_inputs_from_npz_pt_and_csv_agree(tmp_path: Path) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.savez(tmp_path / "in.npz", x=x)
    torch.save({"x": torch.tensor(x)}, tmp_path / "in.pt")
    lines = [",".join(map(str, row)) for row in x.tolist()]
    (tmp_path / "in.csv").write_text("a,b,c,d\n" + "\n".join(lines))
    for name in ("in.npz", "in.pt", "in.csv"):
        got = read_predict_inputs(tmp_path / name, sample_shape=(4,))
        assert torch.equal(got, torch.tensor(x)), name
    flat = read_predict_inputs(tmp_path / "in.npz", sample_shape=(1, 2, 2))
    assert flat.shape == (3, 1, 2, 2)
    with pytest.raises(PredictInputError, match=r"samples of shape \[4\], the model takes \[5\]"):
        read_predict_inputs(tmp_path / "in.npz", sample_shape=(5,))
    with pytest.raises(PredictInputError, match="no such input file"):
        read_predict_inputs(tmp_path / "absent.npz", sample_shape=(4,))
    (tmp_path / "in.txt").write_text("1 2 3 4")
    with pytest.raises(PredictInputError, match=r"reads \.npz, \.pt, \.csv or an image"):
        read_predict_inputs(tmp_path / "in.txt", sample_shape=(4,))


def test_an_image_becomes_one_normalised_sample(tmp_path: Path) -> None:
    from PIL import Image

    pixels = np.zeros((56, 56), dtype=np.uint8)
    pixels[:, 28:] = 255
    Image.fromarray(pixels).save(tmp_path / "digit.png")
    x = read_predict_inputs(tmp_path / "digit.png", sample_shape=(1, 28, 28),
                            normalisation=((0.5,), (0.5,)))  # fmt: skip
    assert x.shape == (1, 1, 28, 28)
    assert x[0, 0, 0, 0].item() == pytest.approx(-1.0)
    assert x[0, 0, 0, 27].item() == pytest.approx(1.0)
    rgb = read_predict_inputs(tmp_path / "digit.png", sample_shape=(3, 32, 32))
    assert rgb.shape == (1, 3, 32, 32) and rgb.min() >= 0.0 and rgb.max() <= 1.0
    flat = read_predict_inputs(tmp_path / "digit.png", sample_shape=(784,))
    assert flat.shape == (1, 784)


def test_predictions_go_to_stdout_or_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = torch.tensor([[0.0, 3.0, 0.0], [5.0, 0.0, 0.0]])
    write_predictions(outputs, None, classes=True)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["0", "class 1"], ["1", "class 0"]]
    write_predictions(outputs, tmp_path / "o.npz", classes=True)
    assert np.array_equal(np.load(tmp_path / "o.npz")["outputs"], outputs.numpy())
    write_predictions(outputs, tmp_path / "o.csv", classes=True)
    assert (tmp_path / "o.csv").read_text().splitlines()[0] == "0,3,0"


def test_the_exported_program_gives_the_modules_outputs(tmp_path: Path) -> None:
    net = _net().eval()
    x = torch.randn(2, 4)
    path = export_model(net, x, tmp_path / "net.pt2")
    program = torch.export.load(path)
    other = torch.randn(7, 4)  # another batch size: the batch dim is dynamic
    assert torch.allclose(program.module()(other), net(other), atol=1e-6)


def test_onnx_without_the_package_says_what_to_install(tmp_path: Path) -> None:
    try:
        import onnx  # noqa: F401
    except ImportError:
        with pytest.raises(ExportError, match="needs the onnx package"):
            export_model(_net(), torch.randn(2, 4), tmp_path / "net.onnx")


class _Bigram(nn.Module):
    """Always predicts the byte after the last one."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(50.0))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return nn.functional.one_hot((idx + 1) % 256, 256).float() * self.scale


def test_generate_samples_bytes_after_the_prompt() -> None:
    text = generate_text(_Bigram(), "a", tokens=4, block_size=8, temperature=0.0)
    assert text == "abcde"
    sampled = generate_text(_Bigram(), "a", tokens=4, block_size=2, temperature=1.0, top_k=1,
                            seed=0)  # fmt: skip
    assert sampled == "abcde"
