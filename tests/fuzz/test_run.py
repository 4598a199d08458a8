"""tests/fuzz/run.py's worker pool: a worker that hangs in C code, dies or leaks is
replaced, and its input is counted as a bug; the others' inputs all come back."""

from __future__ import annotations

import os

import run
from fuzz_generate import seeds


def _flaky_worker(conn, corpus, forward_every, max_rss_mb):  # type: ignore[no-untyped-def]
    """Input 3 spins in C (no Python signal is taken), input 5 kills the process."""
    conn.send("ready")
    while (job := conn.recv()) is not None:
        seed, index = job
        if index == 3:
            while True:
                sum(range(10**9))  # one C call: SIGVTALRM handlers never run inside it
        if index == 5:
            os._exit(7)
        origin, text = run.program(seed, index, corpus)
        conn.send((index, origin, run.Outcome("ok"), text))


def test_pool_replaces_hung_and_dead_workers() -> None:
    pool = run.Pool(2, seeds()[:4], 0, recycle=3, max_rss_mb=0, kill_cpu=1.5, kill_wall=60,
                    target=_flaky_worker)  # fmt: skip
    try:
        results = {index: outcome for index, _, outcome, _ in pool.run([(1, i) for i in range(10)])}
    finally:
        pool.close()
    assert sorted(results) == list(range(10))
    assert results[3].kind == "hang" and "killed after" in results[3].detail
    assert results[5].kind == "exception" and "died (exit 7)" in results[5].detail
    assert {i for i, o in results.items() if o.kind == "ok"} == set(range(10)) - {3, 5}
    assert pool.restarts["hang"] == 1 and pool.restarts["exception"] == 1
    assert pool.restarts["recycled"] >= 1


def test_stop_after_runs_a_prefix() -> None:
    pool = run.Pool(2, seeds()[:4], 0, recycle=0, max_rss_mb=0, target=_flaky_worker)
    try:
        jobs = [(1, i) for i in range(6, 10_000)]
        done = sorted(index for index, *_ in pool.run(jobs, stop_after=0.5))
    finally:
        pool.close()
    assert done == list(range(6, 6 + len(done)))
