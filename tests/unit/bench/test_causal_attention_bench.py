"""bench/causal_attention.py runs on the CPU at a tiny size: the emitted SelfAttention
equals nn.MultiheadAttention under a causal mask."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "causal_attention.py"


def test_tiny_run_agrees_with_multihead_attention() -> None:
    spec = importlib.util.spec_from_file_location("causal_attention", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    args = ["--device", "cpu", "--batch", "2", "--seq", "8", "--d", "16", "--heads", "2"]
    result = bench.main(args)
    assert result["max_abs_diff"] < 1e-5
    assert result["self_attention_ms"] > 0
