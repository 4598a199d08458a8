"""Run a program TensorLoom emitted, on the speedrun's clock, writing the speedrun's curve.

    python bench/speedrun/run_emitted.py out/speedrun/gpt_speedrun.py \\
        --curve out/speedrun/tensorloom.jsonl --budget-s 300 -- --metrics out/speedrun/m.jsonl
    python bench/speedrun/run_emitted.py PROGRAM.py --tiny --budget-s 20 -- --device cpu

The program (`tlc compile examples/gpt_speedrun.tl -o PROGRAM.py`) is imported, not
changed: importing an emitted program runs nothing, and its `main(argv)` trains as
`python PROGRAM.py ARGS` would. Its validation and its optimizer step are wrapped: a train
block of `step` lines (examples/gpt_speedrun.tl: Muon and AdamW) validates through
`mean_objectives` and steps in `train_step`; a block with one `optimizer` through
`validation_record` and `_optimizer_step`.

- Each validation is timed and written to `--curve` as bench/speedrun/common.py writes the
  hand-written runs' records (`step`, `wall_s` when training reached the step,
  `eval_total_s` spent in validations before it, `val_loss` (a step block's first
  objective), `eval_s`, `tokens`, `lr`), on a clock that started when this process did,
  before torch was imported;
- after each optimizer step, once the clock passes `--budget-s`, the run validates once
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

import common  # noqa: E402  # pyright: ignore[reportMissingImports]

TINY_MODEL = {"n_layer": 2, "n_head": 2, "n_embd": 64}
TINY_BLOCK = 64
TINY_WINDOWS = 32  # an epoch of a few steps, so that a short run validates


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
    for name in ("main", "DATASET_OPTIONS"):
        if not hasattr(module, name):
            raise SystemExit(f"{path} has no `{name}`: bench/speedrun/run_emitted.py needs one")
    hooks = (STEPS_HOOKS, ONE_HOOKS, PLAIN_HOOKS)
    if not any(all(hasattr(module, n) for n in names) for names in hooks):
        raise SystemExit(f"{path} has none of {hooks} to time")
    return module


STEPS_HOOKS = ("mean_objectives", "train_step")
ONE_HOOKS = ("validation_record", "_optimizer_step")
# a program whose validation is the metrics alone calls `evaluate(trainer)` (runtime/trainer.py
# builds the record around it)
PLAIN_HOOKS = ("evaluate", "_optimizer_step")


class Instrument:
    """The program's validations written as curve records; the budget enforced."""

    def __init__(self, program: ModuleType, curve: common.Curve, budget_s: float) -> None:
        self.program, self.curve, self.budget_s = program, curve, budget_s
        self.eval_total_s = 0.0
        self.last_step = -1
        if all(hasattr(program, n) for n in STEPS_HOOKS):
            self._objectives = program.mean_objectives
            self._step = program.train_step
            setattr(program, "mean_objectives", self.mean_objectives)  # noqa: B010
            setattr(program, "train_step", self.train_step)  # noqa: B010
        else:
            self.validation = (
                "validation_record" if hasattr(program, "validation_record") else "evaluate"
            )
            self._validation = getattr(program, self.validation)
            self._optimizer_step = program._optimizer_step
            setattr(program, self.validation, self.validation_record)
            setattr(program, "_optimizer_step", self.optimizer_step)  # noqa: B010

    # a block of `step` lines
    def mean_objectives(self, losses: Any, batches: Any) -> dict[str, float]:
        trainer = losses.args[0]  # `partial(objective_values, trainer)`
        return self.timed(trainer, lambda: self._objectives(losses, batches), _first_value)

    def train_step(self, trainer: Any, xb: Any, yb: Any) -> Any:
        values = self._step(trainer, xb, yb)
        self.check_budget(
            trainer,
            lambda: self.program.mean_objectives(
                self.program.partial(self.program.objective_values, trainer), trainer.val_loader
            ),
        )
        return values

    # a block of one optimizer
    def validation_record(self, trainer: Any) -> dict[str, Any]:
        return self.timed(trainer, lambda: self._validation(trainer), lambda r: r["val_loss"])

    def optimizer_step(self, trainer: Any) -> None:
        self._optimizer_step(trainer)
        self.check_budget(trainer, lambda: getattr(self.program, self.validation)(trainer))

    def timed(self, trainer: Any, validate: Callable[[], Any], loss: Callable[[Any], float]) -> Any:
        """Run one validation; write its curve record."""
        device = trainer.ctx.device
        sync = common.synchronizer(device)
        sync()
        wall = self.curve.wall()
        result = validate()
        sync()
        took = self.curve.wall() - wall
        accum = getattr(self.program, "GRAD_ACCUM", 1)
        loader = trainer.train_loader
        tokens = trainer.step * accum * loader.batch_size * loader.block_size
        optimizers = getattr(trainer, "optimizers", None) or {"": trainer.optimizer}
        lr = float(next(iter(optimizers.values())).param_groups[0]["lr"])
        if trainer.step != self.last_step:
            self.curve.write({"step": trainer.step, "wall_s": wall,
                              "eval_total_s": self.eval_total_s, "val_loss": loss(result),
                              "eval_s": took, "tokens": tokens, "lr": lr})  # fmt: skip
        self.eval_total_s += took
        self.last_step = trainer.step
        return result

    def check_budget(self, trainer: Any, validate: Callable[[], Any]) -> None:
        if self.curve.wall() <= self.budget_s:
            return
        was_training = trainer.model.training
        trainer.model.eval()
        validate()
        trainer.model.train(was_training)
        raise BudgetSpent(f"the budget of {self.budget_s:g} s ran out at step {trainer.step}")


def _first_value(values: dict[str, float]) -> float:
    """A step block's validation: its first objective's mean (`val_lm_loss`)."""
    return next(iter(values.values()))


def shrink(program: ModuleType) -> None:
    """`--tiny`: the program's GPT at 2 x 64, windows of 64 tokens, short epochs."""
    build = program.GPT

    def tiny(*args: Any, **kwargs: Any) -> Any:
        return build(*args, **{**kwargs, **TINY_MODEL})

    setattr(program, "GPT", tiny)  # noqa: B010
    program.DATASET_OPTIONS["block_size"] = TINY_BLOCK
    if "windows_per_epoch" in program.DATASET_OPTIONS:
        program.DATASET_OPTIONS["windows_per_epoch"] = TINY_WINDOWS


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
    Instrument(program, curve, args.budget_s)  # wraps the program's validation and step
    try:
        code = program.main(program_args)
    except BudgetSpent as stop:
        print(stop, file=sys.stderr)
        code = 0
    result: dict[str, Any] = dict(curve.records[-1]) if len(curve.records) > 1 else {}
    result["exit"] = code
    torch = sys.modules.get("torch")  # imported by the program
    if torch is not None and torch.cuda.is_available():
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    print(json.dumps({"result": result}))
    return code


if __name__ == "__main__":
    sys.exit(main())
