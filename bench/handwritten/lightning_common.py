"""What the two Lightning baselines share: the guarded import and a timing Callback.

Lightning is installed on the GPU machine (as `lightning` or `pytorch_lightning`)
but not in the CPU development environment; `import_lightning()` returns None
there and the scripts print a `skipped` record instead of failing.
"""

from __future__ import annotations

import importlib
import time
from types import ModuleType
from typing import Any

import torch


def import_lightning() -> ModuleType | None:
    """`lightning.pytorch`, else `pytorch_lightning`, else None."""
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def skipped(name: str) -> dict[str, Any]:
    return {"name": name, "skipped": "lightning is not installed"}


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def throughput_callback(pl: ModuleType, warmup_steps: int) -> Any:
    """A Callback that times the optimizer steps after the first `warmup_steps`.

    It synchronizes the GPU only when timing starts, at epoch boundaries and when
    training ends, so it does not slow down the steps it measures.
    """

    class ThroughputCallback(pl.Callback):
        def __init__(self) -> None:
            self.start: float | None = None
            self.first_timed = 0
            self.timed_steps = 0
            self.elapsed = 0.0
            self.epoch_start = 0.0
            self.epoch_s: list[float] = []

        def on_train_batch_end(self, trainer: Any, *_: Any) -> None:
            if trainer.global_step == warmup_steps and self.start is None:
                synchronize()
                self.start = time.perf_counter()
                self.first_timed = trainer.global_step

        def on_train_epoch_start(self, *_: Any) -> None:
            synchronize()
            self.epoch_start = time.perf_counter()

        def on_train_epoch_end(self, *_: Any) -> None:
            synchronize()
            self.epoch_s.append(time.perf_counter() - self.epoch_start)

        def on_train_end(self, trainer: Any, *_: Any) -> None:
            synchronize()
            if self.start is None:
                return
            self.elapsed = time.perf_counter() - self.start
            self.timed_steps = trainer.global_step - self.first_timed

    return ThroughputCallback()


def trainer_kwargs(device: str, precision: str) -> dict[str, Any]:
    """The Trainer settings both benchmarks use: one device, nothing but training."""
    accelerator = {"auto": "auto", "cpu": "cpu", "cuda": "gpu"}[device]
    return {
        "accelerator": accelerator,
        "devices": 1,
        "precision": "bf16-mixed" if precision == "bf16" else "32-true",
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "enable_checkpointing": False,
        "logger": False,
        "num_sanity_val_steps": 0,
    }
