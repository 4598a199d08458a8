"""runtime/steps.py: a frozen model, one optimizer step through its scaler, an epoch of
batches, checkpoints of several models, and the summary line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tensorloom.backends.runtime.steps import (
    Frozen,
    StepsCheckpointError,
    format_steps_summary,
    load_models_checkpoint,
    mean_objectives,
    run_epoch,
    save_models_checkpoint,
    step_optimizer,
)


def test_frozen_model_runs_without_gradients_in_eval_mode() -> None:
    inner = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    frozen = Frozen(inner)
    frozen.train()
    x = torch.ones(2, 4, requires_grad=True)
    out = frozen(x)
    assert not out.requires_grad and not inner.training
    assert torch.equal(out, inner(x).detach())  # dropout off: the same twice
    assert all(not p.requires_grad for p in inner.parameters())


def test_step_optimizer_updates_only_its_parameters() -> None:
    a, b = nn.Linear(2, 1), nn.Linear(2, 1)
    before = b.weight.detach().clone()
    optimizer = torch.optim.SGD(a.parameters(), lr=0.1)
    loss = (a(torch.ones(3, 2)) + b(torch.ones(3, 2))).pow(2).mean()
    start = a.weight.detach().clone()
    step_optimizer(loss, optimizer, None)
    assert not torch.equal(a.weight, start) and torch.equal(b.weight, before)


def test_run_epoch_skips_the_batches_done_and_stops_at_total() -> None:
    batches = [(torch.full((2,), float(i)), torch.zeros(2)) for i in range(5)]
    seen: list[float] = []

    def step(xb: torch.Tensor, yb: torch.Tensor) -> dict[str, torch.Tensor]:
        seen.append(float(xb[0]))
        return {"a": xb.sum()}

    sums, done = run_epoch(step, batches, sums={"a": torch.zeros(())}, done=1, total=4,
                           stop=lambda: False)  # fmt: skip
    assert seen == [1.0, 2.0, 3.0] and done == 4 and float(sums["a"]) == 12.0


def test_mean_objectives_weighs_batches_by_size() -> None:
    batches = [(torch.ones(1), torch.zeros(1)), (torch.ones(3) * 3, torch.zeros(3))]
    means = mean_objectives(lambda xb, yb: {"val_a": xb.mean()}, batches)
    assert means == {"val_a": pytest.approx((1.0 + 3 * 3.0) / 4)}


def test_checkpoint_round_trip_of_two_models_and_optimizers(tmp_path: Path) -> None:
    g, d = nn.Linear(2, 2), nn.Linear(2, 1)
    optimizers = {"g": torch.optim.Adam(g.parameters()), "d": torch.optim.Adam(d.parameters())}
    loss = d(g(torch.ones(1, 2))).sum()
    loss.backward()
    for optimizer in optimizers.values():
        optimizer.step()
    path = save_models_checkpoint(tmp_path / "last.pt", models={"G": g, "D": Frozen(d)},
                                  optimizers=optimizers, scalers={"g": None, "d": None},
                                  epoch=3, step=7)  # fmt: skip
    g2, d2 = nn.Linear(2, 2), nn.Linear(2, 1)
    fresh = {"g": torch.optim.Adam(g2.parameters()), "d": torch.optim.Adam(d2.parameters())}
    state = load_models_checkpoint(path, models={"G": g2, "D": d2}, optimizers=fresh)
    assert (state["epoch"], state["step"]) == (3, 7)
    assert torch.equal(g2.weight, g.weight) and torch.equal(d2.weight, d.weight)
    assert fresh["g"].state_dict()["state"][0]["step"] == 1
    with pytest.raises(StepsCheckpointError):
        load_models_checkpoint(path, models={"G": nn.Linear(3, 3)})


def test_summary_line_shows_each_objective() -> None:
    record = {"epoch": 3, "d_loss": 1.2, "g_loss": 0.8, "val_d_loss": 1.25, "samples_per_s": 9120.0,
              "time": 1.2, "steps": 75}  # fmt: skip
    line = format_steps_summary(record, epochs=25)
    assert line == ("epoch  3/25  d_loss 1.2000  g_loss 0.8000  val_d_loss 1.2500  "
                    "9,120 samples/s  1.20s")  # fmt: skip


def _two_optimizers(net: nn.Module) -> tuple[torch.optim.Optimizer, torch.optim.Optimizer]:
    matrices = [p for p in net.parameters() if p.ndim == 2]
    vectors = [p for p in net.parameters() if p.ndim != 2]
    return torch.optim.Muon(matrices, lr=0.05), torch.optim.AdamW(vectors, lr=0.01)


def test_step_optimizer_steps_several_through_one_scaler_each_clipped_apart() -> None:
    """One backward, each optimizer unscaled, clipped over its own parameters and stepped
    through the step's GradScaler, one update after them: torch's AMP recipe for several
    optimizers, written out by hand on a copy."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    copy = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    copy.load_state_dict(net.state_dict())
    ours, theirs = _two_optimizers(net), _two_optimizers(copy)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    reference = torch.amp.GradScaler("cpu", init_scale=1024.0)
    for _ in range(4):
        x = torch.randn(3, 4)
        step_optimizer(net(x).pow(2).mean(), ours, scaler, clip=(0.5, None))
        reference.scale(copy(x).pow(2).mean()).backward()
        reference.unscale_(theirs[0])
        torch.nn.utils.clip_grad_norm_(theirs[0].param_groups[0]["params"], 0.5)
        reference.step(theirs[0])
        reference.step(theirs[1])
        reference.update()
        for o in (*ours, *theirs):
            o.zero_grad(set_to_none=True)
    for a, b in zip(net.state_dict().values(), copy.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert scaler.get_scale() == reference.get_scale()


def test_optimizer_set_is_stepped_scheduled_and_saved_as_one() -> None:
    """`OptimizerSet`: the loop's one optimizer over several; a LambdaLR reaches every group,
    the state dict holds each one's and loads back."""
    from tensorloom.backends.runtime.steps import OptimizerSet

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    muon, adamw = _two_optimizers(net)
    both = OptimizerSet({"Muon": muon, "AdamW": adamw})
    schedule = torch.optim.lr_scheduler.LambdaLR(both, lambda step: 0.5**step)
    before = [p.detach().clone() for p in net.parameters()]
    net(torch.randn(3, 4)).pow(2).mean().backward()
    both.step()
    schedule.step()
    both.zero_grad(set_to_none=True)
    assert all(not torch.equal(a, p) for a, p in zip(before, net.parameters(), strict=True))
    assert all(p.grad is None for p in net.parameters())
    assert muon.param_groups[0]["lr"] == 0.025 and adamw.param_groups[0]["lr"] == 0.005
    state = both.state_dict()
    assert set(state) == {"Muon", "AdamW"} and state["AdamW"]["state"]
    fresh = OptimizerSet(dict(zip(("Muon", "AdamW"), _two_optimizers(net), strict=True)))
    fresh.load_state_dict(state)
    assert fresh.optimizers["AdamW"].state_dict()["state"].keys() == state["AdamW"]["state"].keys()
