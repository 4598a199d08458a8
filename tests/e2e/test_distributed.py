"""FSDP and multi-process launches on the CPU with gloo: what the ranks compute together.

One tiny program (digits, two Linear layers, fp32, `distributed = fsdp`) runs
- under `tlc run --nproc 2` at 8 samples per rank per step, and as one process
  at 16 per step: the same global batch, so the same losses (within 1e-5);
- resumed on one process from the 2-rank sharded checkpoint: its third epoch
  equals the uninterrupted one-process run's (the `ema` average's validation too:
  its shards are saved and resharded with the model's);
- consolidated into one plain state dict whose validation loss is the run's;
- as 2 "nodes" x 1 process on localhost through `--nnodes 2 --master-addr`;
- with a rank that fails: `tlc run` names it and shows its own error.
Each launch starts torch in every process, so these few tests take most of
their time starting up; they are marked `distributed`.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.distributed

PROGRAM = """
model Net:
    layer fc1 = Linear(64, 16)
    layer fc2 = Linear(16, 10)

    fn forward(self, x: Tensor[B, 64]) -> Tensor[B, 10]:
        return x |> self.fc1 |> gelu |> self.fc2

let net = Net()
let data = load_dataset("digits", flatten=true)

train net on data:
    epochs = 3
    batch_size = 8
    optimizer = AdamW(lr=0.002)
    loss = CrossEntropy
    precision = fp32
    distributed = fsdp
    ema = 0.99
    keep_best = val_loss
"""
TLC = [sys.executable, "-m", "tensorloom.tools.tlc"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(command: list[str], cwd: Path, timeout: int = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout, check=False
    )


def _metrics(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _close(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    assert [r["epoch"] for r in a] == [r["epoch"] for r in b]
    for x, y in zip(a, b, strict=True):
        for key in ("train_loss", "val_loss", "val_accuracy", "ema_val_loss"):
            assert x[key] == pytest.approx(y[key], abs=1e-5), (key, x, y)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The program, the 2-rank run (2 of 3 epochs, checkpointed), the 1-process run."""
    root = tmp_path_factory.mktemp("fsdp")
    source = root / "tiny_fsdp.tl"
    source.write_text(PROGRAM)
    script = root / "tiny_fsdp.py"
    # one file: a test below executes it by itself
    compiled = _run([*TLC, "compile", str(source), "-o", str(script), "--single-file"], root)
    assert compiled.returncode == 0, compiled.stderr
    two = _run([*TLC, "run", str(source), "--nproc", "2", "--", "--epochs", "2",
                "--metrics", "two.jsonl", "--checkpoint-dir", "ckpt"], root)  # fmt: skip
    assert two.returncode == 0, two.stderr
    one = _run([sys.executable, str(script), "--batch-size", "16", "--metrics", "one.jsonl"], root)
    assert one.returncode == 0, one.stderr
    return {"root": root, "source": source, "script": script}


def test_two_fsdp_ranks_give_one_process_losses(runs: dict[str, Path]) -> None:
    root = runs["root"]
    two, one = _metrics(root / "two.jsonl"), _metrics(root / "one.jsonl")
    _close(two, one[:2])
    assert two[-1]["train_loss"] < two[0]["train_loss"]
    save = root / "ckpt" / "epoch-0002"
    assert (save / "COMPLETE").is_file()
    assert sorted(p.name for p in save.glob("*.distcp")) == ["__0_0.distcp", "__1_0.distcp"]
    assert json.loads((save / "COMPLETE").read_text())["world_size"] == 2
    assert (root / "ckpt" / "best" / "COMPLETE").is_file()  # keep_best: a sharded save too


def test_two_rank_checkpoint_resumes_on_one_and_consolidates(runs: dict[str, Path]) -> None:
    root, script = runs["root"], runs["script"]
    resumed = _run([sys.executable, str(script), "--batch-size", "16", "--resume", "ckpt",
                    "--metrics", "resumed.jsonl"], root)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from ckpt after epoch 2" in resumed.stdout
    _close(_metrics(root / "resumed.jsonl"), _metrics(root / "one.jsonl")[2:])

    out = root / "weights.pt"
    done = _run([sys.executable, str(script), "--consolidate", "ckpt/epoch-0002", str(out)], root)
    assert done.returncode == 0, done.stderr
    import torch
    import torch.nn.functional as F

    namespace: dict[str, Any] = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)  # defines, runs nothing
    net = namespace["Net"]()
    net.load_state_dict(torch.load(out, weights_only=True))  # a plain state dict, all keys
    _train, (x, y), _info = namespace["load_digits"](**namespace["DATASET_OPTIONS"])
    with torch.no_grad():
        loss = F.cross_entropy(net(x), y).item()
    assert loss == pytest.approx(_metrics(root / "two.jsonl")[-1]["val_loss"], abs=1e-5)


def test_two_nodes_of_one_process_on_localhost(runs: dict[str, Path]) -> None:
    root, source = runs["root"], runs["source"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nodes = []
    for rank in (1, 0):
        folder = root / f"node{rank}"
        folder.mkdir()
        command = [*TLC, "run", str(source), "--nnodes", "2", "--node-rank", str(rank),
                   "--master-addr", "127.0.0.1", "--master-port", str(port), "--",
                   "--epochs", "2", "--metrics", "m.jsonl"]  # fmt: skip
        nodes.append(subprocess.Popen(command, cwd=folder, env=ENV, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))  # fmt: skip
    outputs = [node.communicate(timeout=240) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    assert not (root / "node1" / "m.jsonl").exists()  # global rank 1 writes no metrics
    _close(_metrics(root / "node0" / "m.jsonl"), _metrics(root / "two.jsonl"))


def test_a_failing_rank_is_named_with_its_own_error(runs: dict[str, Path]) -> None:
    """Both ranks fail alike (a fresh checkpoint folder, so rank 0 has nothing else to refuse);
    whichever torchrun sees first is named with the end of its own stderr."""
    failed = _run([*TLC, "run", str(runs["source"]), "--nproc", "2", "--",
                   "--checkpoint-dir", "fresh", "--resume", "no-such-folder"],
                  runs["root"])  # fmt: skip
    assert failed.returncode == 1
    named = re.search(r"rank (\d) \(local rank \d\) failed first: exit status 1", failed.stderr)
    assert named, failed.stderr
    error = "error: no-such-folder: no such checkpoint folder"
    if named[1] == "0":  # local rank 0 writes to the terminal, so its error is already there
        assert f"\n{error}\n" in f"\n{failed.stderr}", failed.stderr
        assert "its output is above (local rank 0 writes to this terminal)" in failed.stderr
    else:  # another rank's is quoted from its log, with torchrun's prefix
        assert f"[default{named[1]}]:{error}" in failed.stderr, failed.stderr
    assert "ChildFailedError" not in failed.stderr  # not torchrun's traceback and summary
