"""What the hand-written speedrun loops share: the token files, the windows, validation, the
wall-clock budget and the curve.

    data = TokenData(Path("bench/speedrun/data"), block_size=1024)
    curve = Curve("out/baseline.jsonl", started=T0)
    run_budget(step, evaluate, plan=Plan(budget_s=300, evals=20), curve=curve)

Time is wall-clock seconds since the process started (`T0`, taken by each script before it
imports torch), so the curve's clock includes start-up, torch.compile's compilation and
every validation, as the emitted TensorLoom script's clock does under
bench/speedrun/run_emitted.py. Training windows are drawn as TensorLoom's `WindowLoader`
draws them (random starts from a generator seeded with seed + epoch); validation is the
validation split's non-overlapping windows in order, all of them, the loss summed over every
token, as the emitted script's `evaluate` computes it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch


class TokenData:
    """train.bin and val.bin (uint16 token ids) read through a memmap per batch, as nanoGPT does."""

    def __init__(self, folder: Path, block_size: int) -> None:
        self.train_path, self.val_path = folder / "train.bin", folder / "val.bin"
        for path in (self.train_path, self.val_path):
            if not path.is_file():
                raise SystemExit(f"{path} is missing: run python bench/speedrun/prepare.py")
        self.block_size = block_size

    def _tokens(self, path: Path) -> np.memmap:
        return np.memmap(path, dtype=np.uint16, mode="r")

    def train_batches(
        self, batch_size: int, device: torch.device, seed: int = 0
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Random windows, forever: epoch e draws its starts from a generator seeded seed + e."""
        T = self.block_size
        size = len(self._tokens(self.train_path))
        per_epoch = (size - 1) // T
        epoch = 0
        while True:
            generator = torch.Generator().manual_seed(seed + epoch)
            starts = torch.randint(0, size - T, (per_epoch,), generator=generator)
            for i in range(0, per_epoch - batch_size + 1, batch_size):
                yield self._batch(self.train_path, starts[i : i + batch_size], device)
            epoch += 1

    def val_batches(
        self, batch_size: int, device: torch.device
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The validation split's non-overlapping windows, in order."""
        T = self.block_size
        windows = (len(self._tokens(self.val_path)) - 1) // T
        starts = torch.arange(windows) * T
        for i in range(0, windows, batch_size):
            yield self._batch(self.val_path, starts[i : i + batch_size], device)

    def _batch(
        self, path: Path, starts: torch.Tensor, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor]:
        data, T = self._tokens(path), self.block_size
        rows = [torch.from_numpy(data[s : s + T + 1].astype(np.int64)) for s in starts.tolist()]
        both = torch.stack(rows)
        x, y = both[:, :-1], both[:, 1:]
        if device.type == "cuda":
            return (
                x.pin_memory().to(device, non_blocking=True),
                y.pin_memory().to(device, non_blocking=True),
            )
        return x.to(device), y.to(device)


@torch.no_grad()
def validation_loss(
    loss_sum: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    data: TokenData,
    batch_size: int,
    device: torch.device,
) -> float:
    """Mean loss per token over the whole validation split; `loss_sum(x, y)` sums a batch's."""
    total = torch.zeros((), device=device, dtype=torch.float64)
    count = 0
    for x, y in data.val_batches(batch_size, device):
        total += loss_sum(x, y).double()
        count += y.numel()
    return total.item() / max(count, 1)


class Curve:
    """The run's curve, one JSON object per line: step, wall_s, val_loss, train_loss, lr, ..."""

    def __init__(self, path: str | None, started: float, **header: Any) -> None:
        self.path, self.started = path, started
        self.records: list[dict[str, Any]] = []
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text("")
        if header:
            self.write({"run": header})

    def wall(self) -> float:
        return time.perf_counter() - self.started

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        print(json.dumps(record), flush=True)
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")


@dataclass
class Plan:
    """How long a run trains: `steps`, or as many as fit in `budget_s` (measured: the
    steps after `calibrate_after` give the step time, validation at step 0 its time)."""

    budget_s: float
    steps: int | None = None
    evals: int = 20
    calibrate_after: int = 3
    calibrate_steps: int = 5

    def fitted_steps(self, done: int, wall: float, step_s: float, eval_s: float) -> int:
        """The run's total steps when `done` steps took us to `wall` seconds: what the rest
        of the budget holds at `step_s` a step, leaving room for the evaluations to come."""
        left = self.budget_s - wall - self.evals * eval_s
        return max(done + 1, done + math.floor(0.97 * left / max(step_s, 1e-9)))


StepFn = Callable[[int, int], tuple[torch.Tensor, float]]
"""`step(i, total)`: trains optimizer step i of `total`; the loss tensor and the lr it used."""


def run_budget(
    step: StepFn,
    evaluate: Callable[[], float],
    plan: Plan,
    curve: Curve,
    tokens_per_step: int,
    sync: Callable[[], None],
) -> dict[str, Any]:
    """Train until the planned steps are done or the budget is spent, validating at step 0,
    every total/evals steps and at the end; the last record is the run's result.

    A record's `wall_s` is the clock when training reached its step (before that
    validation), `eval_total_s` the time the earlier validations took, `eval_s` this one's."""
    clock = _EvalClock(curve, evaluate, sync)
    clock.record(0, {"tokens": 0})
    total = plan.steps if plan.steps is not None else 10**9
    every = max(1, total // plan.evals) if plan.steps is not None else None
    calib_start = 0.0
    i = 0
    while i < total:
        loss, lr = step(i, total)
        i += 1
        if plan.steps is None and i == plan.calibrate_after:
            sync()
            calib_start = time.perf_counter()
        if plan.steps is None and i == plan.calibrate_after + plan.calibrate_steps:
            sync()
            step_s = (time.perf_counter() - calib_start) / plan.calibrate_steps
            total = plan.fitted_steps(i, curve.wall(), step_s, clock.first_eval_s)
            every = max(1, total // plan.evals)
            curve.write({"planned_steps": total, "step_s": step_s})
        over = curve.wall() > plan.budget_s
        if i == total or over or (every is not None and i % every == 0):
            extra = {"train_loss": loss.item(), "lr": lr, "tokens": i * tokens_per_step}
            clock.record(i, extra)
        if over:
            break
    result = dict(curve.records[-1])
    result["planned_steps"] = total
    return result


class _EvalClock:
    """Validation records, with the time each validation took kept apart."""

    def __init__(self, curve: Curve, evaluate: Callable[[], float], sync: Callable[[], None]):
        self.curve, self.evaluate, self.sync = curve, evaluate, sync
        self.eval_total_s = 0.0
        self.first_eval_s = 0.0

    def record(self, step: int, extra: dict[str, Any]) -> None:
        self.sync()
        wall = self.curve.wall()
        loss = self.evaluate()
        took = self.curve.wall() - wall
        self.first_eval_s = self.first_eval_s or took
        record = {"step": step, "wall_s": wall, "eval_total_s": self.eval_total_s,
                  "val_loss": loss, "eval_s": took, **extra}  # fmt: skip
        self.eval_total_s += took
        self.curve.write(record)


def cosine_lr(step: int, total: int, lr: float, min_lr: float, warmup: int) -> float:
    """nanoGPT's get_lr, its decay spanning the run: linear warm-up, cosine to min_lr."""
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    ratio = min(1.0, (step - warmup) / max(total - warmup, 1))
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def device_of(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def synchronizer(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def versions() -> dict[str, Any]:
    """What a curve's header records of the machine."""
    info: dict[str, Any] = {"torch": torch.__version__}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
    return info
