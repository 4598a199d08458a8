"""Ops defined on first use (dialects/lazy_definition.py) behave as xDSL's eager ones."""

from __future__ import annotations

import subprocess
import sys

import pytest
from xdsl.irdl import IRDLOperation, OpDef, OpTraits

from tensorloom.dialects import get_all_dialects
from tensorloom.dialects.lazy_definition import LazyOp, define, is_defined, lazy_op_definition
from tensorloom.dialects.nml.ops import ConstantOp

LAZY: list[type[IRDLOperation]] = [
    op
    for name, load in get_all_dialects().items()
    if name != "builtin"
    for op in load().operations
    if issubclass(op, LazyOp)
]


def _run(probe: str) -> str:
    """`probe`'s output, in a fresh interpreter: no op class defined yet."""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("op", LAZY, ids=lambda op: op.name)
def test_every_op_defines(op: type[IRDLOperation]) -> None:
    """A mistake in an op's fields shows at its first use: here, for every op."""
    definition = define(op).get_irdl_definition()
    assert is_defined(op)
    assert isinstance(definition, OpDef) and definition.name == op.name
    # The traits are xDSL's merged ones: the class's own and every base's.
    for base in op.__mro__[1:]:
        inherited = vars(base).get("traits")
        if isinstance(inherited, OpTraits):
            assert set(inherited) <= set(op.traits), base


def test_importing_a_dialect_defines_no_op() -> None:
    probe = (
        "from tensorloom.dialects.kernel import Kernel\n"
        "from tensorloom.dialects.nml import Nml\n"
        "from tensorloom.dialects.train import Train\n"
        "from tensorloom.dialects.lazy_definition import is_defined, LazyOp\n"
        "for dialect in (Nml, Train, Kernel):\n"
        "    ops = [op for op in dialect.operations if issubclass(op, LazyOp)]\n"
        "    print(dialect.name, len(ops) == len(list(dialect.operations)),"
        " sum(is_defined(op) for op in ops))\n"
    )
    assert _run(probe) == "nml True 0\ntrain True 0\nkernel True 0\n"


def test_an_op_created_first_has_its_accessors_and_verifier() -> None:
    """`Operation.create` (the parser's and `clone`'s way) defines the class too."""
    probe = (
        "from xdsl.dialects.builtin import IntegerAttr, f32, i64\n"
        "from tensorloom.dialects.lazy_definition import is_defined\n"
        "from tensorloom.dialects.nml.ops import ConstantOp\n"
        "op = ConstantOp.create(properties={'value': IntegerAttr(3, i64)}, result_types=[f32])\n"
        "print(is_defined(ConstantOp), op.value.value.data)\n"
        "try:\n"
        "    op.verify()\n"
        "except Exception as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    assert _run(probe) == (
        "True 3\nVerifyException result type f32 does not match the value 3 : i64\n"
    )


def test_a_parsed_op_is_defined_and_verified() -> None:
    probe = (
        "from xdsl.context import Context\n"
        "from xdsl.parser import Parser\n"
        "from tensorloom.dialects.nml import Nml\n"
        "from tensorloom.dialects.lazy_definition import is_defined\n"
        "from tensorloom.dialects.nml.activations import SoftmaxOp\n"
        "context = Context(allow_unregistered=True)\n"
        "context.load_dialect(Nml)\n"
        'text = \'%0 = "test.op"() : () -> f32\\n%1 = "nml.softmax"(%0) : (f32) -> f32\'\n'
        "op = list(Parser(context, text).parse_module().walk())[-1]\n"
        "print(type(op).__name__, is_defined(SoftmaxOp))\n"
        "try:\n"
        "    op.verify()\n"
        "except Exception as error:\n"
        "    print(type(error).__name__)\n"
    )
    assert _run(probe) == "SoftmaxOp True\nVerifyException\n"


def test_lazy_op_definition_rejects_a_subclass_of_a_concrete_op() -> None:
    defined = define(ConstantOp)
    with pytest.raises(AssertionError, match="subclasses a concrete op"):
        lazy_op_definition(type("Twin", (defined,), {"name": "nml.twin"}))
