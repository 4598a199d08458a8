"""Every builtin declares its cost in `tlc info` (none counts 0 FLOPs because it was
forgotten), and every builtin is its catalogue record and its op: each record reaches
the op that builds it, and each op the dialect registers is reached, with no list to
keep by hand."""

from __future__ import annotations

from inspect import isabstract

import pytest

from tensorloom.catalogue.costs import RESULT, Cost
from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.catalogue.losses import FUNCTIONAL_LOSSES, TRAIN_LOSSES
from tensorloom.dialects.lazy_definition import lazy_op_definition
from tensorloom.dialects.nml import (
    BINARY_OPS,
    BUILTIN_OPS,
    COMPARE_OPS,
    OP_OF_RECORD,
    AttentionOp,
    FunctionalOp,
    IndexOp,
    IndexPutOp,
    ListOp,
    LossOp,
    NegOp,
    Nml,
    PlainOp,
    SpelledOp,
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

REGISTERED = {name: op for name, op in OP_OF_RECORD.items() if op in Nml.operations}
"""The records' ops, less any a test defined after the dialect was built
(tests/e2e/test_plain_builtin.py)."""


def test_every_builtin_op_declares_a_cost() -> None:
    builtins = [op for op in Nml.operations if issubclass(op, FunctionalOp)]
    assert LossOp in builtins
    missing = [
        op.name
        for op in builtins
        if op is not LossOp and not isinstance(getattr(op, "COST", None), Cost)
    ]
    assert missing == [], "give each builtin op a `COST` (tensorloom/catalogue/costs.py)"
    assert not any(isabstract(op) for op in builtins)


def test_a_builtin_without_a_cost_is_a_compiler_bug_not_zero_flops() -> None:
    @lazy_op_definition
    class Uncosted(FunctionalOp):
        name = "nml.uncosted_for_test"

        def infer_shape(self, operand_types, unifier=None):  # type: ignore[no-untyped-def]
            return operand_types[0]

    BUILTIN_OPS.remove(Uncosted)  # defined for this test only
    with pytest.raises(AssertionError, match="declares no `COST`"):
        Uncosted.create().cost()


def test_every_loss_counts_its_flops_per_output_element() -> None:
    logits = (64, 10)
    assert TRAIN_LOSSES["CrossEntropy"].cost([logits, (64,)], ()).flops == 6 * 64 * 10
    assert TRAIN_LOSSES["MSE"].cost([logits, logits], ()).flops == 3 * 640
    assert all(record.flops > 0 for record in TRAIN_LOSSES.values())
    assert set(LossOp.RECORDS) == set(FUNCTIONAL_LOSSES)


def test_every_record_reaches_the_op_that_builds_it() -> None:
    """resolve-nml builds a call from `OP_OF_RECORD[record]` (no builder list to extend)."""
    unreached = [name for name in FUNCTIONS if name not in REGISTERED]
    assert unreached == [], "give the op that builds it `FUNCTION` or `RECORDS`"
    for name, op in REGISTERED.items():
        assert name in FUNCTIONS, f"`{op.name}` names `{name}`, which no record has"
        assert "from_call" in vars(op) or any(
            "from_call" in vars(base) for base in op.__mro__[1:] if base is not FunctionalOp
        ), f"`{op.name}` says how a call of `{name}` builds it"


def test_every_builtin_op_is_reachable() -> None:
    """Each builtin op the dialect registers is built from a catalogue record, or from the
    syntax (an operator, an index, a list), so none is left behind unregistered."""
    syntax = {*BINARY_OPS.values(), *COMPARE_OPS.values(), NegOp, IndexOp, IndexPutOp, ListOp}
    reached = set(REGISTERED.values())
    builtins = {op for op in Nml.operations if issubclass(op, FunctionalOp)}
    assert builtins - reached - syntax == set()
    for op in builtins & reached:
        if issubclass(op, SpelledOp) and op is not LossOp:
            assert op.FUNCTION in FUNCTIONS, f"`{op.name}` is spelled by a record"


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
    plain = {name for name, op in REGISTERED.items() if issubclass(op, PlainOp)}
    assert plain >= {"normalize", "cumsum", "cumprod", "tril", "triu", "t"}
    for name in plain:
        tensor, *constants = FUNCTIONS[name].parameters
        assert tensor.required and all(p.name.isidentifier() for p in constants), name
    assert FUNCTIONS["normalize"].parameters[1:] == (("p", 2.0, False), ("dim", 1, False))
