"""The speedrun (bench/speedrun, issue 34) runs end to end on the CPU with tiny models.

The GPU figures need an H200 (bench/RESULTS.md, "Speedrun"); these runs check that the
pieces a GPU session runs in one or two device calls work: the corpus is prepared, the
nanoGPT baseline trains for its budget and writes its curve, examples/gpt_speedrun.tl
compiles and its emitted program trains under run_emitted.py's clock, the runner reads
both curves and writes the time-to-L summary, `tlc plot` draws the two curves in one
picture, and the ablation driver runs an element alone.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEEDRUN = ROOT / "bench" / "speedrun"
sys.path.insert(0, str(SPEEDRUN))

import prepare  # noqa: E402


def _python(script: Path, *args: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=240, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _curve(path: Path) -> list[dict[str, object]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if "val_loss" in r]


def test_the_corpus_is_split_by_file_and_deterministic(tmp_path: Path) -> None:
    first = prepare.prepare(tmp_path / "a", max_bytes=200_000)
    second = prepare.prepare(tmp_path / "b", max_bytes=200_000)
    assert first == second
    assert (tmp_path / "a" / "train.bin").stat().st_size == 2 * first["train"]["tokens"]  # type: ignore[index]
    files = prepare.stdlib_files()
    root = Path(prepare.sysconfig.get_paths()["stdlib"])
    held_out = [p for p in files if prepare.is_validation(p.relative_to(root).as_posix())]
    assert 0.02 < len(held_out) / len(files) < 0.09  # about one file in 20


def test_runner_smoke_baseline_then_tensorloom(tmp_path: Path) -> None:
    out = tmp_path / "run"
    printed = _python(SPEEDRUN / "runner.py", "--device", "cpu", "--tiny", "--budget-s", "6",
                      "--out", str(out))  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert math.isfinite(summary["L"]) and summary["baseline"] is not None
    assert f'"L": {summary["L"]}' in printed
    base, tl = _curve(out / "baseline.jsonl"), _curve(out / "tensorloom.jsonl")
    assert base[0]["step"] == 0 and len(base) >= 2
    assert base[-1]["val_loss"] < base[0]["val_loss"]  # type: ignore[operator]
    assert [r["wall_s"] for r in base] == sorted(r["wall_s"] for r in base)  # type: ignore[misc]
    # the emitted program's step block validates after each epoch of 32 / 8 = 4 steps
    assert [r["step"] for r in tl] == [4, 8, 12] and tl[-1]["tokens"] == 12 * 8 * 64
    assert tl[-1]["val_loss"] < tl[0]["val_loss"]  # type: ignore[operator]
    assert summary["tensorloom_final_val_loss"] == tl[-1]["val_loss"]
    program = (out / "gpt_speedrun.py").read_text()  # `compile = true` with `step` lines
    assert 'COMPILE_MODE = "default"' in program
    assert 'compiled = {"model": maybe_compile(model, on_cuda, COMPILE_MODE)}' in program
    picture = tmp_path / "curves.png"
    plot = subprocess.run(
        [sys.executable, "-m", "tensorloom.tools.tlc", "plot", str(out / "baseline.jsonl"),
         str(out / "tensorloom.jsonl"), "--x", "wall_s", "-o", str(picture)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert plot.returncode == 0, plot.stderr
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_ablation_smoke_runs_an_element_alone(tmp_path: Path) -> None:
    printed = _python(SPEEDRUN / "ablate.py", "--device", "cpu", "--tiny", "--budget-s", "6",
                      "--only", "relu2", "--out", str(tmp_path))  # fmt: skip
    result = json.loads((tmp_path / "ablation.json").read_text())
    assert result["L"] is None and "relu2" in result["runs"]  # no `none` run to give L
    assert "| relu2 |" in printed
    header = json.loads((tmp_path / "relu2.jsonl").read_text().splitlines()[0])
    assert header["run"]["elements"] == ["relu2"]
