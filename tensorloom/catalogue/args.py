"""An argument of a catalogue record: its name, its type, the values it may take.

    Arg("lr", "float", low=0.0)                 # lr > 0
    Arg("weight_decay", "float", low=0.0, open_low=False)   # weight_decay >= 0
    Arg("reduction", "str", choices=("mean", "sum", "none"))

The checker turns each into a check (check-train's TL0403 "out of range"), the
reference page prints `describe()`, and the editor completes the names.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def arg_names(args: tuple[Arg, ...]) -> tuple[str, ...]:
    return tuple(a.name for a in args)


LR = Arg("lr", "float", low=0.0)
WEIGHT_DECAY = Arg("weight_decay", "float", low=0.0, open_low=False)
EPS = Arg("eps", "float", low=0.0)
MOMENTUM = Arg("momentum", "float", low=0.0, open_low=False)
BETAS = Arg("betas", "floats")
REDUCTION = Arg("reduction", "str", choices=("mean", "sum", "none"))
