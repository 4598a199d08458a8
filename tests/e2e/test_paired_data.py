"""Data of named fields, end to end (issue 30, item 3): examples/train_clip.tl and friends.

The CLIP example learns: its contrastive loss falls and its image-to-caption retrieval on
the held-out pairs ends far above chance. The emitted objective equals CLIP's loss
written in PyTorch from the model's weights, on the same batch. A block of `step` lines
over two towers takes the fields by name and resumes mid-epoch to the last bit; a .npz of
named arrays, written by numpy, trains and evaluates.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tests.e2e.test_examples import Run, compile_example, import_script, train
from tests.e2e.test_train_pipeline import compile_program, records, run

CLIP = "train_clip.tl"


def _chance(text: torch.Tensor, batch_size: int) -> float:
    """Retrieval's chance level on validation batches of `batch_size`, in the loader's order:
    the share of a batch's captions that equal an image's own, averaged over images."""
    total = 0.0
    for start in range(0, len(text), batch_size):
        batch = text[start : start + batch_size]
        same = (batch[:, None, :] == batch[None, :, :]).all(-1).float()
        total += same.mean(1).sum().item()
    return total / len(text)


def test_clip_example_learns_and_retrieves_far_above_chance(tmp_path: Path) -> None:
    records_ = train(CLIP, Run(epochs=6, classes=None), tmp_path)
    assert [r["epoch"] for r in records_] == list(range(1, 7))
    assert {"train_loss", "val_loss", "val_retrieval_accuracy"} <= set(records_[-1])
    assert records_[-1]["train_loss"] < 0.6 * records_[0]["train_loss"]
    assert records_[-1]["val_loss"] < records_[0]["val_loss"]
    # ln 64: the symmetric loss of a model that cannot tell the pairs of a batch apart
    assert records_[0]["train_loss"] < 1.05 * math.log(64)
    from tensorloom.backends.runtime.data import load_digit_captions

    _, val, _ = load_digit_captions(fields=("text",))
    chance = _chance(val[0], 64)
    assert chance < 0.05
    assert records_[-1]["val_retrieval_accuracy"] > 10 * chance, (records_[-1], chance)


def test_emitted_clip_loss_equals_clip_written_in_pytorch(tmp_path: Path) -> None:
    m = import_script(compile_example(CLIP, tmp_path / "clip.py"))
    args = m.parse_args(["--device", "cpu", "--batch-size", "32"])
    ctx = m.DistContext(0, 0, 1, torch.device("cpu"))
    trainer = m.build_trainer(args, ctx)
    model = trainer.model
    image, text = next(iter(trainer.train_loader))
    assert image.shape == (32, 1, 8, 8) and text.shape == (32, 4) and text.dtype == torch.int64
    for log_scale in (math.log(1 / 0.07), 5.0):  # the second past the clamp: 100
        with torch.no_grad():
            model.logit_scale.fill_(log_scale)
        emitted = m.clip_loss(model, image, text)
        # CLIP (Radford et al., 2021, figure 3), from the model's own weights
        i = model.img2(F.relu(model.img1(image.flatten(1))))
        t = model.txt2(F.relu(model.txt1((model.words(text) + model.place).flatten(1))))
        scale = model.logit_scale.exp().clamp(max=100)
        logits = scale * F.normalize(i, dim=1) @ F.normalize(t, dim=1).t()
        labels = torch.arange(len(image))
        loss_i = F.cross_entropy(logits, labels)
        loss_t = F.cross_entropy(logits.t(), labels)
        expected = (loss_i + loss_t) / 2
        torch.testing.assert_close(emitted, expected, rtol=1e-6, atol=1e-6)
        grads = torch.autograd.grad(emitted, [model.img1.weight, model.words.weight])
        wanted = torch.autograd.grad(expected, [model.img1.weight, model.words.weight])
        for ours, theirs in zip(grads, wanted, strict=True):
            torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-7)
    assert scale.item() == 100.0  # clamped, as CLIP clamps it
    hits = (text[logits.argmax(1)] == text).all(1).float().mean()
    torch.testing.assert_close(m.retrieval_accuracy(model, image, text), hits)


TOWERS = """
model ImageTower:
    layer fc = Linear(64, 16)
    fn forward(self, image: Tensor[B, 1, 8, 8]) -> Tensor:
        return normalize(self.fc(image.flatten(1)), dim=1)

model TextTower:
    layer words = Embedding(19, 16)
    fn forward(self, text: Tensor[B, 4]) -> Tensor:
        return normalize(mean(self.words(text), dim=1), dim=1)

fn contrastive(I, T, image, text) -> Tensor:
    let logits = 10.0 * I(image) @ t(T(text))
    let labels = arange(image.size(0))
    return (cross_entropy(logits, labels) + cross_entropy(t(logits), labels)) / 2.0

let I = ImageTower()
let T = TextTower()
let pairs = load_dataset("digits-captions")

train (I, T) on pairs:
    epochs = 2
    batch_size = 64
    step contrastive with Adam(I, T, lr=0.003)
"""


def test_steps_over_named_fields_resume_exactly_mid_epoch(tmp_path: Path) -> None:
    script = compile_program(tmp_path, TOWERS, name="towers")
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run(script, "--checkpoint-dir", str(whole), "--metrics", str(tmp_path / "w.jsonl"))
    run(script, "--max-steps", "30", "--checkpoint-dir", str(cut))
    run(script, "--checkpoint-dir", str(cut), "--resume", str(cut / "last.pt"),
        "--metrics", str(tmp_path / "c.jsonl"))  # fmt: skip
    a = torch.load(whole / "last.pt", weights_only=True)
    b = torch.load(cut / "last.pt", weights_only=True)
    assert a["step"] == b["step"] == 50
    for name in ("I", "T"):
        for key, tensor in a["models"][name].items():
            assert torch.equal(tensor, b["models"][name][key]), (name, key)
    first, last = records(tmp_path / "w.jsonl")
    assert last["contrastive"] < first["contrastive"]  # type: ignore[operator]
    assert records(tmp_path / "c.jsonl")[-1]["val_contrastive"] == last["val_contrastive"]
    evaluated = run(script, "--evaluate", str(whole / "last.pt"))
    assert f'"val_contrastive": {last["val_contrastive"]}' in evaluated.stdout


NPZ = """
model Scorer:
    layer img = Linear(12, 8)
    layer txt = Embedding(5, 8)
    fn forward(self, image: Tensor[B, 12], caption: Tensor[B, 3]) -> Tensor:
        return self.img(image) @ t(mean(self.txt(caption), dim=1))

fn pairs_loss(net, image, caption) -> Tensor:
    let logits = net(image, caption)
    return cross_entropy(logits, arange(image.size(0)))

let net = Scorer()
let data = load_dataset("pairs.npz")

train net on data:
    epochs = 2
    batch_size = 16
    optimizer = Adam(lr=0.01)
    objective = pairs_loss
"""


def test_a_npz_of_named_arrays_trains_on_the_fields_its_objective_names(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    caption = rng.integers(0, 5, size=(200, 3))
    image = np.eye(5)[caption].reshape(200, 15)[:, :12].astype(np.float32)
    np.savez(tmp_path / "pairs.npz", image=image, caption=caption, unused=np.zeros((200, 7)))
    script = compile_program(tmp_path, NPZ, name="npz_pairs")
    text = script.read_text()
    assert '"fields": ("image", "caption")' in text  # `unused` is never loaded
    run(script, "--metrics", "m.jsonl", "--checkpoint-dir", "ckpt")
    rows = records(tmp_path / "m.jsonl")
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]  # type: ignore[operator]
    evaluated = run(script, "--evaluate", "ckpt/last.pt")
    assert "val_loss" in evaluated.stdout


def test_fields_declared_for_a_npz_absent_at_check_time_load_by_name(tmp_path: Path) -> None:
    """`fields=` says which arrays an absent .npz holds: the objective binds them by name
    (typed when the file is there), and the script trains once the file exists."""
    declared = NPZ.replace('load_dataset("pairs.npz")',
                           'load_dataset("later.npz", fields=["caption", "image"])')  # fmt: skip
    script = compile_program(tmp_path, declared, name="npz_later")
    assert '"fields": ("caption", "image")' in script.read_text()
    rng = np.random.default_rng(1)
    caption = rng.integers(0, 5, size=(64, 3))
    image = np.eye(5)[caption].reshape(64, 15)[:, :12].astype(np.float32)
    np.savez(tmp_path / "later.npz", image=image, caption=caption)
    run(script, "--epochs", "1", "--metrics", "m.jsonl", "--checkpoint-dir", "ckpt")
    assert records(tmp_path / "m.jsonl")[0]["epoch"] == 1
