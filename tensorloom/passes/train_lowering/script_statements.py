"""A script's top-level statements (`train.main`) as a function of the emitted script.

    train.main {                                    def main():
      %0 = nml.constant 1000 : i64                      x = torch.randn(1000, device=DEVICE)
      %x = nml.call "randn"(%0) ...          ->         y = k_launcher(x)
      %y = nml.kernel_call @k(%x) ...                   print(y)
      %1 = nml.call "print"(%y) ...
    }                                               if __name__ == "__main__":
                                                        main()

Steps (`lower_statements`, called by `convert-train-to-torch`):
1. Move the statements, in order, into a `py.def` (`main` when the program has
   no train block; `before_training` when it has one, and the script's guard then
   calls it before the training `main()`).
2. Lower them with `ScriptCallToTorch` and `ScriptRefToTorch` (the script
   builtins of script_builtins.py, and names of models, instances and kernels),
   then convert-nml-to-torch's `BODY_PATTERNS` for everything else.
3. Add `DEVICE = ...` (tensor constructors create their tensors there) and the
   call of the function under `if __name__ == "__main__":`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tensorloom.dialects import nml, py, train
from tensorloom.dialects import torch as t
from tensorloom.passes.support.nml_to_py import BODY_PATTERNS, call
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.support.script_builtins import (
    DEVICE,
    SCRIPT_BUILTINS,
    TENSOR_CONSTRUCTORS,
    python_callee,
)
from tensorloom.passes.support.torch_script import script_of

BEFORE_TRAINING = "before_training"


def _replace(rewriter: PatternRewriter, op: Operation, new_ops: list[Operation]) -> None:
    for new in new_ops:
        new.location = op.location
    result = new_ops[-1].results[0]
    result.name_hint = op.results[0].name_hint
    rewriter.replace(op, new_ops, [result])
    for new in new_ops[:-1]:  # the rewriter gave them the old name; they are parts of it
        for part in new.results:
            part.name_hint = None


def _in_statements(op: Operation) -> bool:
    return isinstance(op.parent_op(), py.DefOp)


class ScriptCallToTorch(RewritePattern):
    """`randn(1000)` is `torch.randn(1000, device=DEVICE)`; `print(x)` stays itself."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.CallOp, rewriter: PatternRewriter) -> None:
        callee = op.callee.data
        if not _in_statements(op) or op.method is not None or callee not in SCRIPT_BUILTINS:
            return
        args, names = list(op.args), [n.data for n in op.arg_names]
        if callee in TENSOR_CONSTRUCTORS and "device" not in names:
            # Inserted apart from the replacement, which would give it the call's name.
            device = py.NameOp(DEVICE)
            device.location = op.location
            rewriter.insert(device, InsertPoint.before(op))
            args, names = [*args, device.result], [*names, "device"]
        _replace(rewriter, op, call(python_callee(callee), args, names))


class ScriptRefToTorch(RewritePattern):
    """A model, kernel or launcher is its global name; an instance is a new model."""

    def __init__(self, instances: dict[str, nml.InstanceOp]) -> None:
        self.instances = instances

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nml.RefOp, rewriter: PatternRewriter) -> None:
        if not _in_statements(op):
            return
        name = op.symbol.root_reference.data
        instance = self.instances.get(name)
        if instance is None:
            _replace(rewriter, op, [py.NameOp(name)])
            return
        _replace(rewriter, op, _construction(instance))


def _construction(instance: nml.InstanceOp) -> list[Operation]:
    """`Classifier(hidden=128)`: the literal overrides of `let net = Classifier(...)`."""
    literals = (IntegerAttr, FloatAttr, StringAttr)
    constants = [
        (key, py.ConstantOp(value))
        for key, value in instance.overrides.data.items()
        if isinstance(value, literals)
    ]
    args: list[SSAValue] = [c.result for _, c in constants]
    names = [k for k, _ in constants]
    return [*(c for _, c in constants), *call(instance.model.root_reference.data, args, names)]


def lower_statements(module: ModuleOp, *, has_training: bool) -> None:
    """Turns the module's `train.main` (if any) into a function the script's guard calls."""
    main = next((o for o in module.body.block.ops if isinstance(o, train.MainOp)), None)
    if main is None:
        return
    script = script_of(module)
    function = _statements_function(main, BEFORE_TRAINING if has_training else "main")
    instances = {o.sym_name.data: o for o in module.body.block.ops if isinstance(o, nml.InstanceOp)}
    patterns = [ScriptCallToTorch(), ScriptRefToTorch(instances), *BODY_PATTERNS]
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns), walk_reverse=True)
    _place(script, function, main, has_training)
    walker.rewrite_region(function.body)
    main.detach()
    main.erase()


def _statements_function(main: train.MainOp, name: str) -> py.DefOp:
    """Step 1: a `py.def` holding the statements (the train loops are lowered already)."""
    function = py.DefOp(name, [])
    body = function.body.block
    for op in list(main.body.block.ops):
        if isinstance(op, train.LoopOp):
            continue
        op.detach()
        body.add_op(op)
    body.add_op(py.ReturnOp([]))
    function.location = main.location
    return function


def _place(script: t.ScriptOp, function: py.DefOp, main: train.MainOp, has_training: bool) -> None:
    """Step 3: `DEVICE`, the function, and its call under the `__main__` guard."""
    block = script.body.block
    guard = next((o for o in block.ops if isinstance(o, t.MainOp)), None)
    invoke = call(function.sym_name.data)
    for op in [function, *invoke]:
        op.location = main.location
    # `DEVICE = ...` stays unlocated: from no line of the program, it gets no `# file.tl:LINE`
    setup: list[Operation] = [py.ImportOp("torch"), *_device(), function]
    if has_training and guard is not None:
        Rewriter.insert_op(setup, InsertPoint.before(guard))
        first = guard.body.block.first_op
        assert first is not None, "the training script's guard calls `main`"
        Rewriter.insert_op([*_parse_flags(), *invoke], InsertPoint.before(first))
        return
    guard_op = t.MainOp(invoke)
    guard_op.location = main.location
    block.add_ops([*setup, guard_op])


def _device() -> list[Operation]:
    """`DEVICE = "cuda" if torch.cuda.is_available() else "cpu"`."""
    b = PyBuilder()
    cuda = b.call(b.path("torch", "cuda", "is_available"))
    b.assign(DEVICE, b.add(py.IfExpOp(cuda, b.const("cuda"), b.const("cpu"))))
    return b.ops


def _parse_flags() -> list[Operation]:
    """`parse_args(sys.argv[1:])`: the flags are parsed first, so that `--help` or a bad
    flag exits before the statements run."""
    argv, one = py.NameOp("sys.argv"), py.ConstantOp(IntegerAttr(1, 64))
    rest = py.SliceOp(one.result)
    flags = py.SubscriptOp(argv.result, [rest.result])
    return [argv, one, rest, flags, *call("parse_args", [flags.result])]


__all__ = ["lower_statements"]
