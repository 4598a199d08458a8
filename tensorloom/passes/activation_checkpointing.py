"""`activation-checkpointing`: recompute each block's activations in the backward pass.

    train.set "activation_checkpointing" = true
        ->  train.activation_checkpoint @net ["block1", "block2"]

The blocks are the model's layers that are themselves models (a transformer's
`TransformerBlock`s); a model with no nested model has each of its layers
checkpointed. The emitted script runs each listed submodule's forward through
`torch.utils.checkpoint.checkpoint(..., use_reentrant=False)` while training,
keeping the module tree, and so the checkpoint files, unchanged.
`checkpoint every N epochs` (saving the weights) is a different thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tensorloom.dialects import nml, train
from tensorloom.passes.support.model_env import layers_of, lookup_symbol, models_of
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.train_values import add_marker, has_marker, loops_of


def checkpointed_layers(module: ModuleOp, instance_name: str) -> list[str]:
    """The layers of the instance's model to checkpoint: its nested models, else all."""
    models = models_of(module)
    instance = _instance(module, instance_name)
    model = models.get(instance.model.root_reference.data) if instance is not None else None
    if model is None:
        return []
    layers = layers_of(model)
    blocks = [name for name, layer in layers.items() if layer.kind.data in models]
    return blocks or list(layers)


def _instance(module: ModuleOp, name: str) -> nml.InstanceOp | None:
    return lookup_symbol(module, name, nml.InstanceOp)


def insert_activation_checkpoints(module: ModuleOp, loop: train.LoopOp) -> None:
    wanted = train.config_of(loop).value("activation_checkpointing") is True
    if not wanted or has_marker(loop, train.ActivationCheckpointOp):
        return
    net = loop.model.root_reference.data
    layers = checkpointed_layers(module, net)
    if layers:
        add_marker(loop, train.ActivationCheckpointOp(net, layers))


@dataclass(frozen=True)
class ActivationCheckpointingPass(TLPass):
    name = "activation-checkpointing"
    requires = ("train-config",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in loops_of(op):
            insert_activation_checkpoints(op, loop)
