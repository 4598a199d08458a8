"""The LM's compiled step, emitted and hand-written, timed in ONE process, interleaved.

    python bench/prepare_gpu.py --out GEN
    python bench/lm_step_ab.py GEN/transformer_lm_bf16_compile_default.py --rounds 4 [--profile]

The GPU suite times each side in its own process, and this host-bound step's speed varies
between processes by more than the gap it reports (bench/RESULTS.md, run 8). Here both run in
one process, in turns: `hand` (bench/handwritten/transformer_lm.py's model, loss compiled with
it, its 8 cycled batches), `emitted_epoch` (the script's own `train_one_epoch`: its
DeviceLoader, 100 steps, as the suite times an epoch), `emitted_fixed` (the script's
`_forward_backward` and `_optimizer_step` on fixed batches: the step without the loader), the
script's `evaluate` (as between epochs), then `hand` again. `--profile` adds a torch.profiler
table of 10 steps per side. On a machine without CUDA it compiles with backend="aot_eager"
(a smoke test: `--hand-config '{"vocab": 128, "d_model": 32, "seq_len": 16}'` with a script
of the same sizes).
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import runpy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent / "handwritten"))
import transformer_lm as H


def main() -> None:  # noqa: C901  (one A/B, read top to bottom)
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("script")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--hand-config", default="{}", help="LMConfig fields as JSON")
    p.add_argument("--profile", action="store_true")
    a = p.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def compiled(fn: Any) -> Any:
        if dev.type == "cuda":
            return torch.compile(fn, mode="default")
        return torch.compile(fn, backend="aot_eager")

    g: dict[str, Any] = runpy.run_path(a.script, run_name="lm_step_ab")["main"].__globals__
    if dev.type == "cpu":  # the script compiles on CUDA only
        g["should_compile"] = lambda *args, **kwargs: True
        g["maybe_compile"] = lambda module, compile_it, mode: compiled(module)
    args = g["parse_args"](["--device", dev.type, "--seed", "0"])
    ctx = g["DistContext"](0, 0, 1, g["resolve_device"](args.device))
    trainer = g["build_trainer"](args, ctx)

    torch.manual_seed(0)
    cfg = H.LMConfig(**json.loads(a.hand_config))
    model = H.TransformerLM(cfg).to(dev)

    def model_loss(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(model(inputs).reshape(-1, cfg.vocab), targets.reshape(-1))

    step_loss = compiled(model_loss)
    optimizer = torch.optim.AdamW(H.param_groups(model), lr=3e-4, fused=dev.type == "cuda")
    pairs = H.synthetic_batches(cfg, args.batch_size, 8, dev)
    hand_batches = H.cycle(pairs)
    fixed = itertools.cycle([(x.contiguous(), y.contiguous()) for x, y in pairs])

    def hand_step() -> None:
        inputs, targets = next(hand_batches)
        with H.autocast(dev, "bf16"):
            loss = step_loss(inputs, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    forward_backward = g["_forward_backward"]
    synced = {"sync": True} if "sync" in inspect.signature(forward_backward).parameters else {}

    def emitted_fixed_step() -> None:
        xb, yb = next(fixed)
        forward_backward(trainer, xb, yb, **synced)  # `sync`: a DDP script's
        g["_optimizer_step"](trainer)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def timed(step: Callable[[], None], n: int) -> float:
        sync()
        start = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        return (time.perf_counter() - start) / n * 1e3

    epoch = itertools.count()

    def emitted_epoch() -> float:
        sync()
        start = time.perf_counter()
        _, batches = g["train_one_epoch"](trainer, next(epoch), None)
        sync()
        return (time.perf_counter() - start) / batches * 1e3

    start = time.perf_counter()
    timed(hand_step, 30)
    print(f"hand: 30 warm-up steps {time.perf_counter() - start:.1f} s", flush=True)
    print(f"emitted: epoch 1 (compiles) {emitted_epoch():.2f} ms/step", flush=True)
    print(f"emitted: evaluate {g['evaluate'](trainer)}", flush=True)
    trainer.train_model.train()
    timed(emitted_fixed_step, 10)
    results: dict[str, list[float]] = {
        k: [] for k in ("hand", "emitted_epoch", "emitted_fixed", "hand_after_eval")
    }
    for r in range(a.rounds):
        results["hand"].append(timed(hand_step, a.steps))
        results["emitted_epoch"].append(emitted_epoch())
        results["emitted_fixed"].append(timed(emitted_fixed_step, a.steps))
        g["evaluate"](trainer)
        trainer.train_model.train()
        results["hand_after_eval"].append(timed(hand_step, a.steps))
        print(r, {k: round(v[-1], 3) for k, v in results.items()}, flush=True)
    for k, v in results.items():
        print(f"{k:16s} min {min(v):.3f}  median {statistics.median(v):.3f} ms/step", flush=True)
    print("dynamo:", dict(torch._dynamo.utils.counters["stats"]), flush=True)
    if a.profile:
        profile({"hand": hand_step, "emitted_fixed": emitted_fixed_step}, dev, sync)


def profile(steps: dict[str, Callable[[], None]], dev: torch.device, sync: Any) -> None:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if dev.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    for name, step in steps.items():
        for _ in range(5):
            step()
        sync()
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(10):
                step()
            sync()
        events = prof.key_averages()
        launches = sum(e.count for e in events if "LaunchKernel" in e.key) / 10
        print(f"PROFILE {name}: {launches} kernel launches a step", flush=True)
        print(events.table(sort_by="self_cpu_time_total", row_limit=20), flush=True)


if __name__ == "__main__":
    main()
