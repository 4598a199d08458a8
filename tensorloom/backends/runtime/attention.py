"""Causal self-attention as nanoGPT writes it, and rotary positions as modded-nanogpt does.

`MultiHeadAttention(d, h, causal=true)` is emitted as this module rather than
`nn.MultiheadAttention`: the same parameters (4 d^2 + 4 d with biases), named
`c_attn` and `c_proj`, and `F.scaled_dot_product_attention(..., is_causal=True)`,
which runs the fused flash kernel on a GPU. Its constructor takes the catalogue's
arguments in the same order; the options `nn.MultiheadAttention` has and a causal
block does not (`add_bias_kv`, `add_zero_attn`, other `kdim`/`vdim`) are refused.

`Rotary(dim, base)` is the catalogue's `Rotary` layer: rotary position embeddings (RoPE)
on queries or keys laid out [B, T, heads, dim], as modded-nanogpt's `Rotary` applies them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    """[B, T, D] (or [T, D]) -> the same shape; position t attends to positions <= t."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = True,
        causal: bool = True,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        if add_bias_kv or add_zero_attn or kdim not in (None, embed_dim) or not batch_first:
            raise ValueError("SelfAttention takes batch-first self-attention options only")
        if vdim not in (None, embed_dim):
            raise ValueError("SelfAttention takes batch-first self-attention options only")
        self.num_heads = num_heads
        self.dropout = dropout
        self.causal = causal
        self.c_attn = nn.Linear(embed_dim, 3 * embed_dim, bias=bias)
        self.c_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *batch, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=-1)
        heads = (*batch, t, self.num_heads, d // self.num_heads)
        q, k, v = (z.view(heads).transpose(-3, -2) for z in (q, k, v))
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=self.causal)
        return self.c_proj(y.transpose(-3, -2).reshape(*batch, t, d))


class Rotary(nn.Module):
    """[B, T, H, dim] -> the same shape: each head's vector, as two halves (x1, x2), rotated
    by the angle t * base^(-2i / dim) of its position t and frequency i:
    (x1 cos + x2 sin, x2 cos - x1 sin). No parameters; the frequencies are a buffer that a
    state dict does not hold."""

    inv_freq: torch.Tensor

    def __init__(self, dim: int, base: float = 10000.0) -> None:
        super().__init__()
        if dim % 2:
            raise ValueError(f"Rotary needs an even dim, got {dim}")
        exponents = torch.arange(0, dim, 2, dtype=torch.float32) / dim
        self.register_buffer("inv_freq", base**-exponents, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.size(1), device=x.device, dtype=torch.float32)
        angles = torch.outer(positions, self.inv_freq.to(x.device))
        cos = angles.cos()[None, :, None, :].to(x.dtype)
        sin = angles.sin()[None, :, None, :].to(x.dtype)
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos + x2 * sin, x2 * cos - x1 * sin], dim=-1)
