"""Batching for TensorLoom scripts: a dataset kept on the device, or a DataLoader.

    loader = DeviceLoader(x, y, batch_size=128, device=device, shuffle=True, seed=0)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for xb, yb in loader:   # index-sliced on the device: no host copy, no sync
            ...

A loader batches any number of tensors with one row per sample: `(x, y)`, or the
named fields of a dataset (`DeviceLoader(image, text, ...)` yields `image, text`).

A small dataset lives on the device for the whole run. Each epoch's order is a
`torch.randperm` drawn from a generator on the device seeded with `seed + epoch`,
so an epoch's batches depend only on (seed, epoch): resuming at epoch k replays
exactly the batches an uninterrupted run would have seen. Under DDP each rank
takes a disjoint, equal-sized shard of that permutation (`perm[rank::world]`
after truncating to a multiple of the world size), the same semantics as
`DistributedSampler(drop_last=True)` with `set_epoch`. Validation loaders
(`even_shards=False`) keep every sample: rank r takes `r, r + world, ...`, so the
shards cover the set once and sums reduced across ranks are exact.

Datasets too large for the device go through `HostLoader` (a `DataLoader` with a
`DistributedSampler` or a seeded `RandomSampler`); `make_loader` picks one.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, TensorDataset

Batch = tuple[torch.Tensor, ...]

# Datasets up to this size (inputs and targets together) are kept on the device.
RESIDENT_LIMIT_BYTES = 2 * 1024**3


class DeviceLoader:
    """Batches of device-resident tensors (x, y, or a dataset's fields), shuffled on the
    device, sharded across ranks."""

    def __init__(
        self, *tensors: torch.Tensor, batch_size: int, device: torch.device,
        shuffle: bool = True, drop_last: bool = False, seed: int = 0, rank: int = 0,
        world_size: int = 1, even_shards: bool = True,
    ) -> None:  # fmt: skip
        self.tensors = tuple(t.to(device, non_blocking=True) for t in tensors)
        self.x, self.y = self.tensors[0], self.tensors[-1]
        self.batch_size, self.device, self.shuffle = batch_size, device, shuffle
        self.drop_last, self.seed, self.rank = drop_last, seed, rank
        self.world_size, self.even_shards, self.epoch = world_size, even_shards, 0
        self._generator = torch.Generator(device=device)

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose order the next iteration follows."""
        self.epoch = epoch

    def shard_size(self) -> int:
        """How many samples this rank sees per epoch."""
        n, world = len(self.x), self.world_size
        if self.even_shards:
            return n // world
        return len(range(self.rank, n, world))

    def __len__(self) -> int:
        size = self.shard_size()
        if self.drop_last:
            return size // self.batch_size
        return -(-size // self.batch_size)

    def indices(self) -> torch.Tensor:
        """This rank's sample indices for the current epoch, on the device."""
        n = len(self.x)
        if self.shuffle:
            self._generator.manual_seed(self.seed + self.epoch)
            order = torch.randperm(n, generator=self._generator, device=self.device)
        else:
            order = torch.arange(n, device=self.device)
        if self.even_shards:
            order = order[: n // self.world_size * self.world_size]
        return order[self.rank :: self.world_size]

    def batch_indices(self) -> Iterator[torch.Tensor]:
        """Each batch's sample indices for the current epoch (views on the device)."""
        order = self.indices()
        for i in range(len(self)):
            yield order[i * self.batch_size : (i + 1) * self.batch_size]

    def __iter__(self) -> Iterator[Batch]:
        for idx in self.batch_indices():
            yield tuple(t[idx] for t in self.tensors)

    def state_dict(self) -> dict[str, int]:
        # The order of an epoch is a function of (seed, epoch): nothing else to save.
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.seed, self.epoch = state["seed"], state["epoch"]


class HostLoader:
    """A DataLoader over host tensors that moves each batch to the device."""

    def __init__(
        self,
        *tensors: torch.Tensor,
        batch_size: int,
        device: torch.device,
        shuffle: bool = True,
        drop_last: bool = False,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        num_workers: int = 2,
    ) -> None:
        dataset = TensorDataset(*tensors)
        self.device = device
        self.seed = seed
        self.epoch = 0
        self._generator = torch.Generator()
        self.sampler = _host_sampler(
            dataset, shuffle, drop_last, seed, rank, world_size, self._generator
        )
        self.loader = DataLoader(
            dataset,
            batch_size=batch_size,
            sampler=self.sampler,
            drop_last=drop_last,
            num_workers=num_workers,
            pin_memory=device.type == "cuda",
            persistent_workers=num_workers > 0,
        )

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        if isinstance(self.sampler, DistributedSampler):
            self.sampler.set_epoch(epoch)
        self._generator.manual_seed(self.seed + epoch)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Batch]:
        for batch in self.loader:
            yield tuple(t.to(self.device, non_blocking=True) for t in batch)

    def state_dict(self) -> dict[str, int]:
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.seed = state["seed"]
        self.set_epoch(state["epoch"])


def _host_sampler(
    dataset: TensorDataset,
    shuffle: bool,
    drop_last: bool,
    seed: int,
    rank: int,
    world_size: int,
    generator: torch.Generator,
) -> DistributedSampler[tuple[torch.Tensor, ...]] | RandomSampler | None:
    if world_size > 1:
        return DistributedSampler(
            dataset,
            num_replicas=world_size,
            rank=rank,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
        )
    if shuffle:
        return RandomSampler(dataset, generator=generator)
    return None


def make_loader(*tensors: torch.Tensor, **options: object) -> DeviceLoader | HostLoader:
    """A `DeviceLoader` when the tensors fit in `RESIDENT_LIMIT_BYTES`, else a `HostLoader`."""
    size = sum(t.numel() * t.element_size() for t in tensors)
    if size <= RESIDENT_LIMIT_BYTES:
        return DeviceLoader(*tensors, **options)  # type: ignore[arg-type]
    options.pop("even_shards", None)
    return HostLoader(*tensors, **options)  # type: ignore[arg-type]
