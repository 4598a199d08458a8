"""Self-attention as nanoGPT writes it, for `MultiHeadAttention(d, h, causal=...)`.

One fused q/k/v projection (`c_attn`), `F.scaled_dot_product_attention` (the
flash or memory-efficient kernel on a GPU; `is_causal=True` masks the future
without building a mask), and the output projection (`c_proj`). Its parameters
number exactly those of `nn.MultiheadAttention(d, h)`: 4 d^2 + 4 d with biases.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    """Multi-head self-attention over [B, T, d]; causal when `causal` is set."""

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        causal: bool = False,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.c_attn = nn.Linear(embed_dim, 3 * embed_dim, bias=bias)
        self.c_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.num_heads = num_heads
        self.dropout = dropout
        self.causal = causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *batch, length, width = x.shape
        heads = self.num_heads
        q, k, v = self.c_attn(x).split(width, dim=-1)
        shape = (*batch, length, heads, width // heads)
        q, k, v = (t.reshape(shape).transpose(-3, -2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(
            q,
            k,
            v,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=self.causal,
        )
        return self.c_proj(y.transpose(-3, -2).reshape(*batch, length, width))
