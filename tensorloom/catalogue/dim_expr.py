"""Dims that are simple expressions of symbols: `H+4`, `2*T`, `T//2`, `(H-1)//2+1`.

A convolution with padding 3 on a symbolic `H` gives `H+4`; a 2x2 pool gives
`H//2`; a `cat` of two `[B, T]` along dim 1 gives `2*T`. Such a dim is a `str`
like a symbol, in a canonical form, so that two equal expressions are the same
string:

    parse("H + 4")              # Affine(4, {"H": 1})
    add("H", 4), floordiv("H+4", 2), scale("T", 2)   # "H+4", "(H+4)//2", "2*T"
    evaluate("(H-1)//2+1", {"H": 9})                 # 5

The expressions are affine in their atoms: a symbol, or an affine expression
floor-divided by a positive integer. A product of two symbols is not one (a
rule that would make one gives an unknown dim instead). `Unifier.unify`
(catalogue/shapes.py) compares them: `H+4` against `H` is a mismatch, against
`W` binds `W`, against 12 binds `H` to 8.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(//|[-+*()]))")
MAX_LENGTH = 200  # a longer expression is an unknown dim: a chain of pools stays readable


def is_name(dim: str) -> bool:
    """A plain symbol (`H`, `B_T_x8`), not an expression."""
    return _NAME.match(dim) is not None


def is_expression(dim: object) -> bool:
    return isinstance(dim, str) and not is_name(dim) and dim != "..."


@dataclass(frozen=True, slots=True)
class Affine:
    """`const + sum(coeff * atom)`; an atom is a symbol or a canonical `(...)//k`."""

    const: int = 0
    terms: dict[str, int] = field(default_factory=dict[str, int])

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        terms = dict(self.terms)
        for atom, coeff in other.terms.items():
            terms[atom] = terms.get(atom, 0) + sign * coeff
        return Affine(self.const + sign * other.const, {a: c for a, c in terms.items() if c})

    def times(self, k: int) -> Affine:
        if k == 0:
            return Affine()
        return Affine(self.const * k, {a: c * k for a, c in self.terms.items()})

    @property
    def constant(self) -> int | None:
        return None if self.terms else self.const


def parse(text: str) -> Affine | None:
    """The affine form of a dim's text; None if it is not one we know."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    parser = _Parser(tokens)
    try:
        value = parser.expr()
    except ValueError:
        return None
    return value if parser.at_end() else None


def _tokens(text: str) -> list[str] | None:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        out.append(next(g for g in m.groups() if g is not None))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos == len(self.tokens)

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ValueError("end")
        self.pos += 1
        return token

    def expr(self) -> Affine:
        value = self.term()
        while self.peek() in ("+", "-"):
            sign = 1 if self.take() == "+" else -1
            value = value.plus(self.term(), sign)
        return value

    def term(self) -> Affine:
        if self.peek() == "-":
            self.take()
            return self.term().times(-1)
        value = self.factor()
        while self.peek() in ("*", "//"):
            op = self.take()
            right = self.factor()
            if op == "*":
                if right.constant is not None:
                    value = value.times(right.constant)
                elif value.constant is not None:
                    value = right.times(value.constant)
                else:
                    raise ValueError("a product of symbols")
            else:
                k = right.constant
                if k is None or k <= 0:
                    raise ValueError("a division by a symbol")
                value = _floordiv(value, k)
        return value

    def factor(self) -> Affine:
        token = self.take()
        if token == "(":
            value = self.expr()
            if self.take() != ")":
                raise ValueError(")")
            return value
        if token.isdigit():
            return Affine(int(token))
        if _NAME.match(token):
            return Affine(0, {token: 1})
        raise ValueError(token)


def _floordiv(value: Affine, k: int) -> Affine:
    if k == 1:
        return value
    if value.constant is not None:
        return Affine(value.const // k)
    if all(c % k == 0 for c in value.terms.values()):  # (k*X + c)//k = X + c//k
        return Affine(value.const // k, {a: c // k for a, c in value.terms.items()})
    nested = _nested_division(value, k)
    if nested is not None:
        return nested
    # (X + c)//k with c = q*k + r: q + (X + r)//k, the atom's constant in [0, k)
    q, r = divmod(value.const, k)
    inner = Affine(r, value.terms)
    return Affine(q, {f"{_paren(inner)}//{k}": 1})


_DIVISION = re.compile(r"(.+)//(\d+)\Z")


def _nested_division(value: Affine, k: int) -> Affine | None:
    """`(X//a + c)//k` is `(X + c*a)//(a*k)`: one division, not two."""
    if len(value.terms) != 1:
        return None
    [(atom, coeff)] = value.terms.items()
    m = _DIVISION.match(atom)
    inner = parse(m.group(1)) if m is not None and coeff == 1 else None
    if m is None or inner is None:
        return None
    a = int(m.group(2))
    return _floordiv(inner.plus(Affine(value.const * a)), a * k)


def value_at(form: Affine, sizes: Mapping[str, int]) -> int | None:
    """The value of an affine form where `sizes` gives every symbol; None otherwise."""
    total = form.const
    for atom, coeff in form.terms.items():
        if is_name(atom):
            if atom not in sizes:
                return None
            total += coeff * sizes[atom]
            continue
        division = division_of(atom)
        inner = value_at(division[0], sizes) if division is not None else None
        if division is None or inner is None:
            return None
        total += coeff * (inner // division[1])
    return total


@functools.lru_cache(maxsize=4096)
def division_of(atom: str) -> tuple[Affine, int] | None:
    """`(H+1)//2` as (H+1, 2); None for a symbol."""
    m = _DIVISION.match(atom)
    inner = parse(m.group(1)) if m is not None else None
    return None if m is None or inner is None else (inner, int(m.group(2)))


def _paren(value: Affine) -> str:
    text = render(value)
    return text if is_name(text) else f"({text})"


def render(value: Affine) -> str:
    """The canonical text: atoms in order, the constant last (`2*H+W-1`)."""
    parts: list[str] = []
    for atom in sorted(value.terms):
        coeff = value.terms[atom]
        body = atom if abs(coeff) == 1 else f"{abs(coeff)}*{atom}"
        parts.append(("-" if coeff < 0 else "+") + body)
    if value.const or not parts:
        parts.append(("-" if value.const < 0 else "+") + str(abs(value.const)))
    text = "".join(parts)
    return text[1:] if text.startswith("+") else text


def dim_of(value: Affine) -> int | str | None:
    """A dim: an int if constant, a name or an expression's text; None if too long."""
    if value.constant is not None:
        return value.constant
    text = render(value)
    return text if len(text) <= MAX_LENGTH else None


def as_affine(dim: int | str) -> Affine | None:
    return Affine(dim) if isinstance(dim, int) else parse(dim)


# --- what the shape rules use ------------------------------------------------------------


def add(dim: int | str | None, k: int) -> int | str | None:
    return combine(dim, k, 1)


def combine(a: int | str | None, b: int | str | None, sign: int = 1) -> int | str | None:
    """`a + b` (or `a - b`); None where either is unknown."""
    if a is None or b is None:
        return None
    x, y = as_affine(a), as_affine(b)
    return None if x is None or y is None else dim_of(x.plus(y, sign))


def scale(dim: int | str | None, k: int) -> int | str | None:
    x = as_affine(dim) if dim is not None else None
    return None if x is None else dim_of(x.times(k))


def floordiv(dim: int | str | None, k: int) -> int | str | None:
    x = as_affine(dim) if dim is not None else None
    return None if x is None or k <= 0 else dim_of(_floordiv(x, k))


def symbols(dim: str) -> list[str]:
    """The symbols an expression uses, in order (`(H-1)//2+W`: H, W)."""
    return sorted({t for t in re.findall(r"[A-Za-z_]\w*", dim)})


def substitute(dim: str, sizes: Mapping[str, int | str]) -> int | str | None:
    """The expression with symbols replaced (by sizes or other dims), simplified."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(0)
        value = sizes.get(name, name)
        return f"({value})" if not isinstance(value, int) or value < 0 else str(value)

    if not is_expression(dim):
        value = sizes.get(dim, dim)
        return value
    value = parse(re.sub(r"[A-Za-z_]\w*", replace, dim))
    return None if value is None else dim_of(value)


def evaluate(dim: str, sizes: Mapping[str, int]) -> int | str | None:
    """The size of `dim` under `sizes`: an int when every symbol has one."""
    return substitute(dim, sizes)
