"""Every learning-rate schedule a train block may name, one record each.

    lr_schedule = cosine(warmup_epochs=2, min_lr=1e-5)
    lr_schedule = onecycle(pct_start=0.25)
    lr_schedule = plateau(factor=0.5, patience=2)

Each schedule's learning rate per optimizer step is `LrSchedule.factor` in
backends/runtime/recipe.py (unit-tested against torch's OneCycleLR for `onecycle`);
`plateau` (`PER_EPOCH`) is torch's ReduceLROnPlateau, stepped on each validation loss.

A record holds the arguments check-train accepts (types and ranges) and a one-line
summary for the reference page. The emitted script's schedule code reads the same
names. Adding a schedule is one record here plus its runtime function.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorloom.catalogue.args import Arg, arg_names


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    name: str
    summary: str
    args: tuple[Arg, ...] = ()
    defaults: tuple[tuple[str, object], ...] = ()  # filled in unless the block (or a twin) sets it

    @property
    def keywords(self) -> tuple[str, ...]:
        return arg_names(self.args)


MIN_LR = Arg("min_lr", "float", low=0.0, open_low=False)
# Every length is in optimizer steps or in epochs: `warmup_steps` or `warmup_epochs`.
WARMUP = (
    Arg("warmup_steps", "int", low=0, open_low=False),
    Arg("warmup_epochs", "int", low=0, open_low=False),
)

SCHEDULE_SPECS: tuple[ScheduleSpec, ...] = (
    ScheduleSpec("none", "a constant learning rate"),
    ScheduleSpec(
        "cosine",
        "linear warm-up, then cosine decay to `min_lr` at the last step",
        (*WARMUP, MIN_LR),
    ),
    ScheduleSpec(
        "linear",
        "linear warm-up, then a straight line down to `min_lr` at the last step",
        (*WARMUP, MIN_LR),
    ),
    ScheduleSpec(
        "constant_with_warmup",
        "linear warm-up (100 steps unless given), then constant",
        WARMUP,
        (("warmup_steps", 100),),
    ),
    ScheduleSpec("warmup", "`constant_with_warmup`'s older name", WARMUP, (("warmup_steps", 100),)),
    ScheduleSpec(
        "wsd",
        "warmup-stable-decay: linear warm-up, `lr` held, then a straight line down to `min_lr` "
        "over the last `decay_fraction` of the run (0.2 unless given)",
        (*WARMUP, Arg("decay_fraction", "float", low=0.0, high=1.0), MIN_LR),
        (("decay_fraction", 0.2),),
    ),
    ScheduleSpec(
        "onecycle",
        "torch's OneCycleLR curve, `lr` the peak: up over `pct_start` of the run, then down",
        (
            Arg("pct_start", "float", low=0.0, high=1.0),
            Arg("div_factor", "float", low=0.0),
            Arg("final_div_factor", "float", low=0.0),
        ),
    ),
    ScheduleSpec(
        "step",
        "multiplied by `gamma` every `step_size` epochs (or `step_size_steps` steps)",
        (
            Arg("step_size", "int", low=1, open_low=False),
            Arg("step_size_steps", "int", low=1, open_low=False),
            Arg("gamma", "float", low=0.0),
        ),
    ),
    ScheduleSpec(
        "plateau",
        "torch's ReduceLROnPlateau: times `factor` once the validation loss has not improved "
        "(by a relative `threshold`) for `patience` epochs, then `cooldown` epochs of rest, "
        "never below `min_lr`; stepped after each validation, not each optimizer step",
        (
            Arg("factor", "float", low=0.0, high=1.0),
            Arg("patience", "int", low=0, open_low=False),
            Arg("threshold", "float", low=0.0, open_low=False),
            Arg("cooldown", "int", low=0, open_low=False),
            MIN_LR,
        ),
    ),
)
PER_EPOCH = frozenset({"plateau"})
"""Schedules stepped after each validation, on the validation loss, rather than per step."""

LENGTH_TWINS: tuple[tuple[str, str], ...] = (
    ("warmup_steps", "warmup_epochs"),
    ("step_size_steps", "step_size"),
)
"""A length given in optimizer steps or in epochs: at most one of each pair."""

SCHEDULES: dict[str, ScheduleSpec] = {spec.name: spec for spec in SCHEDULE_SPECS}
"""Schedule records by name."""
