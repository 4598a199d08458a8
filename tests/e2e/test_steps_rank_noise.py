"""Each rank draws its own noise in blocks of `step` lines under DDP and FSDP, on 2 gloo ranks.

The script seeds every rank alike to build the models (so they start equal), then
`seed + rank` for what the steps draw: the GAN's latent noise on rank 1 is not rank 0's.
A driver imports the emitted script, builds its trainer on each rank, draws what an
objective's `randn` would draw next and runs three steps: the draws differ between the
ranks, the DDP models stay equal on both. A DDP run cut mid-epoch and resumed ends where
the uncut run ends, to the last bit (each rank's RNG is in the save and comes back to it).
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
GAN = (ROOT / "examples" / "train_gan.tl").read_text(encoding="utf-8")
TLC = [sys.executable, "-m", "tensorloom.tools.tlc"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
COMMON = ["--device", "cpu", "--precision", "fp32"]

DRIVER = """
import json, sys
import torch
import torch.distributed as dist
import {name} as program

args = program.parse_args(sys.argv[1:])
ctx = program.setup_distributed(args.device)
trainer = program.build_trainer(args, ctx)
noise = torch.randn(6)  # what the first objective's `randn` draws next
for _, (xb, yb) in zip(range(3), trainer.train_loader):
    program.train_step(trainer, xb, yb)
weights = {{}}
for name in ("G", "D"):
    model = getattr(trainer, name)
    with program.gathered_parameters(model) if {sharded} else torch.no_grad():
        weights[name] = [p.detach().flatten().tolist() for p in model.parameters()]
ranks = [None] * ctx.world_size
dist.all_gather_object(ranks, {{"noise": noise.tolist(), "weights": weights}})
if ctx.is_main:
    with open("ranks.json", "w") as f:
        json.dump(ranks, f)
dist.barrier()
program.teardown_distributed()
program.exit_process(0)  # as the script leaves: no gloo teardown abort
"""


def _gan(distributed: str) -> str:
    return GAN.replace("    epochs = 25\n", f'    epochs = 25\n    distributed = "{distributed}"\n')


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _compile(folder: Path, distributed: str) -> Path:
    name = f"gan_{distributed}"
    source, script = folder / f"{name}.tl", folder / f"{name}.py"
    source.write_text(_gan(distributed), encoding="utf-8")
    _run([*TLC, "compile", str(source), "-o", str(script), "--single-file"], folder)
    return script


def _ranks(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
              "2", str(script), *args]  # fmt: skip
    return _run(launch, script.parent)


@pytest.mark.parametrize("distributed", ["ddp", "fsdp"])
def test_each_rank_draws_its_own_noise_and_the_models_stay_equal(
    tmp_path: Path, distributed: str
) -> None:
    script = _compile(tmp_path, distributed)
    driver = tmp_path / "driver.py"
    sharded = distributed == "fsdp"
    driver.write_text(DRIVER.format(name=script.stem, sharded=sharded), encoding="utf-8")
    _ranks(driver, *COMMON, "--batch-size", "16", "--checkpoint-dir", "unused")
    first, second = json.loads((tmp_path / "ranks.json").read_text())
    assert first["noise"] != second["noise"]
    one = torch.Generator().manual_seed(0)  # rank 0 draws from the seed itself
    assert first["noise"] == pytest.approx(torch.randn(6, generator=one).tolist(), abs=0)
    two = torch.Generator().manual_seed(1)
    assert second["noise"] == pytest.approx(torch.randn(6, generator=two).tolist(), abs=0)
    for name in ("G", "D"):  # built alike, and every step's reduced gradients kept them so
        assert first["weights"][name] == second["weights"][name], name


def test_ddp_gan_resumes_exactly_mid_epoch_with_each_ranks_noise(tmp_path: Path) -> None:
    script = _compile(tmp_path, "ddp")
    common = [*COMMON, "--epochs", "2", "--batch-size", "64"]
    _ranks(script, *common, "--checkpoint-dir", "whole", "--metrics", "w.jsonl",
           "--samples", "w.png")  # fmt: skip
    _ranks(script, *common, "--max-steps", "9", "--checkpoint-dir", "cut", "--samples", "c.png")
    saved = torch.load(tmp_path / "cut" / "last.pt", weights_only=True)
    cpu = [rank["cpu"] for rank in saved["rng_by_rank"]]
    assert len(cpu) == 2 and not torch.equal(cpu[0], cpu[1])
    resumed = _ranks(script, *common, "--resume", "cut/last.pt", "--checkpoint-dir", "cut",
                     "--metrics", "c.jsonl", "--samples", "c.png")  # fmt: skip
    assert "resumed from cut/last.pt after epoch 0" in resumed.stdout
    a = torch.load(tmp_path / "whole" / "last.pt", weights_only=True)
    b = torch.load(tmp_path / "cut" / "last.pt", weights_only=True)
    assert a["step"] == b["step"] == 24
    for name in ("G", "D"):
        for key, tensor in a["models"][name].items():
            assert torch.equal(tensor, b["models"][name][key]), (name, key)
    whole = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    cut = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    for key in ("d_loss", "g_loss", "val_d_loss", "val_g_loss"):
        assert whole[-1][key] == cut[-1][key], key
