"""The speedrun's baseline: GPT-2 small trained as nanoGPT's train.py does, for a wall-clock budget.

    python bench/speedrun/baseline.py --budget-s 300 --curve out/speedrun/baseline.jsonl
    python bench/speedrun/baseline.py --device cpu --budget-s 20 --tiny      # a CPU smoke run

The model is bench/handwritten/gpt2.py (nanoGPT's model.py: learned positions, GELU,
LayerNorm, the head tied to the token embedding, N(0, 0.02) weights and the residual
projections at 0.02 / sqrt(2 n_layer)) over the byte vocabulary (256) of
bench/speedrun/prepare.py's corpus. The loop is nanoGPT's train.py with its
config/train_gpt2.py: AdamW (lr 6e-4, betas (0.9, 0.95), weight decay 0.1 on the 2-D
tensors only, fused on CUDA), linear warm-up then cosine decay to min_lr = lr / 10,
gradient norm clipped to 1.0, bf16 autocast, TF32 matmuls, `torch.compile(model)`, and
491,520 tokens per optimizer step (nanoGPT: 12 sequences x 40 micro-steps of 1024 on one
GPU; here 160 x 3: of the micro-batches that divide 480, the largest that leaves over half
of an H200's memory free, `tlc info` predicting 52.8 GiB compiled, 54.7 GiB eager).

One departure, because the run has a budget rather than nanoGPT's 600,000 steps: the
cosine spans the steps that fit in the budget. After the first `calibrate_after` steps
(compilation) the next few are timed and the run's step count is fixed from them and
from the time validation took at step 0 (bench/speedrun/common.py's `Plan`); the warm-up
is `--warmup` steps (nanoGPT's 2,000 of 600,000 would be a step or two here).

The curve (`--curve`): validation loss over the whole validation split at step 0, every
planned/evals steps and at the end, against wall-clock seconds since the process started
(start-up and compilation included). The last record's `val_loss` is the target L.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # the curve's clock starts before torch is imported

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "handwritten"))

import common  # noqa: E402  # pyright: ignore[reportMissingImports]
import gpt2  # noqa: E402  # pyright: ignore[reportMissingImports]
import prepare  # noqa: E402  # pyright: ignore[reportMissingImports]

GPT2_SMALL = {"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024}
TINY = {"n_layer": 2, "n_head": 2, "n_embd": 64, "block_size": 64}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--budget-s", type=float, default=300.0, help="wall-clock budget, seconds")
    p.add_argument("--steps", type=int, default=None, help="a fixed step count (no calibration)")
    p.add_argument("--device", default="auto")
    p.add_argument("--data", type=Path, default=prepare.DATA)
    p.add_argument("--curve", default=None, help="JSONL file for the curve")
    p.add_argument("--micro-batch", type=int, default=160)
    p.add_argument("--grad-accum", type=int, default=3)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--evals", type=int, default=20)
    p.add_argument("--eval-batch", type=int, default=64)
    p.add_argument("--compile", choices=("on", "off", "auto"), default="auto")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--tiny", action="store_true", help="2 x 64 model, T=64: a CPU smoke run")
    return p.parse_args(argv)


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
    data = common.TokenData(args.data, config["block_size"])
    model = gpt2.GPT(vocab_size=256, **config).to(device)
    optimizer = gpt2.configure_optimizer(model, lr=args.lr, weight_decay=0.1)
    compiled = args.compile == "on" or (args.compile == "auto" and device.type == "cuda")
    train_model = torch.compile(model) if compiled else model
    autocast = (
        torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        if device.type == "cuda"
        else contextlib.nullcontext()
    )
    batches = data.train_batches(args.micro_batch, device, seed=args.seed)
    min_lr = args.lr / 10

    def step(i: int, total: int) -> tuple[torch.Tensor, float]:
        lr = common.cosine_lr(i, total, args.lr, min_lr, args.warmup)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = torch.zeros(())
        for _ in range(args.grad_accum):
            x, y = next(batches)
            with autocast:
                loss = train_model(x, y) / args.grad_accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach() * args.grad_accum, lr

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
        args.curve, T0, recipe="nanoGPT baseline", model=config, tokens_per_step=tokens,
        micro_batch=args.micro_batch, grad_accum=args.grad_accum, lr=args.lr,
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
