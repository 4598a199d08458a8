"""The walk over a typed, specialised forward that `tlc check`'s flows and `tlc info`'s trace
share: the ops in order, an `nml.if`'s branches and an `nml.for`'s iterations as shape
inference followed them, a method's body at its call.

    class _Walk(ForwardWalk):                       # analysis/flows.py
        walked_iterations = None                    #   a line per iteration followed
        def loop(self, model, op, env): ...         #   each iteration's lines in turn
        def apply(self, model, op, env): ...        #   a layer's line
        ...

    class Walker(ForwardWalk):                      # analysis/trace.py
        walked_iterations = 2                       #   the second stands for every later one
        ...

A subclass says what it does at each kind of op (`loop`, `apply`, `method`, `builtin`,
`makes_a_step`) and how many of a loop's iterations it walks (`walked_iterations`: None,
every one shape inference followed, since a flow joins their types line by line; 2 for the
profile, which multiplies the second iteration's costs by the rest, as a value has one type in
every iteration). A loop over a per-position list is walked at every position either way: its
elements are copies of their own, under their own arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, Region

from tensorloom.dialects.nml import ApplyAtOp, ApplyOp, CallOp, ForOp, FuncOp, IfOp, ModelOp
from tensorloom.passes.shape_inference import MAX_DEPTH
from tensorloom.passes.support.model_env import Env, called_method, layers_of


class ForwardWalk:
    """Dispatches each op of a forward to its handler; see the module docstring."""

    walked_iterations: ClassVar[int | None] = None
    models: Mapping[str, ModelOp]
    depth: int

    def block(self, model: ModelOp, block: Block, env: Env) -> None:
        for op in block.ops:
            self.op(model, op, env)

    def op(self, model: ModelOp, op: Operation, env: Env) -> None:
        if isinstance(op, ForOp):
            self.loop(model, op, env)
        elif isinstance(op, IfOp):
            for region in followed_branches(op):
                self.block(model, region.block, env)
        elif isinstance(op, ApplyOp | ApplyAtOp):
            self.apply(model, op, env)
        elif isinstance(op, CallOp):
            method = self.called(model, op)
            if method is not None:
                self.method(model, op, method, env)
        elif self.makes_a_step(op):
            self.builtin(op)

    def called(self, model: ModelOp, op: CallOp) -> FuncOp | None:
        """The method of the model a call runs (its call site's own copy), if it is one and
        the walk is not past shape inference's depth."""
        if op.method is not None or self.depth > MAX_DEPTH:
            return None
        return called_method(model, op)

    def loop_iterations(self, model: ModelOp, op: ForOp) -> tuple[int, int]:
        """How many iterations shape inference followed, and how many of them to walk."""
        count = followed(op.iterations, 1)
        if self.walked_iterations is None or per_position(model, op):
            return count, count
        return count, min(count, self.walked_iterations)

    def loop(self, model: ModelOp, op: ForOp, env: Env) -> None:
        raise NotImplementedError

    def apply(self, model: ModelOp, op: ApplyOp | ApplyAtOp, env: Env) -> None:
        raise NotImplementedError

    def method(self, model: ModelOp, op: CallOp, method: FuncOp, env: Env) -> None:
        raise NotImplementedError

    def makes_a_step(self, op: Operation) -> bool:
        raise NotImplementedError

    def builtin(self, op: Operation) -> None:
        raise NotImplementedError


def followed(attr: IntegerAttr | None, default: int) -> int:
    """What shape inference followed (`nml.for`'s `iterations`, `nml.if`'s `branches`)."""
    return attr.value.data if attr is not None else default


def followed_branches(op: IfOp) -> list[Region]:
    """The regions of an `nml.if` shape inference followed: both, or the one a config chose."""
    branches = followed(op.branches, 2)
    regions = [op.then_region, op.else_region]
    return regions if branches == 2 else [regions[branches]]


def per_position(model: ModelOp, op: ForOp) -> bool:
    """Whether the loop runs over a per-position list (`[Block(d, stride=2 if i == 0 else 1)
    for i in range(n)]`), whose elements are copies of their own."""
    layer = layers_of(model).get(op.layers.root_reference.data) if op.layers else None
    return layer is not None and layer.var is not None
