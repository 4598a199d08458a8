"""`desugar-pipes`: each pipe stage becomes the call it stands for.

`x |> f |> g(a)` means `g(f(x), a)`: the piped value becomes the stage's first
argument. A stage names a builtin (`relu`), a layer (`self.fc1`, `fc1`), a call
with extra arguments (`dropout(0.2)`) or a method (`self.block(mask)`);
`resolve-nml` decides which, so a pipe of `dropout(0.2)` turns into the same
`nml.dropout` (active only while the model trains) as a direct call would.

    %0 = nml.pipe %x into "self.fc1"() {arg_names = []}
    %1 = nml.pipe %0 into "dropout"(%p) {arg_names = [""]}

becomes

    %0 = nml.call "self.fc1"(%x) {arg_names = [""]}
    %1 = nml.call "dropout"(%0, %p) {arg_names = ["", ""]}

Each call keeps its stage's location, so a later error points at the stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tensorloom.dialects.nml import CallOp, PipeOp
from tensorloom.passes.support.prerequisites import TLPass


class PipeToCall(RewritePattern):
    """`nml.pipe %x into "f"(%a)` -> `nml.call "f"(%x, %a)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PipeOp, rewriter: PatternRewriter) -> None:
        names = ["", *(name.data for name in op.arg_names.data)]
        call = CallOp(op.callee.data, [op.input, *op.args], names, result_type=op.result.type)
        call.location = op.location
        rewriter.replace(op, call)


@dataclass(frozen=True)
class DesugarPipesPass(TLPass):
    name = "desugar-pipes"

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        return any(isinstance(op, PipeOp) for op in module.walk())

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternRewriteWalker(PipeToCall(), apply_recursively=False)
        walker.rewrite_module(op)
