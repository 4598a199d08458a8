"""What a builtin costs in `tlc info`: the rule each nml builtin op declares as its `COST`.

    class GeluOp(FunctionalOp):
        COST = per_element(saves=INPUT)    # 1 FLOP per element; backward reads its input

    GeluOp.COST([(32, 256, 2048)], (32, 256, 2048))   # OpCost(flops=16,777,216, saved=(0,))

The same conventions as the layer catalogue (tensorloom/catalogue/layers): 1 FLOP
per element of an elementwise op, 5 per element of a softmax, 2 per multiply-add
of a matmul; `saved` says which of the op's tensors autograd keeps (operand
indices, or `RESULT`), so that the profile counts each tensor once. A view
(reshape, permute, indexing) costs nothing and aliases its input; `FREE` is the
rule of what is counted as 0 FLOPs on purpose (sizes, lists, comparisons, random
samples, copies) or not modelled yet (einsum, the variance, the losses).
`autocast` is the dtype CUDA autocast computes the op in. The shape-inference
counterpart is the op's `infer_shape`, from tensorloom/catalogue/shapes.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

Concrete = tuple[int, ...]
Inputs = Sequence[Concrete | None]
"""Each operand's concrete shape; None for a scalar (or a value that is not a tensor)."""

RESULT = -1
"""In `OpCost.saved`, the op's result rather than an operand."""
INPUT = (0,)
"""`saves=INPUT`: backward reads the first operand."""
OUTPUT = (RESULT,)
"""`saves=OUTPUT`: backward reads the result (relu, exp, softmax)."""

Autocast = Literal["input", "fp32", "low"]


@dataclass(frozen=True, slots=True)
class OpCost:
    """One application's cost: FLOPs, the tensors autograd keeps, and bytes it keeps beside them."""

    flops: int
    saved: tuple[int, ...] = ()  # operand indices, or RESULT
    extra_bytes: int = 0  # a dropout mask, attention's log-sum-exp


Rule = Callable[[Inputs, Concrete, float], OpCost]
"""(operand shapes, result shape, a dropout's rate) -> the cost."""


@dataclass(frozen=True, slots=True)
class Cost:
    """A builtin's cost rule, declared on its op class as `COST`.

    `view`: the result aliases the first operand (no FLOPs, nothing saved, and the
    profile treats the two as one tensor). `autocast`: "fp32" for ops autocast runs in
    float32 (softmax, sums), "low" for those it runs in fp16/bf16, which save their
    operands' low-precision copies (matmul, attention), "input" for the others.
    `backward_temporaries`: result-sized tensors its backward holds beside the gradient it
    receives and the one it computes (`x ** 2`'s `2 * x.pow(1)`: two)."""

    rule: Rule
    view: bool = False
    autocast: Autocast = "input"
    backward_temporaries: int = 0

    def __call__(self, inputs: Inputs, output: Concrete, rate: float = 0.0) -> OpCost:
        return self.rule(inputs, output, rate)


def _free(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    return OpCost(0)


FREE = Cost(_free)
VIEW = Cost(_free, view=True)


def per_element(
    flops: int = 1,
    saves: tuple[int, ...] = (),
    autocast: Autocast = "input",
    backward_temporaries: int = 0,
) -> Cost:
    """`flops` per element of the result (relu, add, cumsum, a gather's copy)."""

    def rule(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
        return OpCost(flops * math.prod(output), saves)

    return Cost(rule, autocast=autocast, backward_temporaries=backward_temporaries)


def per_input_element(
    flops: int = 1, saves: tuple[int, ...] = (), autocast: Autocast = "input"
) -> Cost:
    """`flops` per element of the first operand (a norm squares and adds; a max compares)."""

    def rule(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
        first = inputs[0] if inputs else None
        return OpCost(0) if first is None else OpCost(flops * math.prod(first), saves)

    return Cost(rule, autocast=autocast)


def _largest_input(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    return OpCost(max((math.prod(s) for s in inputs if s is not None), default=0))


def reduction(autocast: Autocast = "input") -> Cost:
    """One FLOP per element of the largest operand, nothing saved (mean, sum)."""
    return Cost(_largest_input, autocast=autocast)


def _written(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    source = inputs[2] if len(inputs) > 2 else None
    return OpCost(0) if source is None else OpCost(math.prod(source))


PER_SOURCE_ELEMENT = Cost(_written)
"""One FLOP per element written: the source's, operand 2 (scatter, index_add)."""


def _assigned(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    value = inputs[1] if len(inputs) > 1 else None
    return OpCost(0) if value is None else OpCost(math.prod(value))


PER_VALUE_ELEMENT = Cost(_assigned)
"""`x[idx] = v`, `x[idx] += v`: one FLOP (or copy) per element of the value, operand 1; a
number assigned into a region counts none (a mask's region is the data's size)."""


def _product(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    both = len(inputs) == 2 and all(s is not None and len(s) > 0 for s in inputs)
    return OpCost(math.prod(output), _tensor_operands(inputs) if both else ())


PRODUCT = Cost(_product)
"""`a * b`, `a / b`: one FLOP per element; backward reads both tensors (neither for a
tensor times a number)."""


def _matmul(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    first = inputs[0] if inputs else None
    inner = first[-1] if first else 1
    return OpCost(2 * math.prod(output) * inner, _tensor_operands(inputs))


MATMUL = Cost(_matmul, autocast="low")
"""2 FLOPs per multiply-add; backward reads both operands."""


def _dropout(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    n = math.prod(output)
    return OpCost(n, (), n if 0.0 < rate < 1.0 else 0)  # one byte of mask per element


DROPOUT = Cost(_dropout)
"""One FLOP per element, and a one-byte mask per element when it drops anything."""


def _attention(inputs: Inputs, output: Concrete, rate: float) -> OpCost:
    q, k = inputs[0], inputs[1] if len(inputs) > 1 else None
    if q is None or k is None or len(q) < 2:
        return OpCost(0)
    rows, keys = math.prod(q[:-1]), k[-2]
    flops = 2 * rows * keys * q[-1] + 2 * rows * keys * output[-1]
    return OpCost(flops, (0, 1, 2, RESULT), extra_bytes=4 * rows)


ATTENTION = Cost(_attention, autocast="low")
"""`scaled_dot_product_attention(q, k, v)`: q k^T and the weights times v, 2 FLOPs per
multiply-add each (the whole square, as `MultiHeadAttention` counts it, causal or not);
the fused kernels save q, k, v, the output and one fp32 log-sum-exp per query."""


def _tensor_operands(inputs: Inputs) -> tuple[int, ...]:
    return tuple(i for i, s in enumerate(inputs) if s is not None and len(s) > 0)
