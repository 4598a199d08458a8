"""The recipe keys and the script's flags, each by what it computes: compiled .tl programs
run on the CPU (digits, a few seconds each).

The tests that only read a trained checkpoint (predict, export, --init-from, flipped
bytes in a copy, the run-length errors) share one script trained for one epoch
(`trained`): each script run starts a Python and imports torch, most of these tests'
time on a busy machine."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from tests.e2e.test_train_pipeline import compile_program, program, records, run

ADAM = "optimizer = AdamW(lr=0.003, weight_decay=0.01)\nloss = CrossEntropy"


def _module(script: Path) -> ModuleType:
    """The emitted script as a module (importing it runs nothing)."""
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _failing(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(script), "--device", "cpu", *args],
                          cwd=script.parent, env=env, capture_output=True, text=True,
                          timeout=240)  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A script of the digits program trained one epoch: checkpoints/prog/last.pt."""
    folder = tmp_path_factory.mktemp("trained")
    script = compile_program(folder, program(f"epochs = 1\n{ADAM}"))
    run(script, "--metrics", "first.jsonl")
    return script


def test_the_schedules_lr_at_given_steps(tmp_path: Path) -> None:
    from tensorloom.backends.runtime.recipe import LrSchedule

    settings = f"epochs = 4\n{ADAM}\nlr_schedule = linear(warmup_steps=30, min_lr=0.0003)"
    script = compile_program(tmp_path, program(settings))
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    schedule = LrSchedule("linear", total_steps=100, warmup_steps=30, min_ratio=0.1)
    # each record's lr is the one the next step would use: the factor at `steps`
    assert [r["steps"] for r in rows] == [25, 50, 75, 100]
    for row in rows:
        assert row["lr"] == pytest.approx(0.003 * schedule.factor(row["steps"]))  # type: ignore[arg-type]
    assert rows[0]["lr"] == pytest.approx(0.003 * 26 / 30)


def test_max_steps_ends_the_run_and_the_schedule_spans_it(tmp_path: Path) -> None:
    settings = f"{ADAM}\nmax_steps = 60\nlr_schedule = cosine(warmup_steps=0)"
    script = compile_program(tmp_path, program(settings))
    done = run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    assert [r["steps"] for r in rows] == [25, 50, 60]  # epochs enough for 60 steps
    assert rows[-1]["partial"] is True
    assert rows[-1]["lr"] == pytest.approx(0.0, abs=1e-12)  # the cosine's end
    assert "done: 2 epochs, 60 steps" in done.stdout


def test_early_stopping_stops_at_the_right_epoch(tmp_path: Path) -> None:
    # a learning rate too small to move val_loss by min_delta: epoch 1 stays the best
    settings = ("epochs = 10\noptimizer = SGD(lr=0.000001)\nloss = CrossEntropy\n"
                "early_stopping = patience(2, metric=val_loss, min_delta=0.01)")  # fmt: skip
    script = compile_program(tmp_path, program(settings))
    done = run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert "done: 3 epochs, 75 steps" in done.stdout and "(early stopping)" in done.stdout


def test_keep_best_keeps_the_best_epoch(tmp_path: Path) -> None:
    # lr high enough that val_loss is not monotone: the best is not simply the last
    settings = ("epochs = 6\noptimizer = SGD(lr=0.9, momentum=0.9)\nloss = CrossEntropy\n"
                "keep_best = val_loss")  # fmt: skip
    script = compile_program(tmp_path, program(settings))
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    best = min(rows, key=lambda r: r["val_loss"])  # type: ignore[arg-type, return-value]
    state = torch.load(tmp_path / "checkpoints" / "prog" / "best.pt", weights_only=True)
    assert state["epoch"] == best["epoch"]
    evaluated = run(script, "--evaluate", "checkpoints/prog/best.pt")
    assert f"val_loss {best['val_loss']:.4f}" in evaluated.stdout


def test_ema_weights_differ_and_evaluate_better_or_equal(tmp_path: Path) -> None:
    settings = ("epochs = 4\noptimizer = SGD(lr=0.5, momentum=0.9)\nloss = CrossEntropy\n"
                "ema = 0.95")  # fmt: skip
    script = compile_program(tmp_path, program(settings))
    run(script, "--metrics", "m.jsonl")
    last = records(tmp_path / "m.jsonl")[-1]
    assert last["ema_val_loss"] <= last["val_loss"]  # type: ignore[operator]
    state = torch.load(tmp_path / "checkpoints" / "prog" / "last.pt", weights_only=True)
    ema = state["extra"]["recipe"]["ema"]
    assert not torch.equal(ema["module.fc1.weight"], state["model"]["fc1.weight"])


def test_decay_groups_leave_biases_undecayed(tmp_path: Path) -> None:
    settings = "epochs = 1\noptimizer = AdamW(lr=0.003, weight_decay=0.5)\nloss = CrossEntropy"
    for groups in ("", "\ndecay_groups = false"):
        script = compile_program(tmp_path, program(settings + groups), name=f"g{len(groups)}")
        module = _module(script)
        if groups:  # one group of every parameter: the script has no decay groups
            assert not hasattr(module, "decay_param_groups")
            continue
        optimizer_groups = module.decay_param_groups(module.Classifier())
        assert [len(g["params"]) for g in optimizer_groups] == [2, 2]


def test_predict_and_export_equal_the_models_forward(trained: Path) -> None:
    script, tmp_path = trained, trained.parent
    x = np.random.default_rng(0).random((7, 64), dtype=np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    run(script, "--evaluate", "checkpoints/prog/last.pt", "--predict", "in.npz",
        "--out", "out.npz", "--export", "net.pt2")  # fmt: skip
    module = _module(script)
    model = module.Classifier().eval()
    state = torch.load(tmp_path / "checkpoints" / "prog" / "last.pt", weights_only=True)
    model.load_state_dict(state["model"])
    with torch.no_grad():
        expected = model(torch.from_numpy(x))
    # the script runs on one thread, this test on several: equal up to float rounding
    predicted = torch.from_numpy(np.load(tmp_path / "out.npz")["outputs"])
    assert torch.allclose(predicted, expected, atol=1e-6)
    program_ = torch.export.load(tmp_path / "net.pt2")
    assert torch.allclose(program_.module()(torch.from_numpy(x)), expected, atol=1e-6)
    shown = run(script, "--evaluate", "checkpoints/prog/last.pt", "--predict", "in.npz")
    classes = [int(line.split("\t")[1].split()[1]) for line in shown.stdout.splitlines()
               if line[:1].isdigit()]  # fmt: skip
    assert classes == expected.argmax(dim=-1).tolist()


def test_init_from_starts_from_the_checkpoints_weights(trained: Path) -> None:
    script, tmp_path = trained, trained.parent
    done = run(script, "--init-from", "checkpoints/prog/last.pt", "--epochs", "1",
               "--checkpoint-dir", "tuned", "--metrics", "tuned.jsonl")  # fmt: skip
    assert "starting from the weights in checkpoints/prog/last.pt" in done.stdout
    scratch = records(tmp_path / "first.jsonl")[0]["val_loss"]  # one epoch from scratch
    tuned = records(tmp_path / "tuned.jsonl")[0]["val_loss"]  # that epoch, then one more
    assert tuned < scratch  # type: ignore[operator]
    state = torch.load(tmp_path / "tuned" / "last.pt", weights_only=True)
    assert state["epoch"] == 1  # a new run from those weights, not a resumed one


def test_zero_epochs_or_steps_without_evaluate_is_an_error(trained: Path) -> None:
    script, tmp_path = trained, trained.parent
    epochs = _failing(script, "--epochs", "0", "--checkpoint-dir", "zero")
    assert epochs.stderr.strip().splitlines() == [
        "error: --epochs 0 trains nothing: give at least 1, "
        "or --evaluate CHECKPOINT to evaluate without training"
    ]
    steps = _failing(script, "--max-steps", "0", "--checkpoint-dir", "zero")
    assert "--max-steps 0 trains nothing" in steps.stderr
    assert not (tmp_path / "zero").exists()


def test_flipped_bytes_and_stale_temp_files(trained: Path) -> None:
    script = trained
    folder = trained.parent / "flipped"  # a copy: the other tests read the original
    folder.mkdir()
    shutil.copy(trained.parent / "checkpoints" / "prog" / "last.pt", folder / "last.pt")
    stale = folder / ".last.pt.x1y2z3.tmp"
    stale.write_bytes(b"\0" * 1000)
    data = bytearray((folder / "last.pt").read_bytes())
    weight = torch.load(folder / "last.pt", weights_only=True)["model"]["fc1.weight"]
    at = data.find(weight.numpy().tobytes()[:64])  # the tensor's bytes in the archive
    assert at > 0
    for i in range(16):
        data[at + i] ^= 0xFF
    (folder / "last.pt").write_bytes(bytes(data))
    done = _failing(script, "--resume", "flipped/last.pt", "--checkpoint-dir", "flipped")
    assert done.stderr.strip().splitlines()[-1] == (
        "error: flipped/last.pt: its tensors do not match the checksum saved with "
        "them (the file was damaged or changed after it was written)"
    )
    assert "removed flipped/.last.pt.x1y2z3.tmp, left by a checkpoint write" in done.stderr
    assert not stale.exists()


def _interrupted_and_resumed(script: Path, cut: list[str]) -> list[dict[str, object]]:
    first = run(script, "--metrics", "a.jsonl", "--checkpoint-dir", "part", *cut)
    assert "done:" in first.stdout
    run(script, "--metrics", "b.jsonl", "--checkpoint-dir", "part", "--resume", "part/last.pt")
    head = [r for r in records(script.parent / "a.jsonl") if not r.get("partial")]
    return head + records(script.parent / "b.jsonl")


KEYS = ("epoch", "train_loss", "val_loss", "val_accuracy", "ema_val_loss", "lr", "steps")


def test_resume_mid_epoch_is_exact_with_ema_step_schedule_and_grad_accum(tmp_path: Path) -> None:
    settings = (f"epochs = 4\n{ADAM}\nema = 0.9\ngrad_accum = 2\n"
                "lr_schedule = cosine(warmup_steps=5, min_lr=0.0001)")  # fmt: skip
    script = compile_program(tmp_path, program(settings))
    run(script, "--metrics", "full.jsonl", "--checkpoint-dir", "full")
    full = records(tmp_path / "full.jsonl")
    assert [r["steps"] for r in full] == [12, 24, 36, 48]  # 25 batches: 12 steps of 2
    parts = _interrupted_and_resumed(script, ["--max-steps", "17"])  # in epoch 2
    assert [[r[k] for k in KEYS] for r in parts] == [[r[k] for k in KEYS] for r in full]


def test_sigterm_saves_and_the_resumed_run_ends_where_the_whole_one_does(tmp_path: Path) -> None:
    # 40 epochs: the signal comes in epoch 3, with 38 epochs still to run (an epoch of this
    # small MLP takes a few milliseconds now: with 6 the run ended before the signal came)
    settings = f"epochs = 40\n{ADAM}\nema = 0.9\nlr_schedule = cosine(warmup_steps=20)"
    script = compile_program(tmp_path, program(settings))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, str(script), "--device", "cpu", "--checkpoint-dir", "part",
               "--metrics", "a.jsonl"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.split()[:2] == ["epoch", "2/40"]:  # `epoch  2/40`: the count is padded
            time.sleep(0.05)  # somewhere in epoch 3
            proc.send_signal(signal.SIGTERM)
            break
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "(interrupted by SIGTERM)" in out and "continue with --resume part/last.pt" in out
    run(script, "--metrics", "b.jsonl", "--checkpoint-dir", "part", "--resume", "part/last.pt")
    run(script, "--metrics", "full.jsonl", "--checkpoint-dir", "full")
    full = records(tmp_path / "full.jsonl")
    parts = [r for r in records(tmp_path / "a.jsonl") if not r.get("partial")]
    parts += records(tmp_path / "b.jsonl")
    assert [[r[k] for k in KEYS] for r in parts] == [[r[k] for k in KEYS] for r in full]
