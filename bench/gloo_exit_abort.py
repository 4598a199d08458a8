"""How often torch's gloo aborts a finished 2-rank run at interpreter exit, with and without
the emitted scripts' `exit_process` (runtime/distributed.py: flush, then `os._exit`).

    python bench/gloo_exit_abort.py --runs 16        # CPU, torch only; a few minutes

Each run is `torchrun --standalone --nproc-per-node 2` of the script below: `fully_shard` a
2-Linear model, one forward and backward, gather the full state dict on every rank (where the
abort was seen: bench/RESULTS.md), barrier, `destroy_process_group`, then leave either by
returning (`normal`) or through `exit_process(0)` (`exit_process`). A run that aborts exits
non-zero with "terminate called without an active exception" on its stderr.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
import torch, torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from tensorloom.backends.runtime.distributed import exit_process, setup_distributed
setup_distributed("cpu")
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 4))
fully_shard(model)
model(torch.randn(8, 16)).sum().backward()
state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
dist.barrier()
dist.destroy_process_group()
if sys.argv[1] == "exit_process":
    exit_process(0)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=16)
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "gather_and_exit.py"
        script.write_text(SCRIPT)
        for how in ("normal", "exit_process"):
            aborted = failed = 0
            for _ in range(args.runs):
                done = subprocess.run(
                    [sys.executable, "-m", "torch.distributed.run", "--standalone",
                     "--nproc-per-node", "2", str(script), how],
                    env=env, capture_output=True, text=True, timeout=300, check=False,
                )  # fmt: skip
                if done.returncode != 0:
                    failed += 1
                    aborted += "terminate called without an active exception" in done.stderr
            print(f"{how}: {args.runs} runs, {failed} failed ({aborted} with the teardown abort)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
