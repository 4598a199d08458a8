"""`--export-weights` and `--consolidate` in blocks of `step` lines: what they write loads back.

A student `S` that starts from published weights (a safetensors file the test writes, one
tensor stored transposed) and a helper `H` that starts fresh train beside a frozen teacher
`T` that starts from the same file. `--export-weights DIR` writes each trained model,
`DIR/S` in the file's names and layout, `DIR/H` in its own names, and no `DIR/T`: the
tensors equal the run's last checkpoint, one process and under FSDP on 2 gloo ranks
(gathered onto rank 0). `--consolidate` writes an FSDP save's trained models as one file
of plain state dicts: equal to the save's shards and to the export, and the models load it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

TLC = [sys.executable, "-m", "tensorloom.tools.tlc"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
MAP = """
    "first.{p}" -> "fc1.{p}"
    "second.weight" -> "fc2.weight" transposed
    "second.bias" -> "fc2.bias"
"""
PROGRAM = f"""
model Net:
    layer fc1 = Linear(64, 16)
    layer fc2 = Linear(16, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor[B, 10]:
        return x |> self.fc1 |> gelu |> self.fc2

fn distil(T, S, H, x, y) -> Tensor:
    let soft = softmax(T(x) / 2.0, dim=-1)
    let kl = kl_div(log_softmax(S(x) / 2.0, dim=-1), soft, reduction="batchmean")
    return kl + cross_entropy(H(x), y)

let T = Net()
let S = Net()
let H = Net()
let data = load_dataset("digits", flatten=true)

weights T from "w.safetensors":{MAP}
weights S from "w.safetensors":{MAP}
train (T, S, H) on data:
    epochs = 1
    batch_size = 32
    precision = fp32
    freeze = [T]
    step distil with AdamW(S, H, lr=0.002)
"""
FILE_NAMES = {"first.weight", "first.bias", "second.weight", "second.bias"}


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _file(folder: Path) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    tensors = {"first.weight": torch.randn(16, 64, generator=g) * 0.1,
               "first.bias": torch.randn(16, generator=g) * 0.1,
               "second.weight": torch.randn(16, 10, generator=g) * 0.1,  # [in, out]: transposed
               "second.bias": torch.randn(10, generator=g) * 0.1}  # fmt: skip
    save_file(tensors, str(folder / "w.safetensors"))
    return tensors


def _compile(folder: Path, text: str, name: str) -> Path:
    source, script = folder / f"{name}.tl", folder / f"{name}.py"
    source.write_text(text, encoding="utf-8")
    _run([*TLC, "compile", str(source), "-o", str(script), "--single-file"], folder)
    return script


def _as_file(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A model's state dict in the published file's names and layout."""
    first, second = weights["fc1.weight"], weights["fc2.weight"]
    return {"first.weight": first, "first.bias": weights["fc1.bias"],
            "second.weight": second.t(), "second.bias": weights["fc2.bias"]}  # fmt: skip


def _assert_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert set(a) == set(b)
    for key, tensor in a.items():
        assert torch.equal(tensor, b[key]), key


def _assert_exported(folder: Path, trained: dict[str, dict[str, torch.Tensor]]) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["H", "S"]  # the frozen teacher: not
    student = load_file(folder / "S" / "model.safetensors")
    assert set(student) == FILE_NAMES and student["second.weight"].shape == (16, 10)
    _assert_equal(student, _as_file(trained["S"]))
    _assert_equal(load_file(folder / "H" / "model.safetensors"), trained["H"])


def test_export_weights_writes_each_trained_model_of_one_process(tmp_path: Path) -> None:
    published = _file(tmp_path)
    script = _compile(tmp_path, PROGRAM, "steps")
    done = _run([sys.executable, script.name, "--device", "cpu", "--checkpoint-dir", "ck",
                 "--export-weights", "out"], tmp_path)  # fmt: skip
    assert "wrote the trained weights to out/S, out/H" in done.stdout
    saved = torch.load(tmp_path / "ck" / "last.pt", weights_only=True)["models"]
    _assert_exported(tmp_path / "out", saved)
    assert not torch.equal(saved["S"]["fc1.weight"], published["first.weight"])  # trained
    _assert_equal(_as_file(saved["T"]), published)  # the teacher stayed as the file gave it


@pytest.mark.distributed
def test_fsdp_export_and_consolidate_load_back(tmp_path: Path) -> None:
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    _file(tmp_path)
    text = PROGRAM.replace("    freeze = [T]\n", "    freeze = [T]\n    distributed = fsdp\n")
    script = _compile(tmp_path, text, "steps_fsdp")
    _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
          script.name, "--device", "cpu", "--checkpoint-dir", "ck", "--export-weights", "out"],
         tmp_path)  # fmt: skip
    dcp_to_torch_save(tmp_path / "ck" / "last", tmp_path / "saved.pt")
    shards = torch.load(tmp_path / "saved.pt", weights_only=False)["models"]
    trained = {name: {key.partition(".")[2]: value for key, value in shards.items()
                      if key.startswith(f"{name}.")} for name in ("S", "H")}  # fmt: skip
    _assert_exported(tmp_path / "out", trained)
    done = _run([sys.executable, script.name, "--consolidate", "ck/last", "one.pt"], tmp_path)
    assert "wrote the weights of ck/last to one.pt" in done.stdout
    consolidated = torch.load(tmp_path / "one.pt", weights_only=True)
    assert set(consolidated) == {"S", "H"}  # the frozen teacher: not
    for name in ("S", "H"):
        _assert_equal(consolidated[name], trained[name])
    net = torch.nn.Module()
    net.fc1, net.fc2 = torch.nn.Linear(64, 16), torch.nn.Linear(16, 10)
    net.load_state_dict(consolidated["S"])  # a plain model of the class loads it
    wrong = subprocess.run([sys.executable, script.name, "--consolidate", "nowhere", "x.pt"],
                           cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300,
                           check=False)  # fmt: skip
    assert wrong.returncode == 1 and wrong.stderr.startswith("error: "), wrong.stderr[-2000:]
