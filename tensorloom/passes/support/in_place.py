"""Which assignments into a tensor (`nml.index_put`) the script may write in place.

    let out = zeros_like(x)     out = torch.zeros_like(x)
    out[idx] = v                out[idx] = v        (in place: nothing else sees `out`)
    x[:, 0] = y                 x = x.clone()       (a copy: the caller's `x` keeps its values)
                                x[:, 0] = y

The language's assignment makes a new value (`x` is rebound; an earlier `let h = x` keeps
the old one); PyTorch's writes into the tensor, which every alias then sees, and which
autograd refuses for a leaf or for a tensor an op saved for its backward. So the script
writes in place only into a tensor that this forward made and that nothing else reads:

1. it comes from an op that makes a new tensor with no gradient history (`zeros_like`,
   `arange`, a random sample, ...), or from an earlier assignment, or is carried by a loop
   or a branch from such values only;
2. nothing else reads it: the assignment is its one use (a loop's carried value: the
   loop's operand, then the assignment inside; a branch's: the assignment in one branch
   and the unchanged value yielded by the other), but for comparisons, sizes and sums
   made before it, which keep nothing of it (`x[x > 0.5] = 0.0`).

Anything else is copied first (`x = x.clone()`), which costs one copy of the tensor.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from tensorloom.dialects import nml

FRESH = frozenset(
    {"nml.zeros_like", "nml.ones_like", "nml.full_like", "nml.rand_like", "nml.randn_like",
     "nml.arange", "nml.linspace", "nml.sample", "nml.one_hot", "nml.index_put"}
)  # fmt: skip
"""Ops whose result is a new tensor that no op saved and that has no gradient history."""

READS = frozenset(
    {"nml.eq", "nml.ne", "nml.lt", "nml.le", "nml.gt", "nml.ge", "nml.dim", "nml.sum",
     "nml.mean"}
)  # fmt: skip
"""Ops that read a tensor and keep nothing of it (step 2 lets them come first)."""

_DEPTH = 32
"""How far through loops and branches a carried value is traced (beyond: copied)."""


def mark_in_place(module: ModuleOp) -> None:
    """Sets `in_place` on each `nml.index_put` whose tensor nothing else sees."""
    for op in module.walk():
        if isinstance(op, nml.IndexPutOp) and _private(op.input, op) and _fresh(op.input, 0):
            op.in_place = UnitAttr()


def _private(value: SSAValue, put: Operation) -> bool:
    """The assignment is the value's one reader, but for the other branch's yield and
    earlier reads that keep nothing of it (`x[x > 0] = 0.0`: the mask is made first)."""
    return all(
        u.operation is put or _other_branch(u.operation, put) or _read_before(u.operation, put)
        for u in value.uses
    )


def _read_before(user: Operation, put: Operation) -> bool:
    """`user` is a comparison, a size or a sum, in the assignment's block or around it,
    before it: its result is a new tensor, and autograd keeps nothing of its operand."""
    if user.name not in READS:
        return False
    block = user.parent_block()
    anchor: Operation | None = put
    while anchor is not None and anchor.parent_block() is not block:
        anchor = anchor.parent_op()
    if anchor is None or block is None:
        return False
    return block.get_operation_index(user) < block.get_operation_index(anchor)


def _other_branch(user: Operation, put: Operation) -> bool:
    """`user` yields the value unchanged from the other region of an `nml.if` around `put`."""
    if not isinstance(user, nml.YieldOp):
        return False
    branch = user.parent_region()
    parent = user.parent_op()
    if not isinstance(parent, nml.IfOp) or branch is None:
        return False
    return parent.is_ancestor(put) and not branch.is_ancestor(put)


def _fresh(value: SSAValue, depth: int) -> bool:
    """Made in this forward with no history (step 1), through loops and branches."""
    if depth > _DEPTH:
        return False
    if isinstance(value, BlockArgument):
        loop = value.block.parent_op()
        if not isinstance(loop, nml.ForOp) or value.index == 0:
            return False  # a forward's input, or the loop counter
        return _carried(loop, value.index - 1, depth)
    assert isinstance(value, OpResult)
    owner = value.op
    if isinstance(owner, nml.ForOp):
        return _carried(owner, value.index, depth)
    if isinstance(owner, nml.IfOp):
        return all(_fresh_yield(r.block, value.index, depth) for r in owner.regions)
    return owner.name in FRESH


def _carried(loop: nml.ForOp, index: int, depth: int) -> bool:
    """A loop's carried value: its first value, and the one each iteration yields, are
    fresh and read nowhere else."""
    init = loop.inits[index]
    return (
        init.has_one_use()
        and _fresh(init, depth + 1)
        and _fresh_yield(loop.body.block, index, depth)
    )


def _fresh_yield(block: Block, index: int, depth: int) -> bool:
    last = block.last_op
    if not isinstance(last, nml.YieldOp) or index >= len(last.operands):
        return False
    yielded = last.operands[index]
    return yielded.has_one_use() and _fresh(yielded, depth + 1)
