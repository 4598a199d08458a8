"""`insert-ddp`: `distributed = true` becomes the markers of a DDP training script.

    train.config {distributed = true, ...}   ->   train.ddp_wrap @net

The lowering turns the marker into the script's process group, DDP wrap, sharded
loaders, rank-0 logging and checkpoints, and reductions; without it (the pass left
out of the pipeline) none of that is in the script. NCCL is the backend on CUDA,
gloo when the script runs on the
CPU (runtime/distributed.py `setup_distributed`), and a group of one when it is
started as `python out.py` rather than under `torchrun`. Each rank takes a
disjoint shard of every epoch's permutation (`set_epoch` reshuffles), only rank 0
logs, writes metrics and saves checkpoints, and a barrier follows each save.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tensorloom.dialects import train
from tensorloom.passes.train_values import add_marker, has_marker, loops_of


def insert_ddp(loop: train.LoopOp) -> None:
    if train.config_of(loop).value("distributed") is not True or has_marker(loop, train.DdpWrapOp):
        return
    add_marker(loop, train.DdpWrapOp(loop.model.root_reference.data))


@dataclass(frozen=True)
class InsertDdpPass(ModulePass):
    name = "insert-ddp"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in loops_of(op):
            insert_ddp(loop)
