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
FP32_UNDER_AUTOCAST = frozenset({"softmax", "log_softmax", "pow", "sum", "cumsum", "cumprod",
                                 "norm"})  # fmt: skip
LOW_UNDER_AUTOCAST = frozenset({"matmul", "attention"})
"""Ops autocast runs in fp16/bf16: they save their operands' low-precision copies."""
PER_INPUT = {"norm": 2, "argmax": 1, "argmin": 1, "max": 1, "min": 1, "topk": 1, "nonzero": 1}
"""Ops costing FLOPs per element of their input (a norm squares and adds; a max compares)."""
PER_OUTPUT = frozenset({"cumsum", "cumprod", "softplus", "floor", "ceil", "round", "one_hot",
                        "gather", "cast", "pad"})  # fmt: skip
"""Ops costing one FLOP (or one copy) per element of their result."""
PER_INDEX = frozenset({"scatter", "scatter_add", "index_add"})
"""Ops costing one FLOP per element written: the source's (operand 2)."""
WRITES = frozenset({"index_put"})
"""`x[idx] = v`, `x[idx] += v`: one FLOP (or one copy) per element of the value (operand
1); a number assigned into a region counts none, its size being the data's for a mask."""
SAVES_OUTPUT_TOO = frozenset({"cumprod"})
NOT_COUNTED = frozenset({"amax", "amin", "var", "std", "stack", "expand", "repeat", "tril",
                         "triu", "einsum", "arange", "where", "masked_fill", "eq",
                         "ne", "lt", "le", "gt", "ge", "dim", "list", "zeros_like", "ones_like",
                         "randn_like", "loss", "narrow"})  # fmt: skip
"""Builtins counted as 0 FLOPs on purpose (sizes, lists, copies, comparisons), or not yet
modelled (einsum, the losses, the variance): a test (tests/unit/analysis) fails
when a builtin is in no set here, so none counts 0 silently."""
# New tensors with no gradient to keep: random samples, a linspace, drawn categories.
SAMPLED = frozenset({"sample", "linspace", "rand_like", "bernoulli", "multinomial"})


@dataclass(frozen=True, slots=True)
class OpCost:
    flops: int
    saved: tuple[int, ...] = ()  # operand indices, or RESULT
    extra_bytes: int = 0  # saved beside the tensors: a dropout mask, attention's log-sum-exp


def op_cost(op: str, inputs: Sequence[Concrete | None], output: Concrete, p: float = 0.0) -> OpCost:
    """The cost of builtin `op` (its nml name without `nml.`); None inputs are scalars."""
    n = math.prod(output)
    if op in VIEWS or op in SAMPLED:
        return OpCost(0)
    if op == "matmul":
        return OpCost(2 * n * _inner(inputs), _tensor_operands(inputs))
    if op == "dropout":
        return OpCost(n, (), n if 0.0 < p < 1.0 else 0)  # one byte of mask per element
    if op == "attention":
        return _attention_cost(inputs, output)
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
    return _new_cost(op, inputs, n) or OpCost(n if op in NO_SAVE else 0)


def _new_cost(op: str, inputs: Sequence[Concrete | None], n: int) -> OpCost | None:
    """The costs of norm, cumsum, topk, gather, scatter, ... (issue 31's functions)."""
    first = inputs[0] if inputs else None
    if op in PER_INPUT and first is not None:
        saves = (0,) if op == "norm" else ()
        return OpCost(PER_INPUT[op] * math.prod(first), saves)
    if op in PER_OUTPUT:
        saves: tuple[int, ...] = (0, RESULT) if op in SAVES_OUTPUT_TOO else ()
        return OpCost(n, (0,) if op in ("cumsum", "softplus") else saves)
    if op in PER_INDEX and len(inputs) > 2 and inputs[2] is not None:
        return OpCost(math.prod(inputs[2]))
    if op in WRITES:
        return OpCost(math.prod(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else 0)
    return None


def _attention_cost(inputs: Sequence[Concrete | None], output: Concrete) -> OpCost:
    """`scaled_dot_product_attention(q, k, v)`: q k^T and the weights times v, 2 FLOPs per
    multiply-add each (the whole square, as `MultiHeadAttention` counts it, causal or not);
    the fused kernels save q, k, v, the output and one fp32 log-sum-exp per query."""
    q, k = inputs[0], inputs[1] if len(inputs) > 1 else None
    if q is None or k is None or len(q) < 2:
        return OpCost(0)
    rows, keys = math.prod(q[:-1]), k[-2]
    flops = 2 * rows * keys * q[-1] + 2 * rows * keys * output[-1]
    return OpCost(flops, (0, 1, 2, RESULT), extra_bytes=4 * rows)


KNOWN = (VIEWS | SAVES_OUTPUT | SAVES_INPUT | SAVES_OPERANDS | NO_SAVE | set(PER_INPUT)
         | PER_OUTPUT | PER_INDEX | WRITES | NOT_COUNTED | SAMPLED
         | {"dropout", "log_softmax", "attention"})  # fmt: skip
"""Every builtin this module knows the cost of (tests/unit/analysis/test_op_costs.py)."""


def _inner(inputs: Sequence[Concrete | None]) -> int:
    first = inputs[0] if inputs else None
    return first[-1] if first else 1


def _both_tensors(inputs: Sequence[Concrete | None]) -> bool:
    return len(inputs) == 2 and all(s is not None and len(s) > 0 for s in inputs)


def _tensor_operands(inputs: Sequence[Concrete | None]) -> tuple[int, ...]:
    return tuple(i for i, s in enumerate(inputs) if s is not None and len(s) > 0)
