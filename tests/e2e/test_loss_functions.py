"""Losses and metrics written in the `.tl`, end to end: the emitted functions compute
what the same formulas written by hand in PyTorch compute.

The program below trains on digits with `loss = combined`, a function of the output,
the inputs and the targets, and reports `accuracy`, `top_k(3)` and a metric function.
The tests import the emitted script (importing runs nothing), check `loss_fn` and
`batch_metrics` on a batch against the hand computation, then run the script and
recompute the last epoch's validation figures by hand from its checkpoint.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from tests.e2e.test_train_pipeline import compile_program, run

PROGRAM = """
model Classifier:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

fn combined(out, x, y) -> Tensor:
    let ce = cross_entropy(out, y, label_smoothing=0.1)
    return ce + 0.01 * mean(out * out) + 0.1 * l1(out, out * 0.5) + 0.0 * mean(x)

fn log_likelihood(out, y) -> Tensor:
    return nll(log_softmax(out, dim=-1), y, reduction="sum") / 4.0

let net = Classifier()
let data = load_dataset("digits", flatten=true)

train net on data:
    epochs = 2
    batch_size = 32
    optimizer = Adam(lr=0.003)
    loss = combined
    metrics = [accuracy, top_k(3), log_likelihood]
    checkpoint every 1 epochs
"""


def hand_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    ce = F.cross_entropy(out, y, label_smoothing=0.1)
    return ce + 0.01 * (out * out).mean() + 0.1 * F.l1_loss(out, out * 0.5)


def hand_metrics(out: torch.Tensor, y: torch.Tensor) -> list[float]:
    accuracy = (out.argmax(-1) == y).float().mean()
    top3 = (out.topk(3, dim=-1).indices == y[:, None]).any(-1).float().mean()
    likelihood = F.nll_loss(F.log_softmax(out, -1), y, reduction="sum") / 4.0
    return [float(accuracy), float(top3), float(likelihood)]


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_program(tmp_path_factory.mktemp("loss"), PROGRAM, "custom_loss")


def _import(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def test_emitted_loss_and_metrics_equal_the_hand_computation(script: Path) -> None:
    emitted = _import(script)
    torch.manual_seed(0)
    model = emitted.Classifier()
    xb, yb = torch.rand(16, 64), torch.randint(0, 10, (16,))
    with torch.no_grad():
        out = model(xb)
    assert torch.allclose(emitted.loss_fn(out, xb, yb), hand_loss(out, yb), atol=1e-6)
    metrics = emitted.batch_metrics(out, xb, yb).tolist()
    assert metrics == pytest.approx(hand_metrics(out, yb), abs=1e-6)
    assert emitted.METRICS == ["val_accuracy", "val_top3_accuracy", "val_log_likelihood"]


def test_reported_validation_figures_are_those_of_the_checkpoint(script: Path) -> None:
    done = run(script, "--metrics", "m.jsonl", "--checkpoint-dir", "ckpt")
    last = [json.loads(line) for line in (script.parent / "m.jsonl").read_text().splitlines()][-1]
    assert "val_top3_accuracy" in done.stdout and "val_log_likelihood" in done.stdout
    emitted = _import(script)
    model = emitted.Classifier()
    state = torch.load(script.parent / "ckpt" / "last.pt", weights_only=True)
    model.load_state_dict(state["model"])
    model.eval()
    _, (x, y), _ = emitted.load_digits(flatten=True)
    with torch.no_grad():
        out = model(x)
    # the script averages per-batch means weighted by batch size; so does this
    batches = [(out[i : i + 32], y[i : i + 32]) for i in range(0, len(y), 32)]
    weights = [len(b[1]) / len(y) for b in batches]
    loss = sum(w * float(hand_loss(o, t)) for w, (o, t) in zip(weights, batches, strict=True))
    figures = [sum(w * hand_metrics(o, t)[i] for w, (o, t) in zip(weights, batches, strict=True))
               for i in range(3)]  # fmt: skip
    assert last["val_loss"] == pytest.approx(loss, rel=1e-5)
    reported = [last["val_accuracy"], last["val_top3_accuracy"], last["val_log_likelihood"]]
    assert reported == pytest.approx(figures, rel=1e-5)
    assert last["val_accuracy"] > 0.5  # two epochs learn something
