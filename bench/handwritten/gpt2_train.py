"""GPT-2 124M trained as nanoGPT's train.py trains it: the hand-written side of the GPT-2 rows.

    python bench/handwritten/gpt2_train.py --data-dir DIR --compile default

The model is bench/handwritten/gpt2.py (nanoGPT's model.py: the loss is computed inside
`forward`, so torch.compile sees the model and the loss together). The loop is nanoGPT's:
`train.bin` (uint16 token ids) read through a fresh `numpy.memmap` per batch, pinned and
copied with `non_blocking=True`, the next batch fetched while the GPU runs the step;
bf16 autocast, TF32 on, fused AdamW with weight decay on 2-D tensors only (lr 6e-4,
betas 0.9/0.95, weight decay 0.1), the gradient norm clipped to 1.0, `zero_grad(set_to_none)`.
Only every `--log-interval` steps (nanoGPT's GPT-2 config: 10) is the loss read on the host.

The window starts are those TensorLoom's `WindowLoader` draws for the same seed
(`windows_per_epoch` starts per epoch from a generator seeded with seed + epoch), so this
loop and the emitted script train on the same tokens in the same order, from the same
weights (nanoGPT's initialisation after `torch.manual_seed(seed)`).

Prints one JSON line: ms/step and tokens/s over the steps after `--timed-from` (the first
epoch, which pays for compilation, is not timed), the peak memory of the whole run, and
every step's loss.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpt2  # noqa: E402

MODELS = {"gpt": gpt2.GPT, "padded": gpt2.PaddedGPT, "chunked": gpt2.ChunkedLossGPT}


def window_starts(
    n_tokens: int, block: int, batch: int, windows: int, seed: int, epoch: int
) -> torch.Tensor:
    """The starts TensorLoom's WindowLoader draws for (seed, epoch) on one process."""
    generator = torch.Generator().manual_seed(seed + epoch)
    count = windows // batch * batch
    return torch.randint(0, n_tokens - block, (count,), generator=generator)


def get_batch(
    path: Path, starts: torch.Tensor, block: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """nanoGPT's `get_batch`: a memmap per batch (no growing RSS), pinned, copied async."""
    data = np.memmap(path, dtype=np.uint16, mode="r")
    rows = [torch.from_numpy(data[s : s + block + 1].astype(np.int64)) for s in starts.tolist()]
    stacked = torch.stack(rows)
    x, y = stacked[:, :-1], stacked[:, 1:]
    if device.type == "cuda":
        return (x.pin_memory().to(device, non_blocking=True),
                y.pin_memory().to(device, non_blocking=True))  # fmt: skip
    return x.to(device), y.to(device)


def write_stdlib_tokens(out_dir: Path, *, val_tokens: int = 64 * 1024 + 1,
                        max_bytes: int = 16_000_000) -> dict[str, int]:  # fmt: skip
    """`train.bin` and `val.bin` of the Python standard library's source, one uint16 id per
    byte (ids below 256 of GPT-2's 50,257): real text, the same files for both sides."""
    sys.path.insert(0, str(HERE.parents[1]))
    from tensorloom.backends.runtime.tokens import stdlib_corpus

    ids = np.frombuffer(stdlib_corpus(max_bytes), dtype=np.uint8).astype(np.uint16)
    out_dir.mkdir(parents=True, exist_ok=True)
    ids[:-val_tokens].tofile(out_dir / "train.bin")
    ids[-val_tokens:].tofile(out_dir / "val.bin")
    return {"train_tokens": len(ids) - val_tokens, "val_tokens": val_tokens}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--data-dir", type=Path, required=True, help="holds train.bin")
    p.add_argument("--compile", default="default",
                   choices=("none", "default", "reduce-overhead", "max-autotune-no-cudagraphs"))
    p.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    p.add_argument("--model", choices=tuple(MODELS), default="gpt")
    p.add_argument("--device", default="cuda")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=1024)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--windows-per-epoch", type=int, default=400)
    p.add_argument("--timed-from", type=int, default=25, help="untimed steps (compilation)")
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compile-optimizer", action="store_true", help="torch.compile opt.step")
    p.add_argument("--tiny", action="store_true", help="a 2-layer d=32 model (tests)")
    p.add_argument("--vocab", type=int, default=50257)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(args.seed)
    size = {"n_layer": 2, "n_head": 2, "n_embd": 32} if args.tiny else {}
    model = MODELS[args.model](vocab_size=args.vocab, block_size=args.block_size, **size)
    model = model.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = gpt2.configure_optimizer(model)
    step_model = model if args.compile == "none" else torch.compile(model, mode=args.compile)
    opt_step = optimizer.step
    if args.compile_optimizer:
        opt_step = torch.compile(optimizer.step, fullgraph=False)
    use_bf16 = args.precision == "bf16"
    train_bin = args.data_dir / "train.bin"
    n_tokens = len(np.memmap(train_bin, dtype=np.uint16, mode="r"))
    B, T = args.batch_size, args.block_size
    per_epoch = args.windows_per_epoch // B

    def batch_at(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        epoch, i = divmod(step, per_epoch)
        starts = window_starts(n_tokens, T, B, args.windows_per_epoch, args.seed, epoch)
        return get_batch(train_bin, starts[i * B : (i + 1) * B], T, device)

    losses: list[torch.Tensor] = []
    logged: list[float] = []
    x, y = batch_at(0)
    start = time.perf_counter()
    compile_s = None
    for step in range(args.steps):
        if step == args.timed_from:
            if device.type == "cuda":
                torch.cuda.synchronize()
            compile_s = time.perf_counter() - start
            start = time.perf_counter()
        if args.compile == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            loss = step_model(x, y)
        x, y = batch_at(step + 1)  # nanoGPT: fetch the next batch while the GPU works
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt_step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach().clone())
        if step % args.log_interval == 0:
            logged.append(loss.item())  # nanoGPT's log line: a host sync
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    timed = args.steps - args.timed_from
    ms = 1000 * elapsed / timed
    result = {
        "name": "handwritten_gpt2", "model": args.model, "compile": args.compile,
        "precision": args.precision, "compile_optimizer": args.compile_optimizer,
        "params": n_params, "batch_size": B, "block_size": T, "steps": args.steps,
        "timed_steps": timed, "ms_per_step": ms, "tokens_per_s": B * T / (ms / 1000),
        "untimed_s": compile_s,
        "peak_mem_bytes": torch.cuda.max_memory_allocated() if device.type == "cuda" else None,
        "losses": [round(v, 5) for v in torch.stack(losses).float().tolist()],
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "data": str(args.data_dir),
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
