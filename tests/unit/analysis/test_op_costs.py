"""Every builtin has a cost in `tlc info`: none counts 0 FLOPs because it was forgotten."""

from __future__ import annotations

from tensorloom.analysis.op_costs import KNOWN, RESULT, op_cost
from tensorloom.dialects.nml import FUNCTIONAL_OPS, TENSOR_OPS, LossOp


def test_every_builtin_has_a_cost() -> None:
    kinds = {op.name.removeprefix("nml.") for op in (*FUNCTIONAL_OPS, *TENSOR_OPS, LossOp)}
    assert kinds - KNOWN == set(), "give each new builtin a cost in analysis/op_costs.py"


def test_new_functions_count_their_work() -> None:
    x = (4, 8)
    assert op_cost("norm", [x], (4,)).flops == 64
    assert op_cost("norm", [x], (4,)).saved == (0,)
    assert op_cost("cumsum", [x], x).flops == 32
    assert op_cost("cumprod", [x], x).saved == (0, RESULT)
    assert op_cost("gather", [x, (4, 2)], (4, 2)).flops == 8
    assert op_cost("index_add", [x, (3,), (3, 8)], x).flops == 24
    assert op_cost("pad", [x], (4, 10)).flops == 40
    assert op_cost("argmax", [x], (4,)).flops == 32


def test_attention_counts_both_products_and_saves_what_flash_attention_keeps() -> None:
    q = (2, 4, 16, 8)  # [B, heads, T, head size]
    cost = op_cost("attention", [q, q, q], q)
    assert cost.flops == 2 * (2 * 2 * 4 * 16 * 16 * 8)
    assert cost.saved == (0, 1, 2, RESULT)
    assert cost.extra_bytes == 4 * 2 * 4 * 16  # the fp32 log-sum-exp of each query
