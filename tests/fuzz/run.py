"""`make fuzz`: a long fuzz run over generated and mutated programs; prints the figures.

    python tests/fuzz/run.py --count 20000 --seed 1 --jobs 2 --out fuzz-out/

Input i is generated from the grammar (even i) or a mutation of seed i mod N
(odd i), from `random.Random(seed * 1_000_003 + i)`: any input can be
reproduced from the seed and its index (`--only I`). Every accepted program is
checked to `compile()`; every `--forward-every`-th one is also built and run
one forward on the CPU. Each bug's input goes to `--out` as
`<kind>-<index>.tl` with what happened in `<kind>-<index>.txt`. Exit status 1
if any input was a bug.

The inputs run in process: `--jobs` long-lived worker processes each call the
driver's entry points (fuzz_outcome.classify) on one input after another. A
worker stops an input itself after 30 s of CPU time (a `hang`); the parent
kills a worker that does not answer (a hang in C code, where no signal is
taken, or a worker over `--max-rss-mb`) and one that dies, counts its input as
a `hang` or an `exception`, and starts a fresh worker. A worker is also
replaced after a hang, after a stray exception and every `--recycle` inputs, so
that no state a broken input left behind reaches the next one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import random
import shutil
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_generate import generate, make_workdir, mutate, seeds
from fuzz_outcome import ABORT_SECONDS, BUGS, Outcome, classify, info_problem

# The parent kills a worker whose input has used this much CPU (the worker's own
# 30 s deadline did not fire: the time went in C code) or this much wall time.
KILL_CPU_SECONDS = ABORT_SECONDS + 15
KILL_WALL_SECONDS = 600

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
        if isinstance(error, KeyboardInterrupt):
            raise
        outcome = Outcome("exception", f"fuzzer: {type(error).__name__}: {error}")
    if outcome.kind == "ok" and _FORWARD_EVERY and index % _FORWARD_EVERY == 0:
        outcome = _info(_WORKDIR / "__fz__.tl", _forward(outcome))
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


def _info(path: Path, outcome: Outcome) -> Outcome:
    """`tlc info` on an accepted program (the sample the forward runs on)."""
    if outcome.kind != "ok":
        return outcome
    try:
        problem = info_problem(path)
    except Exception as error:
        problem = f"{type(error).__name__}: {str(error)[:200]}"
    return Outcome("info", problem, outcome.seconds) if problem else outcome


# ------------------------------------------------------------------ workers


def _worker(conn: multiprocessing.connection.Connection, corpus: list[tuple[str, str]],
            forward_every: int, max_rss_mb: int) -> None:  # fmt: skip
    """Run jobs from `conn` until it sends None; answer each with run_one's tuple."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core per worker, torch included
    if max_rss_mb:
        import resource

        # A program that makes the compiler allocate without bound fails here
        # with MemoryError (an `exception`), not by swapping the machine.
        limit = max_rss_mb * 2**20 * 4  # address space: torch maps far more than it touches
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        _init(corpus, forward_every)
        conn.send("ready")
        while (job := conn.recv()) is not None:
            conn.send(run_one(job))
    finally:
        if _WORKDIR is not None:
            shutil.rmtree(_WORKDIR, ignore_errors=True)


def _preload(forward_every: int) -> None:
    """Import what the workers use before they are forked, so that each new one starts warm."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    if forward_every:
        with contextlib.suppress(ImportError):
            import torch  # noqa: F401
    work = make_workdir()
    try:
        classify(work / "__warm__.tl", generate(random.Random(0)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection
    ready: bool = False
    job: tuple[int, int] | None = None
    started: float = 0.0  # wall clock, when the job was sent
    cpu_at_start: float = 0.0
    done: int = 0


def _cpu_seconds(pid: int) -> float:
    """user + system CPU time of process `pid` (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


@dataclass
class Pool:
    """`jobs` worker processes that run inputs in process, watched and recycled."""

    jobs: int
    corpus: list[tuple[str, str]]
    forward_every: int
    recycle: int
    max_rss_mb: int
    kill_cpu: float = KILL_CPU_SECONDS
    kill_wall: float = KILL_WALL_SECONDS
    target: Any = None  # the worker's main function; `_worker` unless a test swaps it
    workers: list[_Worker] = field(default_factory=list)
    restarts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        if self._ctx.get_start_method() == "fork" and self.target is None:
            _preload(self.forward_every)
        self.workers = [self._start() for _ in range(self.jobs)]

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=self.target or _worker,
            args=(child, self.corpus, self.forward_every, self.max_rss_mb),
            daemon=True,
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _replace(self, worker: _Worker, why: str) -> None:
        self.restarts[why] += 1
        if self.restarts["died idle"] > 2 * self.jobs:
            raise RuntimeError("fuzz workers keep dying before their first input")
        self._stop(worker, kill=why != "recycled")
        self.workers[self.workers.index(worker)] = self._start()

    def _stop(self, worker: _Worker, kill: bool) -> None:
        if not kill:
            try:
                worker.conn.send(None)
                worker.process.join(10)
            except (OSError, EOFError):
                pass
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(10)
        worker.conn.close()

    def close(self) -> None:
        for worker in self.workers:
            self._stop(worker, kill=worker.job is not None)

    def run(self, jobs: list[tuple[int, int]], stop_after: float = 0.0) -> Any:
        """Yield (index, origin, outcome, text) for each job, in the order they finish.

        With `stop_after`, no job is started after that many seconds: the jobs
        run are then a prefix of `jobs`."""
        pending = list(reversed(jobs))
        deadline = time.monotonic() + stop_after if stop_after else None
        while pending or any(w.job is not None for w in self.workers):
            if deadline is not None and time.monotonic() > deadline:
                pending.clear()
            for worker in list(self.workers):
                if worker.ready and worker.job is None and pending:
                    worker.job = pending.pop()
                    worker.started = time.monotonic()
                    worker.cpu_at_start = _cpu_seconds(worker.process.pid or 0)
                    worker.conn.send(worker.job)
            conns = [w.conn for w in self.workers]
            for conn in multiprocessing.connection.wait(conns, timeout=1.0):
                worker = next((w for w in self.workers if w.conn is conn), None)
                result = None if worker is None else self._receive(worker)
                if result is not None:
                    yield result
            for worker in list(self.workers):
                result = self._watch(worker)
                if result is not None:
                    yield result

    def _receive(self, worker: _Worker) -> tuple[int, str, Outcome, str] | None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(5)
            return self._lost(worker, f"the worker died (exit {worker.process.exitcode})")
        if message == "ready":
            worker.ready = True
            return None
        worker.job = None
        worker.done += 1
        _, _, outcome, _ = message
        if outcome.kind == "hang" or outcome.detail.startswith("fuzzer:"):
            self._replace(worker, outcome.kind)  # its state may be half-updated
        elif self.recycle and worker.done >= self.recycle:
            self._replace(worker, "recycled")
        return message  # type: ignore[no-any-return]

    def _watch(self, worker: _Worker) -> tuple[int, str, Outcome, str] | None:
        pid = worker.process.pid or 0
        if not worker.process.is_alive():
            return self._lost(worker, f"the worker died (exit {worker.process.exitcode})")
        if worker.job is None:
            return None
        cpu = _cpu_seconds(pid) - worker.cpu_at_start
        wall = time.monotonic() - worker.started
        if cpu > self.kill_cpu or wall > self.kill_wall:
            return self._lost(worker, f"killed after {cpu:.0f} s CPU, {wall:.0f} s wall", "hang")
        if self.max_rss_mb and _rss_mb(pid) > self.max_rss_mb:
            return self._lost(worker, f"killed at over {self.max_rss_mb} MB resident")
        return None

    def _lost(self, worker: _Worker, why: str, kind: str = "exception"
              ) -> tuple[int, str, Outcome, str] | None:  # fmt: skip
        """The worker is gone or is killed now: its input (if any) is a bug of `kind`."""
        job = worker.job
        self._replace(worker, kind if job is not None else "died idle")
        if job is None:
            return None
        origin, text = program(job[0], job[1], self.corpus)
        return job[1], origin, Outcome(kind, f"fuzzer: {why}"), text


# ------------------------------------------------------------------ the run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first input index")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--forward-every", type=int, default=10)
    parser.add_argument("--recycle", type=int, default=1000,
                        help="replace a worker after this many inputs (0: never)")  # fmt: skip
    parser.add_argument("--max-rss-mb", type=int, default=3000,
                        help="kill a worker over this resident size (0: no limit)")  # fmt: skip
    parser.add_argument("--only", type=int, default=None, help="run input I alone, verbosely")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--stop-after",
        type=float,
        default=0.0,
        help="start no input after this many seconds (the run is then a prefix)",
    )
    parser.add_argument("--summary", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    corpus = seeds()
    if args.only is not None:
        return _only(args, corpus)
    jobs = [(args.seed, i) for i in range(args.start, args.start + args.count)]
    counts: Counter[str] = Counter()
    signatures: Counter[str] = Counter()
    start = time.perf_counter()
    slowest = 0.0
    pool = Pool(args.jobs, corpus, args.forward_every, args.recycle, args.max_rss_mb)
    try:
        for index, origin, outcome, text in pool.run(jobs, args.stop_after):
            counts[outcome.kind] += 1
            slowest = max(slowest, outcome.seconds)
            if outcome.is_bug:
                signatures[f"{outcome.kind}: {outcome.detail[:120]}"] += 1
                _save(args.out, index, origin, outcome, text)
            if sum(counts.values()) % 500 == 0:  # progress, so a run cut short still says something
                print(f"  after {sum(counts.values())}: {dict(counts)}", flush=True)
    finally:
        pool.close()
    elapsed = time.perf_counter() - start
    _report(args, counts, signatures, elapsed, slowest, pool.restarts)
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
            elapsed: float, slowest: float, restarts: Counter[str]) -> None:  # fmt: skip
    total = sum(counts.values())
    rate = total / max(elapsed, 1e-9)
    print(f"fuzz: {total} inputs ({args.start}-{args.start + total - 1}), seed {args.seed}, "
          f"{args.jobs} jobs, {elapsed:.0f} s ({rate:.1f} inputs/s), "
          f"slowest {slowest:.2f} s")  # fmt: skip
    for kind in ("ok", "diagnostic", *BUGS):
        print(f"  {kind:<11} {counts[kind]}")
    print(f"  workers replaced: {dict(restarts) or 0}")
    for signature, count in signatures.most_common(40):
        print(f"  {count:>6}  {signature}")
    if args.summary is not None:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps({
            "seed": args.seed, "start": args.start, "count": total, "jobs": args.jobs,
            "seconds": round(elapsed, 1), "slowest": round(slowest, 2),
            "counts": {k: counts[k] for k in ("ok", "diagnostic", *BUGS)},
            "restarts": dict(restarts), "signatures": dict(signatures.most_common(200)),
        }, indent=1))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
