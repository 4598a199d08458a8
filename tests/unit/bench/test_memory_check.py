"""bench/memory_check.py's CPU dry run trains the recorded entries, and survives a broken one.

The entries come from the committed bench/memory_predictions.json: the
uninstantiated `LMBlock` (the entry that once got the LM's int64 tokens) and
the README classifier under fp16 autocast.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
PREDICTIONS = ROOT / "bench/memory_predictions.json"


def memory_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_check", ROOT / "bench/memory_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_check"] = module
    spec.loader.exec_module(module)
    return module


def pick(entries: list[dict[str, Any]], program: str, name: str, precision: str) -> dict[str, Any]:
    found = [
        e
        for e in entries
        if e["program"] == program and e["name"] == name and e["precision"] == precision
    ]
    assert found, (program, name, precision)
    return found[0]


def subset(tmp_path: Path, broken: bool) -> Path:
    data = json.loads(PREDICTIONS.read_text())
    entries = [
        pick(data["entries"], "bench/programs/transformer_lm.tl", "LMBlock", "fp32"),
        pick(data["entries"], "examples/mnist.tl", "net", "fp16"),
    ]
    if broken:
        entries.insert(0, {**entries[1], "class": "NoSuchModel"})
    programs = {e["program"]: data["programs"][e["program"]] for e in entries}
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps({"programs": programs, "entries": entries}))
    return path


def test_lm_block_gets_float_inputs() -> None:
    data = json.loads(PREDICTIONS.read_text())
    block = pick(data["entries"], "bench/programs/transformer_lm.tl", "LMBlock", "fp32")
    lm = pick(data["entries"], "bench/programs/transformer_lm.tl", "net", "fp32")
    assert (block["input_dtype"], lm["input_dtype"]) == ("float32", "int64")


@pytest.mark.slow
def test_dry_run_trains_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert memory_check().run(subset(tmp_path, broken=False), "cpu") == 0
    out = capsys.readouterr().out
    assert "| bench/programs/transformer_lm.tl | LMBlock | 8 | fp32 | Adam | [2, 256, 512] |" in out
    assert "| examples/mnist.tl | net | 64 | fp16 | Adam | [2, 10] |" in out
    assert "2/2 entries trained on the CPU" in out


def test_a_failing_entry_is_a_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert memory_check().run(subset(tmp_path, broken=True), "cpu") == 1
    out = capsys.readouterr().out
    assert "failed: AttributeError: module 'emitted_examples_mnist_tl' has no attribute" in out
    assert "2/3 entries trained on the CPU" in out


LORA_PROGRAM = """
model Classifier:
    layer fc1 = Linear(64, 256)
    layer fc2 = Linear(256, 10)

    fn forward(self, x: Tensor) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = Classifier()
let data = load_dataset("digits", flatten=true)

train net on data:
    optimizer = Adam(lr=0.001)
    loss = CrossEntropy
    precision = fp32
    lora = LoRA(rank=4, alpha=8, targets=[fc1])
"""


def test_a_lora_program_trains_its_adapters_only(tmp_path: Path) -> None:
    """The harness trains what the emitted script trains: under `lora`, the adapters (what
    `tlc info` gives gradients and optimizer state), every other weight frozen."""
    check = memory_check()
    check.ROOT = tmp_path
    path = tmp_path / "lora.tl"
    path.write_text(LORA_PROGRAM)
    code, entries = check._program_entries(path, {})
    assert code is not None and entries and all(e["frozen"] for e in entries)
    module = check._load("lora.tl", code)
    entry = entries[0]
    model = check._adapted(entry, module, getattr(module, entry["class"])())
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert trained == 4 * (64 + 256)  # fc1's A [4, 64] and B [256, 4]
    assert entry["memory"]["gradients"] == 4 * trained
    every = sum(p.numel() for p in model.parameters())
    assert entry["memory"]["weights"] == 4 * every  # the adapters beside the model's own
    import torch

    assert check._dry_run(entry, module, torch) == [2, 10]


def test_the_cpu_peak_of_a_plain_classifier_is_the_prediction(tmp_path: Path) -> None:
    """`cpu-peak`: the CPU allocator's peak over the harness's steps (no cuBLAS workspace
    there) against the prediction less its workspace, in fp32 where the CPU computes as
    CUDA does: the weights, Adam's state, the activations and the backward's moments."""
    import torch

    check = memory_check()
    check.ROOT = tmp_path
    path = tmp_path / "plain.tl"
    path.write_text(LORA_PROGRAM.replace("    lora = LoRA(rank=4, alpha=8, targets=[fc1])\n", ""))
    code, entries = check._program_entries(path, {})
    assert code is not None
    module = check._load("plain.tl", code)
    for entry in (e for e in entries if e["precision"] == "fp32"):
        predicted = entry["memory"]["peak"] - entry["memory"]["workspace"]
        assert abs(predicted / check._cpu_peak(entry, module, torch) - 1) < 0.02, entry["batch"]
