"""An epoch's steps do no host work that waits on the device (issue 32's LM speed item).

The emitted `train_one_epoch` is run on the CPU under a `TorchFunctionMode` that records every
call which makes the host wait for a tensor's value (`.item()`, `.tolist()`, `bool()`,
`float()`, `int()`, formatting, `.cpu()`, `.numpy()`): inside the epoch there is none, so a
host-bound step (the 6x512 LM's 9 ms on the H200) queues its kernels back to back as the
hand-written loop does. The epoch's one sync, the `.item()` of its mean loss, comes after it
(`epoch_record`), and the per-step `log_every` line is the one place that prints.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode

from tests.e2e.test_train_pipeline import compile_program

WAITS = frozenset(
    ["item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__format__", "cpu",
     "numpy", "__repr__", "__str__"]
)  # fmt: skip
"""Tensor methods that return a host value, so wait for the device to compute it."""

CLASSIFIER = """
model Net:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = Net()
let data = load_dataset("digits", flatten=true)

train net on data:
    epochs = 1
    loss = CrossEntropy
    precision = bf16
{extra}
"""

LANGUAGE_MODEL = """
model Bigram:
    layer emb = Embedding(256, 16)
    layer head = Linear(16, 256)
    fn forward(self, x: Tensor[B, T]) -> Tensor:
        return x |> self.emb |> self.head

let net = Bigram()
let data = load_dataset("text", path="corpus.txt", block_size=32, windows_per_epoch=160)

train net on data:
    epochs = 1
    batch_size = 8
    optimizer = AdamW(lr=0.01)
    loss = CrossEntropy
    lr_schedule = cosine
"""


OPTIMIZERS = f"{os.sep}torch{os.sep}optim{os.sep}"
"""Inside `torch.optim` a CPU optimizer reads its step count (`.item()`): the hand-written loop
makes the same calls, and on CUDA the fused or capturable optimizers do not."""


class HostWaits(TorchFunctionMode):
    """Records each tensor call that hands a value to the host, outside `torch.optim`."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in WAITS and not _in_optimizer():
            self.seen.append(name)
        return func(*args, **(kwargs or {}))


def _in_optimizer() -> bool:
    return any(OPTIMIZERS in frame.filename for frame in traceback.extract_stack())


def _script(folder: Path, text: str) -> ModuleType:
    path = compile_program(folder, text, "prog")
    spec = importlib.util.spec_from_file_location(f"host_work_{folder.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _epoch_waits(script: ModuleType, folder: Path) -> tuple[list[str], int, Any]:
    """The host waits inside one emitted epoch, its batches, and its trainer."""
    args = script.parse_args(["--device", "cpu", "--data-root", str(folder)])
    ctx = script.DistContext(0, 0, 1, torch.device("cpu"))
    trainer = script.build_trainer(args, ctx)
    with HostWaits() as waits:
        _, batches = script.train_one_epoch(trainer, 0, None)
    return waits.seen, batches, trainer


@pytest.mark.parametrize(
    "extra",
    [
        "",
        "    grad_accum = 2\n    grad_clip = 1.0",
        "    ema = 0.99\n    early_stopping = patience(3)",
    ],
)
def test_a_classifier_epoch_waits_on_nothing(tmp_path: Path, extra: str) -> None:
    script = _script(tmp_path, CLASSIFIER.format(extra=extra))
    seen, batches, trainer = _epoch_waits(script, tmp_path)
    assert batches == len(trainer.train_loader) // script.GRAD_ACCUM * script.GRAD_ACCUM > 0
    assert trainer.step == batches // script.GRAD_ACCUM
    assert seen == [], seen


def test_a_language_model_epoch_waits_on_nothing(tmp_path: Path) -> None:
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(400))
    (tmp_path / "corpus.txt").write_text(text, encoding="utf-8")
    script = _script(tmp_path, LANGUAGE_MODEL)
    seen, batches, trainer = _epoch_waits(script, tmp_path)
    assert batches == trainer.step == 20  # 160 windows / 8
    assert seen == [], seen


def test_the_counter_sees_a_sync(tmp_path: Path) -> None:
    """The check itself: `log_every`'s line formats the mean loss so far, a host wait each
    time it prints."""
    script = _script(tmp_path, CLASSIFIER.format(extra="    log_every = 5"))
    seen, batches, _ = _epoch_waits(script, tmp_path)
    assert seen.count("item") == batches // 5
