"""GPT-2 124M training steps: TensorLoom's emitted model against nanoGPT's, in one loop.

    python bench/gpt2_step.py --prepare                 # here: compile examples/gpt.nml
    python bench/gpt2_step.py --out $OUT/gpt2.jsonl     # on the GPU machine

The emitted `GPT` class (examples/gpt.nml, compiled by `--prepare` into
bench/generated/gpt_model.py, as the GPU machine has no xDSL) and the hand-written
one (bench/handwritten/gpt2.py) start from the same weights (the hand-written
model's nanoGPT initialisation, loaded into the emitted one: their state-dict keys
are the same) and train on the same token stream: synthetic, uniform random ids
drawn from a seeded generator (no corpus travels to the GPU machine), B=16,
T=1024, the settings a careful nanoGPT run uses (fused AdamW with decay groups,
lr 6e-4, betas 0.9/0.95, grad clip 1.0, TF32, bf16 autocast). Each setting runs in
its own process: `eager` and `compile` (torch.compile, default mode).

Per run: the median ms/step after the warm-up, tokens/s, peak memory, MFU by
nanoGPT's estimate (6N + 12 L H Q T flops per token) against the datasheet's
989 TFLOP/s and against a dense bf16 matmul measured in the same process, and the
losses of every step (equal between the two models within bf16 noise, the same
data and weights). This measures the model TensorLoom emits, not its whole
training script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
GENERATED = BENCH / "generated"
DATASHEET_BF16 = 989e12


def prepare() -> None:
    GENERATED.mkdir(exist_ok=True)
    out = GENERATED / "gpt_model.py"
    subprocess.run(
        [
            "tlc",
            "compile",
            str(BENCH.parent / "examples" / "gpt.nml"),
            "-o",
            str(out),
            "--single-file",
        ],
        check=True,
    )
    print(f"wrote {out}")


def matmul_peak() -> float:
    """A dense bf16 matmul's flop/s on this GPU (8192^3, the median of 20)."""
    import torch as t

    a = t.randn(8192, 8192, device="cuda", dtype=t.bfloat16)
    b = t.randn(8192, 8192, device="cuda", dtype=t.bfloat16)
    for _ in range(5):
        a @ b
    times = []
    for _ in range(20):
        t.cuda.synchronize()
        start = time.perf_counter()
        a @ b
        t.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return 2 * 8192**3 / statistics.median(times)


def run_one(model_kind: str, compiled: bool, steps: int, warmup: int, batch: int) -> dict:
    import importlib.util

    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(BENCH / "handwritten"))
    import gpt2  # the hand-written reference

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(1337)
    reference = gpt2.GPT().cuda()
    if model_kind == "emitted":
        spec = importlib.util.spec_from_file_location("gpt_model", GENERATED / "gpt_model.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model = module.GPT().cuda()
        model.load_state_dict(reference.state_dict(), strict=True)
        del reference
    else:
        model = reference
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = gpt2.configure_optimizer(model)
    step_fn = model
    if compiled:
        step_fn = torch.compile(model)
    generator = torch.Generator(device="cuda").manual_seed(0)
    T, L, H, Q = 1024, 12, 12, 64
    losses, times = [], []
    torch.cuda.reset_peak_memory_stats()
    for step in range(warmup + steps):
        data = torch.randint(0, 50257, (batch, T + 1), device="cuda", generator=generator)
        x, y = data[:, :-1], data[:, 1:]
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = step_fn(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        losses.append(loss.item())
        if step >= warmup:
            times.append(elapsed)
    ms = 1000 * statistics.median(times)
    tokens_per_s = batch * T / (ms / 1000)
    flops_per_token = 6 * n_params + 12 * L * H * Q * T
    achieved = flops_per_token * tokens_per_s
    peak = matmul_peak()
    return {
        "model": model_kind,
        "setting": "bf16+compile(default)" if compiled else "bf16 eager",
        "params": n_params,
        "batch": batch,
        "T": T,
        "ms_per_step": round(ms, 2),
        "tokens_per_s": round(tokens_per_s),
        "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "mfu_datasheet": round(achieved / DATASHEET_BF16, 4),
        "mfu_measured_matmul": round(achieved / peak, 4),
        "matmul_tflops": round(peak / 1e12, 1),
        "losses": [round(v, 4) for v in losses],
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", action="store_true", help="compile the emitted model here")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "SETTING"), help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("gpt2.jsonl"))
    args = parser.parse_args()
    if args.prepare:
        prepare()
        return 0
    if args.one:
        kind, setting = args.one
        result = run_one(kind, setting == "compile", args.steps, args.warmup, args.batch)
        print(json.dumps(result))
        return 0
    with args.out.open("a") as out:
        for setting in ("eager", "compile"):
            for kind in ("handwritten", "emitted"):
                command = [sys.executable, __file__, "--one", kind, setting]
                command += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
                command += ["--batch", str(args.batch)]
                done = subprocess.run(command, capture_output=True, text=True)
                line = (
                    done.stdout.strip().splitlines()[-1]
                    if done.returncode == 0
                    else json.dumps(
                        {"model": kind, "setting": setting, "error": done.stderr[-2000:]}
                    )
                )
                out.write(line + "\n")
                out.flush()
                shown = json.loads(line)
                shown.pop("losses", None)
                print(json.dumps(shown), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
