"""An argument of a catalogue record: its name, its type, the values it may take.

    Arg("lr", "float", low=0.0)                 # lr > 0
    Arg("weight_decay", "float", low=0.0, open_low=False)   # weight_decay >= 0
    Arg("reduction", "str", choices=("mean", "sum", "none"))

The checker turns each into a check (check-train's TL0403 "out of range"), the
reference page prints `describe()`, and the editor completes the names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""Every integer of a program (a literal, a config, a train setting) is a signed 64-bit
value in the IR and in the emitted script."""


def fits_int64(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def past_int64(value: int) -> str:
    """What a diagnostic says of an integer that does not fit: `must fit in 64 bits ...`."""
    digits = math.floor(math.log10(abs(value))) + 1  # str() refuses past 4,300 digits
    return f"must fit in 64 bits (at most {INT64_MAX:,}), got {digits:,} digits"


ArgType = str  # "float", "int", "bool", "str", "floats" (a tuple of floats), "any"


@dataclass(frozen=True, slots=True)
class Arg:
    name: str
    type: ArgType = "any"
    low: float | None = None
    high: float | None = None
    open_low: bool = True
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        """`lr: float > 0`, `reduction: "mean" | "sum" | "none"`."""
        if self.choices:
            return f"{self.name}: " + " | ".join(f'"{c}"' for c in self.choices)
        text = f"{self.name}: {self.type}"
        if self.low is not None:
            text += f" {'>' if self.open_low else '>='} {self.low:g}"
        if self.high is not None:
            text += f" <= {self.high:g}"
        return text

    def problem(self, value: object) -> str | None:
        """Why `value` (a constant of the program) cannot be this argument, or None."""
        kinds = {"bool": "`true` or `false`", "int": "a constant integer",
                 "float": "a constant number", "str": "a string"}  # fmt: skip
        is_bool = isinstance(value, bool)
        fits = {
            "bool": is_bool,
            "int": isinstance(value, int) and not is_bool,
            "float": isinstance(value, int | float) and not is_bool,
            "str": isinstance(value, str),
        }.get(self.type, True)
        if not fits:
            return f"`{self.name}` must be {kinds[self.type]}, got `{spelled(value)}`"
        if self.choices and value not in self.choices:
            return f"`{self.name}` must be one of {', '.join(map(repr, self.choices))}"
        if isinstance(value, int | float) and not is_bool and not self.admits(value):
            return f"`{self.name}` must be {self.range_text()}, got {value:g}"
        return None

    def range_text(self) -> str:
        """`in [0, 1]`, `> 0`, `<= 1`: the numbers this argument admits."""
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f"{'>' if self.open_low else '>='} {self.low:g}"
        return f"<= {self.high:g}" if self.high is not None else "a number"

    def admits(self, value: float) -> bool:
        """Whether a number lies in this argument's range."""
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or value <= self.high


def spelled(value: object) -> str:
    """A constant as the program writes it: `true`, `"mean"`, `0.1`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def arg_names(args: tuple[Arg, ...]) -> tuple[str, ...]:
    return tuple(a.name for a in args)


LR = Arg("lr", "float", low=0.0)
WEIGHT_DECAY = Arg("weight_decay", "float", low=0.0, open_low=False)
EPS = Arg("eps", "float", low=0.0)
MOMENTUM = Arg("momentum", "float", low=0.0, open_low=False)
BETAS = Arg("betas", "floats")
REDUCTION = Arg("reduction", "str", choices=("mean", "sum", "none"))
