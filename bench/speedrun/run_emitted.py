"""Run a program TensorLoom emitted, on the speedrun's clock, writing the speedrun's curve.

    python bench/speedrun/run_emitted.py out/speedrun/gpt_speedrun.py \\
        --curve out/speedrun/tensorloom.jsonl --budget-s 300 -- --metrics out/speedrun/m.jsonl
    python bench/speedrun/run_emitted.py PROGRAM.py --tiny --budget-s 20 -- --device cpu

The program (`tlc compile examples/gpt_speedrun.tl -o PROGRAM.py`) is imported, not
changed: importing an emitted program runs nothing, and its `main(argv)` trains as
`python PROGRAM.py ARGS` would. Three of its functions are wrapped:

- `validation_record(trainer)` (every `eval_every` validation and each epoch's): timed, and
  written to `--curve` as bench/speedrun/common.py writes the hand-written runs' records
  (`step`, `wall_s` when training reached the step, `eval_total_s` spent in validations
  before it, `val_loss`, `eval_s`, `tokens`, `lr`), on a clock that started when this
  process did, before torch was imported;
- `_optimizer_step(trainer)`: once the clock passes `--budget-s`, the run validates once
  more and stops (`BudgetSpent`), as the hand-written runs stop;
- with `--tiny`, `GPT(...)` builds 2 blocks of width 64 and the windows are 64 tokens, so
  the program itself runs in seconds on a CPU (a smoke test of the emitted code).

The last line printed is a JSON object `{"result": ...}`: the last record, the step count,
and on CUDA `torch.cuda.max_memory_allocated()` for comparison with `tlc info`'s prediction.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # the curve's clock starts before torch is imported

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402

TINY_MODEL = {"n_layer": 2, "n_head": 2, "n_embd": 64}
TINY_BLOCK = 64


class BudgetSpent(Exception):
    """The wall-clock budget ran out: the run stops after one last validation."""


def load_program(path: Path) -> ModuleType:
    """The emitted program as a module (its runtime module beside it importable)."""
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    for name in ("main", "validation_record", "_optimizer_step", "DATASET_OPTIONS"):
        if not hasattr(module, name):
            raise SystemExit(f"{path} has no `{name}`: bench/speedrun/run_emitted.py needs one")
    return module


class Instrument:
    """The program's validations written as curve records; the budget enforced."""

    def __init__(self, program: ModuleType, curve: common.Curve, budget_s: float) -> None:
        self.program, self.curve, self.budget_s = program, curve, budget_s
        self.eval_total_s = 0.0
        self.last_step = -1
        self.tokens_per_micro_batch = 0
        self.sync: Callable[[], None] = lambda: None
        self._validation: Callable[[Any], dict[str, Any]] = program.validation_record
        self._optimizer_step: Callable[[Any], None] = program._optimizer_step
        program.validation_record = self.validation_record
        program._optimizer_step = self.optimizer_step

    def validation_record(self, trainer: Any) -> dict[str, Any]:
        import torch

        device = trainer.ctx.device
        self.sync = common.synchronizer(device)
        self.sync()
        wall = self.curve.wall()
        record = self._validation(trainer)
        took = self.curve.wall() - wall
        accum = getattr(self.program, "GRAD_ACCUM", 1)
        loader = trainer.train_loader
        tokens = trainer.step * accum * loader.batch_size * loader.block_size
        lr = float(trainer.optimizer.param_groups[0]["lr"])
        if trainer.step != self.last_step:
            self.curve.write({"step": trainer.step, "wall_s": wall,
                              "eval_total_s": self.eval_total_s, "val_loss": record["val_loss"],
                              "eval_s": took, "tokens": tokens, "lr": lr})  # fmt: skip
        self.eval_total_s += took
        self.last_step = trainer.step
        if device.type == "cuda":
            self.peak = torch.cuda.max_memory_allocated()
        return record

    def optimizer_step(self, trainer: Any) -> None:
        self._optimizer_step(trainer)
        if self.curve.wall() > self.budget_s:
            self.validation_record(trainer)
            raise BudgetSpent(f"the budget of {self.budget_s:g} s ran out at step {trainer.step}")


def shrink(program: ModuleType) -> None:
    """`--tiny`: the program's GPT at 2 x 64 and windows of 64 tokens."""
    build = program.GPT

    def tiny(*args: Any, **kwargs: Any) -> Any:
        return build(*args, **{**kwargs, **TINY_MODEL})

    program.GPT = tiny
    program.DATASET_OPTIONS["block_size"] = TINY_BLOCK


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("program", type=Path, help="the emitted program (tlc compile ... -o)")
    p.add_argument("--curve", default=None)
    p.add_argument("--budget-s", type=float, default=300.0)
    p.add_argument("--tiny", action="store_true")
    args = p.parse_args(argv[:split])
    program_args = argv[split + 1 :]
    program = load_program(args.program)
    if args.tiny:
        shrink(program)
    curve = common.Curve(args.curve, T0, recipe="TensorLoom", program=str(args.program),
                         tiny=args.tiny, argv=program_args, **common.versions())  # fmt: skip
    instrument = Instrument(program, curve, args.budget_s)
    try:
        code = program.main(program_args)
    except BudgetSpent as stop:
        print(stop, file=sys.stderr)
        code = 0
    result: dict[str, Any] = dict(curve.records[-1]) if len(curve.records) > 1 else {}
    result["exit"] = code
    if hasattr(instrument, "peak"):
        result["peak_memory_bytes"] = instrument.peak
    print(json.dumps({"result": result}))
    return code


if __name__ == "__main__":
    sys.exit(main())
