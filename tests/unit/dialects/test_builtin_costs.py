"""Every builtin declares its cost in `tlc info` (none counts 0 FLOPs because it was
forgotten), and every plain builtin is its catalogue record and its op."""

from __future__ import annotations

from inspect import isabstract

from tensorloom.catalogue.costs import RESULT, Cost
from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.dialects.nml import (
    FUNCTIONAL_OPS,
    PLAIN_OPS,
    TENSOR_OPS,
    AttentionOp,
    FunctionalOp,
    LossOp,
    Nml,
)
from tensorloom.dialects.nml.tensor_ops import (
    ArgmaxOp,
    CumprodOp,
    CumsumOp,
    GatherOp,
    IndexAddOp,
    NormalizeOp,
    NormOp,
    PadOp,
)
from tensorloom.passes.support.resolve_builtins import BUILDERS


def test_every_builtin_op_declares_a_cost() -> None:
    builtins = [op for op in Nml.operations if issubclass(op, FunctionalOp)]
    assert {*FUNCTIONAL_OPS, *TENSOR_OPS, LossOp} <= set(builtins)
    missing = [op.name for op in builtins if not isinstance(getattr(op, "COST", None), Cost)]
    assert missing == [], "give each builtin op a `COST` (tensorloom/catalogue/costs.py)"
    assert not any(isabstract(op) for op in builtins)


def test_new_functions_count_their_work() -> None:
    x = (4, 8)
    assert NormOp.COST([x], (4,)).flops == 64
    assert NormOp.COST([x], (4,)).saved == (0,)
    assert NormOp.COST.autocast == "fp32"
    assert CumsumOp.COST([x], x).flops == 32
    assert CumprodOp.COST([x], x).saved == (0, RESULT)
    assert GatherOp.COST([x, (4, 2)], (4, 2)).flops == 8
    assert IndexAddOp.COST([x, (3,), (3, 8)], x).flops == 24
    assert PadOp.COST([x], (4, 10)).flops == 40
    assert ArgmaxOp.COST([x], (4,)).flops == 32
    assert NormalizeOp.COST([x], x).saved == (0,)


def test_attention_counts_both_products_and_saves_what_flash_attention_keeps() -> None:
    q = (2, 4, 16, 8)  # [B, heads, T, head size]
    cost = AttentionOp.COST([q, q, q], q)
    assert cost.flops == 2 * (2 * 2 * 4 * 16 * 16 * 8)
    assert cost.saved == (0, 1, 2, RESULT)
    assert cost.extra_bytes == 4 * 2 * 4 * 16  # the fp32 log-sum-exp of each query
    assert AttentionOp.COST.autocast == "low"


def test_every_plain_builtin_has_its_op_and_a_parsed_signature() -> None:
    plain = {name for name, spec in FUNCTIONS.items() if spec.builder == "plain"}
    assert plain == set(PLAIN_OPS), "a `plain` record needs an nml.PlainOp with its FUNCTION"
    for name in plain:
        tensor, *constants = FUNCTIONS[name].parameters
        assert tensor.required and all(p.name.isidentifier() for p in constants), name
    assert FUNCTIONS["normalize"].parameters[1:] == (("p", 2.0, False), ("dim", 1, False))


def test_every_record_names_a_builder() -> None:
    missing = {n: s.builder for n, s in FUNCTIONS.items() if s.builder not in BUILDERS}
    assert missing == {}
