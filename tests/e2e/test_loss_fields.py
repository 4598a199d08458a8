"""A `loss` block over named fields, run: the forward takes `image` and `text` by name and
CrossEntropy compares its output with `label` (`target = label`).

The emitted step is compared with the same step written by hand in PyTorch on the same
batches; the run learns; a run cut mid-epoch and resumed repeats the uninterrupted one; two
gloo ranks under torchrun give one process's losses.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from tests.e2e.test_train_pipeline import compile_program, records, run

PROGRAM = """
model Pair:
    layer img = Linear(64, 32)
    layer words = Embedding(19, 32)
    layer head = Linear(32, 10)

    fn forward(self, image: Tensor[B, 1, 8, 8], text: Tensor[B, 4]) -> Tensor[B, 10]:
        let h = relu(self.img(image.flatten(1))) + mean(self.words(text), dim=1)
        return self.head(h)

let net = Pair()
let pairs = load_dataset("digits-captions")

train net on pairs:
    epochs = 3
    batch_size = 64
    optimizer = Adam(lr=0.01)
    loss = CrossEntropy
    target = label
    metrics = [accuracy]
{extra}
"""


def _load(script: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def test_emitted_step_equals_the_hand_written_step(tmp_path: Path) -> None:
    script = compile_program(tmp_path, PROGRAM.format(extra=""), name="fields_step")
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--precision", "fp32", "--compile", "off"])
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    hand = m.Pair()
    hand.load_state_dict(trainer.model.state_dict())
    optimizer = torch.optim.Adam(hand.parameters(), lr=0.01)
    batches = iter(trainer.train_loader)
    for _ in range(10):
        image, text, label = next(batches)
        emitted = m._forward_backward(trainer, image, text, label)
        m._optimizer_step(trainer)
        loss = F.cross_entropy(hand(image, text), label)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        assert emitted.item() == pytest.approx(loss.item(), abs=1e-6)
    for name, value in hand.state_dict().items():
        torch.testing.assert_close(trainer.model.state_dict()[name], value)


def test_run_learns_and_resumes_mid_epoch_exactly(tmp_path: Path) -> None:
    script = compile_program(tmp_path, PROGRAM.format(extra=""), name="fields_run")
    run(script, "--metrics", "full.jsonl", "--checkpoint-dir", "full")
    full = records(tmp_path / "full.jsonl")
    assert full[-1]["train_loss"] < full[0]["train_loss"]  # type: ignore[operator]
    assert full[-1]["val_accuracy"] > 0.9  # type: ignore[operator]
    # cut 5 steps into the second epoch (25 steps each), then resume from last.pt
    run(script, "--metrics", "first.jsonl", "--checkpoint-dir", "part", "--max-steps", "30")
    run(script, "--metrics", "second.jsonl", "--checkpoint-dir", "part", "--resume",
        "part/last.pt")  # fmt: skip
    parts = [r for r in records(tmp_path / "first.jsonl") if not r.get("partial")]
    parts += records(tmp_path / "second.jsonl")
    keys = ("epoch", "train_loss", "val_loss", "val_accuracy", "steps")
    assert [[r[k] for k in keys] for r in parts] == [[r[k] for k in keys] for r in full]


@pytest.mark.slow
def test_two_ranks_give_one_process_losses(tmp_path: Path) -> None:
    script = compile_program(tmp_path, PROGRAM.format(extra="    distributed = true"),
                             name="fields_ddp")  # fmt: skip
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                "--standalone"]  # fmt: skip
    run(script, "--epochs", "2", "--batch-size", "32", "--metrics", "two.jsonl",
        "--checkpoint-dir", "two", launcher=launcher)  # fmt: skip
    run(script, "--epochs", "2", "--metrics", "one.jsonl", "--checkpoint-dir", "one")
    two, one = records(tmp_path / "two.jsonl"), records(tmp_path / "one.jsonl")
    for a, b in zip(two, one, strict=True):
        for key in ("train_loss", "val_loss", "val_accuracy"):
            assert a[key] == pytest.approx(b[key], abs=1e-5), key


FOLDER_PROGRAM = """
model Pair:
    layer img = Linear(64, 32)
    layer words = Embedding(40, 32)
    layer head = Linear(32, 10)

    fn forward(self, image: Tensor[B, 1, 8, 8], text: Tensor[B, T]) -> Tensor[B, 10]:
        let h = relu(self.img(image.flatten(1))) + mean(self.words(text), dim=1)
        return self.head(h)

let net = Pair()
let pairs = load_dataset("digit_pairs/", text="words", vocab=40)

train net on pairs:
    epochs = 4
    batch_size = 32
    optimizer = Adam(lr=0.01)
    loss = CrossEntropy
    metrics = [accuracy]
"""


def _digit_folder(root: Path, count: int = 400) -> Path:
    """digit_pairs/: image/NNNN.png (the 8x8 digits as grey PNGs, the runtime's writer),
    text/NNNN.txt (each digit's caption, its words), label/NNNN.cls (the digit)."""
    from tensorloom.backends.runtime.data import _digits, digit_captions
    from tensorloom.backends.runtime.samples import write_png

    x, y = _digits()
    captions = digit_captions(x, y)
    folder = root / "digit_pairs"
    for name in ("image", "text", "label"):
        (folder / name).mkdir(parents=True)
    for i in range(count):
        stem = f"{i:04d}"
        write_png((x[i, 0] * 255).round().to(torch.uint8)[..., None],
                  folder / "image" / f"{stem}.png")  # fmt: skip
        words = " ".join(f"w{t}" for t in captions[i].tolist())
        (folder / "text" / f"{stem}.txt").write_text(words + "\n", encoding="utf-8")
        (folder / "label" / f"{stem}.cls").write_text(f"{int(y[i])}\n")
    return folder


def test_a_folder_of_pairs_trains_a_loss_block_and_its_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _digit_folder(tmp_path)
    script = compile_program(tmp_path, FOLDER_PROGRAM, name="folder_run")
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]  # type: ignore[operator]
    assert rows[-1]["val_accuracy"] > 0.9  # type: ignore[operator]
    # the step is the hand-written one on the folder's own pixels, captions and labels
    monkeypatch.chdir(tmp_path)  # the script opens `digit_pairs/` where it runs
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--precision", "fp32", "--compile", "off"])
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    image, label, text = next(iter(trainer.train_loader))  # the fields in sorted order
    assert image.shape[1:] == (1, 8, 8) and text.shape[1:] == (5,) and label.dtype == torch.int64
    loss = m.BatchLoss(trainer.model)(image, label, text)
    expected = F.cross_entropy(trainer.model(image, text), label)
    assert loss.item() == pytest.approx(expected.item(), abs=1e-6)
    # a sample without its caption: one line on stderr, exit 1, no traceback
    (folder / "text" / "0123.txt").unlink()
    command = [sys.executable, str(script), "--device", "cpu", "--checkpoint-dir", "cut"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: digit_pairs/text/ has no file for 0123 (the partner of digit_pairs/image/0123.png)"
    ]


def test_an_autoencoder_over_one_field_learns(tmp_path: Path) -> None:
    source = """
model AE:
    layer enc = Linear(64, 16)
    layer dec = Linear(16, 64)
    fn forward(self, image: Tensor[B, 1, 8, 8]) -> Tensor:
        return sigmoid(self.dec(relu(self.enc(image.flatten(1))))).view(-1, 1, 8, 8)

let net = AE()
let pairs = load_dataset("digits-captions")

train net on pairs:
    epochs = 3
    optimizer = Adam(lr=0.01)
    loss = MSE
    target = image
"""
    script = compile_program(tmp_path, source, name="fields_ae")
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    assert rows[-1]["val_loss"] < 0.8 * rows[0]["val_loss"]  # type: ignore[operator]
