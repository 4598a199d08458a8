"""`convert-kernel-to-triton`: kernel ops become the Python constructs they print as.

    kernel.let "mask" = %1                  ->  triton.assign "mask" = %1
    %2 = kernel.read "x_ptr"                ->  %2 = triton.name "x_ptr"
    %3 = kernel.tl_call "arange"(...)       ->  %3 = triton.call "tl.arange"(...)
    kernel.store(%p, %v, %m)                ->  %4 = triton.call "tl.store"(%p, %v, %m)
                                                triton.expr_stmt %4
    kernel.binop "and" %a, %b               ->  triton.binop "&" %a, %b

`and`/`or` print as `&`/`|`: on Triton blocks they are elementwise, and the
Triton interpreter (TRITON_INTERPRET=1) would otherwise evaluate `and` with
Python's truthiness. When the module holds a `torch.script` (a model or
training script), the kernels and launchers move to its top, so the script's
code can call the launchers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.dialects import kernel, triton
from tensorloom.dialects import torch as t

ELEMENTWISE_LOGIC = {"and": "&", "or": "|"}


def _replace(rewriter: PatternRewriter, op: Operation, new: Operation) -> None:
    new.location = op.location
    uses = op.results and op.results[0].uses
    if new.results and not uses:
        statement = triton.ExprStmtOp(new.results[0])
        statement.location = op.location
        rewriter.replace(op, [new, statement], [None] * len(op.results))
        return
    rewriter.replace(op, new)


class FuncToJit(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.FuncOp, rewriter: PatternRewriter) -> None:
        params = op.params()
        kinds = [k.data for k in op.param_kinds]
        _replace(
            rewriter,
            op,
            triton.JitFuncOp(op.sym_name.data, params, kinds, op.detach_region(op.body)),
        )


class LetToAssign(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.LetOp, rewriter: PatternRewriter) -> None:
        _replace(rewriter, op, triton.AssignOp(op.var.data, op.value))


class ReadToName(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.ReadOp, rewriter: PatternRewriter) -> None:
        _replace(rewriter, op, triton.NameOp(op.var.data))


class TlAttrToName(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.TlAttrOp, rewriter: PatternRewriter) -> None:
        _replace(rewriter, op, triton.NameOp(f"tl.{op.attr.data}"))


class ConstantToConstant(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.ConstantOp, rewriter: PatternRewriter) -> None:
        _replace(rewriter, op, triton.ConstantOp(op.value))


class BinaryToBinary(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.BinOp, rewriter: PatternRewriter) -> None:
        operator = ELEMENTWISE_LOGIC.get(op.op.data, op.op.data)
        _replace(rewriter, op, triton.BinOp(operator, op.lhs, op.rhs))


class UnaryToUnary(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.UnaryOp, rewriter: PatternRewriter) -> None:
        _replace(rewriter, op, triton.UnaryOp(op.op.data, op.operand))


class CallsToCall(RewritePattern):
    """`tl.` calls, loads, stores and builtin calls are all `triton.call`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: kernel.TlCallOp | kernel.LoadOp | kernel.StoreOp | kernel.CallOp,
        rewriter: PatternRewriter,
    ) -> None:
        if isinstance(op, kernel.TlCallOp):
            callee = f"tl.{op.callee.data}"
        elif isinstance(op, kernel.CallOp):
            callee = op.callee.data
        else:
            callee = "tl.load" if isinstance(op, kernel.LoadOp) else "tl.store"
        _replace(rewriter, op, triton.CallOp(callee, op.args, op.names()))


class MethodToMethod(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.MethodOp, rewriter: PatternRewriter) -> None:
        new = triton.MethodOp(op.receiver, op.method.data, op.args, op.names())
        _replace(rewriter, op, new)


class ValuesToValues(RewritePattern):
    """Attribute reads, tuples and indexing keep their shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: kernel.GetAttrOp | kernel.TupleOp | kernel.IndexOp, rewriter: PatternRewriter
    ) -> None:
        if isinstance(op, kernel.GetAttrOp):
            new: Operation = triton.GetAttrOp(op.value, op.attr.data)
        elif isinstance(op, kernel.TupleOp):
            new = triton.TupleOp(op.elements)
        else:
            new = triton.IndexOp(op.value, op.indices, [i.data for i in op.items])
        _replace(rewriter, op, new)


class ControlFlow(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: kernel.IfOp | kernel.ForOp | kernel.ReturnOp, rewriter: PatternRewriter
    ) -> None:
        if isinstance(op, kernel.IfOp):
            # Both regions first: detaching `then` renumbers the op's regions, so
            # `op.orelse` read afterwards no longer exists (fuzz-findings/04).
            then, orelse = op.then, op.orelse
            new: Operation = triton.IfOp(op.cond, op.detach_region(then), op.detach_region(orelse))
        elif isinstance(op, kernel.ForOp):
            new = triton.ForOp(op.var.data, op.iterator.data, op.args, op.detach_region(op.body))
        else:
            new = triton.ReturnOp()
        _replace(rewriter, op, new)


class LauncherToLauncher(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.LauncherOp, rewriter: PatternRewriter) -> None:
        new = triton.LauncherOp.build(properties=dict(op.properties))
        _replace(rewriter, op, new)


# `@triton.jit` reads TRITON_INTERPRET when a kernel is defined, so this runs before
# the kernels: on a machine without a GPU they run in Triton's interpreter instead
# of failing to find a driver.
INTERPRETER_FALLBACK = """\
if not torch.cuda.is_available() and "TRITON_INTERPRET" not in os.environ:
    # No CUDA GPU: run the kernels in Triton's interpreter, on the CPU (slowly).
    os.environ["TRITON_INTERPRET"] = "1"
"""


def _hoist_into_script(module: ModuleOp) -> None:
    """Moves kernels and launchers to the top of the script, after its imports."""
    script = next((op for op in module.body.block.ops if isinstance(op, t.ScriptOp)), None)
    if script is None:
        return
    emitted = [
        op for op in module.body.block.ops if isinstance(op, triton.JitFuncOp | triton.LauncherOp)
    ]
    if not emitted:
        return
    anchor = _after_imports(script)
    fallback = t.RawOp(INTERPRETER_FALLBACK)
    Rewriter.insert_op([t.ImportOp("os"), t.ImportOp("torch"), fallback], anchor)
    anchor = InsertPoint.after(fallback)
    for op in emitted:
        op.detach()
        Rewriter.insert_op(op, anchor)
        anchor = InsertPoint.after(op)


def _after_imports(script: t.ScriptOp) -> InsertPoint:
    block = script.body.block
    imports = [op for op in block.ops if isinstance(op, t.ImportOp | t.FromImportOp)]
    return InsertPoint.after(imports[-1]) if imports else InsertPoint.at_start(block)


@dataclass(frozen=True)
class ConvertKernelToTritonPass(ModulePass):
    name = "convert-kernel-to-triton"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier(
            [
                FuncToJit(),
                LetToAssign(),
                ReadToName(),
                TlAttrToName(),
                ConstantToConstant(),
                BinaryToBinary(),
                UnaryToUnary(),
                CallsToCall(),
                MethodToMethod(),
                ValuesToValues(),
                ControlFlow(),
                LauncherToLauncher(),
            ]
        )
        PatternRewriteWalker(patterns).rewrite_module(op)
        _hoist_into_script(op)
