"""Run an emitted TensorLoom script as `__main__`, then report its peak GPU memory.

    python bench/run_emitted.py bench/generated/mlp_tl_default.py --epochs 5 --metrics m.jsonl

    python bench/run_emitted.py --nanogpt-init GPT bench/generated/gpt2_tl_default.py ...

(the second applies nanoGPT's initialisation after the emitted `GPT.__init__`, as the
GPT-2 rows need; bench/handwritten must be on PYTHONPATH) prints the script's own
output, then one last line of JSON,
`{"peak_mem_bytes": ..., "wall_s": ..., "exit_code": ...}`; the GPU suite reads it.
The script runs in this process so that `torch.cuda.max_memory_allocated()`
sees its allocations; the script itself is unchanged.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from typing import Any


def exit_code(error: SystemExit) -> int:
    if error.code is None:
        return 0
    return error.code if isinstance(error.code, int) else 1


def with_nanogpt_init(namespace: dict[str, Any], class_name: str) -> None:
    """After the emitted `class_name.__init__`, apply nanoGPT's initialisation
    (bench/handwritten/gpt2.py's `init_weights`): the language has no per-layer init, and
    the GPT-2 rows' loss check needs both sides to start from the same weights."""
    from gpt2 import init_weights  # bench/handwritten, on PYTHONPATH

    cls = namespace[class_name]
    plain = cls.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        plain(self, *args, **kwargs)
        init_weights(self, len(self.h))

    cls.__init__ = init


def main() -> int:
    argv = sys.argv[1:]
    init_class = None
    if argv[:1] == ["--nanogpt-init"]:
        init_class, argv = argv[1], argv[2:]
    if not argv:
        print("usage: run_emitted.py [--nanogpt-init CLASS] SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    script, *args = argv
    sys.argv = [script, *args]
    start = time.perf_counter()
    code = 0
    try:
        if init_class is None:
            runpy.run_path(script, run_name="__main__")
        else:  # load without running, patch the class, then run its main
            namespace = runpy.run_path(script, run_name="tensorloom_bench_script")
            with_nanogpt_init(namespace, init_class)
            code = namespace["main"](args)
    except SystemExit as error:
        code = exit_code(error)
    wall_s = time.perf_counter() - start
    import torch

    peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None
    print(json.dumps({"peak_mem_bytes": peak, "wall_s": wall_s, "exit_code": code}), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
