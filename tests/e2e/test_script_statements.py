"""A script's top-level statements run, in order, when the emitted script runs.

Each program is compiled with `tlc compile` and its script run as a subprocess on
the CPU under TRITON_INTERPRET=1; the tests read what it printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from click.testing import CliRunner

from tensorloom.tools.tlc import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DOUBLE = """\
@kernel def k(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    let o = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    let m = o < n
    tl.store(z_ptr + o, tl.load(x_ptr + o, mask=m) * 2, mask=m)

manual_seed(0)
let x = randn(1000)
let y = k_launcher(x)
print(y.tolist())
"""
TRAINING = """\
model Net:
    layer fc = Linear(64, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor[B, 10]:
        return self.fc(x)

let net = Net()
let data = load_dataset("digits", flatten=true)
print("first", len(range(3)))
train net on data:
    epochs = 1
print("second", max(2, 5), sum(net.fc.weight.shape))
"""


def compile_to(source: Path, out: Path) -> Path:
    result = CliRunner().invoke(
        cli, ["compile", str(source), "-o", str(out)], env={"NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    return out


def run_script(script: Path, *args: str) -> str:
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kernel_demo_doubles_its_input(tmp_path: Path) -> None:
    source = tmp_path / "double.tl"
    source.write_text(DOUBLE)
    printed = run_script(compile_to(source, tmp_path / "double.py"))
    torch.manual_seed(0)
    expected = 2 * torch.randn(1000)
    assert torch.equal(torch.tensor(json.loads(printed)), expected)


def test_vector_add_example_matches_torch(tmp_path: Path) -> None:
    script = compile_to(EXAMPLES / "vector_add.tl", tmp_path / "vector_add.py")
    assert run_script(script) == "max abs difference: 0.0\n"


def test_statements_run_in_order_before_training(tmp_path: Path) -> None:
    source = tmp_path / "train.tl"
    source.write_text(TRAINING)
    script = compile_to(source, tmp_path / "train.py")
    printed = run_script(script, "--device", "cpu", "--max-steps", "1")
    assert printed.splitlines()[:2] == ["first 3", "second 5 74"]
    assert printed.splitlines()[2].startswith("compile: off")  # the compile decision, first
    assert "epoch 1/1" in printed.splitlines()[3]
    help_text = run_script(script, "--help")  # flags are parsed before the statements run
    assert help_text.startswith("usage:")
    assert "first 3" not in help_text
