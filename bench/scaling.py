"""Tokens/s per GPU of the GPT example at 1..N GPUs, under DDP and FSDP; peak memory per rank.

Two steps, on two machines:

    # here (needs TensorLoom): the program under `distributed = ddp` and `fsdp`, compiled,
    # and `tlc info`'s per-rank prediction at each world size
    python bench/scaling.py prepare -o .devrun/scale/scaling
    # on the GPU machine (needs only torch): torchrun per (strategy, GPUs); a markdown table
    python bench/scaling.py run .devrun/scale/scaling --gpus 1,2,4,8 --strategies ddp,fsdp
    # a quick look: fewer steps (the epoch's windows are the program's, fixed at prepare)
    python bench/scaling.py prepare -o OUT --windows 1024 --layers 12

The program is examples/gpt.nml at 12 layers of width 768 (85M parameters) on
byte-level text (the Python standard library's source, offline), bf16, AdamW,
16 windows of 256 bytes per rank per step (weak scaling: the per-rank batch is
fixed, so an epoch's steps fall as GPUs are added). The epoch's windows are
split across ranks; the second epoch's samples/s is the figure (the first
includes start-up). Each rank runs the emitted script inside `worker`, which
records `torch.cuda.max_memory_allocated()` when it ends.

NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1), as the GPU machine's notes require; `run` sets them for
every launch. A world size above the machine's GPU count is skipped, and said so.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BLOCK = 256
BATCH = 16
PROGRAM = """\
// bench/scaling.py's program ({strategy}); see the docstring there.
import gpt.nml as GPT

let model = GPT(vocab_size=256, block_size={block}, n_layer={layers}, n_head=12, n_embd=768)
let data = load_dataset("text", path="stdlib", block_size={block}, max_bytes=4000000, \
windows_per_epoch={windows})

train model on data:
    epochs = 2
    batch_size = {batch}
    optimizer = AdamW(lr=0.0003, weight_decay=0.1)
    loss = CrossEntropy
    precision = bf16
    distributed = {strategy}
"""
STRATEGIES = ("ddp", "fsdp")
WORLD_SIZES = (1, 2, 4, 8)
NO_MULTICAST = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


# --- prepare (TensorLoom) --------------------------------------------------------------------


def prepare(out: Path, windows: int, layers: int) -> None:
    from tensorloom.analysis.report import InfoRequest, info_json
    from tensorloom.pipeline import compile_file, python_source

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "examples" / "gpt.nml", out / "gpt.nml")
    predictions: dict[str, Any] = {}
    for strategy in STRATEGIES:
        program = out / f"gpt_{strategy}.tl"
        text = PROGRAM.format(
            strategy=strategy, block=BLOCK, layers=layers, windows=windows, batch=BATCH
        )
        program.write_text(text, encoding="utf-8")
        result = compile_file(program, until="torch")
        if not result.ok or result.module is None:
            raise SystemExit(f"{program} does not compile")
        (out / f"gpt_{strategy}.py").write_text(python_source(result.module, program.name))
        for world in WORLD_SIZES:
            request = InfoRequest(nproc=world, distributed=strategy)
            info = info_json(program, request)
            model = next(m for m in info["models"] if m["name"] == "model")
            predictions[f"{strategy}/{world}"] = {
                "params": model["params"],
                "peak": model["memory"]["peak"],
                "terms": {k: model["memory"][k] for k in ("weights", "gradients",
                          "optimizer_state", "activations", "gathered", "comm_buffers")},
            }  # fmt: skip
    meta = {"block": BLOCK, "batch": BATCH, "layers": layers, "windows": windows}
    (out / "predictions.json").write_text(json.dumps({"meta": meta, **predictions}, indent=1))
    print(f"wrote {out}: gpt_ddp.py, gpt_fsdp.py, predictions.json")


# --- run (the GPU machine) -------------------------------------------------------------------


def run(folder: Path, world_sizes: list[int], strategies: list[str], timeout: int) -> int:
    import torch

    predictions = json.loads((folder / "predictions.json").read_text())
    meta = predictions["meta"]
    gpus = torch.cuda.device_count()
    rows: list[dict[str, Any]] = []
    for strategy in strategies:
        for world in world_sizes:
            if world > gpus:
                print(f"skipped {strategy} at {world} GPUs: this machine has {gpus}")
                continue
            rows.append(_launch(folder, strategy, world, meta, predictions, timeout))
    results = folder / "results.jsonl"
    with results.open("a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps({**row, "torch": torch.__version__,
                                "gpu": torch.cuda.get_device_name(0)}) + "\n")  # fmt: skip
    print(_table(rows))
    return 0 if all(row["ok"] for row in rows) else 1


def _launch(
    folder: Path, strategy: str, world: int, meta: dict[str, Any], predictions: dict[str, Any],
    timeout: int,
) -> dict[str, Any]:  # fmt: skip
    run_dir = folder / f"run-{strategy}-{world}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    metrics = run_dir / "metrics.jsonl"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
               f"--nproc-per-node={world}", str(Path(__file__).resolve()), "worker",
               str(folder / f"gpt_{strategy}.py"), str(run_dir), "--",
               "--metrics", str(metrics), "--no-compile"]  # fmt: skip
    env = {**os.environ, **NO_MULTICAST, "OMP_NUM_THREADS": "4"}
    try:
        status = subprocess.run(command, env=env, timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        status = -1
    records = _records(metrics)
    peaks = [json.loads(p.read_text())["peak"] for p in sorted(run_dir.glob("rank-*.json"))]
    predicted = predictions.get(f"{strategy}/{world}", {}).get("peak")
    row: dict[str, Any] = {"strategy": strategy, "gpus": world, "ok": status == 0 and bool(records),
                           "status": status, "predicted_peak": predicted}  # fmt: skip
    if records:
        last = records[-1]
        row["tokens_per_s_per_gpu"] = last["samples_per_s"] * meta["block"] / world
        row["train_loss"] = last["train_loss"]
        row["epoch"] = last["epoch"]
    if peaks:
        row["peak"] = max(peaks)
        row["error"] = (predicted - row["peak"]) / row["peak"] if predicted else None
    return row


def _records(metrics: Path) -> list[dict[str, Any]]:
    if not metrics.is_file():
        return []
    return [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| strategy | GPUs | tokens/s per GPU | peak per rank (measured) | tlc info "
             "predicted | error | train loss |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        if not row["ok"]:
            lines.append(f"| {row['strategy']} | {row['gpus']} | failed (status "
                         f"{row['status']}) | | | | |")  # fmt: skip
            continue
        peak, predicted, error = row.get("peak"), row.get("predicted_peak"), row.get("error")
        lines.append(
            f"| {row['strategy']} | {row['gpus']} | {row['tokens_per_s_per_gpu']:,.0f} | "
            f"{_mib(peak)} | {_mib(predicted)} | "
            f"{'' if error is None else f'{error:+.1%}'} | {row['train_loss']:.4f} |"
        )
    return "\n".join(lines)


def _mib(value: int | None) -> str:
    return "" if value is None else f"{value / 2**20:,.0f} MiB"


# --- worker (one rank, under torchrun) -------------------------------------------------------


def worker(script: Path, out: Path, args: list[str]) -> int:
    """Run the emitted script as `__main__`; then write this rank's peak allocator memory."""
    import torch

    sys.argv = [str(script), *args]
    status: int | str | None = 0
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        status = exit_.code
    rank = int(os.environ.get("RANK", "0"))
    if torch.cuda.is_available():
        peak = torch.cuda.max_memory_allocated()
        (out / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "peak": peak}))
    return status if isinstance(status, int) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("-o", "--out", type=Path, required=True)
    p.add_argument("--windows", type=int, default=4096, help="windows per epoch, all ranks")
    p.add_argument("--layers", type=int, default=12)
    r = sub.add_parser("run")
    r.add_argument("folder", type=Path)
    r.add_argument("--gpus", default="1,2,4,8")
    r.add_argument("--strategies", default="ddp,fsdp")
    r.add_argument("--timeout", type=int, default=300, help="seconds per launch")
    w = sub.add_parser("worker")
    w.add_argument("script", type=Path)
    w.add_argument("out", type=Path)
    w.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args()
    if ns.command == "prepare":
        prepare(ns.out, ns.windows, ns.layers)
        return 0
    if ns.command == "run":
        sizes = [int(n) for n in ns.gpus.split(",")]
        return run(ns.folder, sizes, ns.strategies.split(","), ns.timeout)
    return worker(ns.script, ns.out, [a for a in ns.args if a != "--"])


if __name__ == "__main__":
    sys.exit(main())
