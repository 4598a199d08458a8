"""`--tensorboard DIR`: the emitted script logs each epoch's metrics as TensorBoard scalars."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.test_train_pipeline import compile_program, program, records, run

SETTINGS = "epochs = 2\noptimizer = Adam(lr=0.003)\nloss = CrossEntropy"


def scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(logdir))
    events.Reload()
    return {
        tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]
    }


def test_scalars_are_the_metrics_records(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    script = compile_program(tmp_path, program(SETTINGS))
    run(script, "--metrics", "m.jsonl", "--tensorboard", "tb")
    rows = records(tmp_path / "m.jsonl")
    logged = scalars(tmp_path / "tb")
    assert {"train_loss", "val_loss", "val_accuracy", "samples_per_s", "lr", "steps"} <= set(logged)
    for key in ("train_loss", "val_loss", "val_accuracy"):
        expected = [(row["epoch"], row[key]) for row in rows]
        assert [step for step, _ in logged[key]] == [step for step, _ in expected] == [1, 2]
        for (_, got), (_, want) in zip(logged[key], expected, strict=True):
            assert got == pytest.approx(want, rel=1e-6)  # TensorBoard stores float32


def test_without_tensorboard_the_script_warns_and_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocker" / "tensorboard"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no tensorboard here')\n")
    paths = [str(blocker.parent), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    script = compile_program(tmp_path, program(SETTINGS))
    done = run(script, "--metrics", "m.jsonl", "--tensorboard", "tb")
    assert "warning: --tensorboard needs the tensorboard package" in done.stderr
    assert [row["epoch"] for row in records(tmp_path / "m.jsonl")] == [1, 2]
    assert not (tmp_path / "tb").exists()
