"""The training pipeline end to end: compile .tl programs, run the scripts on the CPU.

Each test compiles a program through the whole pipeline (check passes, train
passes, lowerings, printer), runs the script in a fresh Python for a few steps,
and checks what it computed: the loss falls, resuming repeats an uninterrupted
run exactly, two gloo processes under torchrun train one model and write one
set of checkpoints, and the metrics lines carry their fields.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tensorloom.pipeline import compile_file

MODEL = """
model Classifier:
    layer fc1 = Linear({inputs}, 64)
    layer fc2 = Linear(64, 10)

    fn forward(self, x: Tensor) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = Classifier()
let data = load_dataset({dataset})

train net on data:
{settings}
"""

DIGITS = '"digits", flatten=true'


def program(settings: str, dataset: str = DIGITS, inputs: int = 64) -> str:
    body = "\n".join(f"    {line}" for line in settings.strip().splitlines())
    return MODEL.format(inputs=inputs, dataset=dataset, settings=body)


def compile_program(tmp_path: Path, text: str, name: str = "prog") -> Path:
    import tensorloom.backends.print_triton  # noqa: F401  (as the python stage does)
    from tensorloom.backends.python_printer import print_python

    source = tmp_path / f"{name}.tl"
    source.write_text(text, encoding="utf-8")
    result = compile_file(source, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink.errors()]
    script = tmp_path / f"{name}.py"
    script.write_text(print_python(result.module, str(source)), encoding="utf-8")
    return script


def run(
    script: Path, *args: str, launcher: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    command = [*(launcher or [sys.executable]), str(script), "--device", "cpu", *args]
    done = subprocess.run(
        command, cwd=script.parent, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_digits_loss_falls_and_metrics_have_fields(tmp_path: Path) -> None:
    script = compile_program(
        tmp_path, program("epochs = 3\noptimizer = Adam(lr=0.003)\nloss = CrossEntropy")
    )
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    for row in rows:
        assert {"epoch", "train_loss", "val_loss", "val_accuracy", "samples_per_s", "steps"} <= set(
            row
        )
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]  # type: ignore[operator]
    assert rows[-1]["val_accuracy"] > 0.8  # type: ignore[operator]
    assert rows[-1]["steps"] == 3 * (1617 // 64)


def test_readme_program_trains_on_synthetic_data_with_fp16_fallback(tmp_path: Path) -> None:
    settings = "epochs = 2\noptimizer = Adam(lr=0.001)\nloss = CrossEntropy\nprecision = fp16"
    script = compile_program(tmp_path, program(settings, dataset="", inputs=784))
    done = run(script, "--metrics", "m.jsonl", "--max-steps", "40")
    assert "training on synthetic data (random inputs of shape [784]" in done.stderr
    assert "`precision = fp16` needs a GPU; training on the CPU in fp32 instead" in done.stderr
    rows = records(tmp_path / "m.jsonl")
    assert rows[-1]["steps"] == 40
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]  # type: ignore[operator]


@pytest.mark.slow
def test_resume_repeats_the_uninterrupted_run_exactly(tmp_path: Path) -> None:
    settings = "epochs = 4\noptimizer = AdamW(lr=0.003, weight_decay=0.01)\nloss = CrossEntropy\n"
    settings += "lr_schedule = cosine(warmup_epochs=1)\ncheckpoint every 2 epochs"
    script = compile_program(tmp_path, program(settings))
    run(script, "--metrics", "full.jsonl", "--checkpoint-dir", "full")
    # stop after two whole epochs (25 steps each) with the same 4-epoch lr schedule
    run(script, "--metrics", "first.jsonl", "--checkpoint-dir", "part", "--max-steps", "50")
    resumed = run(script, "--metrics", "second.jsonl", "--checkpoint-dir", "part",
                  "--resume", "part/last.pt")  # fmt: skip
    assert "resumed from part/last.pt after epoch 2" in resumed.stdout
    full = records(tmp_path / "full.jsonl")
    parts = records(tmp_path / "first.jsonl") + records(tmp_path / "second.jsonl")
    keys = ("epoch", "train_loss", "val_loss", "val_accuracy", "lr", "steps")
    assert [[r[k] for k in keys] for r in parts] == [[r[k] for k in keys] for r in full]


@pytest.mark.slow
def test_torchrun_two_gloo_processes_write_one_set_of_checkpoints(tmp_path: Path) -> None:
    settings = "epochs = 2\noptimizer = SGD(lr=0.1, momentum=0.9)\nloss = CrossEntropy\n"
    settings += "distributed = true\ncheckpoint every 1 epochs\naccumulate_steps = 2"
    script = compile_program(tmp_path, program(settings))
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                "--standalone"]  # fmt: skip
    done = run(script, "--metrics", "m.jsonl", "--checkpoint-dir", "ck", launcher=launcher)
    rows = records(tmp_path / "m.jsonl")
    assert [r["epoch"] for r in rows] == [1, 2]  # rank 0 alone writes metrics
    assert done.stdout.count("epoch 2/2") == 1  # and logs
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == [
        "epoch-0001.pt", "epoch-0002.pt", "last.pt",
    ]  # fmt: skip
    # each rank takes 1617 // 2 samples a epoch: 12 batches of 64, 6 optimizer steps
    assert rows[-1]["steps"] == 2 * 6
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]  # type: ignore[operator]


@pytest.mark.slow
def test_bf16_autocast_mse_clip_and_activation_checkpointing_train_on_cpu(tmp_path: Path) -> None:
    settings = "epochs = 2\nbatch_size = 32\noptimizer = RMSprop(lr=0.001)\nloss = MSE\n"
    settings += "precision = bf16\ngrad_clip = 1.0\nactivation_checkpointing = true\nseed = 3"
    # MSE takes float targets (class labels into MSE are TL0416): 10 regression targets,
    # a fixed linear map of 64 synthetic features, saved as the .npz the runtime reads.
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 64)).astype(np.float32)
    y = (x @ rng.standard_normal((64, 10)) / 8).astype(np.float32)
    np.savez(tmp_path / "regression.npz", x=x, y=y)
    dataset = f'"{tmp_path / "regression.npz"}"'
    script = compile_program(tmp_path, program(settings, dataset=dataset))
    done = run(script, "--metrics", "m.jsonl")
    assert "warning" not in done.stderr
    rows = records(tmp_path / "m.jsonl")
    assert "val_accuracy" in rows[0] and rows[0]["val_accuracy"] is None  # not a classifier loss
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]  # type: ignore[operator]


def test_script_is_importable_without_running(tmp_path: Path) -> None:
    script = compile_program(tmp_path, program("epochs = 1\nloss = CrossEntropy"))
    code = (
        f"import runpy; ns = runpy.run_path({str(script)!r}, run_name='imported'); "
        "print(sorted(ns)[:1])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "epoch" not in done.stdout


@pytest.mark.parametrize("value", ["true", '"max-autotune"', "false"])
def test_compile_key_sets_the_mode(tmp_path: Path, value: str) -> None:
    script = compile_program(
        tmp_path, program(f"epochs = 1\nloss = CrossEntropy\ncompile = {value}")
    )
    namespace: dict[str, object] = {}
    source = script.read_text()
    settings = source[source.index("EPOCHS = ") : source.index("DATASET_OPTIONS: ")]
    exec(settings, namespace)  # the settings block is plain constants
    expected = {"true": "reduce-overhead", '"max-autotune"': "max-autotune", "false": None}
    assert namespace["COMPILE_MODE"] == expected[value]


def test_tlc_compile_emits_nothing_for_a_program_with_errors(tmp_path: Path) -> None:
    source = tmp_path / "bad.tl"
    source.write_text(
        program("epochs = 1\nloss = CrossEntropy").replace("Linear(64, 10)", "Linear(32, 10)")
    )
    out = tmp_path / "bad.py"
    tlc = Path(sys.executable).parent / "tlc"
    done = subprocess.run([str(tlc), "compile", str(source), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 1
    assert "error[TL02" in done.stderr
    assert not out.exists()


def test_plateau_schedule_steps_on_the_validation_loss(tmp_path: Path) -> None:
    """`lr_schedule = plateau(...)` is torch's ReduceLROnPlateau, stepped after each epoch on
    its validation loss: replaying the recorded losses through one gives the recorded lrs."""
    settings = "epochs = 4\noptimizer = SGD(lr=0.1)\nloss = CrossEntropy\n"
    settings += "lr_schedule = plateau(factor=0.5, patience=0, threshold=0.5, min_lr=0.02)"
    script = compile_program(tmp_path, program(settings))
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    weight = torch.nn.Parameter(torch.zeros(1))
    replay = torch.optim.lr_scheduler.ReduceLROnPlateau(
        torch.optim.SGD([weight], lr=0.1), factor=0.5, patience=0, threshold=0.5, min_lr=0.02
    )
    expected = []
    for row in rows:
        expected.append(replay.get_last_lr()[0])
        replay.step(row["val_loss"])
    assert [row["lr"] for row in rows] == pytest.approx(expected)
    assert expected[-1] < 0.1  # it did reduce
