"""Small attribute builders shared by the dialects' op constructors."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, StringAttr


def string_array(values: Sequence[str]) -> ArrayAttr[StringAttr]:
    """`["a", "b"]` as an array of string attributes (argument names, layer names, ...)."""
    return ArrayAttr([StringAttr(v) for v in values])
