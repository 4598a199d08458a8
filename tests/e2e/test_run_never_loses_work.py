"""A run never loses work (issue 32): what the emitted script refuses before its first step,
run as the user runs it (`python mnist.py ...`), checked by exit status and message.

    $ python mnist.py --checkpoint-dir /proc/x     -> error: cannot write checkpoints to ...
    $ python mnist.py --epochs 1                   -> ... holds an earlier run's checkpoints
                                                      ...: this run saves in .../run-2
    $ python mnist.py --batch-size 0               -> error: --batch-size 0 must be at least 1

Each error is one line on stderr, exit status 1, and nothing trained: no epoch line on
stdout, no checkpoint written. A second run into a used folder trains, in a folder of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_train_pipeline import compile_program

PROGRAM = """
model Classifier:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = Classifier()
let data = load_dataset("digits", flatten=true)

train net on data:
    epochs = 2
    loss = CrossEntropy
    checkpoint every 1 epochs
"""

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_program(tmp_path_factory.mktemp("mnist"), PROGRAM, "mnist")


def _run(script: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(script), "--device", "cpu", *args]
    return subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=240)


def _refused(script: Path, cwd: Path, *args: str) -> str:
    """The one error line of a run that must stop before its first step."""
    done = _run(script, cwd, *args)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "epoch 1/" not in done.stdout, done.stdout  # nothing trained
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@pytest.mark.parametrize(
    ("folder", "reason"),
    [
        ("/proc/tensorloom-checkpoints", "no such file or directory"),
        ("a-file/ckpt", "not a directory"),
    ],
)
def test_an_unwritable_checkpoint_dir_is_an_error_before_step_one(
    script: Path, tmp_path: Path, folder: str, reason: str
) -> None:
    (tmp_path / "a-file").write_text("a file, not a folder\n")
    line = _refused(script, tmp_path, "--checkpoint-dir", folder)
    assert line == (
        f"error: cannot write checkpoints to {folder}: {reason}; give a writable --checkpoint-dir"
    )


def test_a_second_run_into_a_used_folder_saves_in_its_own_then_resumes_or_overwrites(
    script: Path, tmp_path: Path
) -> None:
    first = _run(script, tmp_path, "--epochs", "2")
    assert first.returncode == 0, first.stderr[-2000:]
    folder = tmp_path / "checkpoints" / "mnist"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert sorted(before) == ["epoch-0001.pt", "epoch-0002.pt", "last.pt"]
    # a second run keeps the first's checkpoints and says where its own go
    second = _run(script, tmp_path, "--epochs", "1")
    assert second.returncode == 0, second.stderr[-2000:]
    assert (
        "checkpoints/mnist holds an earlier run's checkpoints (epoch-0001.pt, epoch-0002.pt, "
        "last.pt): this run saves in checkpoints/mnist/run-2 (--resume checkpoints/mnist/last.pt "
        "continues it, --overwrite replaces it)"
    ) in second.stderr
    assert "checkpoints: checkpoints/mnist/run-2/" in second.stdout
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in (folder / "run-2").iterdir()) == ["epoch-0001.pt", "last.pt"]
    # a third run takes the next folder; resuming the second continues in its folder
    third = _run(script, tmp_path, "--epochs", "1")
    assert "checkpoints: checkpoints/mnist/run-3/" in third.stdout, third.stderr[-2000:]
    again = _run(script, tmp_path, "--epochs", "2", "--resume", "checkpoints/mnist/run-2/last.pt")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "epoch 2/2" in again.stdout and "checkpoints/mnist/run-2/" in again.stdout
    assert (folder / "run-2" / "epoch-0002.pt").is_file()
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    resumed = _run(script, tmp_path, "--epochs", "3", "--resume", "checkpoints/mnist/last.pt")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "epoch 3/3" in resumed.stdout
    last = folder / "last.pt"
    kept = last.read_bytes()
    line = _refused(script, tmp_path, "--init-from", str(last), "--overwrite")
    assert line == (
        f"error: --init-from {last} is one of the checkpoints in checkpoints/mnist, which this "
        "run would replace: give another --checkpoint-dir"
    )
    assert last.read_bytes() == kept
    overwritten = _run(script, tmp_path, "--epochs", "1", "--overwrite")
    assert overwritten.returncode == 0, overwritten.stderr[-2000:]
    # the earlier run's epoch files are gone: the folder holds one run (and the runs beside)
    assert sorted(p.name for p in folder.iterdir()) == [
        "epoch-0001.pt", "last.pt", "run-2", "run-3"]  # fmt: skip


@pytest.mark.parametrize(
    ("size", "message"),
    [
        ("0", "error: --batch-size 0 must be at least 1"),
        ("-4", "error: --batch-size -4 must be at least 1"),
        (
            "5000",
            "error: --batch-size 5000 is larger than the training data allows: an epoch holds "
            "0 whole batches, and a step needs one whole batch; give a smaller --batch-size",
        ),
    ],
)
def test_impossible_batch_sizes_are_one_line_errors(
    script: Path, tmp_path: Path, size: str, message: str
) -> None:
    assert _refused(script, tmp_path, "--batch-size", size) == message
    assert not (tmp_path / "checkpoints" / "mnist" / "last.pt").exists()


def test_resuming_a_finished_run_says_how_to_continue(script: Path, tmp_path: Path) -> None:
    assert _run(script, tmp_path, "--epochs", "2").returncode == 0
    last = "checkpoints/mnist/last.pt"
    line = _refused(script, tmp_path, "--epochs", "2", "--resume", last)
    assert line == (
        f"error: {last} has already trained 2 epochs, and --epochs is 2: nothing is left to "
        f"train; continue with --resume {last} --epochs 4"
    )
    steps = _refused(script, tmp_path, "--epochs", "5", "--max-steps", "10", "--resume", last)
    assert steps == (
        f"error: {last} has already made 50 steps, and --max-steps is 10: nothing is left to "
        f"train; continue with --resume {last} and a --max-steps above 50"
    )


def _interrupt_after_first_epoch(command: list[str], cwd: Path) -> tuple[int, str]:
    """Start `command` in its own process group, Ctrl-C it (SIGINT to the group, as a
    terminal does) once an epoch is done; its exit status and stdout."""
    process = subprocess.Popen(
        command, cwd=cwd, env=ENV, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("epoch "):
            time.sleep(0.3)
            os.killpg(process.pid, signal.SIGINT)
            break
    out, err = process.communicate(timeout=240)
    assert "Aborted!" not in err, err
    return process.returncode, "".join(lines) + out


def test_tlc_run_returns_the_scripts_status_after_ctrl_c(tmp_path: Path) -> None:
    source = tmp_path / "mnist.tl"
    source.write_text(PROGRAM.replace("epochs = 2", "epochs = 10000"), encoding="utf-8")
    tlc = [sys.executable, "-m", "tensorloom.tools.tlc", "run", str(source), "--"]
    status, out = _interrupt_after_first_epoch([*tlc, "--device", "cpu"], tmp_path)
    assert status == 130, out
    assert "continue with --resume checkpoints/mnist/last.pt" in out
    assert (tmp_path / "checkpoints" / "mnist" / "last.pt").is_file()


def test_tlc_run_returns_the_scripts_error_status(tmp_path: Path) -> None:
    source = tmp_path / "mnist.tl"
    source.write_text(PROGRAM, encoding="utf-8")
    command = [sys.executable, "-m", "tensorloom.tools.tlc", "run", str(source), "--",
               "--device", "cpu", "--batch-size", "0"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          timeout=240)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "error: --batch-size 0 must be at least 1"


def test_a_step_lines_program_never_replaces_another_runs_checkpoints(tmp_path: Path) -> None:
    """train_gan.tl (two models, `step` lines): a second run saves in run-2, --overwrite
    replaces the first's checkpoint."""
    source = (ROOT / "examples" / "train_gan.tl").read_text(encoding="utf-8")
    gan = compile_program(tmp_path, source, "train_gan")
    first = _run(gan, tmp_path, "--max-steps", "2", "--checkpoint-dir", "ck")
    assert first.returncode == 0, first.stderr[-2000:]
    kept = (tmp_path / "ck" / "last.pt").read_bytes()
    second = _run(gan, tmp_path, "--max-steps", "2", "--checkpoint-dir", "ck")
    assert second.returncode == 0, second.stderr[-2000:]
    assert "this run saves in ck/run-2" in second.stderr
    assert (tmp_path / "ck" / "last.pt").read_bytes() == kept
    assert (tmp_path / "ck" / "run-2" / "last.pt").is_file()
    third = _run(gan, tmp_path, "--max-steps", "2", "--checkpoint-dir", "ck", "--overwrite")
    assert third.returncode == 0, third.stderr[-2000:]
    assert "saves in" not in third.stderr and not (tmp_path / "ck" / "run-3").exists()
