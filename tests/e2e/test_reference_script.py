"""The golden emitted mnist script trains, resumes exactly, and runs under torchrun."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REFERENCE = Path(__file__).parent / "reference" / "mnist.py"  # `make golden` writes it
DDP_SCRIPT = REFERENCE.with_name("train_ddp.py")  # examples/train_ddp.tl: `distributed = true`
EPOCHS = 6  # the script checkpoints every 5 epochs and after the last


def _run(script: Path, tmp: Path, *args: str, env: dict[str, str] | None = None) -> list[dict]:
    metrics = tmp / "metrics.jsonl"
    command = [sys.executable, str(script), "--device", "cpu", "--epochs", str(EPOCHS),
               "--metrics", str(metrics), "--checkpoint-dir", str(tmp / "ckpt"), *args]  # fmt: skip
    proc = subprocess.run(
        command, capture_output=True, text=True, timeout=240, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in metrics.read_text().splitlines()]


def _run_killable(
    command: list[str], env: dict[str, str] | None
) -> subprocess.CompletedProcess[str]:
    """Run in a new session, so a timeout ends torchrun's workers too."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, start_new_session=True) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    return _run(REFERENCE, tmp_path_factory.mktemp("full"))


def test_loss_falls_and_digits_are_learnt(full_run: list[dict]) -> None:
    assert [r["epoch"] for r in full_run] == list(range(1, EPOCHS + 1))
    losses = [r["train_loss"] for r in full_run]
    assert losses[-1] < 0.5 * losses[0]
    assert full_run[-1]["val_accuracy"] >= 0.9
    assert all(r["samples_per_s"] > 0 and r["lr"] == 0.001 for r in full_run)


@pytest.mark.slow
def test_resume_after_interruption_matches_uninterrupted_run(
    full_run: list[dict], tmp_path: Path
) -> None:
    steps_per_epoch = full_run[0]["steps"]
    interrupted = _run(REFERENCE, tmp_path, "--max-steps", str(5 * steps_per_epoch + 3))
    assert interrupted[-1]["steps"] == 5 * steps_per_epoch + 3  # stopped inside epoch 6
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["epoch-0005.pt", "last.pt"]
    (tmp_path / "metrics.jsonl").unlink()
    resumed = _run(REFERENCE, tmp_path, "--resume", str(tmp_path / "ckpt" / "last.pt"))
    keys = ("epoch", "train_loss", "val_loss", "val_accuracy", "steps")
    assert [[r[k] for k in keys] for r in resumed] == [[r[k] for k in keys] for r in full_run[5:]]


def test_script_runs_without_tensorloom(full_run: list[dict], tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "tensorloom"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ImportError('the script must not import tensorloom')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(blocker.parent)}
    records = _run(REFERENCE, tmp_path, "--max-steps", str(2 * full_run[0]["steps"]), env=env)
    assert [r["train_loss"] for r in records] == [r["train_loss"] for r in full_run[:2]]


def test_missing_dataset_is_a_clean_error(tmp_path: Path) -> None:
    source = REFERENCE.parents[3] / "examples" / "mnist.tl"
    program = tmp_path / "mnist.tl"
    text = source.read_text().replace('load_dataset("digits"', 'load_dataset("mnist"')
    program.write_text(text.replace("Linear(64, 256)", "Linear(784, 256)"))
    script = tmp_path / "mnist.py"
    compiled = subprocess.run([sys.executable, "-m", "tensorloom.tools.tlc", "compile",
                               str(program), "-o", str(script)], capture_output=True, text=True,
                              check=False)  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    env = {**os.environ, "TENSORLOOM_NO_DOWNLOAD": "1", "HOME": str(tmp_path)}
    env.pop("TENSORLOOM_DATA", None)
    proc = subprocess.run([sys.executable, str(script), "--device", "cpu"], capture_output=True,
                          text=True, env=env, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "train-images-idx3-ubyte.gz" in proc.stderr


@pytest.mark.slow
def test_torchrun_two_gloo_processes(full_run: list[dict], tmp_path: Path) -> None:
    metrics, ckpt = tmp_path / "metrics.jsonl", tmp_path / "ckpt"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
               "--standalone", str(DDP_SCRIPT), "--device", "cpu", "--epochs", "2",
               "--metrics", str(metrics), "--checkpoint-dir", str(ckpt)]  # fmt: skip
    proc = _run_killable(command, None)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["epoch"] for r in records] == [1, 2]  # rank 0 alone writes metrics
    # 1617 training samples: 808 per rank, 12 full batches of 64 each.
    assert [r["steps"] for r in records] == [12, 24]
    # Validation sums over both ranks' disjoint shards: 180 samples, counted once.
    assert all(
        abs(r["val_accuracy"] * 180 - round(r["val_accuracy"] * 180)) < 1e-6 for r in records
    )
    assert records[1]["train_loss"] < records[0]["train_loss"]
    assert sorted(p.name for p in ckpt.iterdir()) == ["epoch-0002.pt", "last.pt"]
    state = torch.load(ckpt / "last.pt", weights_only=True)
    assert state["epoch"] == 2 and not any(k.startswith("module.") for k in state["model"])
    summaries = [line for line in proc.stdout.splitlines() if line.startswith("epoch")]
    assert len(summaries) == 2  # one summary per epoch, from rank 0 only
