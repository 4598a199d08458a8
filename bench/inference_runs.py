"""How many times a model's shapes are inferred per command.

    python bench/inference_runs.py            # a markdown table, one row per example

Counts the whole-forward inferences (`shape_inference.Inference` objects, each
one walk of a model's forward or a `.tl` function for one set of inputs) that
`tlc check` (in process: `check_file`) and `tlc compile` (the pipeline to the
`torch` stage) make on each example, and which function asked for each. The
redesign's aim: the shape-inference pass infers each instantiation once and
every later consumer reads the types it wrote into the IR.
"""

from __future__ import annotations

import collections
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tensorloom.passes import shape_inference  # noqa: E402
from tensorloom.pipeline import compile_file  # noqa: E402
from tensorloom.tools.check import check_file  # noqa: E402

CALLERS: collections.Counter[str] = collections.Counter()
_original_init = shape_inference.Inference.__init__


def _counting_init(self: object, *args: object, **kwargs: object) -> None:
    frames = traceback.extract_stack(limit=12)[:-1]
    outside = [f for f in frames if Path(f.filename).stem != "shape_inference"]
    inside = [f for f in frames if Path(f.filename).stem == "shape_inference"]
    caller = f"{Path(outside[-1].filename).stem}.{outside[-1].name}" if outside else "?"
    recorded = [f.name for f in inside if f.name.startswith("_record")]
    if recorded:  # the pass, for a train loop's other data (synthetic samples)
        caller = f"shape_inference.{recorded[-1]}"
    CALLERS[caller] += 1
    _original_init(self, *args, **kwargs)  # type: ignore[arg-type]


shape_inference.Inference.__init__ = _counting_init  # type: ignore[method-assign]


def count(run: object) -> tuple[int, str]:
    CALLERS.clear()
    run()  # type: ignore[operator]
    total = sum(CALLERS.values())
    return total, ", ".join(f"{k} {v}" for k, v in sorted(CALLERS.items()))


def main() -> None:
    examples = [
        *sorted((ROOT / "examples").glob("*.tl")),
        ROOT / "tests/lit/check/valid/synthetic_data.tl",  # load_dataset(): infer-synthetic-data
    ]
    print("| example | `tlc check` | by | `tlc compile` | by |")
    print("|---|---|---|---|---|")
    totals = [0, 0]
    for path in examples:
        checked, check_by = count(lambda p=path: check_file(p))
        compiled, compile_by = count(lambda p=path: compile_file(p, until="torch"))
        totals[0] += checked
        totals[1] += compiled
        print(f"| {path.name} | {checked} | {check_by} | {compiled} | {compile_by} |")
    print(f"| total | {totals[0]} | | {totals[1]} | |")


if __name__ == "__main__":
    main()
