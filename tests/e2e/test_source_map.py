"""A run-time error in an emitted script names the .tl line behind it (the source map)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

PROGRAM = """\
model Classifier:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 10)

    fn forward(self, x: Tensor) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = Classifier()
let data = load_dataset("data.npz")

train net on data:
    epochs = 1
    loss = CrossEntropy
"""


def _write_data(tmp: Path, features: int, classes: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.random((200, features), dtype=np.float32)
    np.savez(tmp / "data.npz", x=x, y=rng.integers(0, classes, 200))


def _compile_and_run(tmp: Path, features: int, classes: int) -> subprocess.CompletedProcess[str]:
    """Compiles against a file that fits the model (check-train reads it), then runs the
    script on one that does not: the data changed after compiling."""
    _write_data(tmp, features=64, classes=10)
    (tmp / "prog.tl").write_text(PROGRAM)
    tlc = [sys.executable, "-m", "tensorloom.tools.tlc", "compile", "--no-cache", "prog.tl"]
    compiled = subprocess.run([*tlc, "-o", "prog.py"], cwd=tmp, capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    _write_data(tmp, features, classes)
    script = [sys.executable, "prog.py", "--device", "cpu", "--epochs", "1"]
    return subprocess.run(script, cwd=tmp, capture_output=True, text=True, timeout=120)


def test_forward_error_names_the_tl_line_beside_the_python_frame(tmp_path: Path) -> None:
    done = _compile_and_run(tmp_path, features=48, classes=10)  # the model takes 64
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    error = next(i for i, line in enumerate(lines) if line.startswith("RuntimeError: mat1"))
    assert 'File "' in done.stderr and "in forward" in done.stderr  # Python's frames stay
    assert lines[error + 1 :] == [
        "in the TensorLoom source: prog.tl:11: train net on data:",
        "in the TensorLoom source: prog.tl:6: return x |> self.fc1 |> relu |> self.fc2",
    ]


def test_labels_beyond_the_model_s_classes_are_refused_at_load(tmp_path: Path) -> None:
    done = _compile_and_run(tmp_path, features=64, classes=12)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: the labels of data.npz run from 0 to 11, but `Classifier` has 10 outputs "
        "(classes 0 to 9); relabel the data or give the model 12 outputs"
    )


def test_emitted_statements_carry_their_source_lines(tmp_path: Path) -> None:
    _compile_and_run(tmp_path, features=64, classes=10)
    script = (tmp_path / "prog.py").read_text()
    assert "return self.fc2(F.relu(self.fc1(x)))  # prog.tl:6" in script
    assert "# prog.tl:9" in script  # the data is loaded where `let data` says
    assert "for epoch in range(trainer.start_epoch, args.epochs):  # prog.tl:11" in script
