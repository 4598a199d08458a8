"""Train `Classifier` on the 8x8 digits: the script TensorLoom emits for mnist.tl.

Hand-written reference for the PyTorch backend (see docs/emitted-script.md). It is
what `tlc compile` must produce for this program, section for section:

    model Classifier:
        layer fc1 = Linear(64, 256)
        layer fc2 = Linear(256, 64)
        layer fc3 = Linear(64, 10)
        fn forward(self, x: Tensor) -> Tensor:
            return x |> self.fc1 |> relu |> self.fc2 |> relu |> self.fc3

    let net = Classifier()
    let data = load_dataset("digits", flatten=true)

    train net on data:
        epochs = 10
        optimizer = Adam(lr=0.001)
        loss = CrossEntropy
        precision = fp16
        distributed = true
        checkpoint every 5 epochs

The README's program reads `Linear(784, 256)` with `load_dataset()`: that is the
same script with synthetic [784] samples (or `load_dataset("mnist", flatten=true)`);
only the dataset line and `fc1` change. Digits keeps it offline and quick.

Run it:
    python mnist_reference.py --epochs 10 --metrics run/metrics.jsonl
    torchrun --nproc_per_node=2 mnist_reference.py --device cpu

The emitted script pastes the runtime modules' text where this prototype imports
them from `tensorloom.backends.runtime` (see the `runtime` section below).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

# ---- runtime: tlc pastes tensorloom/backends/runtime/{distributed,amp,data,loader,
# checkpoint,metrics}.py here (`inline_source`); the prototype imports them. ----
from tensorloom.backends.runtime.amp import (
    PrecisionPlan,
    autocast,
    make_grad_scaler,
    resolve_precision,
)
from tensorloom.backends.runtime.checkpoint import load_checkpoint, save_epoch_checkpoint
from tensorloom.backends.runtime.data import DataInfo, DatasetUnavailable, load_dataset
from tensorloom.backends.runtime.distributed import (
    DeviceUnavailable,
    DistContext,
    all_reduce_mean,
    all_reduce_sum,
    barrier,
    setup_distributed,
    teardown_distributed,
)
from tensorloom.backends.runtime.loader import DeviceLoader, HostLoader, make_loader
from tensorloom.backends.runtime.metrics import MetricsWriter, format_epoch_summary, progress

# ---- settings: the train block's values; the command line overrides some ----
EPOCHS = 10
BATCH_SIZE = 64  # `batch_size` was not set in the train block: the default
LEARNING_RATE = 0.001
PRECISION = "fp16"
DISTRIBUTED = True
CHECKPOINT_EVERY = 5  # epochs
KEEP_CHECKPOINTS = 3
LR_SCHEDULE: str | None = None  # "cosine", "step" or "warmup" when `schedule = ...` is set
WARMUP_STEPS = 0
STEP_SIZE = 1000  # optimizer steps between decays of a "step" schedule
STEP_GAMMA = 0.1
GRAD_CLIP: float | None = None  # `grad_clip = 1.0` clips the global gradient norm
GRAD_ACCUM = 1  # `grad_accum = 4` steps the optimizer every 4 batches
COMPILE_MODE = "default"  # used on CUDA unless --no-compile; never on the CPU by default
SEED = 0
DATASET: str | None = "digits"
DATASET_OPTIONS: dict[str, Any] = {"flatten": True}


# ---- model: from `model Classifier` ----
class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """`loss = CrossEntropy`; per-token logits [B, T, C] are flattened to [B*T, C]."""
    return F.cross_entropy(logits.flatten(0, -2), target.flatten())


# ---- command line ----
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Train Classifier on digits (from mnist.tl).")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="per process")
    parser.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--metrics", default=None, help="append one JSON line per epoch here")
    parser.add_argument("--checkpoint-dir", default="checkpoints")
    parser.add_argument("--resume", default=None, help="a checkpoint to continue from")
    parser.add_argument("--data-root", default=None, help="where dataset files live")
    parser.add_argument("--no-compile", action="store_true", help="do not use torch.compile")
    return parser.parse_args(argv)


# ---- setup ----
def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)  # seeds every CUDA device too


def build_scheduler(
    optimizer: torch.optim.Optimizer, kind: str | None, total_steps: int
) -> torch.optim.lr_scheduler.LRScheduler | None:
    """The lr schedule, stepped once per optimizer step."""
    if kind is None:
        return None
    warmup = max(WARMUP_STEPS, 0)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if kind == "cosine":
            progress_ = (step - warmup) / max(total_steps - warmup, 1)
            return 0.5 * (1.0 + math.cos(math.pi * min(progress_, 1.0)))
        if kind == "step":
            return STEP_GAMMA ** ((step - warmup) // STEP_SIZE)
        return 1.0  # "warmup": constant after the warm-up

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@dataclass
class Trainer:
    """Everything the loop touches, built once by `build_trainer`."""

    ctx: DistContext
    model: nn.Module  # the user's module: saved, loaded
    train_model: nn.Module  # compiled and/or DDP-wrapped: trained
    eval_model: nn.Module  # compiled, not DDP-wrapped: evaluated
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler | None
    scheduler: torch.optim.lr_scheduler.LRScheduler | None
    plan: PrecisionPlan
    train_loader: DeviceLoader | HostLoader
    val_loader: DeviceLoader | HostLoader
    info: DataInfo
    step: int = 0
    start_epoch: int = 0


def build_loaders(
    args: argparse.Namespace, ctx: DistContext
) -> tuple[DeviceLoader | HostLoader, DeviceLoader | HostLoader, DataInfo]:
    train, val, info = load_dataset(DATASET, data_root=args.data_root, **DATASET_OPTIONS)
    shard = {"rank": ctx.rank, "world_size": ctx.world_size, "device": ctx.device}
    train_loader = make_loader(
        *train, batch_size=args.batch_size, shuffle=True, drop_last=True, seed=args.seed, **shard
    )
    val_loader = make_loader(
        *val, batch_size=4 * args.batch_size, shuffle=False, even_shards=False, **shard
    )
    return train_loader, val_loader, info


def build_trainer(args: argparse.Namespace, ctx: DistContext) -> Trainer:
    seed_everything(args.seed)
    train_loader, val_loader, info = build_loaders(args, ctx)
    model = Classifier().to(ctx.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    plan = resolve_precision(PRECISION, ctx.device)
    steps_per_epoch = len(train_loader) // GRAD_ACCUM
    scheduler = build_scheduler(optimizer, LR_SCHEDULE, steps_per_epoch * args.epochs)
    compiled = _maybe_compile(model, args, ctx)
    train_model: nn.Module = compiled
    if ctx.is_distributed:
        device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        train_model = DistributedDataParallel(compiled, device_ids=device_ids)
    scaler = make_grad_scaler(plan, ctx.device)
    return Trainer(
        ctx, model, train_model, compiled, optimizer, scaler, scheduler, plan,
        train_loader, val_loader, info,
    )  # fmt: skip


def _maybe_compile(model: nn.Module, args: argparse.Namespace, ctx: DistContext) -> nn.Module:
    if args.no_compile or ctx.device.type != "cuda":
        return model
    return torch.compile(model, mode=COMPILE_MODE)  # type: ignore[return-value]


def resume(trainer: Trainer, path: str) -> None:
    """Continue where a checkpoint left off: weights, optimizer, scaler, schedule, RNG."""
    state = load_checkpoint(
        path,
        model=trainer.model,
        optimizer=trainer.optimizer,
        scaler=trainer.scaler,
        scheduler=trainer.scheduler,
        loader=trainer.train_loader,
        map_location=trainer.ctx.device,
    )
    trainer.start_epoch, trainer.step = state["epoch"], state["step"]


# ---- one epoch of training, one of validation ----
def train_one_epoch(
    trainer: Trainer, epoch: int, max_steps: int | None
) -> tuple[torch.Tensor, int]:
    """The epoch's mean loss (on the device, not yet synced) and its number of batches."""
    model, device = trainer.train_model, trainer.ctx.device
    model.train()
    trainer.train_loader.set_epoch(epoch)
    loss_sum = torch.zeros((), device=device)
    batches_used = len(trainer.train_loader) // GRAD_ACCUM * GRAD_ACCUM
    batches = 0
    description = f"epoch {epoch + 1}"
    bar = progress(trainer.train_loader, total=batches_used, description=description,
                   enabled=trainer.ctx.is_main)  # fmt: skip
    for xb, yb in bar:
        if batches == batches_used or _reached(trainer.step, max_steps):
            break
        last_micro_batch = (batches + 1) % GRAD_ACCUM == 0
        loss_sum += _forward_backward(trainer, xb, yb, sync=last_micro_batch)
        batches += 1
        if last_micro_batch:
            _optimizer_step(trainer)
    return loss_sum / max(batches, 1), batches


def _reached(step: int, max_steps: int | None) -> bool:
    return max_steps is not None and step >= max_steps


def _forward_backward(
    trainer: Trainer, xb: torch.Tensor, yb: torch.Tensor, sync: bool
) -> torch.Tensor:
    """Accumulate one micro-batch's gradients; DDP all-reduces only on the last one."""
    model = trainer.train_model
    skip_sync = isinstance(model, DistributedDataParallel) and not sync
    with model.no_sync() if skip_sync else nullcontext():  # type: ignore[operator]
        with autocast(trainer.plan, trainer.ctx.device):
            loss = loss_fn(model(xb), yb)
        scaled = loss / GRAD_ACCUM
        if trainer.scaler is not None:
            scaled = trainer.scaler.scale(scaled)
        scaled.backward()
    return loss.detach().float()


def _optimizer_step(trainer: Trainer) -> None:
    optimizer, scaler = trainer.optimizer, trainer.scaler
    if scaler is not None and GRAD_CLIP is not None:
        scaler.unscale_(optimizer)
    if GRAD_CLIP is not None:
        torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), GRAD_CLIP)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if trainer.scheduler is not None:
        trainer.scheduler.step()
    trainer.step += 1


@torch.no_grad()
def evaluate(trainer: Trainer) -> tuple[float, float]:
    """Validation loss and accuracy over the whole split, summed exactly across ranks."""
    model, device = trainer.eval_model, trainer.ctx.device
    model.eval()
    totals = torch.zeros(3, device=device)  # loss sum, correct predictions, targets
    for xb, yb in trainer.val_loader:
        with autocast(trainer.plan, device):
            logits = model(xb)
        flat_logits, flat_y = logits.float().flatten(0, -2), yb.flatten()
        totals[0] += F.cross_entropy(flat_logits, flat_y, reduction="sum")
        totals[1] += (flat_logits.argmax(dim=-1) == flat_y).sum()
        totals[2] += flat_y.numel()
    loss_sum, correct, count = all_reduce_sum(totals).tolist()
    return loss_sum / max(count, 1), correct / max(count, 1)


# ---- the loop ----
def epoch_record(trainer: Trainer, epoch: int, train_loss: torch.Tensor, batches: int,
                 elapsed: float, args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    val_loss, val_accuracy = evaluate(trainer)
    samples = batches * args.batch_size * trainer.ctx.world_size
    return {
        "epoch": epoch + 1,
        "train_loss": all_reduce_mean(train_loss).item(),  # the epoch's one host sync
        "val_loss": val_loss,
        "val_accuracy": val_accuracy,
        "samples_per_s": samples / elapsed,
        "lr": float(trainer.optimizer.param_groups[0]["lr"]),
        "time": elapsed,
        "steps": trainer.step,
    }


def save_if_due(trainer: Trainer, epoch: int, args: argparse.Namespace) -> None:
    """`checkpoint every 5 epochs`, and after the last epoch; rank 0 writes."""
    done = epoch + 1
    if done % CHECKPOINT_EVERY != 0 and done != args.epochs:
        return
    if trainer.ctx.is_main:
        save_epoch_checkpoint(
            args.checkpoint_dir, keep=KEEP_CHECKPOINTS, epoch=done, model=trainer.model,
            optimizer=trainer.optimizer, scaler=trainer.scaler, scheduler=trainer.scheduler,
            step=trainer.step, loader=trainer.train_loader,
        )  # fmt: skip
    barrier()


def train(args: argparse.Namespace, ctx: DistContext) -> int:
    trainer = build_trainer(args, ctx)
    log = print if ctx.is_main else _silent
    for warning in (trainer.plan.warning, trainer.info.warning()):
        if warning is not None:
            log(warning, file=sys.stderr)
    if args.resume is not None:
        resume(trainer, args.resume)
        log(f"resumed from {args.resume} after epoch {trainer.start_epoch}")
    metrics = MetricsWriter(args.metrics, enabled=ctx.is_main)
    for epoch in range(trainer.start_epoch, args.epochs):
        if _reached(trainer.step, args.max_steps):
            break
        start = time.perf_counter()
        train_loss, batches = train_one_epoch(trainer, epoch, args.max_steps)
        record = epoch_record(
            trainer, epoch, train_loss, batches, time.perf_counter() - start, args
        )
        metrics.write(record)
        log(format_epoch_summary(record, epochs=args.epochs))
        if batches == len(trainer.train_loader) // GRAD_ACCUM * GRAD_ACCUM:
            save_if_due(trainer, epoch, args)
    return 0


def _silent(*_args: object, **_kwargs: object) -> None:
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        ctx = setup_distributed(args.device)
        return train(args, ctx)
    except (DatasetUnavailable, DeviceUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        teardown_distributed()


if __name__ == "__main__":
    sys.exit(main())
