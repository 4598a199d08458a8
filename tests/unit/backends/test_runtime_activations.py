"""runtime/activations.py: checkpointed blocks recompute their forward in backward, same numbers."""

from __future__ import annotations

import torch
from torch import nn

from tensorloom.backends.runtime.activations import checkpoint_activations


class _Counted(nn.Module):
    """A block that counts its forwards."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return torch.tanh(self.fc(x))


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(_Counted(), nn.Linear(4, 2))


def _gradients(model: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    model(x).square().sum().backward()
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_a_checkpointed_block_runs_its_forward_again_in_backward_with_the_same_gradients() -> None:
    x = torch.randn(8, 4)
    plain, checkpointed = _model(), _model()
    keys = list(checkpointed.state_dict())
    checkpoint_activations(checkpointed, ["0"])
    expected, got = _gradients(plain, x), _gradients(checkpointed, x)
    assert all(torch.allclose(a, b) for a, b in zip(expected, got, strict=True))
    assert (plain[0].calls, checkpointed[0].calls) == (1, 2)  # recomputed in backward
    assert list(checkpointed.state_dict()) == keys  # the module tree is as it was


def test_evaluation_and_no_grad_run_the_plain_forward() -> None:
    model = _model()
    checkpoint_activations(model, ["0"])
    with torch.no_grad():
        model(torch.randn(2, 4))
    model.eval()
    model(torch.randn(2, 4)).sum().backward()
    assert model[0].calls == 2  # once each: nothing recomputed


class _Looped(nn.Module):
    """A model whose forward loops over a layer list, as GPT's blocks do."""

    def __init__(self) -> None:
        super().__init__()
        self.h = nn.ModuleList([_Counted(), _Counted()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.h:
            x = block(x)
        return x


def test_a_layer_list_name_checkpoints_each_of_its_blocks() -> None:
    torch.manual_seed(0)
    plain = _Looped()
    torch.manual_seed(0)
    checkpointed = _Looped()
    checkpoint_activations(checkpointed, ["h"])
    x = torch.randn(8, 4)
    expected, got = _gradients(plain, x), _gradients(checkpointed, x)
    assert all(torch.allclose(a, b) for a, b in zip(expected, got, strict=True))
    assert [b.calls for b in checkpointed.h] == [2, 2]  # each block recomputed in backward
