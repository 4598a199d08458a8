"""Predicted peak training memory (`tlc info`) against `torch.cuda.max_memory_allocated()`.

Two steps, on two machines:

    # here (needs TensorLoom): predictions and emitted code for every example, two batch sizes
    python bench/memory_check.py prepare -o bench/memory_predictions.json
    # on the GPU machine (needs only torch): train a few steps per entry, print a markdown table
    python bench/memory_check.py run bench/memory_predictions.json

`run` builds each model from the emitted code with the instance's overrides,
trains 3 steps as `tlc info` assumes (the train block's precision, optimizer
and loss: autocast and a GradScaler for fp16, `zero_grad(set_to_none=True)`),
and compares the predicted allocator peak with the measured one. The target
is an error within 15%.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PATTERNS = ("examples/*.tl", "bench/programs/*.tl", "tests/e2e/info_programs/*.tl",
            "tests/e2e/info_programs/*.nml")  # fmt: skip
STEPS = 3
TOLERANCE = 0.15


# --- prepare (TensorLoom) ------------------------------------------------------------------


def prepare(out: Path) -> None:
    entries: list[dict[str, Any]] = []
    for pattern in PATTERNS:
        for path in sorted(ROOT.glob(pattern)):
            entries += _program_entries(path)
    out.write_text(json.dumps({"entries": entries}, indent=1))
    print(f"{len(entries)} entries written to {out}")


def _program_entries(path: Path) -> list[dict[str, Any]]:
    from tensorloom.analysis.report import InfoRequest, info_json

    code, instances = _emitted(path)
    if code is None:
        return []
    first = info_json(path, InfoRequest())
    entries: list[dict[str, Any]] = []
    for model in first["models"]:
        base = model["settings"]["batch_size"] or 8
        runs = [(base, None), (4 * base, None)]
        runs += [(base, "bf16")] if model["settings"]["loss"] else []  # AMP too, when trained
        for batch, precision in runs:
            info = info_json(path, InfoRequest(batch_size=batch, precision=precision))
            entry = next(m for m in info["models"] if m["name"] == model["name"])
            if entry["memory"] is None:
                continue
            cls, overrides = instances.get(entry["name"], (entry["model"], {}))
            entries.append(_entry(path, entry, cls, overrides, code))
    return entries


def _entry(
    path: Path, e: dict[str, Any], cls: str, overrides: dict[str, Any], code: str
) -> dict[str, Any]:
    return {
        "program": str(path.relative_to(ROOT)), "name": e["name"], "class": cls,
        "overrides": overrides, "batch": e["settings"]["batch_size"],
        "precision": e["settings"]["precision"], "optimizer": e["settings"]["optimizer"],
        "loss": e["settings"]["loss"], "input_shapes": e["input_shapes"],
        "input_dtype": e["input_dtype"], "output_shape": e["output_shape"],
        "memory": e["memory"], "code": code,
    }  # fmt: skip


def _emitted(path: Path) -> tuple[str | None, dict[str, tuple[str, dict[str, Any]]]]:
    from tensorloom.backends.python_printer import print_python
    from tensorloom.dialects.nml import InstanceOp
    from tensorloom.passes.model_env import evaluate_kwargs
    from tensorloom.pipeline import compile_file

    result = compile_file(path, until="torch")
    if not result.ok or result.module is None:
        return None, {}
    try:
        code = print_python(result.module)
    except NotImplementedError:
        return None, {}
    instances: dict[str, tuple[str, dict[str, Any]]] = {}
    for op in result.module.walk():
        if isinstance(op, InstanceOp):
            overrides = evaluate_kwargs(op.overrides.data, {})
            instances[op.sym_name.data] = (op.model.root_reference.data, dict(overrides))  # type: ignore[arg-type]
    return code, instances


# --- run (torch on the GPU) -------------------------------------------------------------------


def run(predictions: Path) -> int:
    import torch

    entries = json.loads(predictions.read_text())["entries"]
    rows: list[dict[str, Any]] = []
    for entry in entries:
        measured = _measure(entry, torch)
        predicted = entry["memory"]["peak"]
        rows.append({**entry, "measured": measured, "error": (predicted - measured) / measured})
        del entry["code"]
    _print_table(rows)
    bad = [r for r in rows if abs(r["error"]) > TOLERANCE]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} within {TOLERANCE:.0%}")
    return 0 if not bad else 1


def _measure(entry: dict[str, Any], torch: Any) -> int:
    module = ModuleType("emitted")
    exec(compile(entry["code"], entry["program"], "exec"), module.__dict__)
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = getattr(module, entry["class"])(**entry["overrides"]).cuda().train()
    optimizer = _optimizer(entry["optimizer"], model, torch)
    x, y = _batch(entry, torch)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(entry["precision"])
    scaler = torch.amp.GradScaler("cuda", enabled=dtype is torch.float16)
    for _ in range(STEPS):
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            out = model(x)
            loss = _loss(entry["loss"], out, y, torch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    peak = int(torch.cuda.max_memory_allocated())
    del model, optimizer, x, y, out, loss, scaler
    return peak


def _optimizer(name: str, model: Any, torch: Any) -> Any:
    params = model.parameters()
    if name == "SGD+momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return getattr(torch.optim, name)(params, lr=1e-3)


def _batch(entry: dict[str, Any], torch: Any) -> tuple[Any, Any]:
    shape = entry["input_shapes"][0]
    if entry["input_dtype"] == "int64":
        x = torch.randint(0, 2, shape, device="cuda")
    else:
        x = torch.randn(shape, device="cuda")
    out = entry["output_shape"]
    y = torch.randint(0, out[-1], out[:-1], device="cuda") if entry["loss"] else None
    return x, y


def _loss(name: str | None, out: Any, y: Any, torch: Any) -> Any:
    if name == "CrossEntropy":
        return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return out.float().mean()


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def _print_table(rows: list[dict[str, Any]]) -> None:
    print("| program | model | batch | precision | optimizer | predicted | measured | error % |")
    print("|---|---|---:|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['program']} | {r['name']} | {r['batch']} | {r['precision']} | "
              f"{r['optimizer']} | {_mib(r['memory']['peak'])} | {_mib(r['measured'])} | "
              f"{100 * r['error']:+.1f} |")  # fmt: skip
    print("\nterms (MiB): weights, optimizer state, activations, weight casts, loss, "
          "backward working set, output; backward-start peak vs optimizer-step peak")  # fmt: skip
    for r in rows:
        m = r["memory"]
        keys = ("weights", "optimizer_state", "activations", "weight_casts", "loss",
                "backward_working", "output", "backward_peak", "step_peak")  # fmt: skip
        print(f"- {r['name']} b{r['batch']}: " + ", ".join(f"{k} {m[k] / 2**20:.1f}" for k in keys))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("-o", "--output", type=Path, default=ROOT / "bench/memory_predictions.json")
    r = sub.add_parser("run")
    r.add_argument("predictions", type=Path)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.output)
        return 0
    return run(args.predictions)


if __name__ == "__main__":
    sys.exit(main())
