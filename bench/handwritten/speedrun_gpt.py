"""The speedrun's modern GPT recipe written by hand in PyTorch, each element switchable.

    python bench/handwritten/speedrun_gpt.py --steps 700 --curve out/speedrun/handwritten.jsonl
    python bench/handwritten/speedrun_gpt.py --elements muon --budget-s 300     # one element alone
    python bench/handwritten/speedrun_gpt.py --device cpu --tiny --budget-s 20  # a CPU smoke run

The same model and recipe as examples/gpt_speedrun.tl and its .nml (modded-nanogpt's
elements, at GPT-2 small's size over the byte vocabulary), so that the emitted script's
tokens/s can be compared with PyTorch written by hand (bench/speedrun/runner.py
`--tokens-check`). `--elements` picks which elements are on; every one that is off is
nanoGPT's (bench/speedrun/baseline.py), so `--elements muon` is the baseline with Muon
alone, which is how bench/speedrun/ablate.py measures each element:

- `muon`: torch.optim.Muon (lr 0.05, momentum 0.95, Nesterov, no weight decay) on the
  blocks' 2-D weights; AdamW on the rest (nanoGPT's settings, or with `untied`, the
  embedding at lr 0.6 and the head at 0.008, betas (0.8, 0.95), eps 1e-10, no weight
  decay, as modded-nanogpt); each optimizer's gradients clipped to norm 1.0 apart, as the
  emitted `step` with two optimizers clips them.
- `rotary`: rotary positions on q and k (base 10,000) instead of a learned position table.
- `qk_norm`: q and k RMS-normalised per head (no gain) before attention.
- `relu2`: the MLP's activation relu(x)^2 instead of GELU.
- `zero_init`: the projections back into the residual stream (attention's and the MLP's
  `c_proj`) start at zero.
- `untied`: a head of its own (zero-initialised), logits soft-capped at 30 * tanh(z / 30).
- `rmsnorm`: RMSNorm without gains for every LayerNorm, and no biases anywhere.
- `wsd`: warmup-stable-decay: linear warm-up, constant, then a linear decay to 0 over the
  last 40% of the steps, instead of nanoGPT's cosine.

All of them on is examples/gpt_speedrun.tl: 64 windows a step and no accumulation, as its
block says (the defaults here); the ablation gives one element the baseline's batch.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # the curve's clock starts before torch is imported

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "speedrun"))

import common  # noqa: E402  # pyright: ignore[reportMissingImports]
import prepare  # noqa: E402  # pyright: ignore[reportMissingImports]

ELEMENTS = ("muon", "rotary", "qk_norm", "relu2", "zero_init", "untied", "rmsnorm", "wsd")
GPT2_SMALL = {"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024}
TINY = {"n_layer": 2, "n_head": 2, "n_embd": 64, "block_size": 64}
SOFTCAP = 30.0
DECAY_FRACTION = 0.4


def rotary(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary positions on [B, T, H, D]: the halves of each head's vector rotated by angles
    t * base^(-2i/D), as modded-nanogpt's `apply_rotary_emb` does."""
    T, D = x.size(1), x.size(3)
    inv_freq = base ** (-torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    angles = torch.outer(torch.arange(T, device=x.device, dtype=torch.float32), inv_freq)
    cos, sin = (
        angles.cos()[None, :, None, :].to(x.dtype),
        angles.sin()[None, :, None, :].to(x.dtype),
    )
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos + x2 * sin, x2 * cos - x1 * sin], dim=-1)


class Options:
    def __init__(self, elements: set[str], config: dict[str, int]) -> None:
        self.on = elements
        self.config = config

    def __getattr__(self, name: str) -> bool:
        if name in ELEMENTS:
            return name in self.on
        raise AttributeError(name)


def _norm(o: Options, dim: int) -> nn.Module:
    if o.rmsnorm:
        return nn.RMSNorm(dim, elementwise_affine=False)
    return nn.LayerNorm(dim)


class Attention(nn.Module):
    def __init__(self, o: Options, n_embd: int, n_head: int) -> None:
        super().__init__()
        bias = not o.rmsnorm
        self.c_q = nn.Linear(n_embd, n_embd, bias=bias)
        self.c_k = nn.Linear(n_embd, n_embd, bias=bias)
        self.c_v = nn.Linear(n_embd, n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head, self.o = n_head, o

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        shape = (B, T, self.n_head, C // self.n_head)
        q, k, v = self.c_q(x).view(shape), self.c_k(x).view(shape), self.c_v(x).view(shape)
        if self.o.qk_norm:
            q, k = F.rms_norm(q, (q.size(-1),)), F.rms_norm(k, (k.size(-1),))
        if self.o.rotary:
            q, k = rotary(q), rotary(k)
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, o: Options, n_embd: int) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=not o.rmsnorm)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=not o.rmsnorm)
        self.o = o

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.c_fc(x)
        return self.c_proj(F.relu(h).square() if self.o.relu2 else F.gelu(h))


class Block(nn.Module):
    def __init__(self, o: Options, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.ln_1, self.attn = _norm(o, n_embd), Attention(o, n_embd, n_head)
        self.ln_2, self.mlp = _norm(o, n_embd), MLP(o, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, o: Options, vocab_size: int, n_layer: int, n_head: int, n_embd: int,
                 block_size: int) -> None:  # fmt: skip
        super().__init__()
        self.o = o
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = None if o.rotary else nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(o, n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = _norm(o, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False) if o.untied else None
        self._init(n_layer)

    def _init(self, n_layer: int) -> None:
        """nanoGPT's initialisation, then the elements' zeros."""
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:  # pyright: ignore[reportUnnecessaryComparison]
                nn.init.zeros_(module.bias)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                if self.o.zero_init:
                    nn.init.zeros_(p)
                else:
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
        if self.lm_head is not None:
            nn.init.zeros_(self.lm_head.weight)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        if self.lm_head is None:
            logits = x @ self.wte.weight.T
        else:
            logits = SOFTCAP * torch.tanh(self.lm_head(x) / SOFTCAP)
        if targets is None:
            return logits
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def optimizers(model: GPT, o: Options, lr: float) -> list[tuple[torch.optim.Optimizer, float]]:
    # each optimizer and its peak learning rate (a factor of 1: the groups keep their own)
    """Each optimizer with its peak learning rate (the schedule scales it)."""
    fused = {"fused": True} if next(model.parameters()).is_cuda else {}
    if not o.muon:
        decay = [p for p in model.parameters() if p.dim() >= 2]
        rest = [p for p in model.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
        return [(torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), **fused), lr)]
    hidden = [p for p in model.h.parameters() if p.dim() == 2]
    chosen = {id(p) for p in hidden}
    rest = [p for p in model.parameters() if id(p) not in chosen]
    muon = torch.optim.Muon(hidden, lr=0.05, momentum=0.95, nesterov=True, weight_decay=0.0)
    if o.untied:
        assert model.lm_head is not None
        head = [model.lm_head.weight]
        others = [p for p in rest if p is not model.lm_head.weight]
        adam = torch.optim.AdamW(
            [{"params": others, "lr": 0.6}, {"params": head, "lr": 0.008}],
            betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0, **fused,
        )  # fmt: skip
        return [(muon, 0.05), (adam, 1.0)]  # the groups keep their own peaks: a factor of 1
    decay = [p for p in rest if p.dim() >= 2]
    small = [p for p in rest if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": small, "weight_decay": 0.0}]
    return [(muon, 0.05), (torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), **fused), lr)]


def lr_factor(o: Options, step: int, total: int, warmup: int) -> float:
    """The schedule as a factor of each optimizer's peak: WSD, or nanoGPT's cosine to 0.1."""
    if not o.wsd:
        return common.cosine_lr(step, total, 1.0, 0.1, warmup)
    if step < warmup:
        return (step + 1) / warmup
    decay_start = total - int(DECAY_FRACTION * total)
    if step < decay_start:
        return 1.0
    return max(0.0, (total - step) / max(total - decay_start, 1))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--elements", default=",".join(ELEMENTS),
                   help="the elements that are on, comma-separated ('' = none)")  # fmt: skip
    p.add_argument("--budget-s", type=float, default=300.0)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--data", type=Path, default=prepare.DATA)
    p.add_argument("--curve", default=None)
    p.add_argument("--micro-batch", type=int, default=64)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=6e-4, help="AdamW's lr when not `untied`")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--evals", type=int, default=20)
    p.add_argument("--eval-batch", type=int, default=64)
    p.add_argument("--compile", choices=("on", "off", "auto"), default="auto")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--tiny", action="store_true")
    return p.parse_args(argv)


def elements_of(text: str) -> set[str]:
    chosen = {e for e in text.split(",") if e}
    unknown = chosen - set(ELEMENTS)
    if unknown:
        raise SystemExit(f"unknown elements {sorted(unknown)}; known: {', '.join(ELEMENTS)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.tiny:
        args.micro_batch, args.grad_accum, args.eval_batch = 8, 2, 32
    device = common.device_of(args.device)
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if args.data == prepare.DATA:
        prepare.ensure(args.data)
    config = TINY if args.tiny else GPT2_SMALL
    o = Options(elements_of(args.elements), config)
    data = common.TokenData(args.data, config["block_size"])
    model = GPT(o, vocab_size=256, **config).to(device)
    opts = optimizers(model, o, args.lr)
    peaks = [[g.get("lr", peak) for g in opt.param_groups] for opt, peak in opts]
    compiled = args.compile == "on" or (args.compile == "auto" and device.type == "cuda")
    train_model = torch.compile(model) if compiled else model
    autocast = (
        torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        if device.type == "cuda"
        else contextlib.nullcontext()
    )
    batches = data.train_batches(args.micro_batch, device, seed=args.seed)

    def step(i: int, total: int) -> tuple[torch.Tensor, float]:
        factor = lr_factor(o, i, total, args.warmup)
        for (opt, _), group_peaks in zip(opts, peaks, strict=True):
            for group, peak in zip(opt.param_groups, group_peaks, strict=True):
                group["lr"] = peak * factor
        loss = torch.zeros(())
        for _ in range(args.grad_accum):
            x, y = next(batches)
            with autocast:
                loss = train_model(x, y) / args.grad_accum
            loss.backward()
        for opt, _ in opts:  # one optimizer: nanoGPT's global clip; two: each its own
            params = [p for group in opt.param_groups for p in group["params"]]
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        for opt, _ in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
        return loss.detach() * args.grad_accum, opts[0][0].param_groups[0]["lr"]

    def loss_sum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with autocast:
            logits = train_model(x)
        return F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="sum")

    def evaluate() -> float:
        model.eval()
        loss = common.validation_loss(loss_sum, data, args.eval_batch, device)
        model.train()
        return loss

    tokens = args.micro_batch * args.grad_accum * config["block_size"]
    curve = common.Curve(
        args.curve, T0, recipe="hand-written modern", elements=sorted(o.on), model=config,
        tokens_per_step=tokens, micro_batch=args.micro_batch, grad_accum=args.grad_accum,
        compiled=compiled, device=str(device), **common.versions(),
    )  # fmt: skip
    plan = common.Plan(args.budget_s, steps=args.steps, evals=args.evals)
    result = common.run_budget(step, evaluate, plan, curve, tokens, common.synchronizer(device))
    if device.type == "cuda":
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    print(json.dumps({"result": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
