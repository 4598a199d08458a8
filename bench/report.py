"""Turn the GPU suite's JSON lines into the markdown tables of bench/RESULTS.md.

    python bench/report.py bench.jsonl

Tables: the transformer LM at each setting, hand-written against TensorLoom's
emitted script and Lightning (ratios to hand-written); every LM run's speedup
over hand-written fp32 eager; the MLP's epoch time against the DataLoader loop;
GPT-2 124M's ms/step, tokens/s, peak memory and MFU (hand-written nanoGPT against
the emitted script, with the candidates measured on the hand-written model); then
the runs that failed or were skipped. Only figures present in the input are
printed: a missing run is a dash, never an estimate.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

Record = dict[str, Any]
IMPLS = ("handwritten", "tensorloom", "lightning")
IMPL_NAMES = {"handwritten": "hand-written", "tensorloom": "TensorLoom", "lightning": "Lightning"}
DASH = "-"


def read_jsonl(paths: Iterable[Path]) -> list[Record]:
    records: list[Record] = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        records += [json.loads(line) for line in lines if line.strip()]
    return records


def ok(record: Record) -> bool:
    return record.get("kind") != "env" and "error" not in record and "skipped" not in record


def find(records: list[Record], bench: str, impl: str, setting: str) -> Record | None:
    """The last successful run of (bench, impl, setting): reruns replace earlier lines."""
    found = None
    for r in records:
        if ok(r) and (r.get("bench"), r.get("impl"), r.get("setting")) == (bench, impl, setting):
            found = r
    return found


def settings_of(records: list[Record], bench: str, impl: str | None = None) -> list[str]:
    seen: list[str] = []
    for r in records:
        if r.get("bench") != bench or (impl is not None and r.get("impl") != impl):
            continue
        if r.get("setting") not in seen:
            seen.append(r["setting"])
    return seen


# ---- formatting ----------------------------------------------------------------------


def rate(value: float | None) -> str:
    return DASH if value is None else f"{value:,.0f}"


def ms(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}"


def seconds(value: float | None) -> str:
    return DASH if value is None else f"{value:.3f}"


def gib(value: float | None) -> str:
    return DASH if value is None else f"{value / 2**30:.1f}"


def ratio(num: float | None, den: float | None) -> str:
    if num is None or den is None or den == 0:
        return DASH
    return f"{num / den:.2f}x"


def field(record: Record | None, key: str) -> float | None:
    if record is None:
        return None
    value = record.get(key)
    return float(value) if isinstance(value, int | float) else None


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ---- the tables ------------------------------------------------------------------------


def lm_table(records: list[Record]) -> str:
    header = ["setting", "hand-written tok/s", "TensorLoom tok/s", "TensorLoom / hand-written",
              "Lightning tok/s", "Lightning / hand-written", "ms/step hand / TL",
              "peak GiB hand / TL"]  # fmt: skip
    rows: list[list[str]] = []
    for setting in settings_of(records, "lm", "handwritten"):
        hand = find(records, "lm", "handwritten", setting)
        tl = find(records, "lm", "tensorloom", setting)
        lit = find(records, "lm", "lightning", setting)
        tok = [field(r, "tokens_per_s") for r in (hand, tl, lit)]
        rows.append([
            setting, rate(tok[0]), rate(tok[1]), ratio(tok[1], tok[0]), rate(tok[2]),
            ratio(tok[2], tok[0]),
            f"{ms(field(hand, 'ms_per_step'))} / {ms(field(tl, 'ms_per_step'))}",
            f"{gib(field(hand, 'peak_mem_bytes'))} / {gib(field(tl, 'peak_mem_bytes'))}",
        ])  # fmt: skip
    return table(header, rows)


def repeats_table(records: list[Record]) -> str:
    """The LM settings run more than once (`gpu_suite.py --repeat`): each round's tok/s per
    side, and the ratio of the medians."""
    header = ["setting", "hand-written tok/s, by round", "TensorLoom tok/s, by round",
              "ratio by round", "median TL / median hand"]  # fmt: skip
    rows: list[list[str]] = []
    for setting in settings_of(records, "lm", "handwritten"):
        runs = {
            impl: [
                field(r, "tokens_per_s")
                for r in records
                if ok(r)
                and (r.get("bench"), r.get("impl"), r.get("setting")) == ("lm", impl, setting)
            ]
            for impl in ("handwritten", "tensorloom")
        }
        hand, tl = runs["handwritten"], runs["tensorloom"]
        if max(len(hand), len(tl)) < 2:
            continue
        rounds = [ratio(t, h) for h, t in zip(hand, tl, strict=False)]
        rows.append([setting, ", ".join(map(rate, hand)), ", ".join(map(rate, tl)),
                     ", ".join(rounds), ratio(median(tl), median(hand))])  # fmt: skip
    return table(header, rows) if rows else ""


def median(values: list[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    mid = len(known) // 2
    return known[mid] if len(known) % 2 else (known[mid - 1] + known[mid]) / 2


def speedup_table(records: list[Record]) -> str:
    base = field(find(records, "lm", "handwritten", "fp32 eager"), "tokens_per_s")
    header = ["implementation", "setting", "tok/s", "ms/step", "x hand-written fp32 eager"]
    rows: list[list[str]] = []
    for impl in IMPLS:
        for setting in settings_of(records, "lm", impl):
            r = find(records, "lm", impl, setting)
            tok = field(r, "tokens_per_s")
            rows.append([IMPL_NAMES[impl], setting, rate(tok), ms(field(r, "ms_per_step")),
                         ratio(tok, base)])  # fmt: skip
    return table(header, rows)


def mlp_table(records: list[Record]) -> str:
    base = field(find(records, "mlp", "handwritten", "DataLoader loop, fp32"), "epoch_s")
    header = ["implementation", "setting", "epoch (s)", "x faster than the DataLoader loop"]
    rows: list[list[str]] = []
    for impl in IMPLS:
        for setting in settings_of(records, "mlp", impl):
            epoch = field(find(records, "mlp", impl, setting), "epoch_s")
            speedup = ratio(base, epoch)
            rows.append([IMPL_NAMES[impl], setting, seconds(epoch), speedup])
    return table(header, rows)


# nanoGPT's `estimate_mfu`: 6N + 12 L H Q T flops per token, N without the position table
GPT2_PARAMS_NON_EMBEDDING = 124_439_808 - 1024 * 768
GPT2_FLOPS_PER_TOKEN = 6 * GPT2_PARAMS_NON_EMBEDDING + 12 * 12 * 12 * 64 * 1024
DATASHEET_TFLOPS = 989.0  # H200 dense bf16
GPT2_STEPS_PER_EPOCH = 25


def mfu(tokens_per_s: float | None, tflops: float | None) -> str:
    if tokens_per_s is None or not tflops:
        return DASH
    return f"{100 * GPT2_FLOPS_PER_TOKEN * tokens_per_s / (tflops * 1e12):.1f}%"


def epoch_means(record: Record | None) -> list[float] | None:
    """A run's loss per 25-step epoch: the emitted script's records, or the hand-written
    loop's per-step losses averaged the same way."""
    if record is None:
        return None
    if isinstance(record.get("train_losses"), list):
        return [float(v) for v in record["train_losses"]]
    losses = record.get("losses")
    if not isinstance(losses, list) or not losses:
        return None
    n = GPT2_STEPS_PER_EPOCH
    return [sum(losses[i : i + n]) / len(losses[i : i + n]) for i in range(0, len(losses), n)]


def loss_gap(a: Record | None, b: Record | None) -> str:
    ea, eb = epoch_means(a), epoch_means(b)
    if not ea or not eb or len(ea) != len(eb):
        return DASH
    return f"{max(abs(x - y) for x, y in zip(ea, eb, strict=True)):.4f}"


def gpt2_table(records: list[Record]) -> str:
    env = next((r for r in records if r.get("kind") == "env"), {})
    measured = field(env, "matmul_tflops")
    header = ["setting", "implementation", "ms/step", "tok/s", "peak GiB", "MFU (989)",
              f"MFU (measured {measured or 0:.0f})", "TL / hand-written",
              "loss per epoch, max gap"]  # fmt: skip
    base = find(records, "gpt2", "handwritten", "bf16+compile(default)")
    rows: list[list[str]] = []
    for setting in settings_of(records, "gpt2"):
        hand = find(records, "gpt2", "handwritten", setting)
        reference = hand if hand is not None else base
        for impl in ("handwritten", "tensorloom"):
            r = find(records, "gpt2", impl, setting)
            if r is None:
                continue
            tok = field(r, "tokens_per_s")
            versus = ratio(tok, field(reference, "tokens_per_s")) if impl == "tensorloom" else ""
            gap = loss_gap(r, reference) if impl == "tensorloom" else ""
            rows.append([setting, IMPL_NAMES[impl], ms(field(r, "ms_per_step")), rate(tok),
                         gib(field(r, "peak_mem_bytes")), mfu(tok, DATASHEET_TFLOPS),
                         mfu(tok, measured), versus, gap])  # fmt: skip
    return table(header, rows)


def problems(records: list[Record]) -> list[str]:
    lines: list[str] = []
    for r in records:
        if r.get("kind") == "env" or ok(r):
            continue
        why = r.get("skipped") or str(r.get("error", "")).strip().splitlines()[-1:] or ["?"]
        reason = why if isinstance(why, str) else why[0]
        kind = "skipped" if "skipped" in r else "failed"
        lines.append(f"- {r.get('bench')} / {r.get('impl')} / {r.get('setting')}: {kind}: {reason}")
    return lines


def environment(records: list[Record]) -> str:
    env = next((r for r in records if r.get("kind") == "env"), None)
    if env is None:
        return ""
    keys = ("date", "device", "torch", "cuda", "triton", "lightning", "python", "compiler",
            "matmul_tflops")  # fmt: skip
    return "; ".join(f"{k} {env[k]}" for k in keys if env.get(k) is not None)


def render(records: list[Record]) -> str:
    parts = [f"Environment: {environment(records)}"] if environment(records) else []
    parts += [
        "### Transformer LM (6 blocks, d=512, 8 heads, T=256, B=32): tokens/s",
        lm_table(records),
        *(
            ["### LM settings run more than once (`--repeat`)", repeats_table(records)]
            if repeats_table(records)
            else []
        ),
        "### Every LM run against hand-written fp32 eager",
        speedup_table(records),
        "### MNIST-sized MLP (784-256-64-10, 60,000 samples, batch 128): epoch time",
        mlp_table(records),
    ]
    if any(r.get("bench") == "gpt2" for r in records):
        parts += [
            "### GPT-2 124M (B=16, T=1024): the hand-written loop against the emitted script "
            "(TensorLoom defaults against hand-written compile(default))",
            gpt2_table(records),
        ]
    issues = problems(records)
    if issues:
        parts += ["### Runs that failed or were skipped", "\n".join(issues)]
    return "\n\n".join(parts) + "\n"


def one_line(record: Record) -> str:
    """A progress line for the suite's log."""
    name = f"{record.get('bench')} / {record.get('impl')} / {record.get('setting')}"
    if "skipped" in record:
        return f"{name}: skipped ({record['skipped']})"
    if "error" in record:
        return f"{name}: FAILED: {str(record['error']).strip()[-300:]}"
    if "tokens_per_s" in record:
        line = f"{name}: {rate(field(record, 'tokens_per_s'))} tok/s"
        if isinstance(record.get("ms_per_step"), (int, float)):
            line += f", {record['ms_per_step']:.2f} ms/step"
        if isinstance(record.get("peak_mem_bytes"), (int, float)):
            line += f", peak {record['peak_mem_bytes'] / 2**30:.2f} GiB"
        return line
    return f"{name}: {seconds(field(record, 'epoch_s'))} s/epoch"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("jsonl", type=Path, nargs="+")
    args = parser.parse_args(argv)
    sys.stdout.write(render(read_jsonl(args.jsonl)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
