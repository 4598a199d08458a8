"""Every op's assembly format compiles, though the dialects compile them only on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest
from xdsl.irdl import IRDLOperation

from tensorloom.dialects import get_all_dialects
from tensorloom.dialects.lazy_format import LazyFormatOp, format_program

OPS: list[type[IRDLOperation]] = [
    op
    for name, load in get_all_dialects().items()
    if name != "builtin"
    for op in load().operations
    if issubclass(op, IRDLOperation)
]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_format_compiles(op: type[IRDLOperation]) -> None:
    if issubclass(op, LazyFormatOp):
        assert format_program(op).stmts
    # xDSL would compile an `assembly_format` at import, which `tlc check` does not need.
    assert op.assembly_format is None, "use ASSEMBLY_FORMAT (dialects/lazy_format.py)"


def test_importing_the_dialects_compiles_no_format() -> None:
    probe = (
        "import sys\n"
        "import tensorloom.dialects.nml, tensorloom.dialects.train, tensorloom.dialects.kernel\n"
        "import tensorloom.dialects.torch, tensorloom.dialects.triton, tensorloom.dialects.py\n"
        "print('xdsl.irdl.declarative_assembly_format' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "False\n"), done.stderr
