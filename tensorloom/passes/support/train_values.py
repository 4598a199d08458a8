"""What the train passes share: a train block's settings as Python values.

    value = setting_value(loop, "precision")      # "fp16", or None when unset
    has_marker(loop, train.AutocastOp)             # True once insert-amp ran

`check-train` has already reported every bad value, so a value that does not
evaluate here is simply treated as unset.
"""

from __future__ import annotations

from xdsl.ir import Operation

from tensorloom.dialects import train
from tensorloom.passes.support.model_env import EvalError, Evaluated, evaluate


def setting_value(loop: train.LoopOp, key: str) -> Evaluated | None:
    """The evaluated value of `key = ...` in `loop`, or None when it is unset or invalid."""
    attr = loop.setting(key)
    if attr is None:
        return None
    value = evaluate(attr, {})
    return None if isinstance(value, EvalError) else value


def has_marker(loop: train.LoopOp, kind: type[Operation]) -> bool:
    """Whether a pass already added an op of this kind to `loop` (passes are idempotent)."""
    return any(isinstance(op, kind) for op in loop.body.block.ops)


def add_marker(loop: train.LoopOp, op: Operation) -> None:
    """Append a marker op to the loop's body, located at the train block."""
    op.location = loop.location
    loop.body.block.add_op(op)


def loops_of(module: Operation) -> list[train.LoopOp]:
    return [op for op in module.walk() if isinstance(op, train.LoopOp)]
