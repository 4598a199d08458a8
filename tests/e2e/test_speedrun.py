"""The speedrun (bench/speedrun, issue 34) runs end to end on the CPU with tiny models.

The GPU figures need an H200 (bench/RESULTS.md, "Speedrun"); these runs check that the
pieces a GPU session runs in one or two device calls work: the corpus is prepared, the
nanoGPT baseline trains for its budget and writes its curve, examples/gpt_speedrun.tl
compiles and its emitted program trains under run_emitted.py's clock, the runner reads
both curves and writes the time-to-L summary, `tlc plot` draws the two curves in one
picture, and the ablation driver runs an element alone.
"""

from __future__ import annotations

import importlib.util
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

import prepare  # noqa: E402  # pyright: ignore[reportMissingImports]


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
    # `compile = true` with `step` lines: torch.compile's default mode (no CUDA graphs)
    sys.path.insert(0, str(out))
    spec = importlib.util.spec_from_file_location("speedrun_program", out / "gpt_speedrun.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)  # importing an emitted program runs nothing
    assert module.COMPILE_MODE == "default"
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


@pytest.mark.slow
def test_tokens_check_compares_emitted_and_hand_written(tmp_path: Path) -> None:
    _python(SPEEDRUN / "runner.py", "--device", "cpu", "--tiny", "--tokens-check", "--steps", "8",
            "--out", str(tmp_path))  # fmt: skip
    check = json.loads((tmp_path / "tokens_check.json").read_text())
    assert check["emitted_tokens_per_s"] > 0 and check["handwritten_tokens_per_s"] > 0
    assert check["ratio"] == check["emitted_tokens_per_s"] / check["handwritten_tokens_per_s"]


def test_run_emitted_times_a_one_optimizer_program(tmp_path: Path) -> None:
    """examples/train_gpt.tl (one optimizer): a validation per epoch of 32 / 8 = 4 steps, and
    one for the epoch `--max-steps` cuts."""
    program = tmp_path / "train_gpt.py"
    subprocess.run([sys.executable, "-m", "tensorloom.tools.tlc", "compile",
                    str(ROOT / "examples" / "train_gpt.tl"), "-o", str(program)],
                   cwd=ROOT, check=True, capture_output=True)  # fmt: skip
    curve = tmp_path / "curve.jsonl"
    printed = _python(SPEEDRUN / "run_emitted.py", str(program), "--tiny", "--curve", str(curve),
                      "--", "--device", "cpu", "--epochs", "2", "--max-steps", "6",
                      "--batch-size", "8", "--checkpoint-dir", str(tmp_path / "ckpt"))  # fmt: skip
    records = _curve(curve)
    assert [r["step"] for r in records] == [4, 6]
    assert records[-1]["tokens"] == 6 * 8 * 64 and records[1]["eval_total_s"] != 0
    assert json.loads(printed.splitlines()[-1])["result"]["exit"] == 0
