"""The runtime's loaders: DDP shards are disjoint and cover, and orders are seeded."""

from __future__ import annotations

import pytest
import torch

from tensorloom.backends.runtime.loader import DeviceLoader, HostLoader, make_loader

CPU = torch.device("cpu")


def _loader(n: int, rank: int, world: int, **options: object) -> DeviceLoader:
    x = torch.arange(n).float().unsqueeze(1)
    return DeviceLoader(x, torch.arange(n), batch_size=4, device=CPU, rank=rank,
                        world_size=world, seed=7, **options)  # type: ignore[arg-type]  # fmt: skip


def _epoch_labels(loader: DeviceLoader, epoch: int) -> list[int]:
    loader.set_epoch(epoch)
    return [int(v) for _, y in loader for v in y]


@pytest.mark.parametrize(("n", "world"), [(103, 2), (103, 3), (64, 4)])
def test_training_shards_are_disjoint_equal_and_nearly_cover(n: int, world: int) -> None:
    for epoch in range(3):
        shards = [_epoch_labels(_loader(n, r, world), epoch) for r in range(world)]
        seen = [v for shard in shards for v in shard]
        assert len(seen) == len(set(seen)) == n // world * world
        assert {len(s) for s in shards} == {n // world}


def test_validation_shards_cover_every_sample_once() -> None:
    shards = [
        _epoch_labels(_loader(103, r, 3, shuffle=False, even_shards=False), 0) for r in range(3)
    ]
    assert sorted(v for s in shards for v in s) == list(range(103))


def test_order_depends_only_on_seed_and_epoch() -> None:
    first, again = _loader(50, 0, 1), _loader(50, 0, 1)
    assert _epoch_labels(first, 2) == _epoch_labels(again, 2)
    assert _epoch_labels(first, 1) != _epoch_labels(first, 2)
    restored = _loader(50, 0, 1)
    restored.load_state_dict(first.state_dict())
    assert _epoch_labels(restored, 2) == _epoch_labels(first, 2)


def test_drop_last_gives_full_batches() -> None:
    loader = _loader(103, 0, 1, drop_last=True)
    sizes = [len(y) for _, y in loader]
    assert len(loader) == 25 and set(sizes) == {4}
    assert len(_loader(103, 0, 1)) == 26


def test_batches_pair_inputs_with_their_labels() -> None:
    for xb, yb in _loader(30, 1, 2):
        assert torch.equal(xb[:, 0].long(), yb)


def test_host_loader_with_distributed_sampler_shards() -> None:
    x, y = torch.arange(40).float().unsqueeze(1), torch.arange(40)
    seen: list[int] = []
    for rank in range(2):
        loader = HostLoader(x, y, batch_size=8, device=CPU, rank=rank, world_size=2, num_workers=0)
        loader.set_epoch(1)
        seen += [int(v) for _, yb in loader for v in yb]
    assert sorted(seen) == list(range(40))


def test_make_loader_keeps_small_data_resident() -> None:
    x, y = torch.zeros(10, 2), torch.zeros(10, dtype=torch.long)
    assert isinstance(make_loader(x, y, batch_size=2, device=CPU), DeviceLoader)
