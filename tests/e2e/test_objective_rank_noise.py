"""Each rank draws its own noise in the one-model loop under DDP and FSDP, on 2 gloo ranks.

examples/train_diffusion.tl under `distributed = true`: its objective draws the time steps
(`randint`) and the noise (`randn_like`) of every batch. The script seeds every rank alike
to build the model (so it starts equal), then `seed + rank` for what the steps draw. A
driver imports the emitted script, builds its trainer on each rank, draws what the
objective's next draw would start from and trains three steps: the draws differ between
the ranks and are the `--seed` and `--seed + 1` streams (rank 0's is a single process's),
and the model stays equal on both ranks. A run cut mid-epoch and resumed ends where the
uncut run ends, to the last bit, under DDP and FSDP (each rank's RNG is in the save and
comes back to it); the DDP save resumes on one process too (rank 0's stream). Under DDP a
BatchNorm model validates with rank 0's statistics, the ones it saves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
DIFFUSION = (ROOT / "examples" / "train_diffusion.tl").read_text(encoding="utf-8")
TLC = [sys.executable, "-m", "tensorloom.tools.tlc"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
COMMON = ["--device", "cpu", "--precision", "fp32", "--seed", "7"]

DRIVER = """
import json, sys
import torch
import torch.distributed as dist
import {name} as program

*argv, out = sys.argv[1:]
args = program.parse_args(argv)
ctx = program.setup_distributed(args.device, group_of_one={sharded})
trainer = program.build_trainer(args, ctx)
noise = torch.randn(6)  # where the objective's first `randint` and `randn_like` start
program.train_one_epoch(trainer, 0, 3)
with program.gathered_parameters(trainer.model) if {sharded} else torch.no_grad():
    weights = [p.detach().flatten().tolist() for p in trainer.model.parameters()]
ranks = [None] * ctx.world_size
mine = {{"noise": noise.tolist(), "weights": weights, "steps": trainer.step}}
if ctx.world_size > 1:
    dist.all_gather_object(ranks, mine)
else:
    ranks = [mine]
if ctx.is_main:
    with open(out, "w") as f:
        json.dump(ranks, f)
program.teardown_distributed()
program.exit_process(0)  # as the script leaves: no gloo teardown abort
"""


def _diffusion(distributed: str) -> str:
    setting = f'    distributed = "{distributed}"\n'
    return DIFFUSION.replace("    epochs = 40\n", f"    epochs = 40\n{setting}")


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=400, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _compile(folder: Path, distributed: str) -> Path:
    name = f"diffusion_{distributed}"
    source, script = folder / f"{name}.tl", folder / f"{name}.py"
    source.write_text(_diffusion(distributed), encoding="utf-8")
    _run([*TLC, "compile", str(source), "-o", str(script), "--single-file"], folder)
    return script


def _ranks(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
              "2", str(script), *args]  # fmt: skip
    return _run(launch, script.parent)


def _stream(seed: int) -> list[float]:
    return torch.randn(6, generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("distributed", ["ddp", "fsdp"])
def test_each_rank_draws_its_own_noise_and_the_model_stays_equal(
    tmp_path: Path, distributed: str
) -> None:
    script = _compile(tmp_path, distributed)
    driver = tmp_path / "driver.py"
    sharded = distributed == "fsdp"
    driver.write_text(DRIVER.format(name=script.stem, sharded=sharded), encoding="utf-8")
    args = [*COMMON, "--batch-size", "16", "--checkpoint-dir", "unused"]
    _ranks(driver, *args, "ranks.json")
    first, second = json.loads((tmp_path / "ranks.json").read_text())
    assert first["steps"] == second["steps"] == 3
    assert first["noise"] != second["noise"]
    assert first["noise"] == pytest.approx(_stream(7), abs=0)  # rank 0: --seed itself
    assert second["noise"] == pytest.approx(_stream(8), abs=0)  # rank 1: --seed + 1
    # built alike, and every step's reduced gradients kept it so
    assert first["weights"] == second["weights"]
    if sharded:
        return
    _run([sys.executable, str(driver), *args, "one.json"], tmp_path)
    (alone,) = json.loads((tmp_path / "one.json").read_text())
    assert alone["noise"] == first["noise"]  # a single process draws what rank 0 draws


def test_ddp_objective_resumes_exactly_mid_epoch_with_each_ranks_noise(tmp_path: Path) -> None:
    script = _compile(tmp_path, "ddp")
    common = [*COMMON, "--epochs", "2", "--batch-size", "64"]
    _ranks(script, *common, "--checkpoint-dir", "whole", "--metrics", "w.jsonl",
           "--samples", "w.png")  # fmt: skip
    _ranks(script, *common, "--max-steps", "5", "--checkpoint-dir", "cut", "--samples", "c.png")
    saved = torch.load(tmp_path / "cut" / "last.pt", weights_only=False)
    cpu = [rank["cpu"] for rank in saved["extra"]["rng_by_rank"]]
    assert len(cpu) == 2 and not torch.equal(cpu[0], cpu[1])
    assert saved["step"] == 5
    resumed = _ranks(script, *common, "--resume", "cut/last.pt", "--checkpoint-dir", "cut",
                     "--metrics", "c.jsonl", "--samples", "c.png")  # fmt: skip
    assert "resumed from cut/last.pt after epoch 0" in resumed.stdout
    a = torch.load(tmp_path / "whole" / "last.pt", weights_only=False)
    b = torch.load(tmp_path / "cut" / "last.pt", weights_only=False)
    assert a["step"] == b["step"] > 5
    for key, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][key]), key
    whole = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    cut = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    for key in ("train_loss", "val_loss"):
        assert whole[-1][key] == cut[-1][key], key
    # on another number of ranks: rank 0's stream continues (one process here)
    more = _run([sys.executable, str(script), *COMMON, "--epochs", "3", "--batch-size", "64",
                 "--resume", "whole/last.pt", "--checkpoint-dir", "whole", "--samples", "w.png"],
                tmp_path)  # fmt: skip
    assert "resumed from whole/last.pt after epoch 2" in more.stdout
    assert torch.load(tmp_path / "whole" / "last.pt", weights_only=False)["epoch"] == 3


def test_ddp_batchnorm_validates_and_saves_rank_0s_statistics(tmp_path: Path) -> None:
    """examples/digits_cnn.tl (BatchNorm, dropout) on two DDP ranks: each rank's running
    statistics end the epoch apart (its own batches, its own dropout), yet the run's
    validation is rank 0's model, the one it saves: one process's `--evaluate` of the save
    gives the run's `val_loss`."""
    source = (ROOT / "examples" / "digits_cnn.tl").read_text(encoding="utf-8")
    source = source.replace("    epochs = 15\n", "    epochs = 15\n    distributed = true\n")
    (tmp_path / "cnn.tl").write_text(source, encoding="utf-8")
    script = tmp_path / "cnn.py"
    _run([*TLC, "compile", str(tmp_path / "cnn.tl"), "-o", str(script), "--single-file"], tmp_path)
    common = [*COMMON, "--batch-size", "32"]
    _ranks(script, *common, "--epochs", "1", "--checkpoint-dir", "ckpt", "--metrics", "run.jsonl")
    (record,) = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    _run([sys.executable, str(script), *common, "--evaluate", "ckpt/last.pt", "--metrics",
          "eval.jsonl"], tmp_path)  # fmt: skip
    (evaluated,) = [json.loads(line) for line in (tmp_path / "eval.jsonl").read_text().splitlines()]
    assert evaluated["val_loss"] == pytest.approx(record["val_loss"], rel=1e-5)
    assert evaluated["val_accuracy"] == pytest.approx(record["val_accuracy"], abs=1e-9)


def test_fsdp_objective_resumes_exactly_mid_epoch_with_each_ranks_noise(tmp_path: Path) -> None:
    script = _compile(tmp_path, "fsdp")
    common = [*COMMON, "--epochs", "2", "--batch-size", "64"]
    _ranks(script, *common, "--checkpoint-dir", "whole", "--metrics", "w.jsonl",
           "--samples", "w.png")  # fmt: skip
    _ranks(script, *common, "--max-steps", "5", "--checkpoint-dir", "cut", "--samples", "c.png")
    saved = torch.load(tmp_path / "cut" / "last" / "train_state.pt", weights_only=False)
    cpu = [rank["cpu"] for rank in saved["rng_by_rank"]]
    assert saved["step"] == 5 and len(cpu) == 2 and not torch.equal(cpu[0], cpu[1])
    resumed = _ranks(script, *common, "--resume", "cut/last", "--checkpoint-dir", "cut",
                     "--metrics", "c.jsonl", "--samples", "c.png")  # fmt: skip
    assert "resumed from cut/last after epoch 0" in resumed.stdout
    for run in ("whole", "cut"):  # the shards as one state dict, in one process
        _run([sys.executable, str(script), "--consolidate", f"{run}/epoch-0002", f"{run}.pt"],
             tmp_path)  # fmt: skip
    a = torch.load(tmp_path / "whole.pt", weights_only=True)
    b = torch.load(tmp_path / "cut.pt", weights_only=True)
    for key, tensor in a.items():
        assert torch.equal(tensor, b[key]), key
    whole = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    cut = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    for key in ("train_loss", "val_loss"):
        assert whole[-1][key] == cut[-1][key], key
