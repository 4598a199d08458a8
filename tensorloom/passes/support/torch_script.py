"""The module's `torch.script`: where the conversion passes put what they emit.

    script = script_of(module)   # found, or made at the top of the module

Shared by convert-nml-to-torch, which makes it, and convert-train-to-torch and the train
lowering's builders, which add to it, so that no pass imports another for it.
"""

from __future__ import annotations

from pathlib import PurePath

from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.dialects import nml
from tensorloom.dialects import torch as t


def script_of(module: ModuleOp) -> t.ScriptOp:
    """The module's `torch.script`, created if absent (the printer adds the imports it needs)."""
    for op in module.body.block.ops:
        if isinstance(op, t.ScriptOp):
            return op
    script = t.ScriptOp([], _source(module))
    Rewriter.insert_op(script, InsertPoint.at_start(module.body.block))
    return script


def _source(module: ModuleOp) -> str | None:
    """The file being compiled: the origin of the last model (imported ones come first)."""
    origins = [op.origin.data for op in module.walk() if isinstance(op, nml.ModelOp) and op.origin]
    return PurePath(origins[-1]).name if origins else None
