"""Process groups for TensorLoom scripts: one script, run alone or under torchrun.

    dist_ctx = setup_distributed("auto")      # reads RANK, LOCAL_RANK, WORLD_SIZE
    try:
        ...train on dist_ctx.device; log and save only if dist_ctx.is_main...
        mean_loss = all_reduce_mean(loss_sum / steps)
    finally:
        teardown_distributed()

Under torchrun (WORLD_SIZE set) each process joins a group (NCCL on CUDA, gloo
on the CPU) and takes the device of its local rank; run as `python script.py`,
the same code is one process of a group of one and every collective is a no-op.
`setup_distributed(..., group_of_one=True)` (FSDP, which shards over a device
mesh) starts a real group of one instead, on an in-process store.

The environment is torchrun's, whichever way it was launched (`--standalone`,
`--nnodes N --node-rank R --master-addr A`, `--rdzv-endpoint`): RANK is the
global rank, LOCAL_RANK the process's index on its machine (its GPU), WORLD_SIZE
the number of processes on all machines. `launch_environment` reads and checks them.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import torch
import torch.distributed as dist

_joined: list[str] = []  # the backend of the group this process joined, if it joined one


class DeviceUnavailable(Exception):
    """`--device cuda` on a machine without a GPU; the script prints this and exits 1."""


class LaunchError(DeviceUnavailable):
    """torchrun's variables are missing or inconsistent; the script prints this and exits 1."""


@dataclass(frozen=True)
class DistContext:
    """Who this process is and which device it trains on."""

    rank: int
    local_rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """Rank 0 logs, writes metrics and saves checkpoints."""
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1


def resolve_device(choice: str, local_rank: int = 0) -> torch.device:
    """`auto` takes the GPU when there is one; `cuda` without a GPU is an error."""
    if choice == "cpu" or (choice == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceUnavailable("`--device cuda` was given but no CUDA device is available")
    return torch.device("cuda", local_rank % torch.cuda.device_count())


def launch_environment(environ: Mapping[str, str] | None = None) -> tuple[int, int, int]:
    """(rank, local rank, world size) from torchrun's variables; (0, 0, 1) without them."""
    env = os.environ if environ is None else environ
    values: dict[str, int] = {}
    for name, default in (("RANK", 0), ("LOCAL_RANK", 0), ("WORLD_SIZE", 1)):
        text = env.get(name)
        try:
            values[name] = default if text is None else int(text)
        except ValueError:
            raise LaunchError(f"{name}={text!r} is not a number (torchrun sets it)") from None
    rank, local_rank, world_size = values["RANK"], values["LOCAL_RANK"], values["WORLD_SIZE"]
    if world_size < 1 or not 0 <= rank < world_size or local_rank < 0 or local_rank > rank:
        raise LaunchError(
            f"RANK={rank}, LOCAL_RANK={local_rank}, WORLD_SIZE={world_size} do not fit together: "
            "start the script with torchrun (or `tlc run --nproc N`)"
        )
    return rank, local_rank, world_size


def setup_distributed(device_choice: str = "auto", *, group_of_one: bool = False) -> DistContext:
    """Join the torchrun process group if there is one; pick this process's device.

    `group_of_one`: a process started without torchrun still gets a process group
    (of one, on an in-process store), as `fully_shard` needs one."""
    rank, local_rank, world_size = launch_environment()
    device = resolve_device(device_choice, local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world_size > 1 and not faulthandler.is_enabled():
        # A rank that aborts in native code (SIGABRT, SIGSEGV) prints its Python stack.
        faulthandler.enable(all_threads=True)
    if (world_size > 1 or group_of_one) and not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        if world_size == 1 and "MASTER_ADDR" not in os.environ:  # `python script.py`
            dist.init_process_group(backend=backend, store=dist.HashStore(), rank=0, world_size=1)
        else:  # torchrun's rendezvous: MASTER_ADDR and MASTER_PORT are set
            dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
        _joined.append(backend)
    return DistContext(rank, local_rank, world_size, device)


def gradient_sync(model: torch.nn.Module, sync: bool) -> contextlib.AbstractContextManager[None]:
    """Reduce gradients across ranks in this backward only if `sync` (the last micro-batch).

    DDP skips its all-reduce inside `no_sync()`; an FSDP2 module is told with
    `set_requires_gradient_sync`, and keeps unsharded gradients until it syncs."""
    if hasattr(model, "set_requires_gradient_sync"):  # an FSDPModule
        model.set_requires_gradient_sync(sync)
        return contextlib.nullcontext()
    if isinstance(model, torch.nn.parallel.DistributedDataParallel) and not sync:
        return model.no_sync()  # type: ignore[return-value]
    return contextlib.nullcontext()


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """The sum of `tensor` over all ranks (a copy; the input is left alone)."""
    if not (dist.is_available() and dist.is_initialized()):
        return tensor
    total = tensor.detach().clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return total


def all_reduce_mean(tensor: torch.Tensor) -> torch.Tensor:
    """The mean of `tensor` over all ranks (a copy; the input is left alone)."""
    if not (dist.is_available() and dist.is_initialized()):
        return tensor
    return all_reduce_sum(tensor) / dist.get_world_size()


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def teardown_distributed() -> None:
    """Leave the process group; call it in a `finally` so a failed run still exits cleanly."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


# --- each rank's own random numbers ------------------------------------------------------


def sync_buffers(*models: torch.nn.Module, emas: dict[str, Any] | None = None) -> None:
    """Every rank takes rank 0's buffers (BatchNorm's running statistics) of `models` and
    of each `ema` average (a collective: every rank calls it; nothing in one process).
    Each rank updates them from its own batches and its own noise, so before validating
    and saving the ranks agree on rank 0's, which the checkpoint keeps."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return
    averages = [average.module for average in (emas or {}).values()]
    for model in [*models, *averages]:  # a wrapper's buffers are its module's
        for buffer in model.buffers():
            torch.distributed.broadcast(buffer, src=0)


def _rng_state() -> dict[str, Any]:
    rng: dict[str, Any] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    return rng


def _rank_and_size() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def gather_rng_states() -> list[dict[str, Any]] | None:
    """Under DDP every rank's RNG states, in rank order, for rank 0 to save: each rank
    draws its own noise (seeded `seed + rank`), so each resumes its own (a collective:
    every rank calls it). None in one process."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return None
    ranks: list[Any] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(ranks, _rng_state())
    return ranks


def own_rng_state(ranks: list[Any] | None, saved: Any) -> Any:
    """This rank's RNG states in a save: its own when the save holds every rank's at this
    world size; else the one `saved` (rank 0's), which a rank after the first, on another
    world size, leaves for a stream of its own (`reseed`: `_restore_rng` does that)."""
    rank, size = _rank_and_size()
    if ranks and len(ranks) == size:
        return ranks[rank]
    return saved if rank == 0 else {**saved, "reseed": rank}


def _restore_rng(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["cpu"].cpu())
    if "cuda" in states and torch.cuda.is_available():
        with contextlib.suppress(RuntimeError):  # another number of GPUs
            torch.cuda.set_rng_state_all([s.cpu() for s in states["cuda"]])
    if "reseed" in states:  # resumed on another world size: rank 0's stream, then its own
        torch.manual_seed(int(torch.randint(0, 2**62, ())) + states["reseed"])


def restore_rank_rng(ranks: list[Any] | None) -> None:
    """After a resume restored a save's RNG states (rank 0's): this rank's own, from
    `ranks` (`gather_rng_states` at the save), as `own_rng_state` picks them."""
    _restore_rng(own_rng_state(ranks, _rng_state()))


def exit_process(code: int) -> NoReturn:
    """`sys.exit(code)`; a process that joined a process group leaves at once instead.

    On the CPU, torch's gloo (2.11 to 2.13) can abort a finished process while the
    interpreter shuts down ("terminate called without an active exception", SIGABRT from
    a C++ destructor, after `destroy_process_group`), so a run that trained and saved
    everything exits -6 and torchrun's other agents wait at its exit barrier. By the time
    `main` returns every file the script wrote is closed; flushing the standard streams
    and leaving with `os._exit` skips that teardown."""
    if not _joined:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
