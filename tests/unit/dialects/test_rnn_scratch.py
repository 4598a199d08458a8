"""The LSTM/GRU scratch rule against cuDNN's workspace as measured on an H200.

bench/cudnn_workspace_rnn_h200.jsonl is the output of `python bench/cudnn_workspace.py rnn`
on the GPU machine (288 configurations); the rule in layers/sequence.py claims
a mean error under 10% and a worst case under 55% over that grid.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from tests.unit.dialects.layer_helpers import bind

MEASURED = Path(__file__).resolve().parents[3] / "bench" / "cudnn_workspace_rnn_h200.jsonl"


def predicted(row: dict[str, object]) -> int:
    hidden = int(row["hidden"])  # type: ignore[arg-type]
    spec, bound = bind(str(row["mode"]), hidden, hidden, num_layers=row["layers"],
                       bidirectional=row["bidirectional"])  # type: ignore[arg-type]  # fmt: skip
    shape = (int(row["batch"]), int(row["steps"]), hidden)  # type: ignore[arg-type]
    out = (*shape[:2], hidden * (2 if row["bidirectional"] else 1))
    return spec.scratch_bytes(bound, shape, out, 4 if row["precision"] == "fp32" else 2)


def test_the_scratch_rule_matches_the_measured_workspace() -> None:
    rows = [json.loads(line) for line in MEASURED.read_text().splitlines()[1:]]
    errors = [abs(predicted(r) - r["backward"]) / r["backward"] for r in rows]
    assert len(rows) == 288
    assert statistics.mean(errors) < 0.10
    assert max(errors) < 0.55


def test_small_hidden_sizes_are_within_a_quarter() -> None:
    rows = [json.loads(line) for line in MEASURED.read_text().splitlines()[1:]]
    small = [r for r in rows if r["hidden"] <= 128]
    assert max(abs(predicted(r) - r["backward"]) / r["backward"] for r in small) < 0.25
