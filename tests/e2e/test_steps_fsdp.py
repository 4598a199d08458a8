"""`distributed = "fsdp"` in blocks of `step` lines, on the CPU with gloo: 2 ranks.

- examples/train_gan.tl (with `ema`) under FSDP gives, per epoch, the losses of the same
  program under DDP on 2 ranks, to the bit: each model sharded (`fully_shard`) computes
  what its DistributedDataParallel wrap does (BatchNorm's statistics and the objectives'
  noise are per rank under both, so neither equals one process of twice the batch);
- a student and a helper trained beside a frozen teacher (deterministic objectives, no
  BatchNorm) on 2 ranks of 8 samples give one process of 16: the same objectives to 1e-5,
  and the teacher's weights come back from the save as they were built;
- the GAN's models and steps with a deterministic generator input (its digits, not noise)
  and no BatchNorm, on 2 ranks of 8, give one process of 16 to 1e-5;
- the GAN cut mid-epoch (`--max-steps`) and resumed on 2 ranks ends where the uncut run
  ends, to the last bit (every model, optimizer and average sharded in `last/`); the save
  resumes on one process too (DCP reshards it), and `--evaluate` reads it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
GAN = (ROOT / "examples" / "train_gan.tl").read_text(encoding="utf-8")
TLC = [sys.executable, "-m", "tensorloom.tools.tlc"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
COMMON = ["--device", "cpu", "--epochs", "2", "--precision", "fp32"]


def _gan(distributed: str) -> str:
    settings = f'    distributed = "{distributed}"\n    ema = 0.99\n'
    return GAN.replace("    epochs = 25\n", "    epochs = 25\n" + settings)


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _compile(folder: Path, text: str, name: str) -> Path:
    source, script = folder / f"{name}.tl", folder / f"{name}.py"
    source.write_text(text, encoding="utf-8")
    _run([*TLC, "compile", str(source), "-o", str(script), "--single-file"], folder)
    return script


def _ranks(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
              "2", str(script), *COMMON, *args]  # fmt: skip
    return _run(launch, script.parent)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _losses(record: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in record.items() if "loss" in k or k in ("first", "second")
            or k.startswith(("val_", "ema_val_"))}  # fmt: skip


@pytest.fixture(scope="module")
def gan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The GAN under FSDP on 2 ranks: whole (2 epochs), and cut after 18 of its 24 steps."""
    root = tmp_path_factory.mktemp("gan_fsdp")
    script = _compile(root, _gan("fsdp"), "gan_fsdp")
    _ranks(script, "--metrics", "whole.jsonl", "--checkpoint-dir", "whole", "--samples", "w.png")
    _ranks(script, "--max-steps", "18", "--checkpoint-dir", "cut", "--samples", "c.png")
    return {"root": root, "script": script}


def test_fsdp_gan_computes_what_ddp_does(gan: dict[str, Path]) -> None:
    root = gan["root"]
    ddp = _compile(root, _gan("ddp"), "gan_ddp")
    _ranks(ddp, "--metrics", "ddp.jsonl", "--checkpoint-dir", "ddp", "--samples", "d.png")
    sharded, replicated = _records(root / "whole.jsonl"), _records(root / "ddp.jsonl")
    assert [r["epoch"] for r in sharded] == [1, 2]
    for a, b in zip(sharded, replicated, strict=True):
        assert set(_losses(a)) >= {"d_loss", "g_loss", "val_d_loss", "ema_val_g_loss"}
        assert _losses(a) == pytest.approx(_losses(b), abs=1e-5)
    save = root / "whole" / "last"
    assert (save / "COMPLETE").is_file()
    assert sorted(p.name for p in save.glob("*.distcp")) == ["__0_0.distcp", "__1_0.distcp"]
    assert (root / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # rank 0 wrote the grid


def test_fsdp_gan_resumes_exactly_mid_epoch(gan: dict[str, Path]) -> None:
    root, script = gan["root"], gan["script"]
    folder = _fresh_copy(root, "cut")  # the module's own stays cut, should the test run again
    resumed = _ranks(script, "--resume", folder, "--checkpoint-dir", folder, "--metrics",
                     f"{folder}.jsonl", "--samples", "c.png")  # fmt: skip
    assert f"resumed from {folder} after epoch 1" in resumed.stdout
    whole, cut = _records(root / "whole.jsonl")[-1], _records(root / f"{folder}.jsonl")[-1]
    assert whole["steps"] == cut["steps"] == 24
    assert _losses(whole) == _losses(cut)  # to the last bit, the cut epoch's sums included
    a, b = _shards(root / "whole" / "last"), _shards(root / folder / "last")
    assert set(a) == set(b) and any(k.startswith("optimizers.d_loss") for k in a)
    for key, value in a.items():
        assert torch.equal(value, b[key]) if isinstance(value, torch.Tensor) else value == b[key]


def test_fsdp_save_resumes_on_one_process_and_evaluates(gan: dict[str, Path]) -> None:
    """DCP reshards: a save of 2 ranks continues on one (a group of one) and is evaluated."""
    root, script = gan["root"], gan["script"]
    evaluated = _run([sys.executable, str(script), *COMMON, "--evaluate", "whole/last"], root)
    record = json.loads(evaluated.stdout.strip().splitlines()[-1])
    assert record["epoch"] == 2  # its objectives draw their own noise: numbers, not equal
    assert 0.0 < record["val_d_loss"] < 5.0 and 0.0 < record["val_g_loss"] < 5.0
    folder = _fresh_copy(root, "whole")
    one = _run([sys.executable, str(script), *COMMON, "--epochs", "3", "--resume", folder,
                "--checkpoint-dir", folder, "--samples", "o.png", "--metrics", f"{folder}.jsonl"],
               root)  # fmt: skip
    assert f"resumed from {folder} after epoch 2" in one.stdout
    assert [r["epoch"] for r in _records(root / f"{folder}.jsonl")] == [3]


def _fresh_copy(root: Path, name: str) -> str:
    """A copy of the save `name` under a new name: a test that resumes into it leaves the
    module's save as it was (a test run again, after torch's teardown abort, starts alike)."""
    for n in range(100):
        fresh = f"{name}-{n}"
        if not (root / fresh).exists():
            shutil.copytree(root / name, root / fresh)
            return fresh
    raise AssertionError(f"no fresh name for a copy of {name}")


def _shards(folder: Path) -> dict[str, Any]:
    """A sharded save's tensors, whole, by their flattened keys."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    target = folder.parent / f"{folder.parent.name}.pt"
    dcp_to_torch_save(folder, target)
    flat: dict[str, Any] = {}

    def walk(tree: dict[str, Any], prefix: str) -> None:
        for key, value in tree.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = value

    walk(torch.load(target, weights_only=False), "")
    return flat


TEACHER = """
model Net:
    layer fc1 = Linear(64, 16)
    layer fc2 = Linear(16, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> gelu |> self.fc2

fn first(T, A, B, x, y) -> Tensor:
    let soft = softmax(T(x) / 2.0, dim=-1)
    return kl_div(log_softmax(A(x) / 2.0, dim=-1), soft, reduction="batchmean")

fn second(T, A, B, x, y) -> Tensor:
    return mse(softmax(B(x), dim=-1), detach(softmax(A(x), dim=-1))) + cross_entropy(B(x), y)

let T = Net()
let A = Net()
let B = Net()
let data = load_dataset("digits", flatten=true)

train (T, A, B) on data:
    epochs = 2
    batch_size = 8
    precision = fp32
    distributed = "fsdp"
    freeze = [T]
    step first with AdamW(A, lr=0.002, grad_clip=1.0)
    step second with AdamW(B, lr=0.002, lr_schedule=cosine(warmup_steps=10))
"""


def test_two_fsdp_ranks_beside_a_frozen_teacher_give_one_process(tmp_path: Path) -> None:
    script = _compile(tmp_path, TEACHER, "teacher")
    _ranks(script, "--metrics", "two.jsonl", "--checkpoint-dir", "two")
    _run([sys.executable, str(script), *COMMON, "--batch-size", "16", "--metrics", "one.jsonl",
          "--checkpoint-dir", "one"], tmp_path)  # fmt: skip
    two, one = _records(tmp_path / "two.jsonl"), _records(tmp_path / "one.jsonl")
    assert [r["epoch"] for r in two] == [r["epoch"] for r in one] == [1, 2]
    for a, b in zip(two, one, strict=True):
        for key in ("first", "second", "val_first", "val_second"):
            assert a[key] == pytest.approx(b[key], abs=1e-5), (key, a, b)
    assert two[-1]["first"] < two[0]["first"]
    saved = _shards(tmp_path / "two" / "last")
    built = _built_teacher(script)
    for name, tensor in built.items():
        assert torch.equal(saved[f"models.T.{name}"], tensor), name  # frozen: as it was built
    assert not any(k.startswith("optimizers.") and ".T." in k for k in saved)


def _built_teacher(script: Path) -> dict[str, torch.Tensor]:
    """The teacher's weights as `build_trainer` makes them: the first model after the seed."""
    namespace: dict[str, Any] = {}
    exec(compile(script.read_text(), str(script), "exec"), namespace)  # defines, runs nothing
    random.seed(0)
    torch.manual_seed(0)
    return namespace["Net"]().state_dict()


def test_gan_steps_on_two_fsdp_ranks_give_one_process(tmp_path: Path) -> None:
    """train_gan.tl's G and D, its two Adam steps and `detach`, with what keeps 2 ranks of
    8 equal to one process of 16: G maps the digits themselves (not noise each rank draws
    alike), and no BatchNorm (which normalises each rank's batch)."""
    text = GAN.replace("Linear(16, 256)", "Linear(64, 256)").replace(
        "Tensor[B, 16]", "Tensor[B, 64]"
    )
    text = text.replace("    layer bn1 = BatchNorm2d(32)\n", "").replace(
        "self.bn1(self.up1(h))", "self.up1(h)"
    )
    text = text.replace("randn([x.size(0), 16])", "x.flatten(1) * 2.0 - 1.0")
    text = text.replace("randn([64, 16])", "randn([64, 64])")
    text = text.replace("    epochs = 25\n", '    epochs = 25\n    distributed = "fsdp"\n')
    text = text.replace("    batch_size = 64\n", "    batch_size = 8\n")
    assert text.count("x.flatten(1) * 2.0 - 1.0") == 2 and "bn1" not in text
    script = _compile(tmp_path, text, "gan_pairs")
    _ranks(script, "--epochs", "1", "--metrics", "two.jsonl", "--checkpoint-dir", "two",
           "--samples", "t.png")  # fmt: skip
    one = ["--epochs", "1", "--batch-size", "16", "--metrics", "one.jsonl"]
    _run([sys.executable, str(script), *COMMON, *one, "--checkpoint-dir", "one", "--samples",
          "o.png"], tmp_path)  # fmt: skip
    (two,), (one,) = _records(tmp_path / "two.jsonl"), _records(tmp_path / "one.jsonl")
    for key in ("d_loss", "g_loss", "val_d_loss", "val_g_loss"):
        assert two[key] == pytest.approx(one[key], abs=1e-5), (key, two, one)


def test_compiled_fsdp_gan_computes_what_the_uncompiled_one_does(gan: dict[str, Path]) -> None:
    """`compile = true` beside `distributed = "fsdp"` in a block of step lines: each sharded
    model `torch.compile`d (`--compile on` forces it on the CPU) trains its epochs and saves
    its shards; its losses are the uncompiled run's to 1e-3 after 24 steps (inductor
    reorders the sums)."""
    root = gan["root"]
    text = _gan("fsdp").replace("    ema = 0.99\n", "    ema = 0.99\n    compile = true\n")
    script = _compile(root, text, "gan_fsdp_compiled")
    assert "maybe_compile(G, compile_it" in script.read_text()
    _ranks(script, "--compile", "on", "--metrics", "compiled.jsonl", "--checkpoint-dir",
           "compiled", "--samples", "k.png")  # fmt: skip
    compiled, eager = _records(root / "compiled.jsonl"), _records(root / "whole.jsonl")
    assert [r["epoch"] for r in compiled] == [1, 2]
    for a, b in zip(compiled, eager, strict=True):
        assert _losses(a) == pytest.approx(_losses(b), rel=1e-3, abs=1e-3)
    assert (root / "compiled" / "last" / "COMPLETE").is_file()
