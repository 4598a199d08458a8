"""Config expressions as model_env evaluates them (issue 31): exact integer division,
exact fractions inside the rounding functions, conditionals and list elements."""

from __future__ import annotations

import math

import pytest
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, f64, i1, i64
from xdsl.ir import Attribute

from tensorloom.dialects.nml import CallAttr, CfgAttr, ExprAttr
from tensorloom.passes.support.model_env import (
    EvalError,
    evaluate,
    evaluate_config,
    floor_exact_divisions,
)


def num(value: int | float) -> Attribute:
    return IntegerAttr(value, i64) if isinstance(value, int) else FloatAttr(value, f64)


def cfg(name: str) -> CfgAttr:
    return CfgAttr.get(name)


def expr(op: str, *operands: Attribute) -> ExprAttr:
    return ExprAttr.get(op, list(operands))


ENV = {"dim": 4096, "n_heads": 32, "bad_heads": 30, "multiple_of": 256, "widths": [8, 16]}


def test_exact_division_is_an_int() -> None:
    value = evaluate_config(expr("/", cfg("dim"), cfg("n_heads")), ENV)
    assert value == 128 and isinstance(value, int)


def test_inexact_division_names_both_numbers_and_the_operands() -> None:
    error = evaluate_config(expr("/", cfg("dim"), cfg("bad_heads")), ENV)
    assert isinstance(error, EvalError)
    assert error.message == "4096 is not a multiple of 30"
    assert error.hint is not None and "floordiv(dim, bad_heads)" in error.hint


def test_train_settings_keep_true_division() -> None:
    assert evaluate(expr("/", num(1), num(1000)), {}) == 0.001


def test_llama_hidden_size_rounds_the_exact_fraction() -> None:
    eight_dim = expr("*", expr("*", num(2), num(4)), cfg("dim"))
    ratio = expr("/", expr("/", eight_dim, num(3)), cfg("multiple_of"))
    hidden = expr("*", cfg("multiple_of"), CallAttr.get("ceil", [ratio]))
    assert evaluate_config(hidden, ENV) == 256 * math.ceil(2 * 4 * 4096 / 3 / 256) == 11008


@pytest.mark.parametrize(
    ("attr", "value"),
    [
        (expr("//", num(7), num(2)), 3),
        (CallAttr.get("floor", [expr("/", num(7), num(2))]), 3),
        (CallAttr.get("round", [expr("/", num(7), num(2))]), 4),
        (CallAttr.get("max", [num(8), expr("-", num(3), num(10))]), 8),
        (expr("if", expr("==", cfg("dim"), num(4096)), num(2), num(1)), 2),
        (expr("[]", cfg("widths"), expr("-", num(2), num(1))), 16),
        (expr("not", IntegerAttr(1, i1)), False),
        (CallAttr.get("len", [cfg("widths")]), 2),
    ],
)
def test_expressions(attr: Attribute, value: object) -> None:
    assert evaluate_config(attr, ENV) == value


def test_only_the_taken_side_is_evaluated() -> None:
    taken = expr("if", IntegerAttr(1, i1), num(1), expr("/", num(1), num(0)))
    assert evaluate_config(taken, {}) == 1


def test_an_index_past_the_list_is_an_error() -> None:
    error = evaluate_config(expr("[]", cfg("widths"), num(2)), ENV)
    assert isinstance(error, EvalError) and "out of range" in error.message


def test_powers_too_large_are_errors_not_hangs() -> None:
    error = evaluate_config(expr("**", num(2), expr("**", num(10), num(10))), {})
    assert isinstance(error, EvalError) and error.too_large
    error = evaluate(expr("**", num(1.5), num(20000)), {})
    assert isinstance(error, EvalError) and error.too_large


def test_exact_divisions_are_emitted_as_floor_divisions() -> None:
    head_dim = expr("/", cfg("dim"), cfg("n_heads"))
    rounded = CallAttr.get("ceil", [expr("/", cfg("dim"), num(3))])
    folded = floor_exact_divisions(ArrayAttr([head_dim, rounded]), ENV)
    assert isinstance(folded, ArrayAttr)
    assert folded.data[0] == expr("//", cfg("dim"), cfg("n_heads"))
    assert folded.data[1] == rounded  # inside `ceil`, `/` is the true quotient
