"""Run an emitted TensorLoom script as `__main__`, then report its peak GPU memory.

    python bench/run_emitted.py bench/generated/mlp_tl_default.py --epochs 5 --metrics m.jsonl

prints the script's own output, then one last line of JSON,
`{"peak_mem_bytes": ..., "wall_s": ..., "exit_code": ...}`; the GPU suite reads it.
The script runs in this process so that `torch.cuda.max_memory_allocated()`
sees its allocations; the script itself is unchanged.
"""

from __future__ import annotations

import json
import runpy
import sys
import time


def exit_code(error: SystemExit) -> int:
    if error.code is None:
        return 0
    return error.code if isinstance(error.code, int) else 1


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: run_emitted.py SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    script, *args = sys.argv[1:]
    sys.argv = [script, *args]
    start = time.perf_counter()
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as error:
        code = exit_code(error)
    wall_s = time.perf_counter() - start
    import torch

    peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    print(json.dumps({"peak_mem_bytes": peak, "wall_s": wall_s, "exit_code": code}), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
