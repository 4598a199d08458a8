"""Dims that are expressions of symbols (catalogue/dim_expr.py) and how they unify."""

from __future__ import annotations

import itertools

import pytest

from tensorloom.catalogue import dim_expr
from tensorloom.catalogue.shapes import (
    ShapeMismatch,
    Unifier,
    conv_output_size,
    conv_transpose_output_size,
    pool_output_size,
    resolve_sizes,
)


def test_canonical_forms() -> None:
    assert dim_expr.add("H", 4) == "H+4"
    assert dim_expr.scale("T", 2) == "2*T"
    assert dim_expr.combine("T", "T") == "2*T"
    assert dim_expr.combine("H", "H", -1) == 0
    assert dim_expr.floordiv("H", 2) == "H//2"
    assert dim_expr.floordiv(dim_expr.floordiv("T", 2), 2) == "T//4"  # one division
    assert dim_expr.floordiv("2*H+4", 2) == "H+2"  # exact
    assert dim_expr.floordiv("H-3", 2) == "(H+1)//2-2"  # the atom's constant in [0, 2)
    assert dim_expr.parse("H + 4") == dim_expr.parse("4+H")
    assert dim_expr.parse("H*W") is None and dim_expr.parse("H+") is None


@pytest.mark.parametrize(
    ("kernel", "stride", "padding", "dilation"),
    list(itertools.product([1, 2, 3, 5], [1, 2, 3], [0, 1, 2, 3], [1, 2])),
)
def test_conv_and_pool_expressions_agree_with_pytorchs_formula(
    kernel: int, stride: int, padding: int, dilation: int
) -> None:
    """The expression a rule gives for a symbolic H, evaluated, is the int rule's size."""
    conv = conv_output_size("H", kernel, stride, padding, dilation)
    pool = pool_output_size("H", kernel, stride, min(padding, kernel // 2), dilation)
    up = conv_transpose_output_size("H", kernel, stride, padding, 0, dilation)
    for h in range(1, 40):
        for symbolic, concrete in (
            (conv, conv_output_size(h, kernel, stride, padding, dilation)),
            (pool, pool_output_size(h, kernel, stride, min(padding, kernel // 2), dilation)),
            (up, conv_transpose_output_size(h, kernel, stride, padding, 0, dilation)),
        ):
            value = symbolic if isinstance(symbolic, int) else resolve_sizes((symbolic,), {"H": h})
            assert (value if isinstance(value, int) else value[0]) == concrete  # type: ignore[index]


def test_unify_decides_what_arithmetic_decides() -> None:
    u = Unifier()
    m = u.unify("H+4", "H")
    assert isinstance(m, ShapeMismatch) and "differ by 4" in m.message
    assert u.unify("W", "H+4") == "W" and u.resolve("W") == "H+4"
    assert u.unify("H+4", 12) == 12 and (u.resolve("H"), u.resolve("W")) == (8, 12)
    u = Unifier()
    m = u.unify("2*T", 7)
    assert isinstance(m, ShapeMismatch) and "no size of `T` makes 2*T equal 7" in m.message
    u = Unifier()
    assert u.unify("T//2", 784) == 784 and u.resolve("T") == 1568  # the smallest that fits
    u = Unifier()
    m = u.unify("(H+1)//2", "H")  # a stride-2 conv added to its input
    assert isinstance(m, ShapeMismatch) and "only when `H` is 1" in m.message
    u = Unifier()
    assert u.unify("2*(H//2)", "H") == "2*(H//2)" and u.resolve("H") == "H"  # even H: not decided


def test_the_batch_dim_is_never_solved_for() -> None:
    u = Unifier()
    u.rigid.add("B")
    assert u.unify("2*B", 8) == 8 and u.resolve("B") == "B"
