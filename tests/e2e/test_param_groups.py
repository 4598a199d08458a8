"""Parameter groups and a step of several optimizers, end to end.

The emitted step of `Muon(hidden), AdamW(rest, gains(weight_decay=0.0))` is compared with
the same step written by hand in PyTorch, as torch.optim.Muon's documentation prescribes
(Muon on the blocks' 2-D weights, AdamW on the embedding, the head, biases and gains,
no weight decay on the gains): the same weights, batches and groups, equal losses and
weights for 20 steps. A run cut mid-epoch resumes with both optimizers' state, to the bit.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

from tests.e2e.test_train_pipeline import compile_program, records, run

MODELS = """
model Block:
    layer ln = LayerNorm(32)
    layer fc = Linear(32, 32)
    fn forward(self, x: Tensor[B, 32]) -> Tensor[B, 32]:
        return x + relu(self.fc(self.ln(x)))

model Net:
    layer embed = Linear(64, 32)
    layer blocks = [Block() for _ in range(2)]
    layer head = Linear(32, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor[B, 10]:
        let h = self.embed(x)
        for blk in self.blocks:
            h = blk(h)
        return self.head(h)

fn ce(net, x, y) -> Tensor:
    return cross_entropy(net(x), y)

let net = Net()
let data = load_dataset("digits", flatten=true)
"""

PROGRAM = (
    MODELS
    + """
train net on data:
    epochs = 2
    batch_size = 64
    group hidden = params(net.blocks, ndim=2)
    group gains = params(net, ndim=1)
    group rest = params(net) - hidden - gains
    step ce with Muon(hidden, lr=0.02, momentum=0.95), AdamW(rest, gains(weight_decay=0.0), lr=3e-3, weight_decay=0.1)
"""
)


def _load(script: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    return module


def _by_hand(net: torch.nn.Module) -> tuple[torch.optim.Optimizer, torch.optim.Optimizer]:
    """Muon over the blocks' matrices; AdamW over the rest, the vectors without decay."""
    named = dict(net.named_parameters())
    hidden = [p for n, p in named.items() if n.startswith("blocks.") and p.ndim == 2]
    gains = [p for p in named.values() if p.ndim == 1]
    rest = [p for n, p in named.items() if not (n.startswith("blocks.") and p.ndim == 2)
            and p.ndim != 1]  # fmt: skip
    muon = torch.optim.Muon(hidden, lr=0.02, momentum=0.95)
    adamw = torch.optim.AdamW(
        [{"params": rest}, {"params": gains, "weight_decay": 0.0}], lr=3e-3, weight_decay=0.1
    )
    return muon, adamw


def test_emitted_muon_adamw_step_equals_torch_by_hand(tmp_path: Path) -> None:
    script = compile_program(tmp_path, PROGRAM, name="groups_step")
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--precision", "fp32"])
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    net = m.Net()
    net.load_state_dict(trainer.net.state_dict())
    muon, adamw = _by_hand(net)
    assert [len(g["params"]) for g in trainer.optimizers["ce.Muon"].param_groups] == [2]
    assert [len(g["params"]) for g in trainer.optimizers["ce.AdamW"].param_groups] == [2, 8]
    before = {k: v.clone() for k, v in net.state_dict().items()}
    batches = iter(trainer.train_loader)
    for _ in range(20):
        xb, yb = next(batches)
        emitted = m.train_step(trainer, xb, yb)
        muon.zero_grad(set_to_none=True)
        adamw.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        muon.step()
        adamw.step()
        assert torch.equal(emitted["ce"], loss.detach())
    for key, tensor in net.state_dict().items():
        assert torch.equal(trainer.net.state_dict()[key], tensor), key
    for key in ("blocks.0.fc.weight", "embed.weight", "blocks.1.ln.weight"):  # each group moved
        assert not torch.equal(before[key], net.state_dict()[key]), key


def test_muon_adamw_run_resumes_exactly_mid_epoch(tmp_path: Path) -> None:
    script = compile_program(tmp_path, PROGRAM, name="groups_resume")
    common = ["--epochs", "2", "--batch-size", "128", "--precision", "fp32"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run(script, *common, "--checkpoint-dir", str(whole), "--metrics", str(tmp_path / "w.jsonl"))
    run(script, *common, "--max-steps", "17", "--checkpoint-dir", str(cut))
    state = torch.load(cut / "last.pt", weights_only=True)
    assert set(state["optimizers"]) == {"ce.Muon", "ce.AdamW"}
    assert all("momentum_buffer" in s for s in state["optimizers"]["ce.Muon"]["state"].values())
    run(script, *common, "--checkpoint-dir", str(cut), "--resume", str(cut / "last.pt"),
        "--metrics", str(tmp_path / "c.jsonl"))  # fmt: skip
    a = torch.load(whole / "last.pt", weights_only=True)
    b = torch.load(cut / "last.pt", weights_only=True)
    assert a["step"] == b["step"] == 24
    for key, tensor in a["models"]["net"].items():
        assert torch.equal(tensor, b["models"]["net"][key]), key
    last_whole, last_cut = records(tmp_path / "w.jsonl")[-1], records(tmp_path / "c.jsonl")[-1]
    assert last_whole["ce"] == last_cut["ce"] and last_whole["val_ce"] == last_cut["val_ce"]
    assert records(tmp_path / "w.jsonl")[-1]["val_ce"] < 1.0  # it learns
