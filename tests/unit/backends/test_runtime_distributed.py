"""runtime/distributed.py's `gradient_sync`: DDP skips the all-reduce of a micro-batch that
is not the last of its step, and only then."""

from __future__ import annotations

import contextlib
import os
import socket

import pytest
import torch
import torch.distributed as dist

from tensorloom.backends.runtime.distributed import gradient_sync


def test_a_plain_module_or_the_last_micro_batch_enters_nothing() -> None:
    model = torch.nn.Linear(2, 1)
    assert isinstance(gradient_sync(model, sync=False), contextlib.nullcontext)
    assert isinstance(gradient_sync(model, sync=True), contextlib.nullcontext)


@pytest.fixture
def group_of_one() -> object:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_ddp_skips_the_sync_until_the_last_micro_batch(group_of_one: object) -> None:
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
    with gradient_sync(model, sync=False):
        assert model.require_backward_grad_sync is False  # inside DDP's no_sync()
    assert model.require_backward_grad_sync is True
    assert isinstance(gradient_sync(model, sync=True), contextlib.nullcontext)
