"""GPT-2 124M written by hand as nanoGPT's model.py writes it (bench/gpt2_step.py's reference).

Causal self-attention through `F.scaled_dot_product_attention(..., is_causal=True)`
(flash attention on the GPU), a GELU MLP, pre-norm blocks, learned positions and an
`lm_head` tied to the token embedding; nanoGPT's initialisation (normal(0, 0.02),
the residual projections scaled by 1/sqrt(2 n_layer)) and its optimizer set-up
(fused AdamW, weight decay on 2-D tensors only). The state-dict keys are those of
TensorLoom's emitted `GPT` (examples/gpt.nml), so one model's weights load into the
other.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


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


def init_weights(model: nn.Module, n_layer: int) -> None:
    """nanoGPT's initialisation, in its order: normal(0, 0.02) weights, zero biases, the
    residual projections (`c_proj`) at 0.02 / sqrt(2 n_layer). bench/programs/gpt2.nml says
    the same with the language's `init=`, `std=`, `out_std=` and `bias_init=`."""
    model.apply(_init_module)
    for name, p in model.named_parameters():
        if name.endswith("c_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))


def _init_module(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)


class GPT(nn.Module):
    def __init__(
        self,
        vocab_size: int = 50257,
        block_size: int = 1024,
        n_layer: int = 12,
        n_head: int = 12,
        n_embd: int = 768,
    ) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        init_weights(self, n_layer)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """The logits; with `targets`, the mean cross-entropy instead (nanoGPT's loss,
        computed inside `forward` so that torch.compile sees it with the model)."""
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        if targets is None:
            return x @ self.wte.weight.T  # nanoGPT's lm_head, tied to wte
        return self.loss(x, targets)

    def loss(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = x @ self.wte.weight.T
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class PaddedGPT(GPT):
    """A candidate (not nanoGPT's reference): the tied head's matmul over a vocabulary padded
    to a multiple of 64 (50,304), the padded columns dropped before the loss, so the loss is
    the 50,257-way one. The embedding gains 47 rows that no token reads."""

    def __init__(self, vocab_size: int = 50257, **kwargs: int) -> None:
        super().__init__(vocab_size=-(-vocab_size // 64) * 64, **kwargs)
        self.vocab = vocab_size

    def loss(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = (x @ self.wte.weight.T)[..., : self.vocab]
        return F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


class LinearHeadGPT(PaddedGPT):
    """A candidate for FP8 (`gpt2_train.py --fp8`): the padded head as an `nn.Linear` whose
    weight is the token embedding's (still tied), so that torchao converts it with the
    blocks' linears (FP8 matmuls need sizes divisible by 16: 50,304, not 50,257)."""

    def __init__(self, vocab_size: int = 50257, **kwargs: int) -> None:
        super().__init__(vocab_size=vocab_size, **kwargs)
        rows, n_embd = self.wte.weight.shape
        self.lm_head = nn.Linear(n_embd, rows, bias=False)
        self.lm_head.weight = self.wte.weight

    def loss(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(x)[..., : self.vocab]
        return F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


class ChunkedLossGPT(GPT):
    """A candidate: the tied head and the loss in row chunks (tensorloom's runtime
    `linear_cross_entropy`), never holding the [B*T, vocab] logits."""

    def loss(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        from linear_ce import linear_cross_entropy

        return linear_cross_entropy(x.flatten(0, 1), self.wte.weight, targets.reshape(-1))


class CutCrossEntropyGPT(GPT):
    """A candidate: the tied head and the loss as Apple's Cut Cross-Entropy (the
    `cut-cross-entropy` package: Triton kernels that compute each block of logits in
    on-chip memory and recompute them in backward, so no [B*T, vocab] logits are ever
    written). Exact: `filter_eps=None` turns off its gradient filtering, which skips
    vocabulary blocks whose softmax is below a threshold; on this benchmark's byte-level
    text (ids below 256 of 50,257) that would skip nearly the whole vocabulary and time a
    cheaper loss than real BPE text needs. The loss runs outside torch.compile's graph."""

    def loss(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return _cut_cross_entropy(x, self.wte.weight, targets)


@torch.compiler.disable
def _cut_cross_entropy(
    x: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """The mean cross-entropy of `x @ weight.T` against `targets`, in the autocast dtype."""
    from cut_cross_entropy import linear_cross_entropy  # type: ignore[import-not-found]

    device = x.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
    e = x.flatten(0, -2).to(dtype).contiguous()
    with torch.autocast(x.device.type, enabled=False):
        loss = linear_cross_entropy(e, weight.to(dtype), targets.flatten(), filter_eps=None)
    return loss  # type: ignore[no-any-return]


def configure_optimizer(
    model: nn.Module,
    lr: float = 6e-4,
    weight_decay: float = 0.1,
    *,
    fused: bool = True,
    capturable: bool = False,
) -> torch.optim.Optimizer:
    """nanoGPT's: decay 2-D tensors (matmuls, embeddings), not biases and norms; fused on
    CUDA (`fused=False`: foreach, for a torch.compile'd step; `capturable`: CUDA graphs)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    cuda = next(model.parameters()).is_cuda
    options = {"fused": True} if fused and cuda else {"foreach": cuda}
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8,
                             capturable=capturable, **options)  # fmt: skip
