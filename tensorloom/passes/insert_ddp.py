"""`insert-ddp`: `distributed = true` becomes the markers of a data-parallel training script.

    train.config {distributed = "ddp", ...}    ->   train.ddp_wrap @net
    train.config {distributed = "fsdp", ...}   ->   train.fsdp_shard @net ["h"]

(`distributed = true` is "ddp".) The lowering turns the marker into the script's process
group, DDP wrap or FSDP2 `fully_shard`, sharded loaders, rank-0 logging and checkpoints,
and reductions; without it (the pass left out of the pipeline) none of that is in the
script. A block of several models (`train (G, D) on data:`) gets one `train.fsdp_shard`
per model: every model is sharded, a frozen one (a teacher) too, so that no rank holds
more than its shard of it. Under FSDP the blocks are the model's layers that are models
(a layer list of them stands for each: `h = [Block(...) for ...]`); each becomes one
FSDP unit, and the model itself the root unit. Every rank writes its shards of a
checkpoint (runtime/sharded.py).

`nccl` is the backend on CUDA; the emitted script uses gloo when it runs on the
CPU (runtime/distributed.py `setup_distributed`), and a group of one when it is
started as `python out.py` rather than under `torchrun`. Each rank takes a
disjoint shard of every epoch's permutation (`set_epoch` reshuffles), only rank 0
logs, writes metrics and saves checkpoints (under FSDP every rank writes its shards),
and a barrier follows each save.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tensorloom.dialects import nml, train
from tensorloom.passes.support.model_env import layers_of, models_of
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.train_values import add_marker, has_marker, loops_of


def fsdp_blocks(module: ModuleOp, instance_name: str) -> list[str]:
    """The layers of the instance's model that are models themselves: its FSDP units."""
    models = models_of(module)
    instances = (o for o in module.walk() if isinstance(o, nml.InstanceOp))
    instance = next((o for o in instances if o.sym_name.data == instance_name), None)
    model = models.get(instance.model.root_reference.data) if instance is not None else None
    if model is None:
        return []
    return [name for name, layer in layers_of(model).items() if layer.kind.data in models]


def insert_ddp(module: ModuleOp, loop: train.LoopOp) -> None:
    strategy = train.config_of(loop).value("distributed")
    done = has_marker(loop, train.DdpWrapOp) or has_marker(loop, train.FsdpShardOp)
    if strategy not in ("ddp", "fsdp") or done:
        return
    net = loop.model.root_reference.data
    if strategy == "fsdp":
        for name in loop.model_names():
            add_marker(loop, train.FsdpShardOp(name, fsdp_blocks(module, name)))
    else:
        add_marker(loop, train.DdpWrapOp(net))


@dataclass(frozen=True)
class InsertDdpPass(TLPass):
    name = "insert-ddp"
    requires = ("train-config",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in loops_of(op):
            insert_ddp(op, loop)
