"""The runtime's recipes: each schedule's lr at given steps, decay groups, EMA, early stopping."""

from __future__ import annotations

import math
import signal

import pytest
import torch
from torch import nn

from tensorloom.backends.runtime.recipe import (
    BestTracker,
    EarlyStopping,
    LrSchedule,
    ModelEMA,
    RunLengthError,
    StopSignals,
    check_run_length,
    decay_param_groups,
    format_run_summary,
    make_lr_scheduler,
    no_decay_names,
    schedule_steps,
    total_train_steps,
)


def _lrs(schedule: LrSchedule, base: float = 1.0) -> list[float]:
    """The lr the optimizer uses at each step, through torch's LambdaLR."""
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=base)
    scheduler = make_lr_scheduler(optimizer, schedule)
    seen = []
    for _ in range(schedule.total_steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return seen


def test_cosine_warms_up_linearly_then_falls_to_min_lr() -> None:
    lrs = _lrs(LrSchedule("cosine", total_steps=110, warmup_steps=10, min_ratio=0.1))
    assert lrs[:3] == pytest.approx([0.1, 0.2, 0.3])
    assert lrs[9] == pytest.approx(1.0)
    assert lrs[10] == pytest.approx(1.0)
    assert lrs[60] == pytest.approx(0.1 + 0.9 * 0.5)  # halfway through the decay
    assert lrs[-1] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 99 / 100)))


def test_linear_and_constant_with_warmup() -> None:
    linear = _lrs(LrSchedule("linear", total_steps=12, warmup_steps=2, min_ratio=0.0))
    assert linear[:2] == pytest.approx([0.5, 1.0])
    assert linear[2:7] == pytest.approx([1.0, 0.9, 0.8, 0.7, 0.6])
    constant = _lrs(LrSchedule("constant_with_warmup", total_steps=8, warmup_steps=4))
    assert constant == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert _lrs(LrSchedule("warmup", total_steps=8, warmup_steps=4)) == constant


def test_onecycle_follows_torchs_onecycle_lr() -> None:
    total = 50
    ours = _lrs(LrSchedule("onecycle", total_steps=total, pct_start=0.25), base=0.1)
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    reference = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=0.1, total_steps=total, pct_start=0.25, cycle_momentum=False
    )
    theirs = []
    for _ in range(total):
        theirs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        reference.step()
    assert ours == pytest.approx(theirs, rel=1e-9)
    assert max(ours) == pytest.approx(0.1, rel=1e-3)


@pytest.mark.parametrize(("warmup", "fraction", "min_ratio"), [(5, 0.4, 0.0), (0, 0.25, 0.1)])
def test_wsd_follows_torchs_linear_constant_linear(
    warmup: int, fraction: float, min_ratio: float
) -> None:
    """`wsd` equals torch's SequentialLR of LinearLR (warm-up), ConstantLR and LinearLR (decay)."""
    total = 40
    schedule = LrSchedule("wsd", total_steps=total, warmup_steps=warmup,
                          decay_fraction=fraction, min_ratio=min_ratio)  # fmt: skip
    ours = _lrs(schedule, base=0.1)
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    decay = round(fraction * total)
    lr_s = torch.optim.lr_scheduler
    phases: list[lr_s.LRScheduler] = []
    if warmup:
        phases.append(lr_s.LinearLR(optimizer, 1 / warmup, 1.0, total_iters=warmup - 1))
    phases.append(lr_s.ConstantLR(optimizer, factor=1.0, total_iters=0))
    phases.append(lr_s.LinearLR(optimizer, 1.0, min_ratio, total_iters=decay))
    milestones = ([warmup] if warmup else []) + [total - decay]
    reference = lr_s.SequentialLR(optimizer, phases, milestones=milestones)
    theirs = []
    for _ in range(total):
        theirs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        reference.step()
    assert ours == pytest.approx(theirs, rel=1e-9)
    assert ours[total - decay - 1] == pytest.approx(0.1)
    assert ours[-1] == pytest.approx(0.1 * (min_ratio + (1 - min_ratio) / decay))


def test_step_schedule_and_lengths_in_epochs_or_steps() -> None:
    lrs = _lrs(LrSchedule("step", total_steps=7, step_interval=3, gamma=0.5))
    assert lrs == pytest.approx([1, 1, 1, 0.5, 0.5, 0.5, 0.25])
    assert schedule_steps(2, "epochs", 25) == 50
    assert schedule_steps(2, "steps", 25) == 2
    assert total_train_steps(4, 25, None) == 100
    assert total_train_steps(4, 25, 30) == 30
    with pytest.raises(ValueError, match="unknown lr schedule"):
        LrSchedule("cosin", total_steps=1)


def test_scheduler_state_resumes_the_same_lrs() -> None:
    schedule = LrSchedule("cosine", total_steps=20, warmup_steps=5)
    whole = _lrs(schedule)
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    first = make_lr_scheduler(optimizer, schedule)
    for _ in range(7):
        optimizer.step()
        first.step()
    state = first.state_dict()
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    second = make_lr_scheduler(optimizer, schedule)
    second.load_state_dict(state)
    optimizer.param_groups[0]["lr"] = second.get_last_lr()[0]
    assert optimizer.param_groups[0]["lr"] == pytest.approx(whole[7])


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.fc = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 2, bias=False)


def test_decay_groups_leave_biases_and_norm_weights_undecayed() -> None:
    net = _Net()
    assert sorted(no_decay_names(net)) == ["bn.bias", "bn.weight", "fc.bias", "norm.bias",
                                           "norm.weight"]  # fmt: skip
    groups = decay_param_groups(net)
    assert [len(g["params"]) for g in groups] == [3, 5]
    assert "weight_decay" not in groups[0] and groups[1]["weight_decay"] == 0.0
    assert [len(g["params"]) for g in decay_param_groups(net, enabled=False)] == [8]


def test_decay_groups_decay_only_the_weights_in_adamw() -> None:
    net = _Net()
    optimizer = torch.optim.AdamW(decay_param_groups(net), lr=0.1, weight_decay=0.5)
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    for p in net.parameters():
        p.grad = torch.zeros_like(p)  # zero gradients: only weight decay can move a parameter
    optimizer.step()
    for name, p in net.named_parameters():
        changed = not torch.equal(p, before[name])
        assert changed == (name in ("embed.weight", "fc.weight", "head.weight")), name


def test_ema_is_the_decayed_average_and_resumes() -> None:
    model = nn.Linear(2, 1, bias=False)
    ema = ModelEMA(model, decay=0.9)
    with torch.no_grad():
        model.weight.fill_(1.0)
        ema.update(model)  # the first update copies
        model.weight.fill_(2.0)
        ema.update(model)
    assert torch.allclose(ema.module.weight, torch.full((1, 2), 0.9 * 1.0 + 0.1 * 2.0))
    again = ModelEMA(model, decay=0.9)
    again.load_state_dict(ema.state_dict())
    assert torch.equal(again.module.weight, ema.module.weight)


def test_early_stopping_stops_after_patience_validations_without_a_best() -> None:
    stopper = EarlyStopping(patience=2, metric="val_loss")
    losses = [1.0, 0.8, 0.85, 0.9]
    stops = [stopper.should_stop({"epoch": i + 1, "val_loss": v}) for i, v in enumerate(losses)]
    assert stops == [False, False, False, True]
    assert stopper.tracker.best == 0.8 and stopper.tracker.best_epoch == 2
    resumed = EarlyStopping(patience=2)
    resumed.load_state_dict(EarlyStopping(2).state_dict())
    assert resumed.bad == 0
    accuracy = EarlyStopping(patience=1, metric="val_accuracy")
    assert not accuracy.should_stop({"epoch": 1, "val_accuracy": 0.5})
    assert not accuracy.should_stop({"epoch": 2, "val_accuracy": 0.6})
    assert accuracy.should_stop({"epoch": 3, "val_accuracy": 0.55})
    assert not accuracy.should_stop({"epoch": 4, "val_loss": 0.1})  # no val_accuracy: skipped


def test_best_tracker_skips_nan_and_missing() -> None:
    best = BestTracker("val_loss")
    assert not best.update({"epoch": 1, "val_loss": None})
    assert not best.update({"epoch": 1, "val_loss": float("nan")})
    assert best.update({"epoch": 2, "val_loss": 3.0})
    assert not best.update({"epoch": 3, "val_loss": 3.0})
    assert best.update({"epoch": 4, "val_loss": 2.0}) and best.best_epoch == 4


def test_run_length_zero_is_an_error_unless_evaluating() -> None:
    with pytest.raises(RunLengthError, match="--epochs 0 trains nothing"):
        check_run_length(0, None, evaluating=False)
    with pytest.raises(RunLengthError, match="--max-steps 0 trains nothing"):
        check_run_length(3, 0, evaluating=False)
    check_run_length(0, 0, evaluating=True)
    check_run_length(1, None, evaluating=False)


def test_stop_signals_turn_sigterm_into_a_request() -> None:
    before = signal.getsignal(signal.SIGTERM)
    signals = StopSignals().install()
    try:
        signal.raise_signal(signal.SIGTERM)
        assert signals.requested == "SIGTERM"
    finally:
        signals.restore()
    assert signal.getsignal(signal.SIGTERM) is before


def test_run_summary_names_the_best_epoch_and_the_folder() -> None:
    best = BestTracker("val_loss")
    best.update({"epoch": 3, "val_loss": 1.25})
    text = format_run_summary(
        epochs_done=5, steps=100, seconds=75.5, best=best, checkpoint_dir="checkpoints/mnist",
        stopped="early stopping",
    )  # fmt: skip
    assert text.splitlines() == [
        "done: 5 epochs, 100 steps in 1m15.5s (early stopping)",
        "best: epoch 3, val_loss 1.2500",
        "checkpoints: checkpoints/mnist/",
    ]


def test_schedule_settings_in_epochs_become_steps() -> None:
    from tensorloom.backends.runtime.recipe import lr_schedule_from, planned_epochs

    cosine = lr_schedule_from({"name": "cosine", "warmup_epochs": 2, "min_lr": 0.01},
                              steps_per_epoch=25, total_steps=100, base_lr=0.1)  # fmt: skip
    assert (cosine.warmup_steps, cosine.min_ratio) == (50, pytest.approx(0.1))
    steps = lr_schedule_from({"name": "linear", "warmup_steps": 7},
                             steps_per_epoch=25, total_steps=100, base_lr=0.1)  # fmt: skip
    assert steps.warmup_steps == 7
    step = lr_schedule_from({"name": "step", "step_size": 2, "gamma": 0.5},
                            steps_per_epoch=25, total_steps=100, base_lr=0.1)  # fmt: skip
    assert (step.step_interval, step.gamma) == (50, 0.5)
    one = lr_schedule_from({"name": "onecycle", "pct_start": 0.1},
                           steps_per_epoch=25, total_steps=100, base_lr=0.1)  # fmt: skip
    assert one.pct_start == 0.1
    assert planned_epochs(None, 60, 25) == 3
    assert planned_epochs(4, 60, 25) == 4


def test_run_recipe_updates_ema_and_says_when_to_validate_and_stop() -> None:
    from tensorloom.backends.runtime.recipe import RunRecipe

    model = nn.Linear(2, 1)
    recipe = RunRecipe(ema=ModelEMA(model, 0.5), stopper=EarlyStopping(1),
                       best=BestTracker("val_loss"), eval_every=3)  # fmt: skip
    assert [recipe.after_step(model, s) for s in (1, 2, 3, 4, 6)] == [False, False, True,
                                                                      False, True]  # fmt: skip
    assert int(recipe.ema.averaged.n_averaged) == 5  # type: ignore[union-attr]
    assert recipe.after_validation({"epoch": 1, "val_loss": 2.0})
    assert recipe.stop_reason is None
    assert not recipe.after_validation({"epoch": 2, "val_loss": 2.5})
    assert recipe.stop_reason == "early stopping"
    again = RunRecipe(ema=ModelEMA(model, 0.5), stopper=EarlyStopping(1),
                      best=BestTracker("val_loss"))  # fmt: skip
    again.load_state_dict(recipe.state_dict())
    assert again.stop_reason == "early stopping" and again.best.best == 2.0  # type: ignore[union-attr]
