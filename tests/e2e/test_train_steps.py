"""Train blocks of `step` lines, end to end, on examples/train_gan.tl.

The emitted `train_step` is compared with the same batch step written by hand as
pytorch/examples' dcgan/main.py writes it (zero D's gradients, D on real and on detached
fakes, step D; zero G's, D on G's fakes, step G), on the same weights, batches and RNG
state: equal losses and weights for 20 steps. A run cut in the middle of an epoch
(`--max-steps`) and resumed ends where an uncut run ends, to the last bit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

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
