"""Training recipes for TensorLoom scripts: schedules, decay groups, EMA, early stopping.

    schedule = LrSchedule("cosine", total_steps=1000, warmup_steps=100, min_ratio=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule.factor)
    groups = decay_param_groups(model)          # no weight decay for biases and norm weights
    ema = ModelEMA(model, decay=0.999)          # ema.update(model) after each optimizer step
    stopper = EarlyStopping(patience=3, metric="val_loss")
    best = BestTracker("val_loss")              # `keep_best = val_loss`

Every object here that changes during a run has `state_dict()`/`load_state_dict()`
of plain numbers and tensors, so a checkpoint (loaded with `weights_only=True`)
resumes it exactly. `StopSignals` turns SIGINT and SIGTERM into a flag the loop
checks after each step, so an interrupted run saves its state before it exits.
`_NORM_LAYERS` lists the catalogue's normalisation layers: `make reference` writes it
(tensorloom/tools/generated.py).
"""

from __future__ import annotations

import contextlib
import math
import signal
from dataclasses import dataclass
from typing import Any

import torch

# --- learning-rate schedules -------------------------------------------------------------------

LR_SCHEDULES = (
    "none", "cosine", "linear", "constant_with_warmup", "warmup", "onecycle", "step", "wsd",
)  # fmt: skip


@dataclass(frozen=True)
class LrSchedule:
    """The learning rate as a factor of the optimizer's base lr, per optimizer step.

    `cosine`: linear warm-up over `warmup_steps`, then a cosine from 1 down to
    `min_ratio` at `total_steps`. `linear`: the same warm-up, then a straight line
    down to `min_ratio`. `constant_with_warmup` (alias `warmup`): the warm-up, then 1.
    `onecycle`: torch's OneCycleLR curve (cosine up from 1/`div_factor` over the first
    `pct_start` of the run, then cosine down to 1/(`div_factor` * `final_div_factor`)).
    `step`: times `gamma` every `step_interval` steps. `none`: 1 throughout.
    `wsd` (warmup-stable-decay): the warm-up, then 1, then over the last `decay_fraction`
    of `total_steps` (rounded) a straight line from 1 down towards `min_ratio`, which the
    step after the last would reach (torch's LinearLR from 1 to `min_ratio` over them).
    """

    name: str
    total_steps: int
    warmup_steps: int = 0
    min_ratio: float = 0.0
    step_interval: int = 1
    gamma: float = 0.1
    pct_start: float = 0.3
    div_factor: float = 25.0
    final_div_factor: float = 1e4
    decay_fraction: float = 0.2

    def __post_init__(self) -> None:
        if self.name not in LR_SCHEDULES:
            raise ValueError(f"unknown lr schedule `{self.name}`; known: {LR_SCHEDULES}")

    def factor(self, step: int) -> float:
        """The factor for the optimizer step `step` (0-based)."""
        if self.name == "none":
            return 1.0
        if self.name == "step":
            return self.gamma ** (step // max(self.step_interval, 1))
        if self.name == "onecycle":
            return self._onecycle(step)
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if self.name in ("constant_with_warmup", "warmup"):
            return 1.0
        if self.name == "wsd":
            return self._wsd(step)
        span = max(self.total_steps - self.warmup_steps, 1)
        progress = min((step - self.warmup_steps) / span, 1.0)
        if self.name == "linear":
            return 1.0 - (1.0 - self.min_ratio) * progress
        return self.min_ratio + (1.0 - self.min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    def _wsd(self, step: int) -> float:
        decay = max(round(self.decay_fraction * self.total_steps), 1)
        left = self.total_steps - step
        if left >= decay:
            return 1.0
        return self.min_ratio + (1.0 - self.min_ratio) * max(left, 0) / decay

    def _onecycle(self, step: int) -> float:
        # torch.optim.lr_scheduler.OneCycleLR's two phases, as factors of the peak lr.
        start, peak = 1.0 / self.div_factor, 1.0
        end = start / self.final_div_factor
        rise_end = float(self.pct_start * self.total_steps) - 1
        if step <= rise_end:
            return _cos_between(start, peak, step / rise_end if rise_end > 0 else 1.0)
        fall = float(self.total_steps - 1) - rise_end
        return _cos_between(peak, end, min((step - rise_end) / fall, 1.0) if fall > 0 else 1.0)


def _cos_between(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def schedule_steps(epochs_or_steps: int, unit: str, steps_per_epoch: int) -> int:
    """A length the block gave in `unit` ("epochs" or "steps"), in optimizer steps."""
    return epochs_or_steps * steps_per_epoch if unit == "epochs" else epochs_or_steps


def total_train_steps(epochs: int, steps_per_epoch: int, max_steps: int | None) -> int:
    """The run's optimizer steps: `max_steps` when it cuts the run short, else every epoch's."""
    planned = epochs * steps_per_epoch
    return planned if max_steps is None else min(planned, max_steps)


def make_lr_scheduler(
    optimizer: torch.optim.Optimizer, schedule: LrSchedule
) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR stepping `schedule.factor`; its state dict is the step count alone."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: schedule.factor(step))


# --- weight-decay groups -----------------------------------------------------------------------

_NORM_LAYERS: tuple[type[torch.nn.Module], ...] = (
    torch.nn.BatchNorm1d,
    torch.nn.BatchNorm2d,
    torch.nn.GroupNorm,
    torch.nn.LayerNorm,
    torch.nn.RMSNorm,
)


def no_decay_names(model: torch.nn.Module) -> list[str]:
    """Parameters weight decay should not shrink: every bias, and every norm layer's weights."""
    names: list[str] = []
    for module_name, module in model.named_modules():
        is_norm = isinstance(module, _NORM_LAYERS)
        for name, _ in module.named_parameters(recurse=False):
            if is_norm or name == "bias":
                names.append(f"{module_name}.{name}" if module_name else name)
    return names


def decay_param_groups(model: torch.nn.Module, enabled: bool = True) -> list[dict[str, Any]]:
    """Optimizer parameter groups: decayed weights, then biases and norm weights without decay.

    The first group takes the optimizer's `weight_decay`; the second sets it to 0.
    `enabled=False` (`decay_groups = false`) gives one group of every parameter."""
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not enabled:
        return [{"params": [p for _, p in params]}]
    skip = set(no_decay_names(model))
    decay = [p for n, p in params if n not in skip]
    plain = [p for n, p in params if n in skip]
    groups: list[dict[str, Any]] = []
    if decay:
        groups.append({"params": decay})
    if plain:
        groups.append({"params": plain, "weight_decay": 0.0})
    return groups


# --- EMA of the weights ------------------------------------------------------------------------


class ModelEMA:
    """An exponential moving average of a model's weights and buffers (`ema = 0.999`).

    torch.optim.swa_utils.AveragedModel with its EMA rule: after each optimizer step,
    every averaged tensor becomes `decay * average + (1 - decay) * current`; the first
    update copies the weights. `module` is a model of the same class to evaluate.

    `copy` (FSDP): a second model of the same class, sharded as `model` is; each rank
    then averages its own shards with the same rule (non-float buffers are copied),
    and `state_dict` holds only the count: the weights are saved sharded, beside the
    model's (runtime/sharded.py)."""

    def __init__(
        self, model: torch.nn.Module, decay: float, copy: torch.nn.Module | None = None
    ) -> None:
        from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

        self.decay = decay
        self.copy, self.n_averaged = copy, 0
        self.averaged: AveragedModel | None = None
        if copy is not None:
            copy.requires_grad_(False)
        else:
            self.averaged = AveragedModel(
                model, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True
            )

    @property
    def module(self) -> torch.nn.Module:
        if self.copy is not None:
            return self.copy
        assert self.averaged is not None
        return self.averaged.module

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        if self.averaged is not None:
            self.averaged.update_parameters(model)
            return
        ours = [*self.module.parameters(), *self.module.buffers()]
        theirs = [*model.parameters(), *model.buffers()]
        for average, current in zip(ours, theirs, strict=True):
            if self.n_averaged == 0 or not average.is_floating_point():
                average.copy_(current.detach())
            else:
                average.lerp_(current.detach(), 1.0 - self.decay)
        self.n_averaged += 1

    def state_dict(self) -> dict[str, Any]:
        if self.averaged is None:
            return {"n_averaged": self.n_averaged, "sharded": True}
        return self.averaged.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.averaged is None:
            self.n_averaged = int(state.get("n_averaged", 0))
            return
        self.averaged.load_state_dict(state)


# --- early stopping and the best checkpoint ----------------------------------------------------


class BestTracker:
    """The best value of one validation metric so far (the highest of an accuracy, the
    lowest of anything else), and the epoch it came at."""

    def __init__(self, metric: str, min_delta: float = 0.0) -> None:
        self.metric, self.min_delta = metric, min_delta
        self.sign = -1.0 if metric.endswith("accuracy") else 1.0  # minimised: sign * value
        self.best: float | None = None
        self.best_epoch: int | None = None

    def improves(self, value: float) -> bool:
        if self.best is None or math.isnan(self.best):
            return not math.isnan(value)
        return self.sign * value < self.sign * self.best - self.min_delta

    def update(self, record: dict[str, Any]) -> bool:
        """Take a validation record; whether its metric is a new best."""
        value = record.get(self.metric)
        if value is None or not self.improves(float(value)):
            return False
        self.best, self.best_epoch = float(value), int(record["epoch"])
        return True

    def state_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.best_epoch = state["best"], state["best_epoch"]


class EarlyStopping:
    """`early_stopping = patience(3, metric=val_loss)`: stop after `patience` validations
    in a row without a new best (a loss must fall by more than `min_delta`)."""

    def __init__(self, patience: int, metric: str = "val_loss", min_delta: float = 0.0) -> None:
        self.patience = patience
        self.tracker = BestTracker(metric, min_delta)
        self.bad = 0

    @property
    def metric(self) -> str:
        return self.tracker.metric

    def should_stop(self, record: dict[str, Any]) -> bool:
        """Take a validation record (records without the metric are skipped)."""
        if record.get(self.metric) is None:
            return False
        self.bad = 0 if self.tracker.update(record) else self.bad + 1
        return self.bad >= self.patience

    def state_dict(self) -> dict[str, Any]:
        return {"bad": self.bad, "tracker": self.tracker.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.bad = state["bad"]
        self.tracker.load_state_dict(state["tracker"])


# --- the run's length, its interruption and its summary -----------------------------------------


class RunLengthError(Exception):
    """`--epochs 0` or `--max-steps 0` would train nothing; the message says what to do."""


def check_run_length(epochs: int | None, max_steps: int | None, evaluating: bool) -> None:
    for flag, value in (("--epochs", epochs), ("--max-steps", max_steps)):
        if not evaluating and value is not None and value < 1:
            raise RunLengthError(
                f"{flag} {value} trains nothing: give at least 1, "
                "or --evaluate CHECKPOINT to evaluate without training"
            )


def check_batch_size(batch_size: int) -> None:
    """`--batch-size` below 1 is a `RunLengthError` before any data is read."""
    if batch_size < 1:
        raise RunLengthError(f"--batch-size {batch_size} must be at least 1")


def check_epoch_has_steps(batches: int, *, batch_size: int, grad_accum: int = 1) -> None:
    """An epoch of `batches` whole batches must make at least one optimizer step (of
    `grad_accum` batches); otherwise the run would save an untrained model and exit 0."""
    if batches >= grad_accum:
        return
    need = "one whole batch" if grad_accum == 1 else f"{grad_accum} whole batches (grad_accum)"
    raise RunLengthError(
        f"--batch-size {batch_size} is larger than the training data allows: an epoch holds "
        f"{batches} whole batches, and a step needs {need}; give a smaller --batch-size"
    )


def check_resume_left(
    path: str, *, epochs_done: int, epochs: int, step: int, max_steps: int | None
) -> None:
    """A resumed run must have something left to train: `--epochs` beyond the epochs the
    checkpoint finished (and `--max-steps`, if given, beyond its steps)."""
    if max_steps is not None and step >= max_steps:
        raise RunLengthError(
            f"{path} has already made {step} steps, and --max-steps is {max_steps}: nothing "
            f"is left to train; continue with --resume {path} and a --max-steps above {step}"
        )
    if epochs_done >= epochs:
        raise RunLengthError(
            f"{path} has already trained {epochs_done} epochs, and --epochs is {epochs}: "
            f"nothing is left to train; continue with --resume {path} --epochs "
            f"{epochs_done + max(epochs, 1)}"
        )


class StopSignals:
    """SIGINT and SIGTERM set `requested` instead of killing the run; a second SIGINT
    still interrupts at once. `restore()` puts the previous handlers back."""

    def __init__(self) -> None:
        self.requested: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> StopSignals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError):  # not the main thread: leave them alone
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame: object) -> None:
        if self.requested is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = signal.Signals(signum).name

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def format_run_summary(
    *, epochs_done: int, steps: int, seconds: float, best: BestTracker | None,
    checkpoint_dir: str | None, stopped: str | None = None,
) -> str:  # fmt: skip
    """The run's closing lines: how far it got, the best epoch and metric, where it saved."""
    minutes, secs = divmod(seconds, 60.0)
    took = f"{int(minutes)}m{secs:04.1f}s" if minutes else f"{secs:.1f}s"
    why = f" ({stopped})" if stopped else ""
    lines = [f"done: {epochs_done} epochs, {steps} steps in {took}{why}"]
    if best is not None and best.best is not None:
        lines.append(f"best: epoch {best.best_epoch}, {best.metric} {best.best:.4f}")
    if checkpoint_dir is not None:
        lines.append(f"checkpoints: {checkpoint_dir}/")
    return "\n".join(lines)


def lr_schedule_from(
    settings: dict[str, Any], *, steps_per_epoch: int, total_steps: int, base_lr: float
) -> LrSchedule:
    """The `LrSchedule` for a train block's `lr_schedule = name(...)`, lengths in steps:
    `warmup_epochs` and `step_size` count epochs, `warmup_steps` and `step_size_steps`
    optimizer steps; `min_lr` becomes a factor of the base lr."""
    options = dict(settings)
    name = options.pop("name")
    warmup = int(options.pop("warmup_steps", 0))
    warmup += schedule_steps(int(options.pop("warmup_epochs", 0)), "epochs", steps_per_epoch)
    interval = int(options.pop("step_size_steps", 0))
    interval += schedule_steps(int(options.pop("step_size", 0)), "epochs", steps_per_epoch)
    min_lr = float(options.pop("min_lr", 0.0))
    return LrSchedule(
        name,
        total_steps=total_steps,
        warmup_steps=warmup,
        min_ratio=min_lr / base_lr if base_lr > 0 else 0.0,
        step_interval=interval or steps_per_epoch * 30,
        **{key: float(value) for key, value in options.items()},
    )


def planned_epochs(epochs: int | None, max_steps: int | None, steps_per_epoch: int) -> int:
    """The epochs a run goes through: as given, or enough for `max_steps` when only it is set."""
    if epochs is not None:
        return epochs
    if max_steps is None:
        raise RunLengthError("neither epochs nor max_steps is set")
    return -(-max_steps // max(steps_per_epoch, 1))


class RunRecipe:
    """What a train block's recipe keys add to the loop, in one object the loop calls:
    `after_step` (the EMA update; whether `eval_every` is due), `after_validation`
    (keep-best and early stopping), `stop_reason` (a signal or early stopping).
    A script builds it with the parts its block uses (`build_recipe`)."""

    def __init__(
        self, *, ema: Any = None, stopper: Any = None, best: BestTracker | None = None,
        eval_every: int | None = None, signals: StopSignals | None = None,
    ) -> None:  # fmt: skip
        # `ema` a ModelEMA, `stopper` an EarlyStopping
        self.ema, self.stopper, self.best = ema, stopper, best
        self.eval_every, self.signals = eval_every, signals
        self.early_stopped = False

    def after_step(self, model: torch.nn.Module, step: int) -> bool:
        """Call after each optimizer step (`step` counts them); True when validation is due."""
        if self.ema is not None:
            self.ema.update(model)
        return self.eval_every is not None and step % self.eval_every == 0

    def after_validation(self, record: dict[str, Any]) -> bool:
        """Take a validation record; whether it is a new best of `keep_best`'s metric."""
        if self.stopper is not None and self.stopper.should_stop(record):
            self.early_stopped = True
        return self.best is not None and self.best.update(record)

    @property
    def stop_reason(self) -> str | None:
        if self.signals is not None and self.signals.requested is not None:
            return f"interrupted by {self.signals.requested}"
        return "early stopping" if self.early_stopped else None

    def close(self) -> None:
        """Put SIGINT and SIGTERM's handlers back as they were."""
        if self.signals is not None:
            self.signals.restore()

    def __enter__(self) -> RunRecipe:
        return self

    def __exit__(self, *_exc: object) -> None:
        """`with recipe:` closes it however the run ends."""
        self.close()

    @property
    def interrupted(self) -> bool:
        return self.signals is not None and self.signals.requested is not None

    def state_dict(self) -> dict[str, Any]:
        parts = {key: getattr(self, key) for key in ("ema", "stopper", "best")}
        state = {key: p.state_dict() if p is not None else None for key, p in parts.items()}
        return {**state, "early_stopped": self.early_stopped}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key in ("ema", "stopper", "best"):
            part = getattr(self, key)
            if part is not None and state.get(key) is not None:
                part.load_state_dict(state[key])
        self.early_stopped = bool(state.get("early_stopped", False))


def interrupted_exit_code(reason: str | None) -> int:
    """128 + the signal's number for a run a signal stopped (130 for SIGINT), else 0."""
    if reason is None or not reason.startswith("interrupted by "):
        return 0
    return 128 + signal.Signals[reason.removeprefix("interrupted by ")].value


def format_validation(record: dict[str, Any]) -> str:
    """`step 500  val_loss 1.2345  val_accuracy 91.20%`: one validation's line."""
    parts = [f"step {record['steps']}"] if "steps" in record else []
    for key, value in record.items():
        if key.startswith(("val_", "ema_val_")) and value is not None:
            shown = f"{100 * value:.2f}%" if key.endswith("accuracy") else f"{value:.4f}"
            parts.append(f"{key} {shown}")
    return "  ".join(parts)
