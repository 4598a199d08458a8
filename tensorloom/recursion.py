"""Room for deep but legal programs: every stage may recurse as deep as a program nests.

    with recursion_room():
        ...                     # parse, build IR, run passes, print

A left-associative chain a person can write (`x.abs().abs()...`, 500 `+` terms, a
config of `1 + 1 + ...`) is a deep tree wherever a stage walks it recursively: the
AST, nested attribute expressions, xDSL's own printing and hashing of them. Python's
default limit (1,000 frames) makes those a RecursionError; inside `recursion_room()`
the limit is `LIMIT`, which holds chains of 10,000 links in every stage. True nesting
(brackets, unary operators) is capped at the parser's MAX_NESTING with a diagnostic.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

LIMIT = 200_000

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def recursion_room(limit: int = LIMIT) -> Generator[None]:
    """Raise Python's recursion limit to at least `limit` inside the block."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def deep(function: Callable[P, R]) -> Callable[P, R]:
    """`function`, run inside `recursion_room()`."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with recursion_room():
            return function(*args, **kwargs)

    return wrapper
