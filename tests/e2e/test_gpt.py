"""examples/gpt.nml is GPT as nanoGPT writes it, with GPT-2 small's size; the ViT is ViT-B/16's.

The reference below is nanoGPT's model.py (causal self-attention through
`F.scaled_dot_product_attention(..., is_causal=True)`, a GELU MLP, pre-norm
blocks, learned positions, a head tied to the token embedding), without the
`transformer` ModuleDict so that the state-dict keys are the emitted model's.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tensorloom.analysis.profile import ProfileOptions, profile_file
from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GPT2_SMALL = 124_439_808


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd: int) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.drop = nn.Dropout(0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self, vocab: int, block: int, n_layer: int, n_head: int, n_embd: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T  # lm_head, tied


def emitted_module() -> ModuleType:
    result = compile_file(EXAMPLES / "gpt.nml", until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    module = ModuleType("emitted_gpt")
    exec(compile(print_python(result.module), "<emitted gpt>", "exec"), module.__dict__)
    return module


SMALL = {"vocab_size": 97, "block_size": 16, "n_layer": 3, "n_head": 4, "n_embd": 32}


def test_emitted_gpt_equals_nanogpt_given_the_same_weights() -> None:
    torch.manual_seed(0)
    emitted = emitted_module().GPT(**SMALL).eval()
    reference = NanoGPT(97, 16, 3, 4, 32).eval()
    reference.load_state_dict(emitted.state_dict(), strict=True)
    idx = torch.randint(0, 97, (3, 16))
    with torch.no_grad():
        difference = (emitted(idx) - reference(idx)).abs().max().item()
    assert difference <= 1e-5


def test_the_emitted_gpt_is_causal() -> None:
    torch.manual_seed(1)
    model = emitted_module().GPT(**SMALL).eval()
    idx = torch.randint(0, 97, (2, 12))
    changed = idx.clone()
    changed[:, -1] = (idx[:, -1] + 1) % 97
    with torch.no_grad():
        before, after = model(idx), model(changed)
    torch.testing.assert_close(before[:, :-1], after[:, :-1], rtol=0, atol=0)
    assert not torch.allclose(before[:, -1], after[:, -1])


def test_gpt2_small_has_its_parameters_counted_once() -> None:
    _, profiles = profile_file(EXAMPLES / "gpt.nml", ProfileOptions())
    (profile,) = [p for p in profiles if p.name == "GPT"]
    assert profile.params == GPT2_SMALL
    with torch.device("meta"):
        model = emitted_module().GPT()
    assert sum(p.numel() for p in model.parameters()) == GPT2_SMALL  # wte counted once


@pytest.mark.parametrize("n_embd", [32, 48])
def test_attention_is_scaled_dot_product(n_embd: int) -> None:
    """Another width: the heads split it as nanoGPT does."""
    torch.manual_seed(2)
    model = emitted_module().GPT(97, 16, 1, 4, n_embd).eval()
    reference = NanoGPT(97, 16, 1, 4, n_embd).eval()
    reference.load_state_dict(model.state_dict(), strict=True)
    idx = torch.randint(0, 97, (1, 5))
    with torch.no_grad():
        assert torch.allclose(model(idx), reference(idx), atol=1e-5)
    assert math.isfinite(model(idx).sum().item())


VIT_B_16 = 86_567_656


def test_vit_b_16_counts_what_torchvision_counts() -> None:
    """examples/vision_transformer.nml's defaults are torchvision's `vit_b_16`."""
    _, profiles = profile_file(EXAMPLES / "vision_transformer.nml", ProfileOptions())
    (profile,) = [p for p in profiles if p.name == "VisionTransformer"]
    assert profile.params == VIT_B_16
    result = compile_file(EXAMPLES / "vision_transformer.nml", until="torch")
    assert result.module is not None
    module = ModuleType("emitted_vit")
    exec(compile(print_python(result.module), "<emitted vit>", "exec"), module.__dict__)
    with torch.device("meta"):
        model = module.VisionTransformer()
    assert sum(p.numel() for p in model.parameters()) == VIT_B_16
    names = {name for name, _ in model.named_parameters()}
    assert {"class_token", "pos_embedding", "conv_proj.weight", "layers.11.fc2.bias"} <= names
