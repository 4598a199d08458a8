"""Checkpoints per program: `checkpoints/<program>/` by default, and a clear error for a
checkpoint of another model or of other sizes (the emitted script exits 1, one line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_train_pipeline import compile_program, run

PROGRAM = """
model {name}:
    layer fc1 = Linear(64, {hidden})
    layer fc2 = Linear({hidden}, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = {name}()
let data = load_dataset("digits", flatten=true)

train net on data:
    epochs = 1
    loss = CrossEntropy
    checkpoint every 1 epochs
"""


def _failing(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(script), "--device", "cpu", *args]
    done = subprocess.run(
        command, cwd=script.parent, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 1, done.stderr[-2000:]
    return done


def test_each_program_saves_in_its_own_folder_and_refuses_the_others(tmp_path: Path) -> None:
    mnist = compile_program(tmp_path, PROGRAM.format(name="Classifier", hidden=32), "mnist")
    resnet = compile_program(tmp_path, PROGRAM.format(name="ResNet", hidden=32), "resnet")
    wide = compile_program(tmp_path, PROGRAM.format(name="Classifier", hidden=48), "wide")
    run(mnist)
    run(resnet)
    assert (tmp_path / "checkpoints" / "mnist" / "last.pt").is_file()
    assert (tmp_path / "checkpoints" / "resnet" / "last.pt").is_file()
    other = _failing(mnist, "--resume", "checkpoints/resnet/last.pt")
    # mnist's own folder holds its checkpoints: the run first says it would save beside the
    # checkpoint it resumes (run-never-loses-work), then refuses the other model's weights
    *note, error = other.stderr.strip().splitlines()
    assert [line.split(":")[0] for line in note] == [
        "checkpoints/mnist holds another run's checkpoints"
    ]
    assert error == (
        "error: checkpoints/resnet/last.pt holds a `ResNet` model; this script trains `Classifier`"
    )
    sizes = _failing(wide, "--resume", "checkpoints/mnist/last.pt")
    assert sizes.stderr.strip().splitlines() == [
        "error: checkpoints/mnist/last.pt holds a `Classifier` of other sizes: "
        "`fc1.weight` is [32, 64] there, [48, 64] here"
    ]
    (tmp_path / "notes.pt").write_text("not a checkpoint\n")
    text = _failing(mnist, "--resume", "notes.pt")
    assert text.stderr.strip().splitlines()[-1] == (
        "error: notes.pt is not a readable checkpoint: truncated, or not written by torch.save"
    )
    missing = _failing(mnist, "--resume", "checkpoints/mnist/epoch-0009.pt")
    assert "no such checkpoint file" in missing.stderr and missing.stderr.count("\n") == 1
