"""Causal attention on the emitted model: no position sees a later one.

tests/e2e/info_programs/causal.nml applies `MultiHeadAttention(d, h, causal=true)`
(emitted as the runtime's `SelfAttention`) and the functional
`scaled_dot_product_attention(q, k, v, causal=true)`. Changing the last token must
change no earlier output; and `SelfAttention` given `nn.MultiheadAttention`'s weights
computes what that module computes under a causal mask.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

from tensorloom.pipeline import compile_file, python_source

PROGRAM = Path(__file__).parent / "info_programs" / "causal.nml"


def emitted() -> ModuleType:
    result = compile_file(PROGRAM, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    module = ModuleType("emitted_causal")
    sys.modules[module.__name__] = module
    exec(compile(python_source(result.module), "<emitted causal.nml>", "exec"), module.__dict__)
    return module


def test_changing_the_last_token_changes_no_earlier_output() -> None:
    torch.manual_seed(0)
    model = emitted().CausalLM().eval()
    idx = torch.randint(0, 50, (3, 9))
    changed = idx.clone()
    changed[:, -1] = (idx[:, -1] + 1) % 50
    with torch.no_grad():
        before, after = model(idx), model(changed)
    assert before.shape == (3, 9, 50)
    torch.testing.assert_close(before[:, :-1], after[:, :-1], rtol=0, atol=0)
    assert (before[:, -1] - after[:, -1]).abs().max() > 1e-3


def test_self_attention_equals_multihead_attention_with_a_causal_mask() -> None:
    torch.manual_seed(0)
    attention = emitted().SelfAttention(32, 4).eval()
    reference = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    assert sum(p.numel() for p in attention.parameters()) == sum(
        p.numel() for p in reference.parameters()
    )
    with torch.no_grad():
        attention.c_attn.weight.copy_(reference.in_proj_weight)
        attention.c_attn.bias.copy_(reference.in_proj_bias)
        attention.c_proj.weight.copy_(reference.out_proj.weight)
        attention.c_proj.bias.copy_(reference.out_proj.bias)
        x = torch.randn(2, 7, 32)
        mask = nn.Transformer.generate_square_subsequent_mask(7)
        expected = reference(x, x, x, attn_mask=mask, need_weights=False)[0]
        torch.testing.assert_close(attention(x), expected, rtol=1e-5, atol=1e-5)
