"""Predicted peak training memory (`tlc info`) against `torch.cuda.max_memory_allocated()`.

Two steps, on two machines:

    # here (needs TensorLoom): predictions and emitted code for every example, two batch sizes
    python bench/memory_check.py prepare -o bench/memory_predictions.json
    # on the GPU machine (needs only torch): train a few steps per entry, print a markdown table
    python bench/memory_check.py run bench/memory_predictions.json
    # anywhere (torch on the CPU): every entry trains at batch 2, no memory measured
    python bench/memory_check.py run bench/memory_predictions.json --device cpu
    # on the GPU machine: what is alive at the measured peak, by the code that allocated it
    python bench/memory_check.py explain bench/memory_predictions.json --only train_lstm
    # anywhere (torch on the CPU): the CPU allocator's peak over the same steps, against the
    # prediction less the GPU's fixed workspace (no cuBLAS/cuDNN workspaces on the CPU)
    python bench/memory_check.py cpu-peak bench/memory_predictions.json --only finetune_gpt2

`run` builds each model from the emitted code with the instance's overrides,
trains 3 steps as `tlc info` assumes (the train block's precision, optimizer,
loss, `lora` and `freeze`: autocast and a GradScaler for fp16,
`zero_grad(set_to_none=True)`),
and compares the predicted allocator peak with the measured one. The target
is an error within 15%. An entry that fails is a row of the table; the run
goes on and exits 1.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import sys
import tempfile
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PATTERNS = ("examples/*.tl", "examples/*.nml", "bench/programs/*.tl",
            "tests/e2e/info_programs/*.tl", "tests/e2e/info_programs/*.nml")  # fmt: skip
STEPS = 3
TINY = 2  # the batch of a CPU dry run
TOLERANCE = 0.15


# --- prepare (TensorLoom) ------------------------------------------------------------------


def prepare(out: Path, bindings: dict[str, int] | None = None) -> None:
    """`bindings` (`--bind T=128`) size the dims a program leaves free, as `tlc info -D` does:
    a model whose input is [B, T, ...] gets a budget only once T is known."""
    programs: dict[str, str] = {}
    entries: list[dict[str, Any]] = []
    for pattern in PATTERNS:
        for path in sorted(ROOT.glob(pattern)):
            code, found = _program_entries(path, bindings or {})
            if code is not None and found:
                programs[str(path.relative_to(ROOT))] = code
                entries += found
    out.write_text(json.dumps({"programs": programs, "entries": entries}, indent=1) + "\n")
    print(f"{len(entries)} entries from {len(programs)} programs written to {out}")


def _program_entries(
    path: Path, bindings: dict[str, int]
) -> tuple[str | None, list[dict[str, Any]]]:
    from tensorloom.analysis.report import InfoRequest, info_json

    code, instances = _emitted(path)
    if code is None:
        return None, []
    first = info_json(path, InfoRequest(bindings=bindings))
    entries: list[dict[str, Any]] = []
    for model in first["models"]:
        base = model["settings"]["batch_size"] or 8
        runs = [(base, None), (4 * base, None)]  # as the program trains, at two batch sizes
        if model["settings"]["loss"]:  # and at the other precision, when it is trained
            other = "fp32" if model["settings"]["precision"] != "fp32" else "bf16"
            runs += [(base, other), (4 * base, other)]
        for batch, precision in runs:
            request = InfoRequest(batch_size=batch, precision=precision, bindings=bindings)
            info = info_json(path, request)
            entry = next(m for m in info["models"] if m["name"] == model["name"])
            if entry["memory"] is None:
                continue
            cls, overrides = instances.get(entry["name"], (entry["model"], {}))
            entries.append(_entry(path, entry, cls, overrides))
    return code, entries


def _entry(path: Path, e: dict[str, Any], cls: str, overrides: dict[str, Any]) -> dict[str, Any]:
    return {
        "program": str(path.relative_to(ROOT)), "name": e["name"], "class": cls,
        "overrides": overrides, "batch": e["settings"]["batch_size"],
        "precision": e["settings"]["precision"], "optimizer": e["settings"]["optimizer"],
        "loss": e["settings"]["loss"], "input_shapes": e["input_shapes"],
        "frozen": e["settings"].get("trainable") is not None,
        "input_dtype": e["input_dtype"], "output_shape": e["output_shape"],
        "memory": e["memory"],
    }  # fmt: skip


def _emitted(path: Path) -> tuple[str | None, dict[str, tuple[str, dict[str, Any]]]]:
    from tensorloom.backends.python_printer import print_python
    from tensorloom.dialects.nml import InstanceOp
    from tensorloom.passes.support.model_env import evaluate_kwargs
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


# --- run (torch on the GPU; a dry run on the CPU) ---------------------------------------------


def run(predictions: Path, device: str = "cuda", only: str | None = None) -> int:
    """Measure every entry on the GPU, or (`device="cpu"`) train each at batch
    `TINY` and check the output shape: a failing entry is a row, not the end."""
    import torch

    data = json.loads(predictions.read_text())
    entries = [e for e in data["entries"] if only is None or only in e["program"]]
    modules: dict[str, ModuleType] = {}
    rows = [_run_entry(e, data["programs"], modules, device, torch) for e in entries]
    failed = [r for r in rows if r["failure"]]
    if device == "cpu":
        _print_dry_run(rows)
        print(f"\n{len(rows) - len(failed)}/{len(rows)} entries trained on the CPU")
        return 1 if failed else 0
    _print_table(rows)
    bad = [r for r in rows if r["failure"] or abs(r["error"]) > TOLERANCE]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} within {TOLERANCE:.0%}")
    return 1 if bad else 0


def _run_entry(
    entry: dict[str, Any], programs: dict[str, str], modules: dict[str, ModuleType],
    device: str, torch: Any,
) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {**entry, "failure": None, "measured": None, "error": None}
    try:
        if entry["program"] not in modules:
            modules[entry["program"]] = _load(entry["program"], programs[entry["program"]])
        module = modules[entry["program"]]
        if device == "cpu":
            row["measured_output"] = _dry_run(entry, module, torch)
            return row
        measured = _measure(entry, module, torch)
    except Exception as error:  # one broken entry must not end the run
        traceback.print_exc(limit=-4, file=sys.stderr)
        row["failure"] = f"{type(error).__name__}: {error}".splitlines()[0][:200]
        return row
    predicted = entry["memory"]["peak"]
    row.update(measured=measured, error=_error(predicted, measured))
    return row


def _load(program: str, code: str) -> ModuleType:
    """The emitted module, registered in sys.modules (its dataclasses look it up)."""
    name = "emitted_" + re.sub(r"\W", "_", program)
    module = ModuleType(name)
    sys.modules[name] = module
    exec(compile(code, f"<emitted {program}>", "exec"), module.__dict__)
    return module


def _measure(entry: dict[str, Any], module: ModuleType, torch: Any) -> int:
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = _adapted(entry, module, getattr(module, entry["class"])(**entry["overrides"]).cuda())
    optimizer = _optimizer(entry["optimizer"], model, torch)
    x, y = _batch(entry, entry["input_shapes"][0], entry["output_shape"], "cuda", torch)
    _train(entry, model, optimizer, x, y, "cuda", torch)
    torch.cuda.synchronize()
    peak = int(torch.cuda.max_memory_allocated())
    del model, optimizer, x, y
    return peak


def _dry_run(entry: dict[str, Any], module: ModuleType, torch: Any) -> list[int]:
    """Train `STEPS` steps at batch `TINY` on the CPU; the output shape, checked."""
    torch.manual_seed(0)
    model = _adapted(entry, module, getattr(module, entry["class"])(**entry["overrides"]))
    optimizer = _optimizer(entry["optimizer"], model, torch)
    shape, expected = _tiny(entry["input_shapes"][0], entry), _tiny(entry["output_shape"], entry)
    x, y = _batch(entry, shape, expected, "cpu", torch)
    out = _train(entry, model, optimizer, x, y, "cpu", torch)
    if list(out.shape) != expected:
        raise ValueError(f"output {list(out.shape)}, predicted {expected}")
    return list(out.shape)


def _adapted(entry: dict[str, Any], module: ModuleType, model: Any) -> Any:
    """The model as the emitted script trains it: under the train block's `lora` (adapters,
    the rest frozen) or `freeze`, its `build_trainer`'s `add_lora`/`freeze_layers`."""
    if entry.get("frozen") and hasattr(module, "LORA"):
        module.add_lora(model, **module.LORA)
    elif entry.get("frozen") and hasattr(module, "FREEZE"):
        module.freeze_layers(model, module.FREEZE)
    return model.train()


def _tiny(shape: list[int], entry: dict[str, Any]) -> list[int]:
    """The shape at batch `TINY`: the batch dim is the first, the size of the batch."""
    return [TINY, *shape[1:]] if shape and shape[0] == entry["batch"] else list(shape)


def _train(
    entry: dict[str, Any], model: Any, optimizer: Any, x: Any, y: Any, device: str, torch: Any
) -> Any:
    """`STEPS` steps as `tlc info` assumes: autocast, a GradScaler for fp16, grads set to None."""
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(entry["precision"])
    scaler = torch.amp.GradScaler(device, enabled=dtype is torch.float16)
    out = None
    for _ in range(STEPS):
        with torch.autocast(device, dtype=dtype or torch.float32, enabled=dtype is not None):
            out = model(x)
            loss = _loss(entry["loss"], out, y, torch)
        if not torch.isfinite(loss):
            raise ValueError(f"the loss is {loss.item()}")
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
    return out


def _optimizer(name: str, model: Any, torch: Any) -> Any:
    params = [p for p in model.parameters() if p.requires_grad]
    if name == "SGD+momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return getattr(torch.optim, name)(params, lr=1e-3)


def _batch(
    entry: dict[str, Any], shape: list[int], out: list[int], device: str, torch: Any
) -> tuple[Any, Any]:
    if entry["input_dtype"] == "int64":
        x = torch.randint(0, 2, shape, device=device)
    else:
        x = torch.randn(shape, device=device)
    y = torch.randint(0, out[-1], out[:-1], device=device) if entry["loss"] else None
    return x, y


def _loss(name: str | None, out: Any, y: Any, torch: Any) -> Any:
    if name == "CrossEntropy":
        return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return out.float().mean()


def cpu_peak(predictions: Path, only: str | None) -> int:
    """Each entry's steps on the CPU (autocast to bf16/fp16 on the CPU), the allocator's
    peak from the profiler's memory events, beside the prediction without the workspace."""
    import torch

    data = json.loads(predictions.read_text())
    entries = [e for e in data["entries"] if only is None or only in e["program"]]
    print("| program | model | batch | precision | predicted less workspace | CPU peak | error % |")
    print("|---|---|---:|---|---:|---:|---:|")
    for entry in entries:
        module = _load(entry["program"], data["programs"][entry["program"]])
        measured = _cpu_peak(entry, module, torch)
        predicted = entry["memory"]["peak"] - entry["memory"]["workspace"]
        print(f"| {entry['program']} | {entry['name']} | {entry['batch']} | "
              f"{entry['precision']} | {_mib(predicted)} | {_mib(measured)} | "
              f"{100 * _error(predicted, measured):+.1f} |")  # fmt: skip
    return 0


def _cpu_peak(entry: dict[str, Any], module: ModuleType, torch: Any) -> int:
    """The most bytes the CPU allocator held at once over `STEPS` training steps."""
    torch.manual_seed(0)
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities, profile_memory=True) as profile:
        model = _adapted(entry, module, getattr(module, entry["class"])(**entry["overrides"]))
        optimizer = _optimizer(entry["optimizer"], model, torch)
        x, y = _batch(entry, entry["input_shapes"][0], entry["output_shape"], "cpu", torch)
        _train(entry, model, optimizer, x, y, "cpu", torch)
        del model, optimizer, x, y
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.json"
        profile.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    return max(e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]")


def explain(predictions: Path, only: str | None, top: int = 12) -> int:
    """For each entry: the blocks alive at the measured peak, largest first, each with
    the innermost frames that allocated it (PyTorch's memory history, C++ frames too)."""
    import torch

    data = json.loads(predictions.read_text())
    entries = [e for e in data["entries"] if only is None or only in e["program"]]
    for entry in entries:
        module = _load(entry["program"], data["programs"][entry["program"]])
        torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="all")
        measured = _measure(entry, module, torch)
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        peak, live = _live_at_peak(snapshot["device_traces"][torch.cuda.current_device()])
        print(f"\n## {entry['program']} {entry['name']} batch {entry['batch']} "
              f"{entry['precision']}: measured {_mib(measured)}, replayed peak {_mib(peak)}, "
              f"predicted {_mib(entry['memory']['peak'])}")  # fmt: skip
        for size, frames in sorted(live, key=lambda b: -b[0])[:top]:
            print(f"- {_mib(size)}: {' <- '.join(frames)}")
    return 0


def _live_at_peak(events: list[dict[str, Any]]) -> tuple[int, list[tuple[int, list[str]]]]:
    """Replay alloc/free events; the blocks alive when the allocated total was highest."""
    live: dict[int, tuple[int, list[str]]] = {}
    total = peak = 0
    at_peak: list[tuple[int, list[str]]] = []
    for event in events:
        if event["action"] == "alloc":
            live[event["addr"]] = (event["size"], _telling_frames(event.get("frames", [])))
            total += event["size"]
            if total > peak:
                peak, at_peak = total, list(live.values())
        elif event["action"] == "free_requested" and event["addr"] in live:
            total -= live.pop(event["addr"])[0]
    return peak, at_peak


def _telling_frames(frames: list[dict[str, Any]], keep: int = 4) -> list[str]:
    """The innermost ATen/cuDNN/cuBLAS functions and Python lines, allocator internals dropped."""
    telling = []
    for f in frames:
        name, file = f.get("name", ""), f.get("filename", "")
        if any(k in name for k in ("c10::", "CUDACachingAllocator", "torch::unwind")):
            continue
        if "at::native" in name or "cudnn" in name.lower() or "cublas" in name.lower():
            telling.append(name.split("(")[0][-90:])
        elif file.endswith(".py"):
            telling.append(f"{Path(file).name}:{f.get('line')}:{name}")
        if len(telling) == keep:
            break
    return telling or ["?"]


def _error(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured if measured > 0 else 0.0


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def _print_table(rows: list[dict[str, Any]]) -> None:
    """Predicted and measured peaks; the last column leaves out the fixed cuBLAS workspace,
    which is most of a small model's peak and would flatter its agreement."""
    print("| program | model | batch | precision | optimizer | predicted | measured | error % "
          "| error % beyond the workspace |")  # fmt: skip
    print("|---|---|---:|---|---|---:|---:|---:|---:|")
    for r in rows:
        measured = f"failed: {r['failure']}" if r["failure"] else _mib(r["measured"])
        error = "" if r["failure"] else f"{100 * r['error']:+.1f}"
        predicted = _mib(r["memory"]["peak"])
        fixed = r["memory"]["workspace"]
        beyond = (
            ""
            if r["failure"]
            else f"{100 * _error(r['memory']['peak'] - fixed, r['measured'] - fixed):+.1f}"
        )
        print(f"| {r['program']} | {r['name']} | {r['batch']} | {r['precision']} | "
              f"{r['optimizer']} | {predicted} | {measured} | {error} | {beyond} |")  # fmt: skip
    print("\nterms (MiB): weights, optimizer state, activations, weight casts, loss, "
          "backward working set, backward's largest later moment, output; "
          "backward peak vs optimizer-step peak")  # fmt: skip
    for r in (r for r in rows if not r["failure"]):
        m = r["memory"]
        keys = ("weights", "optimizer_state", "activations", "weight_casts", "loss",
                "backward_working", "backward_sweep", "output", "backward_peak",
                "step_peak")  # fmt: skip
        print(f"- {r['name']} b{r['batch']}: "
              + ", ".join(f"{k} {m.get(k, 0) / 2**20:.1f}" for k in keys))  # fmt: skip


def _print_dry_run(rows: list[dict[str, Any]]) -> None:
    print(f"| program | model | batch | precision | optimizer | output at batch {TINY} |")
    print("|---|---|---:|---|---|---|")
    for r in rows:
        result = f"failed: {r['failure']}" if r["failure"] else str(r["measured_output"])
        print(f"| {r['program']} | {r['name']} | {r['batch']} | {r['precision']} | "
              f"{r['optimizer']} | {result} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("-o", "--output", type=Path, default=ROOT / "bench/memory_predictions.json")
    p.add_argument(
        "--bind",
        action="append",
        default=[],
        metavar="NAME=SIZE",
        help="size a dim programs leave free (as `tlc info -D`)",
    )
    r = sub.add_parser("run")
    r.add_argument("predictions", type=Path)
    dry = f"cpu: a dry run, {STEPS} steps of each entry at batch {TINY}, no memory measured"
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help=dry)
    r.add_argument("--only", help="the entries of programs whose path contains this")
    e = sub.add_parser("explain", help="what is alive at the measured peak (GPU)")
    e.add_argument("predictions", type=Path)
    e.add_argument("--only", help="the entries of programs whose path contains this")
    c = sub.add_parser("cpu-peak", help="the CPU allocator's peak over the same steps (CPU)")
    c.add_argument("predictions", type=Path)
    c.add_argument("--only", help="the entries of programs whose path contains this")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.output, {k: int(v) for k, v in (b.split("=") for b in args.bind)})
        return 0
    if args.command == "explain":
        return explain(args.predictions, args.only)
    if args.command == "cpu-peak":
        return cpu_peak(args.predictions, args.only)
    return run(args.predictions, args.device, args.only)


if __name__ == "__main__":
    sys.exit(main())
