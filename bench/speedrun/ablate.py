"""The speedrun's ablation: each element of the modern recipe alone on top of nanoGPT's baseline.

    python bench/speedrun/ablate.py --budget-s 150 --out out/speedrun/ablation
    python bench/speedrun/ablate.py --only muon,rotary --budget-s 150 ...   # a device call's share
    python bench/speedrun/ablate.py --device cpu --tiny --budget-s 10 --only relu2   # smoke

Every run is bench/handwritten/speedrun_gpt.py for the same wall-clock budget, with no element
on (`none`: nanoGPT's recipe on the hand-written model; bench/speedrun/baseline.py is the
same recipe) or with one element on (`--elements NAME`), both at the baseline's batch
(160 x 3 windows of 1,024), or with all of them (`all`: examples/gpt_speedrun.tl's recipe,
64 windows a step). Each run's curve is `OUT/NAME.jsonl`; `OUT/ablation.json` and the printed
markdown table give, per run, the validation loss at the end of the budget and the time to
reach `none`'s final loss (L) when it does. Runs already in OUT are read, not repeated, so
the table can be assembled over several device calls (`--only`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "bench" / "handwritten"))

import prepare  # noqa: E402  # pyright: ignore[reportMissingImports]
import runner  # noqa: E402  # pyright: ignore[reportMissingImports]
import speedrun_gpt  # noqa: E402  # pyright: ignore[reportMissingImports]

RUNS = ("none", *speedrun_gpt.ELEMENTS, "all")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "out" / "speedrun" / "ablation")
    p.add_argument("--budget-s", type=float, default=150.0)
    p.add_argument(
        "--only", default=",".join(RUNS), help="runs, comma-separated: " + ", ".join(RUNS)
    )
    p.add_argument("--device", default="auto")
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--again", action="store_true", help="run again what OUT already holds")
    return p.parse_args(argv)


def elements(run: str) -> str:
    if run == "none":
        return ""
    return ",".join(speedrun_gpt.ELEMENTS) if run == "all" else run


def run_one(args: argparse.Namespace, run: str, data: Path) -> None:
    curve = args.out / f"{run}.jsonl"
    if curve.is_file() and not args.again and runner.read_curve(curve):
        return
    command = [sys.executable, str(ROOT / "bench" / "handwritten" / "speedrun_gpt.py"),
               "--elements", elements(run), "--budget-s", str(args.budget_s),
               "--curve", str(curve), "--device", args.device, "--data", str(data)]  # fmt: skip
    if run != "all":  # one element on the baseline's batch: nanoGPT's 491,520 tokens a step
        command += ["--micro-batch", "160", "--grad-accum", "3"]
    if args.tiny:
        command += ["--tiny", "--evals", "3"]
    runner.run_json(command, ROOT)


def table(out: Path) -> dict[str, Any]:
    """Each finished run's final loss and time to `none`'s final loss."""
    curves = {
        r: runner.read_curve(out / f"{r}.jsonl") for r in RUNS if (out / f"{r}.jsonl").is_file()
    }
    target = curves["none"][-1]["val_loss"] if curves.get("none") else None
    rows: dict[str, Any] = {}
    for run, curve in curves.items():
        if not curve:
            continue
        reached = runner.time_to(curve, target) if target is not None else None
        rows[run] = {"final_val_loss": curve[-1]["val_loss"], "steps": curve[-1]["step"],
                     "time_to_L": reached}  # fmt: skip
    return {"L": target, "runs": rows}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| run | val loss at the budget | time to L (wall s) | steps |",
        "|---|---:|---:|---:|",
    ]
    for run, row in result["runs"].items():
        reached = row["time_to_L"]
        when = f"{reached['wall_s']:.1f}" if reached else "not reached"
        lines.append(f"| {run} | {row['final_val_loss']:.4f} | {when} | {row['steps']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = [r for r in args.only.split(",") if r]
    unknown = set(chosen) - set(RUNS)
    if unknown:
        raise SystemExit(f"unknown runs {sorted(unknown)}; known: {', '.join(RUNS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.tiny:
        data = args.out / "data"
        prepare.ensure(data, runner.TINY_BYTES)
    else:
        data = prepare.DATA
        prepare.ensure(data)
    for run in chosen:
        run_one(args, run, data)
    result = table(args.out)
    (args.out / "ablation.json").write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
