"""Every learning-rate schedule a train block may name, one record each.

    lr_schedule = cosine(warmup_epochs=2, min_lr=1e-5)

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

    @property
    def keywords(self) -> tuple[str, ...]:
        return arg_names(self.args)


MIN_LR = Arg("min_lr", "float", low=0.0, open_low=False)

SCHEDULE_SPECS: tuple[ScheduleSpec, ...] = (
    ScheduleSpec("none", "a constant learning rate"),
    ScheduleSpec(
        "cosine",
        "linear warm-up, then cosine decay to `min_lr` at the last step",
        (Arg("warmup_epochs", "int", low=0, open_low=False), MIN_LR),
    ),
    ScheduleSpec(
        "step",
        "multiplied by `gamma` every `step_size` epochs",
        (Arg("step_size", "int", low=1, open_low=False), Arg("gamma", "float", low=0.0)),
    ),
    ScheduleSpec(
        "warmup",
        "linear warm-up over `warmup_steps`, then constant",
        (Arg("warmup_steps", "int", low=1, open_low=False),),
    ),
)

SCHEDULES: dict[str, ScheduleSpec] = {spec.name: spec for spec in SCHEDULE_SPECS}
"""Schedule records by name."""
