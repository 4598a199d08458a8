"""The speedrun: nanoGPT's recipe, then TensorLoom's, back to back; the time each takes to L.

    python bench/speedrun/runner.py --out out/speedrun                  # one H200: both runs
    python bench/speedrun/runner.py --program DIR/gpt_speedrun.py ...   # compiled elsewhere
    python bench/speedrun/runner.py --device cpu --tiny --budget-s 20   # a CPU smoke run
    python bench/speedrun/runner.py --tokens-check --out out/speedrun   # tokens/s, both ways

1. The corpus (bench/speedrun/prepare.py), unless it is there.
2. The baseline (bench/speedrun/baseline.py) for `--budget-s` seconds: its last validation
   loss is the target L; its curve is `OUT/baseline.jsonl`.
3. examples/gpt_speedrun.tl, compiled with `tlc compile` (or `--program`, compiled on a
   machine with TensorLoom: the GPU machine has torch only), run through
   bench/speedrun/run_emitted.py for at most `--budget-s` seconds: `OUT/tensorloom.jsonl`.
4. Time to L for each: the first validation at or below L, by its `wall_s` (the clock from
   process start, compilation and earlier validations included) and by `wall_s -
   eval_total_s` (validations left out); the ratio TensorLoom / baseline. `OUT/summary.json`
   holds them, and `tlc info`'s predicted peak beside the measured one when `--predicted`
   (bytes, from `tlc info --format json`) is given or tlc is here to ask.

`--tokens-check` instead runs the emitted program and bench/handwritten/speedrun_gpt.py (the
same model and recipe by hand) for the same fixed steps and compares their tokens per second
over the steps after the first validation (compilation excluded): the target is >= 0.98.

`tlc plot OUT/baseline.jsonl OUT/tensorloom.jsonl --x wall_s -o curves.png` draws the two curves.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLE = ROOT / "examples" / "gpt_speedrun.tl"
sys.path.insert(0, str(HERE))

import prepare  # noqa: E402  # pyright: ignore[reportMissingImports]

TINY_BYTES = 400_000
TINY_STEPS = 12


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "out" / "speedrun")
    p.add_argument("--budget-s", type=float, default=210.0, help="each run's wall-clock budget")
    p.add_argument("--program", type=Path, default=None, help="gpt_speedrun.tl compiled already")
    p.add_argument("--device", default="auto")
    p.add_argument("--tiny", action="store_true", help="tiny models and corpus: a smoke run")
    p.add_argument("--skip-baseline", type=Path, default=None, metavar="CURVE",
                   help="take L from this baseline curve, run no baseline")  # fmt: skip
    p.add_argument("--tokens-check", action="store_true")
    p.add_argument("--steps", type=int, default=120, help="--tokens-check's steps per run")
    p.add_argument("--predicted", type=int, default=None, help="tlc info's peak, bytes")
    return p.parse_args(argv)


def run_json(command: list[str], cwd: Path) -> dict[str, Any]:
    """Run a speedrun script; its output passes through; the `{"result": ...}` it ends with."""
    print("$", " ".join(command), flush=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(command, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, check=False)
    sys.stdout.write(proc.stdout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"result"')]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{command[1]} failed (exit {proc.returncode})")
    return json.loads(lines[-1])["result"]  # type: ignore[no-any-return]


def compile_program(out: Path) -> Path:
    """examples/gpt_speedrun.tl compiled into `out` with this checkout's tlc."""
    target = out / "gpt_speedrun.py"
    command = [sys.executable, "-m", "tensorloom.tools.tlc", "compile", str(EXAMPLE), "-o",
               str(target)]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True)
    return target


def workdir(args: argparse.Namespace) -> tuple[Path, Path]:
    """Where the runs start (the program reads `bench/speedrun/data/train.bin` from there)
    and the data folder: the repository's, or a tiny corpus in OUT/work."""
    if not args.tiny:
        prepare.ensure(prepare.DATA)
        return ROOT, prepare.DATA
    data = args.out / "work" / "bench" / "speedrun" / "data"
    prepare.ensure(data, TINY_BYTES)
    return args.out / "work", data


def read_curve(path: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if "val_loss" in r]


def time_to(curve: list[dict[str, Any]], target: float) -> dict[str, float] | None:
    """When a curve first reaches `target`: wall seconds, and without the validations."""
    for record in curve:
        if record["val_loss"] <= target:
            train_s = record["wall_s"] - record["eval_total_s"]
            return {"wall_s": record["wall_s"], "train_s": train_s, "step": record["step"]}
    return None


def baseline(args: argparse.Namespace, cwd: Path, data: Path) -> Path:
    curve = args.out / "baseline.jsonl"
    command = [sys.executable, str(HERE / "baseline.py"), "--budget-s", str(args.budget_s),
               "--curve", str(curve), "--device", args.device, "--data", str(data)]  # fmt: skip
    run_json(command + (["--tiny", "--evals", "4"] if args.tiny else []), cwd)
    return curve


def tensorloom(args: argparse.Namespace, program: Path, cwd: Path, extra: list[str]) -> Path:
    curve = args.out / "tensorloom.jsonl"
    budget = 1e9 if args.tiny else args.budget_s  # a tiny run stops at TINY_STEPS
    command = [sys.executable, str(HERE / "run_emitted.py"), str(program.resolve()),
               "--budget-s", str(budget), "--curve", str(curve)]  # fmt: skip
    checkpoints = args.out / "checkpoints"
    shutil.rmtree(checkpoints, ignore_errors=True)  # a fresh run, never a resumed one
    flags = ["--checkpoint-dir", str(checkpoints), *extra]
    if args.device != "auto":
        flags += ["--device", args.device]
    if args.tiny:
        command.append("--tiny")
        flags += ["--batch-size", "8"] + (
            [] if "--max-steps" in extra else ["--max-steps", str(TINY_STEPS)]
        )
    result = run_json([*command, "--", *flags], cwd)
    args.tl_result = result
    return curve


def summary(args: argparse.Namespace, base_curve: Path, tl_curve: Path) -> dict[str, Any]:
    base, tl = read_curve(base_curve), read_curve(tl_curve)
    target = base[-1]["val_loss"]
    base_time, tl_time = time_to(base, target), time_to(tl, target)
    result: dict[str, Any] = {"L": target, "baseline": base_time, "tensorloom": tl_time}
    result["tensorloom_final_val_loss"] = tl[-1]["val_loss"] if tl else None
    if base_time and tl_time:
        result["ratio_wall"] = tl_time["wall_s"] / base_time["wall_s"]
        result["ratio_train"] = tl_time["train_s"] / base_time["train_s"]
    peak = getattr(args, "tl_result", {}).get("peak_memory_bytes")
    if peak is not None and args.predicted:
        result["peak_memory"] = {"measured": peak, "predicted": args.predicted,
                                 "error": args.predicted / peak - 1}  # fmt: skip
    return result


def tokens_per_s(curve: Path) -> float:
    """Tokens per second of training between the first validation after a step (compilation
    is before it) and the last one, validations left out."""
    records = [r for r in read_curve(curve) if r["step"] > 0]
    if len(records) < 2:
        raise SystemExit(f"{curve} has {len(records)} validations after training: need 2")
    first, last = records[0], records[-1]
    seconds = (last["wall_s"] - last["eval_total_s"]) - (first["wall_s"] - first["eval_total_s"])
    return (last["tokens"] - first["tokens"]) / seconds


def tokens_check(args: argparse.Namespace, program: Path, cwd: Path, data: Path) -> int:
    """The emitted program's tokens/s against the hand-written recipe's, same steps."""
    evals = 4
    hand_curve = args.out / "handwritten.jsonl"
    hand = [sys.executable, str(ROOT / "bench" / "handwritten" / "speedrun_gpt.py"),
            "--steps", str(args.steps), "--evals", str(evals), "--curve", str(hand_curve),
            "--device", args.device, "--data", str(data)]  # fmt: skip
    run_json(hand + (["--tiny"] if args.tiny else []), cwd)
    args.budget_s = 1e9
    emitted_curve = tensorloom(args, program, cwd, ["--max-steps", str(args.steps)])
    ratio = tokens_per_s(emitted_curve) / tokens_per_s(hand_curve)
    result = {"emitted_tokens_per_s": tokens_per_s(emitted_curve),
              "handwritten_tokens_per_s": tokens_per_s(hand_curve), "ratio": ratio}  # fmt: skip
    (args.out / "tokens_check.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"tokens_check": result}))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cwd, data = workdir(args)
    program = args.program or compile_program(args.out)
    if args.tokens_check:
        return tokens_check(args, program, cwd, data)
    if args.skip_baseline is not None:
        base_curve = args.out / "baseline.jsonl"
        if args.skip_baseline.resolve() != base_curve.resolve():
            shutil.copy(args.skip_baseline, base_curve)
    else:
        base_curve = baseline(args, cwd, data)
    tl_curve = tensorloom(args, program, cwd, [])
    result = summary(args, base_curve, tl_curve)
    (args.out / "summary.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"speedrun": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
