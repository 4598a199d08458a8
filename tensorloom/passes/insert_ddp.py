"""`insert-ddp`: `distributed = true` becomes the markers of a DDP training script.

    train.set "distributed" = true   ->   train.process_group "nccl"
                                          train.ddp_wrap @net
                                          train.distributed_sampler @data shuffle
                                          train.rank_zero_only ["logging", "metrics", "checkpoint"]

`nccl` is the backend on CUDA; the emitted script uses gloo when it runs on the
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
from tensorloom.passes.train_values import add_marker, has_marker, loops_of, setting_value

RANK_ZERO_ACTIONS = ("logging", "metrics", "checkpoint")


def insert_ddp(loop: train.LoopOp) -> None:
    if setting_value(loop, "distributed") is not True or has_marker(loop, train.DdpWrapOp):
        return
    add_marker(loop, train.ProcessGroupOp("nccl"))
    add_marker(loop, train.DdpWrapOp(loop.model.root_reference.data))
    add_marker(loop, train.DistributedSamplerOp(loop.data.root_reference.data, shuffle=True))
    add_marker(loop, train.RankZeroOnlyOp(RANK_ZERO_ACTIONS))


@dataclass(frozen=True)
class InsertDdpPass(ModulePass):
    name = "insert-ddp"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in loops_of(op):
            insert_ddp(loop)
