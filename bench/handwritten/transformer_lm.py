"""Hand-written PyTorch baseline: train a decoder-only transformer LM and time it.

The peer that `bench/gpu_suite.py` compares TensorLoom's emitted script against,
written the way a careful engineer would: pre-norm blocks whose causal self-attention is
nanoGPT's (one q/k/v projection, `F.scaled_dot_product_attention(is_causal=True)`, an
output projection), a GELU MLP of four times the width, fused AdamW with nanoGPT's
weight-decay groups on CUDA, no host sync inside the timed loop. `--attention mha` uses
`nn.MultiheadAttention(batch_first=True)` instead (`need_weights=False`, `is_causal=True`:
the same SDPA kernel, with the module's transposes and copies around it; 17% more aten ops
a step than the emitted model: the baseline of runs 1-10 in bench/RESULTS.md).
`--compile-loss` compiles the model and the loss together, as the emitted script's
`BatchLoss` does (the GPU suite's compile rows pass it: equal settings).

The tokens are SYNTHETIC (uniform random, fixed seed): this is a throughput
benchmark, not a learning one. Prints one JSON line, for example

    {"name": "handwritten_lm", "mode": "bf16+compile(default)", "tokens_per_s": ...,
     "ms_per_step": ..., "peak_mem_bytes": ..., ...}

Run: `python bench/handwritten/transformer_lm.py --precision bf16 --compile default`
(the defaults are the GPU benchmark's sizes; `--device cpu` with tiny sizes for tests).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

COMPILE_MODES = ("none", "default", "reduce-overhead", "max-autotune")
ATTENTION = ("fused", "mha")


@dataclass(frozen=True)
class LMConfig:
    vocab: int = 8192
    d_model: int = 512
    n_heads: int = 8
    n_layers: int = 6
    seq_len: int = 256
    dropout: float = 0.1
    attention: str = "fused"  # "fused" (nanoGPT's) or "mha" (nn.MultiheadAttention)


class CausalSelfAttention(nn.Module):
    """nanoGPT's causal self-attention: one q/k/v projection, SDPA, an output projection."""

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.c_attn = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.c_proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    """A pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.mha = cfg.attention == "mha"
        self.attention: nn.Module = (
            nn.MultiheadAttention(cfg.d_model, cfg.n_heads, dropout=0.0, batch_first=True)
            if self.mha else CausalSelfAttention(cfg)
        )  # fmt: skip
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.fc1 = nn.Linear(cfg.d_model, 4 * cfg.d_model)
        self.fc2 = nn.Linear(4 * cfg.d_model, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        if self.mha:
            # need_weights=False and is_causal: PyTorch drops the mask and runs causal SDPA
            h, _ = self.attention(h, h, h, attn_mask=mask, is_causal=True, need_weights=False)
        else:
            h = self.attention(h)
        x = x + self.dropout(h)
        h = self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return x + self.dropout(h)


class TransformerLM(nn.Module):
    """Token and learned position embeddings, `n_layers` causal blocks, a final norm and a
    head: the model of bench/programs/transformer_lm.tl."""

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.token_emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab)
        mask = nn.Transformer.generate_square_subsequent_mask(cfg.seq_len)
        self.register_buffer("mask", mask, persistent=False)
        self.register_buffer("positions", torch.arange(cfg.seq_len), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.token_emb(tokens) + self.pos_emb(self.positions)
        for block in self.blocks:
            x = block(x, self.mask)
        return self.head(self.norm(x))


def param_groups(model: nn.Module) -> list[dict[str, object]]:
    """nanoGPT's AdamW groups: matrices (and embeddings) decay, biases and norm weights not;
    the emitted script's default (`decay_groups`), so both optimizer steps are the same."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.dim() >= 2]},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def synthetic_batches(
    cfg: LMConfig, batch_size: int, count: int, device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`count` fixed batches of random tokens (inputs, next-token targets), on `device`."""
    gen = torch.Generator().manual_seed(0)
    batches: list[tuple[torch.Tensor, torch.Tensor]] = []
    for _ in range(count):
        seq = torch.randint(0, cfg.vocab, (batch_size, cfg.seq_len + 1), generator=gen)
        seq = seq.to(device)
        batches.append((seq[:, :-1], seq[:, 1:]))
    return batches


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager[object]:
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory(device: torch.device) -> int | None:
    """The whole run's peak (warm-up and compilation included), as for the emitted script."""
    if device.type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device)


def mode_label(precision: str, compile_mode: str) -> str:
    if compile_mode == "none":
        return f"{precision} eager"
    return f"{precision}+compile({compile_mode})"


def model_label(cfg: LMConfig) -> str:
    attention = ", nn.MultiheadAttention" if cfg.attention == "mha" else ""
    return f"{cfg.n_layers}x d={cfg.d_model} h={cfg.n_heads}, causal, learned positions{attention}"


def cycle(batches: list[tuple[torch.Tensor, torch.Tensor]]) -> Iterator[tuple[torch.Tensor, ...]]:
    while True:
        yield from batches


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--compile", choices=COMPILE_MODES, default="none")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument(
        "--attention",
        choices=ATTENTION,
        default="fused",
        help="fused: nanoGPT's (the emitted model's); mha: nn.MultiheadAttention",
    )
    p.add_argument("--warmup", type=int, default=30, help="untimed steps (compilation)")
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--name", default="handwritten_lm")
    p.add_argument(
        "--compile-loss",
        action="store_true",
        help="torch.compile the model and the loss together (the emitted BatchLoss)",
    )
    p.add_argument(
        "--profile-steps",
        type=int,
        default=0,
        help="then profile this many more steps (step_profile.py)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.manual_seed(0)
    device = resolve_device(args.device)
    cfg = LMConfig(
        vocab=args.vocab, d_model=args.d_model, n_heads=args.heads, n_layers=args.layers,
        seq_len=args.seq_len, dropout=args.dropout, attention=args.attention,
    )  # fmt: skip
    model = TransformerLM(cfg).to(device)
    n_params = sum(p.numel() for p in model.parameters())

    def model_loss(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = model(inputs)
        return F.cross_entropy(logits.reshape(-1, cfg.vocab), targets.reshape(-1))

    step_model = model if args.compile == "none" else torch.compile(model, mode=args.compile)
    step_loss = model_loss
    if args.compile_loss and args.compile != "none":
        step_loss = torch.compile(model_loss, mode=args.compile)
    optimizer = torch.optim.AdamW(param_groups(model), lr=3e-4, fused=device.type == "cuda")
    batches = cycle(synthetic_batches(cfg, args.batch_size, 8, device))

    def step() -> torch.Tensor:
        inputs, targets = next(batches)
        with autocast(device, args.precision):
            if args.compile_loss:
                loss = step_loss(inputs, targets)
            else:
                logits = step_model(inputs)
                loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    start = time.perf_counter()
    for _ in range(args.warmup):
        step()
    synchronize(device)
    warmup_s = time.perf_counter() - start

    start = time.perf_counter()
    loss = torch.zeros(())
    for _ in range(args.steps):
        loss = step()
    synchronize(device)
    elapsed = time.perf_counter() - start

    profile = None
    if args.profile_steps:
        from step_profile import StepProfile

        profiler = StepProfile(after=1, steps=args.profile_steps)
        for _ in range(args.profile_steps + 1):
            profiler.step()
            step()
        profiler.step()
        profile = profiler.summary()

    result = {
        "name": args.name,
        "compile_loss": args.compile_loss,
        "attention": args.attention,
        "profile": profile,
        "mode": mode_label(args.precision, args.compile),
        "precision": args.precision,
        "compile": args.compile,
        "tokens_per_s": args.steps * args.batch_size * cfg.seq_len / elapsed,
        "ms_per_step": 1000.0 * elapsed / args.steps,
        "peak_mem_bytes": peak_memory(device),
        "warmup_s": warmup_s,
        "final_loss": float(loss),
        "params": n_params,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "seq_len": cfg.seq_len,
        "model": model_label(cfg),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "data": "synthetic",
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
