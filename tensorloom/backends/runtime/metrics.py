"""Metrics for TensorLoom scripts: JSON lines, a one-line epoch summary, a progress bar.

    metrics = MetricsWriter("run/metrics.jsonl")
    record = {"epoch": 1, "train_loss": 0.41, "val_loss": 0.22, "val_accuracy": 0.94,
              "samples_per_s": 51234.0, "lr": 0.001, "time": 0.31}
    metrics.write(record)                    # one JSON object per line, flushed
    print(format_epoch_summary(record, epochs=10))
    # epoch  1/10  train_loss 0.4100  val_loss 0.2200  val_acc 94.00%
    #   51,234 samples/s  lr 1.00e-03  0.31s    (on one line)

`MetricsWriter(path, tensorboard="runs/mnist")` also logs each record's numbers
as TensorBoard scalars. Only rank 0 writes and prints; the others pass
`enabled=False`. The progress bar is tqdm's, shown only when stderr is a
terminal (and tqdm is installed), so logs and CI output stay one line per epoch.
`batch_accuracy` and `batch_top_k_accuracy` are `metrics = [accuracy, top_k(5)]`'s
values of one batch.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import torch

try:
    from tqdm import tqdm
except ImportError:  # the bar is a nicety: scripts run without it
    tqdm = None

Item = TypeVar("Item")


class MetricsWriter:
    """Appends one JSON object per epoch to a file; does nothing without a path.

    With `tensorboard=DIR`, each numeric field of a record is also a TensorBoard
    scalar in DIR, at step `epoch` (when the tensorboard package is installed;
    without it the script says so once and trains on).
    """

    def __init__(self, path: str | os.PathLike[str] | None, *, enabled: bool = True,
                 tensorboard: str | os.PathLike[str] | None = None) -> None:  # fmt: skip
        self.path = os.fspath(path) if path is not None and enabled else None
        if self.path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self.board = _tensorboard_writer(tensorboard) if tensorboard and enabled else None

    def write(self, record: dict[str, Any]) -> None:
        # JSON has no NaN or Infinity (a diverged loss is null); TensorBoard gets the numbers.
        finite = {k: v for k, v in record.items() if not isinstance(v, float) or math.isfinite(v)}
        if self.board is not None:
            for key, value in finite.items():
                if (
                    key != "epoch"
                    and isinstance(value, int | float)
                    and not isinstance(value, bool)
                ):
                    self.board.add_scalar(key, value, global_step=record["epoch"])
            self.board.flush()
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({k: finite.get(k) for k in record}) + "\n")

    def close(self) -> None:
        if self.board is not None:
            self.board.close()


def _tensorboard_writer(logdir: str | os.PathLike[str]) -> Any:
    """torch's SummaryWriter for `logdir`, or None (with a warning) without tensorboard."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        print(
            "warning: --tensorboard needs the tensorboard package (pip install tensorboard); "
            "no TensorBoard logs are written",
            file=sys.stderr,
        )
        return None
    return SummaryWriter(log_dir=os.fspath(logdir))


_SHOWN = ("val_loss", "val_accuracy")


def format_epoch_summary(record: dict[str, Any], *, epochs: int) -> str:
    """`epoch  3/10  train_loss 0.2143  val_loss 0.1988  val_acc 94.44%  ...` for one epoch."""
    width = len(str(epochs))
    parts = [f"epoch {record['epoch']:>{width}}/{epochs}", f"train_loss {record['train_loss']:.4f}"]
    if record.get("val_loss") is not None:
        parts.append(f"val_loss {record['val_loss']:.4f}")
    if record.get("val_accuracy") is not None:
        parts.append(f"val_acc {100 * record['val_accuracy']:.2f}%")
    for key, value in record.items():  # `metrics = [...]`: `val_top5_accuracy`, `val_<fn>`
        shown_key = key.startswith(("val_", "ema_val_")) and key not in _SHOWN
        if shown_key and value is not None:
            shown = f"{100 * value:.2f}%" if key.endswith("_accuracy") else f"{value:.4f}"
            parts.append(f"{key} {shown}")
    parts.append(f"{record['samples_per_s']:,.0f} samples/s")
    if record.get("lr") is not None:
        parts.append(f"lr {record['lr']:.2e}")
    parts.append(f"{record['time']:.2f}s")
    return "  ".join(parts)


def progress(
    iterable: Iterable[Item], *, total: int, description: str, enabled: bool = True
) -> Iterator[Item]:
    """`iterable` with a tqdm bar on a terminal; the plain iterable otherwise."""
    if tqdm is None or not enabled or not sys.stderr.isatty():
        return iter(iterable)
    return iter(tqdm(iterable, total=total, desc=description, leave=False, dynamic_ncols=True))


def batch_accuracy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """`accuracy`: the share of argmax predictions equal to the target (per token for [B, T, C])."""
    return (output.flatten(0, -2).argmax(dim=-1) == target.flatten()).float().mean()


def batch_top_k_accuracy(output: torch.Tensor, target: torch.Tensor, k: int) -> torch.Tensor:
    """`top_k(k)`: the share of targets among the k largest outputs (per token for [B, T, C])."""
    top = output.flatten(0, -2).topk(k, dim=-1).indices
    return (top == target.flatten()[:, None]).any(dim=-1).float().mean()


def perplexity(loss: float) -> float:
    """`metrics = [perplexity]`: exp of a mean cross-entropy in nats (inf past a float's range)."""
    return math.exp(loss) if loss < 709.0 else math.inf
