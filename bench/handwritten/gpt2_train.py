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
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpt2  # noqa: E402

GRAPH_WARMUP = 3  # eager steps before the whole step is captured (on a side stream)


class WholeStepGraph:
    """The whole training step captured once in a CUDA graph and replayed: the batch is
    copied into static tensors, the loss comes back in a static one. The capture does not
    run the step, so `replay` after it trains on the batch given."""

    def __init__(self, step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                 x: torch.Tensor, y: torch.Tensor) -> None:  # fmt: skip
        self.x, self.y = x.clone(), y.clone()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.loss = step(self.x, self.y)

    def replay(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.x.copy_(x, non_blocking=True)
        self.y.copy_(y, non_blocking=True)
        self.graph.replay()
        return self.loss


def select_sdpa(choice: str) -> None:
    """Leave one scaled-dot-product-attention backend enabled ("auto": PyTorch's choice)."""
    if choice == "auto":
        return
    torch.backends.cuda.enable_flash_sdp(choice == "flash")
    torch.backends.cuda.enable_cudnn_sdp(choice == "cudnn")
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_math_sdp(False)


MODELS = {"gpt": gpt2.GPT, "padded": gpt2.PaddedGPT, "chunked": gpt2.ChunkedLossGPT,
          "linear-head": gpt2.LinearHeadGPT, "cce": gpt2.CutCrossEntropyGPT}  # fmt: skip


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
    p.add_argument(
        "--compile",
        default="default",
        choices=("none", "default", "reduce-overhead", "max-autotune-no-cudagraphs"),
    )
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
    p.add_argument(
        "--compile-optimizer",
        action="store_true",
        help="the clip and the AdamW step (foreach) in one torch.compile'd function",
    )
    p.add_argument(
        "--fp8",
        choices=("none", "tensorwise", "rowwise"),
        default="none",
        help="torchao float8 training for the nn.Linear layers (needs torchao)",
    )
    p.add_argument(
        "--fp8-modules",
        choices=tuple(FP8_MODULES),
        default="all",
        help="which linears --fp8 converts (only those whose sizes divide by 16)",
    )
    p.add_argument(
        "--sdpa",
        choices=("auto", "cudnn", "flash"),
        default="auto",
        help="the only scaled-dot-product-attention backend left enabled",
    )
    p.add_argument(
        "--whole-step-graph",
        action="store_true",
        help="forward, backward, clip and AdamW (capturable) in one CUDA graph",
    )
    p.add_argument(
        "--profile-steps",
        type=int,
        default=0,
        help="after the timed steps, this many more under torch.profiler: the GPU "
        "kernels' time per step by category (matmul, attention, ...)",
    )
    p.add_argument("--tiny", action="store_true", help="a 2-layer d=32 model (tests)")
    p.add_argument("--vocab", type=int, default=50257)
    return p.parse_args(argv)


# --fp8-modules: which linears (by their name in the model) torchao converts to FP8
FP8_MODULES: dict[str, Callable[[str], bool]] = {
    "all": lambda fqn: True,  # the blocks' four, and the head of --model linear-head
    "blocks": lambda fqn: fqn.startswith("h."),
    "mlp": lambda fqn: ".mlp." in fqn,
    "head": lambda fqn: fqn == "lm_head",
}


def fp8_filter(modules: str) -> Callable[[torch.nn.Module, str], bool]:
    """torchao's `module_filter_fn`: the linears `modules` names whose sizes divide by 16
    (FP8 matmuls need that; GPT-2's 50,257-row head does not, 50,304 does)."""
    chosen = FP8_MODULES[modules]

    def keep(module: torch.nn.Module, fqn: str) -> bool:
        sizes = (getattr(module, "in_features", 1), getattr(module, "out_features", 1))
        return chosen(fqn) and all(n % 16 == 0 for n in sizes)

    return keep


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def build_model(args: argparse.Namespace, device: torch.device) -> torch.nn.Module:
    """The model on `device`, its linears in FP8 with `--fp8`; `--sdpa` applied."""
    size = {"n_layer": 2, "n_head": 2, "n_embd": 32} if args.tiny else {}
    model = MODELS[args.model](vocab_size=args.vocab, block_size=args.block_size, **size)
    model = model.to(device)
    if args.fp8 != "none":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        config = Float8LinearConfig.from_recipe_name(args.fp8)
        chosen = fp8_filter(args.fp8_modules)
        convert_to_float8_training(model, config=config, module_filter_fn=chosen)
        if not any(type(m).__name__ == "Float8Linear" for m in model.modules()):
            raise SystemExit(
                f"--fp8-modules {args.fp8_modules}: no linear of --model "
                f"{args.model} converted (the head needs --model linear-head)"
            )
    select_sdpa(args.sdpa)
    return model


def build_optimizer_step(
    args: argparse.Namespace, model: torch.nn.Module
) -> tuple[torch.optim.Optimizer, Callable[[], None]]:
    """nanoGPT's AdamW and the step after backward: clip to 1.0, then AdamW's step
    (with `--compile-optimizer` both in one torch.compile'd function, AdamW foreach)."""
    optimizer = gpt2.configure_optimizer(
        model, fused=not args.compile_optimizer, capturable=args.whole_step_graph
    )
    params = list(model.parameters())

    def clip_and_step() -> None:
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()

    if args.compile_optimizer:
        return optimizer, torch.compile(clip_and_step, fullgraph=False)
    return optimizer, clip_and_step


def profile_after(
    done: int, steps: int, run_step: Callable[[int], torch.Tensor]
) -> dict[str, object] | None:
    """With `steps` > 0, the `steps` steps after the `done` timed ones under torch.profiler:
    the GPU kernels' time per step by category (bench/handwritten/step_profile.py)."""
    if steps <= 0:
        return None
    from step_profile import profile_kernels

    def more_steps(n: int) -> None:
        for step in range(done, done + n):
            run_step(step)

    return profile_kernels(more_steps, steps)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(args.seed)
    model = build_model(args, device)
    n_params = sum(p.numel() for p in model.parameters())  # the tied head counted once
    optimizer, opt_step = build_optimizer_step(args, model)
    step_model = model if args.compile == "none" else torch.compile(model, mode=args.compile)
    use_bf16 = args.precision == "bf16"
    train_bin = args.data_dir / "train.bin"
    n_tokens = len(np.memmap(train_bin, dtype=np.uint16, mode="r"))
    B, T = args.batch_size, args.block_size
    per_epoch = args.windows_per_epoch // B

    def batch_at(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        epoch, i = divmod(step, per_epoch)
        starts = window_starts(n_tokens, T, B, args.windows_per_epoch, args.seed, epoch)
        return get_batch(train_bin, starts[i * B : (i + 1) * B], T, device)

    def train_step(x: torch.Tensor, y: torch.Tensor, side_stream: bool) -> torch.Tensor:
        """One step: forward and loss, backward, clip, AdamW (on a side stream before a
        CUDA-graph capture, as the capture needs)."""
        stream = torch.cuda.Stream() if side_stream else None
        if stream is not None:
            stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            if args.compile == "reduce-overhead":
                torch.compiler.cudagraph_mark_step_begin()
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
                loss = step_model(x, y)
            loss.backward()
            opt_step()
            optimizer.zero_grad(set_to_none=True)
        if stream is not None:
            torch.cuda.current_stream().wait_stream(stream)
        return loss

    losses: list[torch.Tensor] = []
    logged: list[float] = []
    batch = [batch_at(0)]
    graphed: list[WholeStepGraph] = []

    def run_step(step: int) -> torch.Tensor:
        x, y = batch[0]
        if args.whole_step_graph and step >= GRAPH_WARMUP:
            if not graphed:
                graphed.append(WholeStepGraph(lambda a, b: train_step(a, b, False), x, y))
            loss = graphed[0].replay(x, y)
        else:
            loss = train_step(x, y, args.whole_step_graph)
        batch[0] = batch_at(step + 1)  # nanoGPT: fetch the next batch while the GPU works
        if step % args.log_interval == 0:
            logged.append(loss.item())  # nanoGPT's log line: a host sync
        return loss

    start = time.perf_counter()
    compile_s = None
    for step in range(args.steps):
        if step == args.timed_from:
            synchronize(device)
            compile_s = time.perf_counter() - start
            start = time.perf_counter()
        losses.append(run_step(step).detach().clone())
    synchronize(device)
    elapsed = time.perf_counter() - start
    # the peak of the run before the profiled steps (the profiler's buffers are not the step's)
    peak = torch.cuda.max_memory_allocated() if device.type == "cuda" else None
    profile = profile_after(args.steps, args.profile_steps, run_step)
    timed = args.steps - args.timed_from
    ms = 1000 * elapsed / timed
    result = {
        "name": "handwritten_gpt2", "model": args.model, "compile": args.compile,
        "precision": args.precision, "compile_optimizer": args.compile_optimizer,
        "fp8": args.fp8, "fp8_modules": args.fp8_modules, "sdpa": args.sdpa,
        "whole_step_graph": args.whole_step_graph,
        "params": n_params, "batch_size": B, "block_size": T, "steps": args.steps,
        "timed_steps": timed, "ms_per_step": ms, "tokens_per_s": B * T / (ms / 1000),
        "untimed_s": compile_s,
        "peak_mem_bytes": peak,
        "profile": profile,
        "losses": [round(v, 5) for v in torch.stack(losses).float().tolist()],
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "data": str(args.data_dir),
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
