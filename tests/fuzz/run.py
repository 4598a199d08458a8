"""`make fuzz`: a long fuzz run over generated and mutated programs; prints the figures.

    python tests/fuzz/run.py --count 20000 --seed 1 --jobs 2 --out fuzz-out/

Input i is generated from the grammar (even i) or a mutation of seed i mod N
(odd i), from `random.Random(seed * 1_000_003 + i)`: any input can be
reproduced from the seed and its index (`--only I`). Every accepted program is
checked to `compile()`; every `--forward-every`-th one is also built and run
one forward on the CPU. Each bug's input goes to `--out` as
`<kind>-<index>.tl` with what happened in `<kind>-<index>.txt`. Exit status 1
if any input was a bug.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_generate import generate, make_workdir, mutate, seeds
from fuzz_outcome import BUGS, Outcome, classify

_SEEDS: list[tuple[str, str]] = []
_WORKDIR: Path | None = None
_FORWARD_EVERY = 0


def program(seed: int, index: int, corpus: list[tuple[str, str]]) -> tuple[str, str]:
    """(origin, text) of input `index` of a run with `seed`."""
    r = random.Random(seed * 1_000_003 + index)
    if index % 2 == 0 or not corpus:
        return "generated", generate(r)
    name, text = corpus[(index // 2) % len(corpus)]
    return f"mutated {name}", mutate(text, r)


def _init(seed_list: list[tuple[str, str]], forward_every: int) -> None:
    global _SEEDS, _WORKDIR, _FORWARD_EVERY
    _SEEDS, _WORKDIR, _FORWARD_EVERY = seed_list, make_workdir(), forward_every
    os.environ.setdefault("TRITON_INTERPRET", "1")
    # Warm up (xDSL, the passes, the printer load on first use), so that the
    # first input's time is its own.
    classify(_WORKDIR / "__warm__.tl", generate(random.Random(0)))


def run_one(job: tuple[int, int]) -> tuple[int, str, Outcome, str]:
    seed, index = job
    assert _WORKDIR is not None
    origin, text = program(seed, index, _SEEDS)
    try:
        outcome = classify(_WORKDIR / "__fz__.tl", text)
    except BaseException as error:  # a _Timeout that fired outside the compiler, say
        outcome = Outcome("exception", f"fuzzer: {type(error).__name__}: {error}")
    if outcome.kind == "ok" and _FORWARD_EVERY and index % _FORWARD_EVERY == 0:
        outcome = _forward(outcome)
    outcome.python = None  # do not ship scripts between processes
    return index, origin, outcome, text


def _forward(outcome: Outcome) -> Outcome:
    from fuzz_forward import run_forward

    assert outcome.python is not None
    try:
        problem = run_forward(outcome.python, outcome.flows)
    except Exception as error:
        problem = f"{type(error).__name__}: {str(error)[:200]}"
    return Outcome("forward", problem, outcome.seconds) if problem else outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first input index")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--forward-every", type=int, default=10)
    parser.add_argument("--only", type=int, default=None, help="run input I alone, verbosely")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    corpus = seeds()
    if args.only is not None:
        return _only(args, corpus)
    jobs = [(args.seed, i) for i in range(args.start, args.start + args.count)]
    counts: Counter[str] = Counter()
    signatures: Counter[str] = Counter()
    start = time.perf_counter()
    slowest = 0.0
    with multiprocessing.Pool(args.jobs, _init, (corpus, args.forward_every)) as pool:
        for index, origin, outcome, text in pool.imap_unordered(run_one, jobs, chunksize=8):
            counts[outcome.kind] += 1
            slowest = max(slowest, outcome.seconds)
            if outcome.is_bug:
                signatures[f"{outcome.kind}: {outcome.detail[:120]}"] += 1
                _save(args.out, index, origin, outcome, text)
            if sum(counts.values()) % 500 == 0:  # progress, so a run cut short still says something
                print(f"  after {sum(counts.values())}: {dict(counts)}", flush=True)
    elapsed = time.perf_counter() - start
    _report(args, counts, signatures, elapsed, slowest)
    return 1 if any(counts[k] for k in BUGS) else 0


def _only(args: argparse.Namespace, corpus: list[tuple[str, str]]) -> int:
    _init(corpus, 1)
    index, origin, outcome, text = run_one((args.seed, args.only))
    print(f"input {index} ({origin}):\n{text}\n--> {outcome.kind}: {outcome.detail}")
    return 1 if outcome.is_bug else 0


def _save(out: Path | None, index: int, origin: str, outcome: Outcome, text: str) -> None:
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{outcome.kind}-{index}"
    stem.with_suffix(".tl").write_text(text, encoding="utf-8", errors="surrogatepass")
    stem.with_suffix(".txt").write_text(f"{origin}\n{outcome.kind}: {outcome.detail}\n")


def _report(args: argparse.Namespace, counts: Counter[str], signatures: Counter[str],
            elapsed: float, slowest: float) -> None:  # fmt: skip
    total = sum(counts.values())
    rate = total / max(elapsed, 1e-9)
    print(f"fuzz: {total} inputs, seed {args.seed}, start {args.start}, {args.jobs} jobs, "
          f"{elapsed:.0f} s ({rate:.1f} inputs/s), slowest {slowest:.2f} s")  # fmt: skip
    for kind in ("ok", "diagnostic", *BUGS):
        print(f"  {kind:<11} {counts[kind]}")
    for signature, count in signatures.most_common(40):
        print(f"  {count:>6}  {signature}")


if __name__ == "__main__":
    sys.exit(main())
