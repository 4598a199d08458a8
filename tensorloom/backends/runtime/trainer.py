"""The trainer plumbing every program file shares: its record, flags, epochs, saves and run.

    parser = training_arguments("Train Net on digits (from mnist.tl).", epochs=EPOCHS,
                                batch_size=64, seed=0, checkpoint_dir="checkpoints/mnist")
    checkpoint_dir = check_run(args)          # before step 1: length, batch size, the folder
    trainer = Trainer(ctx, model, ModelLoss(model, loss_fn), model, optimizer, None,
                      train_loader, val_loader, info, recipe)  # None: no scheduler
    start_run(trainer, args)                  # stale temporary files, --init-from, --resume
    for epoch in range(trainer.start_epoch, args.epochs):
        loss_sum, batches = carried(trainer)
        for xb, yb in epoch_batches(trainer, epoch, args.max_steps, skip=batches):
            ...the program's step...
        train_loss, batches = end_epoch(trainer, loss_sum, batches)
        ...its record, then save_if_due(trainer, epoch + 1, start_step, every=5, ...)
    interrupted = finish_run(trainer, epochs_done=..., started=..., metrics=metrics)

The program file keeps what is its own (the model, the loss, the step, the epoch loop, the
evaluation); these functions read only the `Trainer` fields every program fills. Under DDP
rank 0 writes and prints; the program waits at its `barrier()` after a save.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from tensorloom.backends.runtime.amp import PrecisionPlan
from tensorloom.backends.runtime.checkpoint import (
    CheckpointError,
    clean_stale_temp_files,
    load_checkpoint,
    load_weights,
    prepare_checkpoint_dir,
    save_checkpoint,
    save_epoch_checkpoint,
)
from tensorloom.backends.runtime.distributed import DistContext
from tensorloom.backends.runtime.graphs import (
    SMALL_MODEL_PARAMS,
    GraphedStep,
    optimizer_modes,
    restore_optimizer_modes,
    training_step,
)
from tensorloom.backends.runtime.loader import DeviceLoader
from tensorloom.backends.runtime.metrics import MetricsWriter, progress
from tensorloom.backends.runtime.recipe import (
    RunRecipe,
    check_batch_size,
    check_resume_left,
    check_run_length,
    format_run_summary,
    format_validation,
    interrupted_exit_code,
)
from tensorloom.backends.runtime.serve import (
    export_model,
    predict,
    read_predict_inputs,
    write_predictions,
)

Carry = tuple[torch.Tensor, int]
"""A cut epoch's device-side loss sum and its batches so far."""


# The optional parts' types are strings: a name read only in a string is not a reference
# (runtime.paste), so a program without AMP or a captured step is not given their code.
@dataclass
class Trainer:
    """Everything a program's loop touches, built once by its `build_trainer`."""

    ctx: DistContext
    model: nn.Module  # the user's module: saved, loaded
    train_model: nn.Module  # trained: BatchLoss (one process) or the DDP-wrapped model
    eval_model: nn.Module  # compiled, not DDP-wrapped: evaluated
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler | Any | None
    train_loader: Any
    val_loader: Any
    info: Any  # the dataset's DataInfo or TokenInfo
    recipe: RunRecipe  # EMA, early stopping, keep-best, eval_every, stop signals
    scaler: torch.amp.GradScaler | None = None
    plan: "PrecisionPlan | None" = None  # noqa: UP037 (see above)
    step: int = 0
    start_epoch: int = 0
    carry: Carry | None = None  # resumed mid-epoch: (loss sum, batches)
    carried: dict[str, Any] = field(default_factory=dict)  # `carry x`: the last batch's
    metrics: MetricsWriter | None = None  # `eval_every` writes between epochs
    checkpoint_dir: str | None = None
    saved_step: int = -1  # the step last.pt holds
    resumed_rngs: list[Any] | None = None  # under DDP, every rank's RNG in the save resumed
    whole_step: bool = False  # the step is captured in one CUDA graph (runtime/graphs.py)
    graphed: "GraphedStep | None" = None  # noqa: UP037 (captured at the first epoch, after any resume)


# --- the command line --------------------------------------------------------------------


def training_arguments(
    description: str, *, epochs: int, batch_size: int, seed: int, checkpoint_dir: str,
    compile: str = "auto", precision: str | None = None, serve: bool = False,
    generate: bool = False, download: bool = False, cuda_graph: bool = False,
    weights: str | None = None, consolidate: bool = False, samples: str | None = None,
) -> argparse.ArgumentParser:  # fmt: skip
    """A program's flags: the ones every program has, then those its block asks for
    (`precision` when it has AMP, `serve` for --predict/--export, `generate` for language
    models, `download` for named image datasets, `cuda_graph` where the whole step may be
    captured, `weights` for a published-weights block, `consolidate` under FSDP, `samples`
    (the default path of --samples) for a block with `samples`)."""
    parser = argparse.ArgumentParser(description=description)
    add = parser.add_argument
    add("--epochs", type=int, default=epochs)
    add("--batch-size", type=int, default=batch_size, help="per process")
    add("--max-steps", type=int, default=None,
        help="stop after this many steps (the schedule is unchanged)")  # fmt: skip
    add("--device", choices=("auto", "cpu", "cuda"), default="auto")
    add("--seed", type=int, default=seed)
    add("--metrics", default=None, help="a JSON line per epoch goes here")
    add("--tensorboard", default=None, help="TensorBoard logs go here")
    add("--checkpoint-dir", default=checkpoint_dir)
    add("--resume", default=None, help="a checkpoint to continue from")
    add("--overwrite", action="store_true",
        help="replace the checkpoints an earlier run left in --checkpoint-dir")  # fmt: skip
    add("--init-from", default=None, help="start from these weights")
    if weights is not None:
        add(
            "--weights",
            default=weights,
            help="the published weights the model starts from (a file or a folder)",
        )
        add(
            "--export-weights",
            default=None,
            metavar="DIR",
            help="write the trained model in the published weights' names and format",
        )
    add("--evaluate", default=None, metavar="CHECKPOINT",
        help="report the validation metrics of a checkpoint; no training")  # fmt: skip
    if serve:
        add(
            "--predict",
            default=None,
            metavar="INPUT",
            help="outputs for a .npz, .pt, .csv or image file",
        )
        add("--out", default=None, help="--predict writes here, not stdout")
        add(
            "--export",
            default=None,
            metavar="FILE",
            help="torch.export the model (.pt2; .onnx with onnx)",
        )
    if generate:
        add(
            "--generate",
            default=None,
            metavar="PROMPT",
            help="print text the model writes after PROMPT",
        )
        add("--tokens", type=int, default=200, help="bytes --generate samples")
        add("--temperature", type=float, default=0.8, help="0: always the likeliest")
        add("--top-k", type=int, default=40, help="sample among the k likeliest")
    add("--data-root", default=None, help="where datasets live")
    if samples is not None:
        add("--samples", default=samples, help="the PNG grid of samples drawn after each epoch")
    if download:
        add("--download", action="store_true",
            help="fetch a missing dataset (HTTPS, sha256-checked)")  # fmt: skip
    add("--compile", choices=("auto", "on", "off"), default=compile,
        help="torch.compile on CUDA; auto: when the run repays it")  # fmt: skip
    add("--no-compile", action="store_true", help="as --compile off")
    if precision is not None:
        add("--precision", choices=("auto", "fp32", "fp16", "bf16"), default=precision,
            help="auto: bf16 on a bf16 GPU, else fp32")  # fmt: skip
    if cuda_graph:
        add("--no-cuda-graph", action="store_true",
            help="no whole-step CUDA graph for small resident datasets")  # fmt: skip
    if consolidate:
        add("--consolidate", nargs=2, metavar=("DIR", "OUT.pt"), default=None,
            help="write a sharded save's weights as one state dict, then exit")  # fmt: skip
    return parser


# --- set-up --------------------------------------------------------------------------------


def seed_everything(seed: int) -> None:
    """Seed Python's and torch's generators (every CUDA device's too)."""
    random.seed(seed)
    torch.manual_seed(seed)


@contextmanager
def validation_rng() -> Iterator[None]:
    """Validation's draws (an objective's time steps and noise) on a fork of the RNG (every
    CUDA device's too): the training continues with the numbers it would have drawn had
    validation not run, so a run cut mid-epoch (which validates its part of the epoch
    before saving) resumes exactly as the uncut run goes on."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        yield


class ModelLoss(nn.Module):
    """The training loss of a batch, `loss_fn(model(xb), yb)`, as one module: `torch.compile`
    of it sees the forward and the loss together (and `should_compile` times it)."""

    def __init__(self, model: nn.Module, loss_fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.model, self.loss_fn = model, loss_fn

    def forward(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        return self.loss_fn(self.model(xb), yb)


def captures_whole_step(
    model: nn.Module, loader: Any, scaler: torch.amp.GradScaler | None, device: torch.device,
    *, allowed: bool = True,
) -> bool:  # fmt: skip
    """Whether this run captures its whole step in one CUDA graph (runtime/graphs.py): on
    CUDA, data on the device, no GradScaler, at most SMALL_MODEL_PARAMS parameters, and
    `allowed` (not --no-cuda-graph)."""
    small = sum(p.numel() for p in model.parameters()) <= SMALL_MODEL_PARAMS
    resident = isinstance(loader, DeviceLoader)
    return allowed and device.type == "cuda" and resident and scaler is None and small


def mark_step_begin(trainer: Trainer) -> None:
    """CUDA graphs (compile modes "reduce-overhead", "max-autotune") reuse output memory:
    mark each step. Only a compiled model's: the call imports the compiler's machinery
    (seconds at start-up)."""
    if trainer.eval_model is not trainer.model:
        torch.compiler.cudagraph_mark_step_begin()


# --- an epoch's batches ---------------------------------------------------------------------


def epoch_batches(
    trainer: Trainer, epoch: int, max_steps: int | None, *, skip: int = 0, grad_accum: int = 1
) -> Iterator[Any]:
    """The batches `epoch` trains on, behind a progress bar on a terminal: the first `skip`
    left out (a resumed epoch trained them), a last part of fewer than `grad_accum` batches
    too, and none after --max-steps or a stop (a signal, early stopping) at a step's end."""
    loader = trainer.train_loader
    loader.set_epoch(epoch)
    used = len(loader) // grad_accum * grad_accum
    bar = progress(loader, total=used, description=f"epoch {epoch + 1}",
                   enabled=trainer.ctx.is_main)  # fmt: skip
    for index, batch in enumerate(bar):
        if index < skip:
            continue
        at_step_end = index % grad_accum == 0
        if index == used or (at_step_end and epoch_stops(trainer, max_steps)):
            break
        yield batch


def seconds_since(start: float, device: torch.device) -> float:
    """Seconds since `time.perf_counter()` was `start`, the steps still queued on a CUDA
    `device` included (it waits for them)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def epoch_stops(trainer: Trainer, max_steps: int | None) -> bool:
    """Whether the run stops here: --max-steps reached, or a signal or early stopping."""
    return reached(trainer.step, max_steps) or trainer.recipe.stop_reason is not None


def end_epoch(
    trainer: Trainer, loss_sum: torch.Tensor, batches: int, *, grad_accum: int = 1
) -> tuple[torch.Tensor, int]:
    """The epoch's mean loss (on the device, not synced) and batches; an epoch cut short
    (fewer batches than `epoch_batches` gives) keeps its loss sum and batches for last.pt:
    under DDP or FSDP the ranks' mean sum (every rank is cut at the same step), which each
    rank resumes from, so the resumed epoch's mean over the ranks is the uncut run's."""
    if batches < len(trainer.train_loader) // grad_accum * grad_accum:
        kept = loss_sum.detach()
        if trainer.ctx.is_distributed:
            kept = kept.clone()
            torch.distributed.all_reduce(kept)  # a sum: gloo has no AVG
            kept /= trainer.ctx.world_size
        trainer.carry = kept, batches
    return loss_sum / max(batches, 1), batches


def train_epoch_graphed(
    trainer: Trainer, epoch: int, max_steps: int | None,
    region: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> tuple[torch.Tensor, int]:  # fmt: skip
    """An epoch whose every step is one replay of the captured step (runtime/graphs.py): no
    host syncs. The capture, at the first epoch, runs the forward in `region()` (autocast)."""
    loader = trainer.train_loader  # a DeviceLoader: `captures_whole_step` asked for one
    trainer.train_model.train()
    loader.set_epoch(epoch)
    if trainer.graphed is None:
        step = training_step(trainer.train_model, trainer.optimizer, region)
        trainer.graphed = GraphedStep(step, loader.x, loader.y, batch_size=loader.batch_size,
                                      model=trainer.model, optimizer=trainer.optimizer)  # fmt: skip
    batches = 0
    for idx in loader.batch_indices():
        if epoch_stops(trainer, max_steps):
            break
        trainer.graphed.replay(idx)
        batches += 1
        trainer.step += 1
    return end_epoch(trainer, trainer.graphed.take_loss_sum(), batches)


# --- checkpoints and resume -----------------------------------------------------------------


def checkpoint_state(
    trainer: Trainer, carry: Carry | None = None, ranks: list[Any] | None = None,
    rngs: list[Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """What a checkpoint holds besides its epoch: `carry` is a cut epoch's loss and batches;
    `ranks`, under DDP, every rank's carried values (`carried_by_rank`); `rngs`, under DDP,
    every rank's RNG states (`gather_rng_states`: each rank draws its own noise)."""
    extra: dict[str, Any] = {"recipe": trainer.recipe.state_dict()}
    if rngs is not None:  # each rank resumes its own (`resumed_rngs`)
        extra["rng_by_rank"] = rngs
    if carry is not None:
        extra["carry"] = {"loss_sum": carry[0].detach(), "batches": carry[1]}
    if trainer.carried:  # a run resumed mid-epoch continues from them
        extra["carried"] = trainer.carried
    if ranks is not None:  # each rank's own, rank 0's above
        extra["carried_by_rank"] = ranks
    return dict(model=trainer.model, optimizer=trainer.optimizer, scaler=trainer.scaler,
                scheduler=trainer.scheduler, step=trainer.step, loader=trainer.train_loader,
                extra=extra)  # fmt: skip


def carried_by_rank(trainer: Trainer) -> list[Any] | None:
    """Under DDP each rank carries its own values, the state of its own streams: every
    rank's, in rank order, for rank 0 to save (a collective: every rank calls it)."""
    if not trainer.ctx.is_distributed or not trainer.carried:
        return None
    ranks: list[Any] = [None] * trainer.ctx.world_size
    torch.distributed.all_gather_object(ranks, trainer.carried)
    return ranks


def save_last(trainer: Trainer, epochs_done: int, rngs: list[Any] | None = None) -> None:
    """At the end of the run, and when it is interrupted: last.pt holds where it stopped
    (unless the newest save already holds this step). Rank 0 writes; `rngs`, under DDP,
    every rank's RNG states (`gather_rng_states`), which each rank resumes."""
    if trainer.checkpoint_dir is None or trainer.saved_step == trainer.step:
        return
    ranks = carried_by_rank(trainer)
    if trainer.ctx.is_main:
        path = f"{trainer.checkpoint_dir}/last.pt"
        state = checkpoint_state(trainer, trainer.carry, ranks, rngs)
        save_checkpoint(path, epoch=epochs_done, **state)
    trainer.saved_step = trainer.step


def save_if_due(
    trainer: Trainer, done: int, start_step: int, *, every: int | None, keep: int, last: int,
    unit: str = "epochs", rngs: list[Any] | None = None,
) -> None:  # fmt: skip
    """After the complete epoch `done` (1-based): `epoch-NNNN.pt` and last.pt when a save is
    due, every `every` epochs (or, with `unit="steps"`, when the epoch passed a multiple of
    `every` steps), and after the `last` epoch. Rank 0 writes; `rngs` as for `save_last`."""
    if unit == "steps":
        due = every is not None and trainer.step // every > start_step // every
    else:
        due = every is not None and done % every == 0
    if trainer.checkpoint_dir is None or not (due or done == last):
        return
    ranks = carried_by_rank(trainer)
    if trainer.ctx.is_main:
        state = checkpoint_state(trainer, ranks=ranks, rngs=rngs)
        save_epoch_checkpoint(trainer.checkpoint_dir, keep=keep, epoch=done, **state)
    trainer.saved_step = trainer.step


def resume(trainer: Trainer, path: str) -> None:
    """Continue where a checkpoint left off: weights, optimizer, scaler, schedule, RNG, the
    loader's place, the recipe's state and a cut epoch's loss. A captured step's optimizer
    keeps this run's modes (capturable or fused)."""
    modes = optimizer_modes(trainer.optimizer) if trainer.whole_step else None
    state = load_checkpoint(
        path, model=trainer.model, optimizer=trainer.optimizer, scaler=trainer.scaler,
        scheduler=trainer.scheduler, loader=trainer.train_loader, map_location=trainer.ctx.device,
    )  # fmt: skip
    if modes is not None:
        restore_optimizer_modes(trainer.optimizer, modes)
    resume_position(trainer, state)


def resume_position(trainer: Trainer, state: dict[str, Any]) -> None:
    """The epoch and step a checkpoint reached, its recipe's state and a cut epoch's carry."""
    trainer.start_epoch, trainer.step = state["epoch"], state["step"]
    trainer.saved_step = trainer.step
    extra = state["extra"]
    trainer.resumed_rngs = extra.get("rng_by_rank")  # `restore_rank_rng` gives each its own
    trainer.recipe.load_state_dict(extra.get("recipe", {}))
    carry = extra.get("carry")
    if carry is not None:
        trainer.carry = carry["loss_sum"].to(trainer.ctx.device), int(carry["batches"])
    if extra.get("carried") is not None:  # where the interrupted epoch left them
        ranks = extra.get("carried_by_rank") or [extra["carried"]]
        if len(ranks) == trainer.ctx.world_size:  # under DDP each rank its own streams'
            trainer.carried = ranks[trainer.ctx.rank]
        elif carry is not None:  # a new epoch starts them over: only a cut one needs them
            raise CheckpointError(
                f"the checkpoint was cut in the middle of an epoch at world size "
                f"{len(ranks)}, each rank carrying the state of its own streams; resume it "
                f"at world size {len(ranks)}, not {trainer.ctx.world_size}"
            )


def carried(trainer: Trainer) -> Carry:
    """The loss sum and batches of an epoch resumed in its middle, else nothing yet."""
    carry, trainer.carry = trainer.carry, None
    if carry is None:
        return torch.zeros((), device=trainer.ctx.device), 0
    return carry


def reached(step: int, max_steps: int | None) -> bool:
    """Whether `--max-steps` (if given) is reached."""
    return max_steps is not None and step >= max_steps


# --- the run's start and end ----------------------------------------------------------------


def check_run(args: argparse.Namespace, *, main: bool = True) -> str | None:
    """What would fail later, checked before step 1: the run's length, the batch size, and a
    checkpoint folder it can write (runtime/checkpoint.py's `prepare_checkpoint_dir`, which
    may give the run a `run-N` folder of its own). Returns the folder the run saves in."""
    check_run_length(args.epochs, args.max_steps, evaluating=args.evaluate is not None)
    check_batch_size(args.batch_size)
    if args.checkpoint_dir is None or args.evaluate is not None:
        return args.checkpoint_dir
    folder = prepare_checkpoint_dir(
        args.checkpoint_dir, resume=args.resume, overwrite=args.overwrite,
        init_from=args.init_from, main=main,
    )  # fmt: skip
    return str(folder)


def print_main(ctx: DistContext, *parts: object, error: bool = False) -> None:
    """Print on rank 0 (stderr when `error`); the other ranks stay quiet."""
    if ctx.is_main:
        print(*parts, file=sys.stderr if error else sys.stdout)


def warn(ctx: DistContext, *warnings: str | None) -> None:
    """Each warning that is there (not None), on stderr, by rank 0."""
    for warning in warnings:
        if warning is not None:
            print_main(ctx, warning, error=True)


def start_run(trainer: Trainer, args: argparse.Namespace) -> None:
    """Before the first epoch: the temporary files of a checkpoint write that was cut off
    removed, then --init-from's weights or --resume's whole state (which must leave
    something to train)."""
    ctx = trainer.ctx
    if trainer.checkpoint_dir is not None and ctx.is_main:
        for stale in clean_stale_temp_files(trainer.checkpoint_dir):
            print_main(
                ctx, f"removed {stale}, left by a checkpoint write that was cut off", error=True
            )
    if args.init_from is not None:
        load_weights(args.init_from, model=trainer.model, map_location=ctx.device)
        print_main(ctx, f"starting from the weights in {args.init_from}")
    if args.resume is not None:
        resume(trainer, args.resume)
        print_main(ctx, f"resumed from {args.resume} after epoch {trainer.start_epoch}")
        check_resume_left(args.resume, epochs_done=trainer.start_epoch, epochs=args.epochs,
                          step=trainer.step, max_steps=args.max_steps)  # fmt: skip


def finish_run(
    trainer: Trainer, *, epochs_done: int, started: float, metrics: MetricsWriter,
    rngs: list[Any] | None = None,
) -> int | None:  # fmt: skip
    """After the epochs: last.pt (with `rngs`, under DDP, every rank's RNG states), the
    metrics closed and the run's summary. An interrupted run says how to continue and
    returns its exit code (128 + the signal); else None."""
    stopped = trainer.recipe.stop_reason
    save_last(trainer, epochs_done, rngs)
    metrics.close()
    summary = format_run_summary(epochs_done=epochs_done, steps=trainer.step,
                                 seconds=time.perf_counter() - started,
                                 best=trainer.recipe.best, checkpoint_dir=trainer.checkpoint_dir,
                                 stopped=stopped)  # fmt: skip
    print_main(trainer.ctx, summary)
    if not trainer.recipe.interrupted:
        return None
    print_main(trainer.ctx, f"continue with --resume {trainer.checkpoint_dir}/last.pt")
    return interrupted_exit_code(stopped)


def epoch_record(
    trainer: Trainer, done: int, train_loss: float, validation: dict[str, Any], *,
    batches: int, batch_size: int, elapsed: float,
) -> dict[str, Any]:  # fmt: skip
    """What the run writes after epoch `done` (1-based), and prints: the mean train loss, the
    validation metrics, samples per second over every rank, the lr, the time and the steps."""
    samples = batches * batch_size * trainer.ctx.world_size
    lr = float(trainer.optimizer.param_groups[0]["lr"])
    speed = samples / elapsed
    return {"epoch": done, "train_loss": train_loss, **validation, "samples_per_s": speed,
            "lr": lr, "time": elapsed, "steps": trainer.step}  # fmt: skip


def evaluate_saved(
    trainer: Trainer, path: str, validate: Callable[[Trainer], dict[str, Any]],
    metrics: str | None,
) -> None:  # fmt: skip
    """--evaluate CHECKPOINT: its weights into the model, then `validate(trainer)`'s metrics
    reported (`report_evaluation`) with the epoch the checkpoint reached."""
    state = load_weights(path, model=trainer.model, map_location=trainer.ctx.device)
    report_evaluation(path, {"epoch": state.get("epoch"), **validate(trainer)}, metrics)


def report_evaluation(path: str, record: dict[str, Any], metrics: str | None) -> None:
    """--evaluate's line (`last.pt (epoch 10):  val_loss 0.0912  val_accuracy 0.9733`), and
    the record as a JSON line appended to --metrics."""
    print(f"{path} (epoch {record['epoch']}):  " + format_validation(record))
    if metrics is not None:
        with open(metrics, "a", encoding="utf-8") as f:
            f.write(json.dumps({"evaluated": path, **record}) + "\n")


def predict_and_export(
    model: nn.Module, args: argparse.Namespace, *, loader: Any, info: Any,
    device: torch.device, classes: bool,
) -> None:  # fmt: skip
    """--predict INPUT (the outputs for samples shaped as `loader`'s, normalised as the
    training data; `classes`: class indices) and --export FILE (torch.export, traced on two
    of `loader`'s samples), with `model`'s weights."""
    if args.predict is None and args.export is None:
        return
    example = next(iter(loader))[0][:2]
    if args.predict is not None:
        normalisation = getattr(info, "normalisation", None)
        x = read_predict_inputs(args.predict, sample_shape=tuple(example.shape[1:]),
                                normalisation=normalisation,
                                integer=not example.is_floating_point())  # fmt: skip
        outputs = predict(model, x, batch_size=args.batch_size, device=device)
        write_predictions(outputs, args.out, classes=classes)
    if args.export is not None:
        print(f"exported to {export_model(model, example, args.export)}")
