"""runtime/sharded_steps.py: one sharded save of several models, optimizers and averages.

In one process, in a process group of one (gloo on an in-process store, as a
`python script.py` FSDP run has); 2 ranks are tests/e2e/test_steps_fsdp.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.distributed.fsdp import FSDPModule

from tensorloom.backends.runtime.distributed import setup_distributed, teardown_distributed
from tensorloom.backends.runtime.recipe import ModelEMA
from tensorloom.backends.runtime.sharded import (
    ShardedCheckpointError,
    save_sharded_state,
    shard_model,
)
from tensorloom.backends.runtime.sharded_steps import (
    gathered_models,
    load_sharded_models,
    save_sharded_models,
)
from tensorloom.backends.runtime.steps import Frozen


@pytest.fixture
def group(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR"):
        monkeypatch.delenv(name, raising=False)
    setup_distributed("cpu", group_of_one=True)
    yield
    teardown_distributed()


class Gen(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class Teacher(Gen):
    pass


def _block(seed: int) -> tuple[dict[str, nn.Module], dict[str, torch.optim.Optimizer],
                               dict[str, ModelEMA]]:  # fmt: skip
    """A trained model `G`, a frozen teacher `T`, an Adam over G and G's sharded average."""
    torch.manual_seed(seed)
    g, t, copy = shard_model(Gen(), []), shard_model(Teacher(), []), shard_model(Gen(), [])
    optimizer = torch.optim.Adam(g.parameters(), lr=0.01)
    return {"G": g, "T": Frozen(t)}, {"g_loss": optimizer}, {"G": ModelEMA(g, 0.9, copy)}


def _step(models: dict[str, nn.Module], optimizers: dict[str, torch.optim.Optimizer],
          emas: dict[str, ModelEMA]) -> float:  # fmt: skip
    torch.manual_seed(1)
    x = torch.randn(5, 4)
    loss = (models["G"](x) - models["T"](x)).square().mean()
    loss.backward()
    optimizers["g_loss"].step()
    optimizers["g_loss"].zero_grad()
    emas["G"].update(models["G"])
    return loss.item()


@pytest.mark.usefixtures("group")
def test_a_save_of_several_models_resumes_the_same_numbers(tmp_path: Path) -> None:
    models, optimizers, emas = _block(seed=0)
    _step(models, optimizers, emas)
    save_sharded_models(tmp_path / "last", models=models, optimizers=optimizers,
                        scalers={"g_loss": None}, epoch=1, step=1, emas=emas,
                        extra={"carry": 3})  # fmt: skip
    expected = _step(models, optimizers, emas)
    with gathered_models(*models.values(), emas=emas), torch.no_grad():
        averaged = emas["G"].module(torch.ones(1, 4))

    others, other_optimizers, other_emas = _block(seed=7)  # other weights, fresh state
    state = load_sharded_models(tmp_path, models=others, optimizers=other_optimizers,
                                scalers={"g_loss": None}, emas=other_emas)  # fmt: skip
    assert (state["epoch"], state["step"], state["extra"]) == (1, 1, {"carry": 3})
    assert _step(others, other_optimizers, other_emas) == pytest.approx(expected, abs=1e-7)
    with gathered_models(*others.values(), emas=other_emas), torch.no_grad():
        assert torch.allclose(other_emas["G"].module(torch.ones(1, 4)), averaged, atol=1e-7)


@pytest.mark.usefixtures("group")
def test_a_save_of_other_models_is_refused_by_name(tmp_path: Path) -> None:
    models, optimizers, _ = _block(seed=0)
    save_sharded_models(tmp_path / "last", models=models, optimizers=optimizers,
                        scalers={}, epoch=1, step=1)  # fmt: skip
    renamed = {"G": models["G"], "S": models["T"]}
    with pytest.raises(ShardedCheckpointError, match=r"holds `G` \(`Gen`\), `T` \(`Teacher`\)"):
        load_sharded_models(tmp_path, models=renamed)
    one = tmp_path / "one"
    save_sharded_state(one / "last", epoch=1, model=models["G"], optimizer=optimizers["g_loss"],
                       step=1)  # fmt: skip
    with pytest.raises(ShardedCheckpointError, match="is a one-model save"):
        load_sharded_models(one, models=models)


@pytest.mark.usefixtures("group")
def test_batch_norm_is_gathered_in_fp32_beside_bf16_weights() -> None:
    """`shard_model(..., param_dtype=bf16)`: a BatchNorm is a unit of its own gathered in
    fp32, as its running statistics are (batch norm refuses a bf16 weight beside them)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                        nn.Linear(144, 2))  # fmt: skip
    shard_model(net, [], param_dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(torch.randn(4, 1, 8, 8))
    out.sum().backward()
    assert out.dtype == torch.float32 and net[1].weight.grad is not None
    assert isinstance(net[1], FSDPModule) and not isinstance(net[0], FSDPModule)
