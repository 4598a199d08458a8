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

import pytest
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
    step ce with Muon(hidden, lr=0.02, momentum=0.95), AdamW(rest, gains(weight_decay=0.0),
                                                             lr=3e-3, weight_decay=0.1)
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


SCHEDULED = (
    MODELS
    + """
train net on data:
    epochs = 2
    batch_size = 64
    grad_clip = 1.0
    group hidden = params(net.blocks, ndim=2)
    step ce with (Muon(hidden, lr=0.02, lr_schedule=cosine(warmup_steps=5)),
                  AdamW(params(net) - hidden, lr=3e-3, grad_clip=0.5,
                        lr_schedule=linear(min_lr=1e-4)))
"""
)


def test_each_optimizer_has_its_schedule_and_clip_as_torch_schedulers(tmp_path: Path) -> None:
    """Muon warms up over 5 steps, then a cosine to 0 (torch's LinearLR then
    CosineAnnealingLR); AdamW falls linearly to 1e-4 (LinearLR); the block's clip bounds
    Muon's gradients, AdamW's own bound its."""
    script = compile_program(tmp_path, SCHEDULED, name="groups_schedules")
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--precision", "fp32"])
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    total = 2 * len(trainer.train_loader)
    net = m.Net()
    net.load_state_dict(trainer.net.state_dict())
    named = dict(net.named_parameters())
    hidden = [p for n, p in named.items() if n.startswith("blocks.") and p.ndim == 2]
    rest = [p for n, p in named.items() if not (n.startswith("blocks.") and p.ndim == 2)]
    muon, adamw = torch.optim.Muon(hidden, lr=0.02), torch.optim.AdamW(rest, lr=3e-3)
    lr_sched = torch.optim.lr_scheduler
    warm = lr_sched.LinearLR(muon, start_factor=1 / 5, end_factor=1.0, total_iters=4)
    cosine = lr_sched.CosineAnnealingLR(muon, T_max=total - 5, eta_min=0.0)
    muon_schedule = lr_sched.SequentialLR(muon, [warm, cosine], milestones=[5])
    adamw_schedule = lr_sched.LinearLR(adamw, start_factor=1.0, end_factor=1e-4 / 3e-3,
                                       total_iters=total)  # fmt: skip
    ours = trainer.optimizers["ce.Muon"], trainer.optimizers["ce.AdamW"]
    batches = [batch for _ in range(2) for batch in trainer.train_loader]
    for xb, yb in batches:
        for mine, theirs in zip(ours, (muon, adamw), strict=True):
            assert mine.param_groups[0]["lr"] == pytest.approx(theirs.param_groups[0]["lr"])
        emitted = m.train_step(trainer, xb, yb)
        muon.zero_grad(set_to_none=True)
        adamw.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(hidden, 1.0)
        muon.step()
        torch.nn.utils.clip_grad_norm_(rest, 0.5)
        adamw.step()
        muon_schedule.step()
        adamw_schedule.step()
        torch.testing.assert_close(emitted["ce"], loss.detach(), rtol=1e-4, atol=1e-5)
    assert ours[0].param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert ours[1].param_groups[0]["lr"] == pytest.approx(1e-4)
    for key, tensor in net.state_dict().items():
        torch.testing.assert_close(trainer.net.state_dict()[key], tensor, rtol=1e-3, atol=1e-4)


def test_scheduled_run_resumes_exactly_mid_epoch(tmp_path: Path) -> None:
    script = compile_program(tmp_path, SCHEDULED, name="groups_sched_resume")
    common = ["--epochs", "2", "--batch-size", "128", "--precision", "fp32"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run(script, *common, "--checkpoint-dir", str(whole))
    run(script, *common, "--max-steps", "17", "--checkpoint-dir", str(cut))
    assert set(torch.load(cut / "last.pt", weights_only=True)["schedulers"]) == {
        "ce.Muon", "ce.AdamW"
    }  # fmt: skip
    run(script, *common, "--checkpoint-dir", str(cut), "--resume", str(cut / "last.pt"))
    a = torch.load(whole / "last.pt", weights_only=True)
    b = torch.load(cut / "last.pt", weights_only=True)
    assert a["schedulers"] == b["schedulers"]
    for key, tensor in a["models"]["net"].items():
        assert torch.equal(tensor, b["models"]["net"][key]), key


def test_info_budgets_each_optimizers_state_as_the_run_holds_it(tmp_path: Path) -> None:
    """`tlc info`'s optimizer state of Muon (a momentum buffer) and AdamW (two moments) over
    their groups equals the bytes the emitted optimizers hold after a step."""
    from tensorloom.analysis.report import InfoRequest, info_json

    source = tmp_path / "groups_info.tl"
    source.write_text(PROGRAM, encoding="utf-8")
    found = info_json(source, InfoRequest())
    net = next(model for model in found["models"] if model["name"] == "net")
    shares = {o["name"]: o for o in net["settings"]["optimizers"]}
    script = compile_program(tmp_path, PROGRAM, name="groups_info_run")
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--precision", "fp32"])
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    xb, yb = next(iter(trainer.train_loader))
    m.train_step(trainer, xb, yb)
    for name in ("Muon", "AdamW"):
        optimizer = trainer.optimizers[f"ce.{name}"]
        params = sum(p.numel() for g in optimizer.param_groups for p in g["params"])
        held = sum(t.numel() * t.element_size() for s in optimizer.state.values()
                   for t in s.values() if isinstance(t, torch.Tensor) and t.dim() > 0)  # fmt: skip
        assert shares[name]["params"] == params
        assert shares[name]["state_bytes"] == held, name
    assert net["memory"]["optimizer_state"] == sum(o["state_bytes"] for o in shares.values())
    assert net["settings"]["optimizer"] == "Muon + AdamW"


ONE_MODEL = (
    MODELS.replace("fn ce(net, x, y) -> Tensor:\n    return cross_entropy(net(x), y)\n", "")
    + """
train net on data:
    epochs = 2
    batch_size = 64
    loss = CrossEntropy
    compile = false
    grad_clip = 1.0
    group hidden = params(net.blocks, ndim=2)
    group gains = params(net, ndim=1)
    optimizer = (Muon(hidden, lr=0.02), AdamW(params(net) - hidden - gains,
                                              gains(weight_decay=0.0), lr=3e-3))
"""
)


def test_one_model_block_steps_muon_and_adamw_as_torch_by_hand(tmp_path: Path) -> None:
    """A plain one-model block (`loss`, `optimizer = (Muon(hidden), AdamW(rest))`): the
    loop's `OptimizerSet` steps, clips and checkpoints both as one; its step equals torch's
    Muon and AdamW over the same groups, clipped together, by hand."""
    script = compile_program(tmp_path, ONE_MODEL, name="groups_one_model")
    m = _load(script)
    args = m.parse_args(["--device", "cpu", "--precision", "fp32"])
    trainer = m.build_trainer(args, m.DistContext(0, 0, 1, torch.device("cpu")))
    assert set(trainer.optimizer.optimizers) == {"Muon", "AdamW"}
    net = m.Net()
    net.load_state_dict(trainer.model.state_dict())
    muon, adamw = _by_hand(net)
    adamw.param_groups[0]["weight_decay"] = 0.01  # the block leaves AdamW's default
    batches = iter(trainer.train_loader)
    for _ in range(15):
        xb, yb = next(batches)
        m._forward_backward(trainer, xb, yb)
        m._optimizer_step(trainer)
        muon.zero_grad(set_to_none=True)
        adamw.zero_grad(set_to_none=True)
        F.cross_entropy(net(xb), yb).backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        muon.step()
        adamw.step()
    for key, tensor in net.state_dict().items():
        assert torch.equal(trainer.model.state_dict()[key], tensor), key


def test_one_model_block_resumes_both_optimizers_exactly(tmp_path: Path) -> None:
    script = compile_program(tmp_path, ONE_MODEL, name="groups_one_resume")
    common = ["--epochs", "2", "--batch-size", "128", "--precision", "fp32"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    run(script, *common, "--checkpoint-dir", str(whole))
    run(script, *common, "--max-steps", "17", "--checkpoint-dir", str(cut))
    run(script, *common, "--checkpoint-dir", str(cut), "--resume", str(cut / "last.pt"))
    a = torch.load(whole / "last.pt", weights_only=True)
    b = torch.load(cut / "last.pt", weights_only=True)
    assert set(b["optimizer"]) == {"Muon", "AdamW"}
    for key, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][key]), key


SELECTIONS = {  # each form, and the runtime call the script makes of it
    "params(net.blocks, ndim=2)": lambda pg, n: pg(n, "blocks", ndim=2),
    "params(net.blocks[1:2])": lambda pg, n: pg(n, "blocks[1:2]"),
    'params(net, match="*.bias")': lambda pg, n: pg(n, match="*.bias"),
    'params(net.blocks, match=["*.ln.*", "*.fc.bias"])':
        lambda pg, n: pg(n, "blocks", match=("*.ln.*", "*.fc.bias")),
    "net.head": lambda pg, n: pg(n, "head"),
    "net.embed.weight": lambda pg, n: pg(n, "embed.weight"),
    "params(net) - params(net, ndim=1)": lambda pg, n: pg(n) - pg(n, ndim=1),
    "params(net.head, net.embed) + net.blocks[0]":
        lambda pg, n: pg(n, "head") + pg(n, "embed") + pg(n, "blocks.0"),
}  # fmt: skip


def test_runtime_selects_what_the_check_resolved(tmp_path: Path) -> None:
    """`parameter_group` (runtime/steps.py) and check-train's Resolver agree on every form
    of selection: paths, slices, globs, `ndim`, union and complement."""
    from tensorloom.analysis.profile import compile_for_info
    from tensorloom.dialects import train
    from tensorloom.passes.support.param_groups import Resolver
    from tensorloom.passes.support.step_groups import model_trees

    lines = [f"    group g{i} = {text}" for i, text in enumerate(SELECTIONS)]
    text = PROGRAM.replace("    group hidden", "\n".join(lines) + "\n    group hidden", 1)
    source = tmp_path / "selections.tl"
    source.write_text(text, encoding="utf-8")
    result = compile_for_info(source, {})
    assert result.ok and result.module is not None
    loop = next(op for op in result.module.walk() if isinstance(op, train.LoopOp))
    groups = {name: op.value for name, op in loop.groups().items()}
    resolver = Resolver(["net"], model_trees(result.module, ["net"]), groups)
    m = _load(compile_program(tmp_path, text, name="selections"))
    net = m.Net()
    names = {id(p): n for n, p in net.named_parameters()}
    for i, (written, select) in enumerate(SELECTIONS.items()):
        static = [name for _, name in resolver.group(f"g{i}") or []]
        selected = [names[id(p)] for p in select(m.parameter_group, net)]
        assert static and sorted(static) == sorted(selected), written
