"""Activation checkpointing for TensorLoom scripts: named blocks recompute their activations.

    checkpoint_activations(model, ["blocks.0", "blocks.1"])   # `activation_checkpointing = true`

A checkpointed block keeps only its inputs during the forward and runs its forward again
in backward (`torch.utils.checkpoint`, non-reentrant): less activation memory for one more
forward of the block. The forward is replaced on the instance, so the module tree and the
state dict stay as they were; evaluation and `torch.no_grad()` run the plain forward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


def checkpoint_activations(model: nn.Module, names: list[str]) -> None:
    """Recompute in backward the activations of `model`'s submodules `names` (dotted paths).

    A name that holds a layer list (`nn.ModuleList`) or dict checkpoints each element: the
    model's forward loops over the elements and never calls the container's own forward.
    """
    for name in names:
        container = model.get_submodule(name)
        blocks = (
            list(container.children())
            if isinstance(container, (nn.ModuleList, nn.ModuleDict))
            else [container]
        )
        for block in blocks:
            block.forward = _checkpointed(block, block.forward)


def _checkpointed(block: nn.Module, forward: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        if not block.training or not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        return checkpoint(forward, *args, use_reentrant=False, **kwargs)

    return run
