"""FLOPs and saved-for-backward tensors of the nml functional builtins.

    %1 = nml.gelu %0 : [32, 256, 2048]   ->   OpCost(flops=16,777,216, saves input)

The same conventions as the layer catalogue (tensorloom/catalogue/layers): 1 FLOP
per element of an elementwise op, 5 per element of a softmax, 2 per
multiply-add of a matmul; `saved` says which of the op's tensors autograd keeps
(operand indices, or the result), so that the profile counts each tensor once.
Views (reshape, flatten, permute, transpose, indexing) save nothing and alias
their input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Concrete = tuple[int, ...]

RESULT = -1
"""In `OpCost.saved`, the op's result rather than an operand."""

VIEWS = frozenset({"reshape", "view", "flatten", "permute", "transpose", "index", "expand",
                   "squeeze", "unsqueeze", "t", "split", "chunk", "detach"})  # fmt: skip
SAVES_OUTPUT = frozenset({"relu", "tanh", "sigmoid", "softmax", "log_softmax", "exp"})
SAVES_INPUT = frozenset({"gelu", "silu", "pow", "log", "sqrt", "rsqrt", "abs", "sin", "cos",
                         "clamp", "normalize"})  # fmt: skip
SAVES_OPERANDS = frozenset({"mul", "div", "matmul"})
NO_SAVE = frozenset({"add", "sub", "neg", "mean", "sum", "cat"})
FP32_UNDER_AUTOCAST = frozenset({"softmax", "log_softmax", "pow", "sum"})
# New tensors with no gradient to keep: random samples, a linspace, drawn categories.
SAMPLED = frozenset({"sample", "linspace", "rand_like", "randn_like", "bernoulli",
                     "multinomial"})  # fmt: skip


@dataclass(frozen=True, slots=True)
class OpCost:
    flops: int
    saved: tuple[int, ...] = ()  # operand indices, or RESULT
    mask_bytes: int = 0  # a dropout mask: one byte per element


def op_cost(op: str, inputs: Sequence[Concrete | None], output: Concrete, p: float = 0.0) -> OpCost:
    """The cost of builtin `op` (its nml name without `nml.`); None inputs are scalars."""
    n = math.prod(output)
    if op in VIEWS or op in SAMPLED:
        return OpCost(0)
    if op == "cumprod":  # one multiply per element; backward reads the input and the result
        return OpCost(n, (0, RESULT))
    if op == "matmul":
        return OpCost(2 * n * _inner(inputs), _tensor_operands(inputs))
    if op == "dropout":
        return OpCost(n, (), n if 0.0 < p < 1.0 else 0)
    if op in ("softmax", "log_softmax"):
        return OpCost(5 * n, (RESULT,))
    if op in SAVES_OUTPUT:
        return OpCost(n, (RESULT,))
    if op in SAVES_INPUT:
        return OpCost(n, (0,))
    if op in ("mul", "div"):
        return OpCost(n, _tensor_operands(inputs) if _both_tensors(inputs) else ())
    if op in ("mean", "sum"):
        return OpCost(max((math.prod(s) for s in inputs if s is not None), default=0))
    return OpCost(n if op in NO_SAVE else 0)


def _inner(inputs: Sequence[Concrete | None]) -> int:
    first = inputs[0] if inputs else None
    return first[-1] if first else 1


def _both_tensors(inputs: Sequence[Concrete | None]) -> bool:
    return len(inputs) == 2 and all(s is not None and len(s) > 0 for s in inputs)


def _tensor_operands(inputs: Sequence[Concrete | None]) -> tuple[int, ...]:
    return tuple(i for i, s in enumerate(inputs) if s is not None and len(s) > 0)
