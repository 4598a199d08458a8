"""Linear + cross-entropy in row chunks, never holding a language model's [N, vocab] logits.

A candidate that bench/gpu_suite.py measures (bench/handwritten/gpt2.py, `ChunkedLossGPT`).

    loss = linear_cross_entropy(hidden.flatten(0, -2), head_weight, targets.flatten())

is `F.cross_entropy(hidden @ head_weight.T, targets)` (mean over rows), computed
`chunk_rows` rows at a time: each chunk's logits are made, reduced to the loss and
turned into their gradient at once, so neither the full logits nor their fp32 copy
(6.6 GB for GPT-2 at B=16, T=1024) is ever held. The gradients of the hidden states
and of the weight are computed in the forward and handed to autograd in backward.
Matmuls run in the input's dtype (bf16 under autocast); the softmax in fp32.
"""

from __future__ import annotations

from typing import Any

import torch


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, chunk_rows: int
    ) -> torch.Tensor:
        dtype = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled() else x.dtype
        xs, w = x.to(dtype), weight.to(dtype)
        n = xs.shape[0]
        grad_x = torch.empty_like(xs)
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=x.device)
        total = torch.zeros((), dtype=torch.float32, device=x.device)
        for start in range(0, n, chunk_rows):
            rows = slice(start, min(start + chunk_rows, n))
            logits = (xs[rows] @ w.t()).float()
            lse = torch.logsumexp(logits, dim=-1)
            picked = target[rows, None]
            total += (lse - logits.gather(1, picked).squeeze(1)).sum()
            grad = torch.exp(logits - lse[:, None])
            grad.scatter_add_(1, picked, torch.full_like(picked, -1.0, dtype=grad.dtype))
            grad = (grad / n).to(dtype)
            grad_x[rows] = grad @ w
            grad_w += (grad.t() @ xs[rows]).float()
        ctx.save_for_backward(grad_x, grad_w)
        ctx.dtypes = (x.dtype, weight.dtype)
        return total / n

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        grad_x, grad_w = ctx.saved_tensors
        x_dtype, w_dtype = ctx.dtypes
        return (grad_x * grad_out).to(x_dtype), (grad_w * grad_out).to(w_dtype), None, None


def linear_cross_entropy(
    x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, chunk_rows: int = 4096
) -> torch.Tensor:
    """`F.cross_entropy(x @ weight.T, target)` for x [N, D], weight [V, D], target [N] int64."""
    return _LinearCrossEntropy.apply(x, weight, target, chunk_rows)  # type: ignore[no-any-return]
