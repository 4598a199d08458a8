"""Ops whose IRDL definition is built when the op is first used.

    @lazy_op_definition
    class ReluOp(LazyOp):
        name = "nml.relu"
        input = operand_def(TensorType)
        result = result_def(TensorType)

xDSL's `irdl_op_definition` turns the class's fields into an `OpDef` (the operand,
result and property constraints, the traits) and accessors when the class is
defined: about half a millisecond per op. The nml dialect has some 80 ops and a
`tlc check` builds a dozen kinds, so defining them all at import was 40 ms of a
300 ms cold check.

`lazy_op_definition` only notes the class. xDSL asks an op class for its
definition (`get_irdl_definition()`) whenever one of its ops is built, whether by
its `__init__`, `create`, `clone` or the parser, and before anything reads an
op's fields; `LazyOp` answers the first call by running `irdl_op_definition`,
which replaces that method with xDSL's own. So every instance belongs to a
defined class, and an op's accessors, traits and verifier are xDSL's, unchanged.
A class-level question asked before any op of the class exists (`Op.traits`)
should call `define(Op)` first. A mistake in an op's fields is reported at its
first use rather than at import: tests/unit/dialects/test_lazy_definition.py
defines every op, so it still fails in the tests.
"""

from __future__ import annotations

from typing import TypeVar

from xdsl.irdl import IRDLOperation, OpDef, irdl_op_definition

OpT = TypeVar("OpT", bound=IRDLOperation)

_UNDEFINED: set[type[IRDLOperation]] = set()
"""Classes given to `lazy_op_definition` and not yet defined."""


def lazy_op_definition(cls: type[OpT]) -> type[OpT]:
    """`irdl_op_definition`, run on the class when it is first used (see the module)."""
    assert issubclass(cls, LazyOp), f"{cls.__name__} should subclass LazyOp"
    # A defined op class above it would answer `get_irdl_definition` for it.
    assert not any(
        "get_irdl_definition" in vars(base)
        for base in cls.__mro__[:-1]
        if issubclass(base, LazyOp) and base is not LazyOp
    ), f"{cls.__name__} subclasses a concrete op"
    _UNDEFINED.add(cls)
    return cls


def define(cls: type[OpT]) -> type[OpT]:
    """Build `cls`'s IRDL definition now, if `lazy_op_definition` deferred it."""
    if cls in _UNDEFINED:
        _UNDEFINED.remove(cls)
        irdl_op_definition(cls)
    return cls


def is_defined(cls: type[IRDLOperation]) -> bool:
    """Whether `cls`'s IRDL definition has been built (always, for an eager class)."""
    return cls not in _UNDEFINED


class LazyOp(IRDLOperation):
    """The base of ops defined by `lazy_op_definition`."""

    @classmethod
    def get_irdl_definition(cls) -> OpDef:
        if cls not in _UNDEFINED:  # an abstract base; a defined class has xDSL's method
            return super().get_irdl_definition()
        return define(cls).get_irdl_definition()
