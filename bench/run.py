"""`make bench`: the CPU compiler benchmarks (bench/compile_speed.py), as markdown tables.

The GPU benchmarks are separate: `python bench/prepare_gpu.py` here, then
`python bench/gpu_suite.py --out $OUT/bench.jsonl` on the GPU machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile_speed import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
