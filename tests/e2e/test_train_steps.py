"""Train blocks of `step` lines, end to end, on examples/train_gan.tl.

The emitted `train_step` is compared with the same batch step written by hand as
pytorch/examples' dcgan/main.py writes it (zero D's gradients, D on real and on detached
fakes, step D; zero G's, D on G's fakes, step G), on the same weights, batches and RNG
state: equal losses and weights for 20 steps. A run cut in the middle of an epoch
(`--max-steps`) and resumed ends where an uncut run ends, to the last bit. A block's
`metrics = [f]` (a `fn` of the models and the batch) is each epoch's validation mean,
computed again here from the saved weights.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from tensorloom.tools.check import check_file
from tests.e2e.test_train_pipeline import compile_program, records, run

ROOT = Path(__file__).resolve().parents[2]
GAN = (ROOT / "examples" / "train_gan.tl").read_text(encoding="utf-8")


def _load(script: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def test_emitted_gan_step_equals_dcgan_loop_by_hand(tmp_path: Path) -> None:
    script = compile_program(tmp_path, GAN, name="gan_step")
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--batch-size", "32", "--precision", "fp32"])
    ctx = m.DistContext(0, 0, 1, torch.device("cpu"))
    trainer = m.build_trainer(args, ctx)
    net_g, net_d = m.Generator(), m.Discriminator()
    net_g.load_state_dict(trainer.G.state_dict())
    net_d.load_state_dict(trainer.D.state_dict())
    optimizer_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for model in (trainer.G, trainer.D, net_g, net_d):
        model.train()
    criterion = torch.nn.BCEWithLogitsLoss()
    batches = iter(trainer.train_loader)
    for _ in range(20):
        xb, yb = next(batches)
        rng = torch.get_rng_state()
        emitted = m.train_step(trainer, xb, yb)
        torch.set_rng_state(rng)
        # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
        net_d.zero_grad()
        output = net_d(xb * 2.0 - 1.0)
        err_d_real = criterion(output, torch.ones_like(output))
        noise = torch.randn(len(xb), 16)
        fake = net_g(noise)
        output = net_d(fake.detach())
        err_d_fake = criterion(output, torch.zeros_like(output))
        err_d = err_d_real + err_d_fake
        err_d.backward()
        optimizer_d.step()
        # (2) update G: maximize log(D(G(z)))
        net_g.zero_grad()
        output = net_d(net_g(torch.randn(len(xb), 16)))
        err_g = criterion(output, torch.ones_like(output))
        err_g.backward()
        optimizer_g.step()
        assert torch.equal(emitted["d_loss"], err_d.detach())
        assert torch.equal(emitted["g_loss"], err_g.detach())
    for ours, theirs in ((trainer.G, net_g), (trainer.D, net_d)):
        for a, b in zip(ours.state_dict().values(), theirs.state_dict().values(), strict=True):
            assert torch.equal(a, b)
    assert F.mse_loss(trainer.G.fc.weight, net_g.fc.weight).item() == 0.0


def test_gan_resumes_exactly_mid_epoch(tmp_path: Path) -> None:
    script = compile_program(tmp_path, GAN, name="gan_resume")
    common = ["--epochs", "2", "--batch-size", "128", "--precision", "fp32"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run(script, *common, "--checkpoint-dir", str(whole), "--metrics", str(tmp_path / "w.jsonl"))
    first = run(script, *common, "--max-steps", "18", "--checkpoint-dir", str(cut))
    assert "partial" not in first.stdout
    run(script, *common, "--checkpoint-dir", str(cut), "--resume", str(cut / "last.pt"),
        "--metrics", str(tmp_path / "c.jsonl"))  # fmt: skip
    a = torch.load(whole / "last.pt", weights_only=True)
    b = torch.load(cut / "last.pt", weights_only=True)
    assert a["step"] == b["step"] == 24
    for name in ("G", "D"):
        for key, tensor in a["models"][name].items():
            assert torch.equal(tensor, b["models"][name][key]), (name, key)
    last_whole, last_cut = records(tmp_path / "w.jsonl")[-1], records(tmp_path / "c.jsonl")[-1]
    for key in ("d_loss", "g_loss", "val_d_loss", "val_g_loss"):
        assert last_whole[key] == last_cut[key], key
    assert set(records(tmp_path / "w.jsonl")[0]) >= {"d_loss", "g_loss", "val_d_loss"}


TEACHER = """
model M:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

fn teach(T, S, x, y) -> Tensor:
    return cross_entropy(T(x), y)

fn distil(T, S, x, y) -> Tensor:
    let soft = softmax(T(x) / 2.0, dim=-1)
    return kl_div(log_softmax(S(x) / 2.0, dim=-1), soft, reduction="batchmean")

let T = M()
let S = M()
let data = load_dataset("digits", flatten=true)

train (T, S) on data:
    epochs = 4
    batch_size = 128
"""


def test_steps_run_in_their_epochs_only(tmp_path: Path) -> None:
    """`until epoch 2` / `from epoch 3`: each epoch's record holds the objectives whose steps
    ran in it (their means over its batches); once its step has ended the teacher is left
    as it was, so its validation objective stays put while the student's falls."""
    text = TEACHER + (
        "    step teach with Adam(T, lr=0.003) until epoch 2\n"
        "    step distil with Adam(S, lr=0.003) from epoch 3\n"
    )
    script = compile_program(tmp_path, text, name="phases")
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    ran = [("teach" in r, "distil" in r) for r in rows]
    assert ran == [(True, False), (True, False), (False, True), (False, True)]
    assert rows[1]["teach"] < rows[0]["teach"]  # type: ignore[operator]
    assert rows[1]["val_teach"] == rows[2]["val_teach"] == rows[3]["val_teach"]
    assert rows[3]["val_distil"] < rows[2]["val_distil"]  # type: ignore[operator]
    assert rows[-1]["steps"] == 4 * 12  # 1,617 training digits, 12 whole batches of 128


def test_a_model_frozen_on_purpose_keeps_its_weights_and_no_warning(tmp_path: Path) -> None:
    """`freeze = [T]`: no TL0435 (an accidental frozen model still gets one), and the teacher
    runs under no_grad in eval mode: its weights after training are its initial ones.
    `--evaluate` of the checkpoint prints the last epoch's validation objective."""
    text = TEACHER + "    freeze = [T]\n    step distil with Adam(S, lr=0.003)\n"
    warned = TEACHER + "    step distil with Adam(S, lr=0.003)\n"
    assert "TL0435" not in _codes(tmp_path, text)
    assert "TL0435" in _codes(tmp_path, warned)
    script = compile_program(tmp_path, text, name="frozen")
    run(script, "--epochs", "2", "--checkpoint-dir", "ck", "--metrics", "m.jsonl")
    evaluated = run(script, "--evaluate", "ck/last.pt").stdout.strip().splitlines()[-1]
    last = records(tmp_path / "m.jsonl")[-1]
    assert json.loads(evaluated) == {"epoch": 2, "val_distil": last["val_distil"]}
    m = _load(script)
    args = m.parse_args(["--device", "cpu"])
    fresh = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    saved = torch.load(tmp_path / "ck" / "last.pt", weights_only=True)["models"]
    for key, tensor in fresh.T.model.state_dict().items():
        assert torch.equal(saved["T"][key], tensor), key
    assert not torch.equal(saved["S"]["fc1.weight"], fresh.S.state_dict()["fc1.weight"])


def test_gan_sample_grid_is_a_png_of_its_digits(tmp_path: Path) -> None:
    """`samples = sample`: after each epoch the script writes the generator's 64 digits as a
    PNG grid (8 by 8, each enlarged to 32 pixels, 2 pixels apart) at `--samples`."""
    script = compile_program(tmp_path, GAN, name="gan_samples")
    run(script, "--epochs", "1", "--batch-size", "512", "--samples", "out/grid.png")
    data = (tmp_path / "out" / "grid.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert (width, height, depth, colour) == (274, 274, 8, 0)
    (length,) = struct.unpack(">I", data[33:37])
    assert data[37:41] == b"IDAT"
    rows = zlib.decompress(data[41:41 + length])
    assert len(rows) == 274 * (274 + 1)
    assert len(set(rows)) > 16  # not a blank image


def _codes(tmp_path: Path, text: str) -> set[str]:
    """The codes `tlc check` reports for `text`."""
    source = tmp_path / "checked.tl"
    source.write_text(text, encoding="utf-8")
    result, _ = check_file(source)
    return {d.code for d in result.sink.diagnostics}


PAIR = """
model Net:
    layer fc1 = Linear(64, 16)
    layer fc2 = Linear(16, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> gelu |> self.fc2

fn first(A, B, x, y) -> Tensor:
    return cross_entropy(A(x), y)

fn second(A, B, x, y) -> Tensor:
    return mse(softmax(B(x), dim=-1), detach(softmax(A(x), dim=-1))) + cross_entropy(B(x), y)

let A = Net()
let B = Net()
let data = load_dataset("digits", flatten=true)

train (A, B) on data:
    epochs = 2
    batch_size = 8
    precision = fp32
    step first with AdamW(A, lr=0.002)
    step second with AdamW(B, lr=0.002)
"""


def _close_records(a: list[dict[str, object]], b: list[dict[str, object]], tol: float) -> None:
    assert [r["epoch"] for r in a] == [r["epoch"] for r in b]
    for x, y in zip(a, b, strict=True):
        for key in ("first", "second", "val_first", "val_second"):
            assert abs(x[key] - y[key]) < tol, (key, x, y)  # type: ignore[operator]


@pytest.mark.distributed
def test_two_ddp_ranks_give_one_process_objectives(tmp_path: Path) -> None:
    """`distributed = true`: each trained model has its own DistributedDataParallel wrap (a
    step calls the wraps of the models it updates, the others plain). Two gloo ranks at 8
    samples each train as one process at 16: the same objectives per epoch."""
    source = tmp_path / "pair.tl"
    source.write_text(PAIR + "    distributed = true\n", encoding="utf-8")
    tlc = [sys.executable, "-m", "tensorloom.tools.tlc"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    two = subprocess.run([*tlc, "run", str(source), "--nproc", "2", "--", "--metrics", "two.jsonl",
                          "--checkpoint-dir", "two"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300, check=False)  # fmt: skip
    assert two.returncode == 0, two.stderr[-3000:]
    script = compile_program(tmp_path, PAIR + "    distributed = true\n", name="one")
    run(script, "--batch-size", "16", "--metrics", "one.jsonl", "--checkpoint-dir", "one")
    _close_records(records(tmp_path / "two.jsonl"), records(tmp_path / "one.jsonl"), 1e-5)
    saved = torch.load(tmp_path / "two" / "last.pt", weights_only=True)
    assert set(saved["models"]) == {"A", "B"} and "fc1.weight" in saved["models"]["A"]


def test_compiled_steps_equal_eager_ones_on_the_cpu(tmp_path: Path) -> None:
    """`compile = true` with `--compile on`: each model goes through torch.compile (inductor
    on the CPU); a few steps give the eager steps' objectives."""
    script = compile_program(tmp_path, PAIR + "    compile = true\n", name="compiled")
    common = ["--epochs", "1", "--batch-size", "512"]
    run(script, *common, "--compile", "on", "--metrics", "on.jsonl", "--checkpoint-dir", "on")
    run(script, *common, "--compile", "off", "--metrics", "off.jsonl", "--checkpoint-dir", "off")
    _close_records(records(tmp_path / "on.jsonl"), records(tmp_path / "off.jsonl"), 1e-4)


def test_ema_of_the_trained_models_is_validated_and_resumes_exactly(tmp_path: Path) -> None:
    """`ema = 0.9`: an average of each trained model's weights, updated after each step of
    its optimizer, validated as `ema_val_<objective>` and kept in the checkpoint: a run cut
    mid-epoch and resumed reports the uncut run's averages, to the last bit."""
    script = compile_program(tmp_path, PAIR + "    ema = 0.9\n", name="averaged")
    common = ["--epochs", "2", "--batch-size", "128"]
    run(script, *common, "--checkpoint-dir", "whole", "--metrics", "w.jsonl")
    run(script, *common, "--max-steps", "17", "--checkpoint-dir", "cut")
    run(script, *common, "--checkpoint-dir", "cut", "--resume", "cut/last.pt",
        "--metrics", "c.jsonl")  # fmt: skip
    whole, cut = records(tmp_path / "w.jsonl")[-1], records(tmp_path / "c.jsonl")[-1]
    for key in ("first", "second", "ema_val_first", "ema_val_second"):
        assert whole[key] == cut[key], key
    assert whole["ema_val_first"] != whole["val_first"]
    saved = torch.load(tmp_path / "whole" / "last.pt", weights_only=True)
    assert set(saved["extra"]["emas"]) == {"A", "B"}


METRIC_STEPS = """
model M:
    layer fc = Linear(64, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return self.fc(x)

fn first(A, B, x, y) -> Tensor:
    return cross_entropy(A(x), y)

fn second(A, B, x, y) -> Tensor:
    return cross_entropy(B(x), y)

fn agree(A, B, x, y) -> Tensor:
    return mean((argmax(A(x), dim=-1) == y).float() * (argmax(B(x), dim=-1) == y).float())

let A = M()
let B = M()
let data = load_dataset("digits", flatten=true)

train (A, B) on data:
    epochs = 2
    metrics = [agree]
    step first with Adam(A, lr=0.01)
    step second with Adam(B, lr=0.01)
"""


def test_step_metrics_are_validation_means_in_the_record_and_progress(tmp_path: Path) -> None:
    script = compile_program(tmp_path, METRIC_STEPS, name="steps_metrics")
    done = run(script, "--metrics", "m.jsonl", "--checkpoint-dir", "ck")
    rows = records(tmp_path / "m.jsonl")
    assert [r["epoch"] for r in rows] == [1, 2]
    assert "val_agree" in done.stdout.splitlines()[-2]  # the last epoch's progress line
    m = _load(script)
    args = m.parse_args(["--device", "cpu"])
    _, val_loader, _ = m.build_loaders(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    saved = torch.load(tmp_path / "ck" / "last.pt", weights_only=True)["models"]
    a, b = m.M(), m.M()
    a.load_state_dict(saved["A"])
    b.load_state_dict(saved["B"])
    hits, count = 0, 0
    with torch.no_grad():
        for x, y in val_loader:
            hits += int(((a(x).argmax(-1) == y) & (b(x).argmax(-1) == y)).sum())
            count += len(y)
    assert count > 0 and rows[-1]["val_agree"] == pytest.approx(hits / count, abs=1e-6)
    assert rows[-1]["val_agree"] > 0.5  # learned: both right far above chance (1 in 100)
    evaluated = run(script, "--evaluate", "ck/last.pt")
    assert json.loads(evaluated.stdout.splitlines()[-1])["val_agree"] == pytest.approx(
        rows[-1]["val_agree"], abs=1e-9)  # fmt: skip
