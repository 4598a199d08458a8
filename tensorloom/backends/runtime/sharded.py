"""FSDP2 for TensorLoom scripts: shard a model over the ranks; sharded checkpoints with DCP.

    shard_model(model, ["h"], param_dtype=torch.bfloat16)  # fully_shard each block, then the root
    with gathered_parameters(model):                       # validation: no collectives per batch
        ...
    save_sharded_checkpoint("ckpt", keep=3, epoch=2, model=model, optimizer=optimizer, step=50)
    state = load_sharded_checkpoint("ckpt", model=model, optimizer=optimizer)  # newest complete
    consolidate_checkpoint("ckpt/epoch-0002", "model.pt", model=GPT())   # one plain state dict

`distributed = "fsdp"` scripts paste this module (its imports cost about a second,
so other scripts do not). Everything here is PyTorch's own: `fully_shard` with a
`MixedPrecisionPolicy` (parameters all-gathered in the training precision, gradients
reduce-scattered in fp32), `torch.distributed.checkpoint` (DCP) for the files.

A save is one folder per epoch, `epoch-NNNN/`: DCP's shards (`*.distcp`, `.metadata`;
every rank writes its own), `train_state.pt` (rank 0: epoch, step, schedule, loader,
RNG) and last, after every rank has finished, the marker `COMPLETE`. A folder
without the marker is a save that was cut off; loading never takes one. DCP reshards
on load, so a save of N ranks resumes on M. On several machines the checkpoint
folder must be one shared file system.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard

COMPLETE_MARKER = "COMPLETE"
TRAIN_STATE = "train_state.pt"
_SAVE_FOLDER = "epoch-{:04d}"


class ShardedCheckpointError(Exception):
    """A sharded checkpoint that cannot be loaded; the message names the folder and says why."""


# --- sharding ----------------------------------------------------------------------------------


def fsdp_units(
    model: torch.nn.Module, blocks: list[str] | tuple[str, ...]
) -> list[torch.nn.Module]:
    """The submodules named by `blocks`, a layer list (`h`) standing for each of its models."""
    units: list[torch.nn.Module] = []
    for name in blocks:
        block = model.get_submodule(name)
        if isinstance(block, torch.nn.ModuleList | torch.nn.Sequential):
            units += list(block)
        else:
            units.append(block)
    return units


def shard_model(
    model: torch.nn.Module,
    blocks: list[str] | tuple[str, ...],
    *,
    param_dtype: torch.dtype | None = None,
    reduce_dtype: torch.dtype | None = torch.float32,
) -> torch.nn.Module:
    """`fully_shard` each block, then the root (its own layers: embeddings, head); in place.

    Each block's parameters are all-gathered (in `param_dtype`, None: as stored)
    just before its forward and freed after it; gradients are reduce-scattered in
    `reduce_dtype`. The root's output is cast back to fp32 for the loss. Build the
    optimizer after this: its parameters are now the shards (DTensors)."""
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=reduce_dtype)
    for unit in fsdp_units(model, blocks):
        fully_shard(unit, mp_policy=policy)
    root = MixedPrecisionPolicy(param_dtype, reduce_dtype, output_dtype=torch.float32)
    fully_shard(model, mp_policy=root if param_dtype is not None else policy)
    return model


def sharded_modules(model: torch.nn.Module) -> list[FSDPModule]:
    return [m for m in model.modules() if isinstance(m, FSDPModule)]


@contextlib.contextmanager
def gathered_parameters(model: torch.nn.Module) -> Iterator[None]:
    """Hold every sharded parameter whole on every rank, then shard them again.

    Validation runs under it: ranks may see different numbers of batches (each
    sample is validated once), and a sharded forward would wait for the others'
    all-gathers. Costs the whole model's parameters at the training precision."""
    modules = sharded_modules(model)
    for module in modules:
        module.set_reshard_after_forward(False)
        module.unshard()
    try:
        yield
    finally:
        for module in modules:
            module.reshard()
            module.set_reshard_after_forward(True)


# --- checkpoints -------------------------------------------------------------------------------


def save_sharded_checkpoint(
    directory: str | os.PathLike[str],
    *,
    keep: int,
    epoch: int,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    step: int,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    scaler: torch.amp.GradScaler | None = None,
    loader: Any = None,
) -> Path:
    """Every rank calls this: DCP's shards, rank 0's train state, then the marker, last."""
    folder = Path(directory) / _SAVE_FOLDER.format(epoch)
    main = _rank() == 0
    if main and folder.exists():
        shutil.rmtree(folder)  # an earlier, cut-off save of this epoch
    _barrier()
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=folder)
    if main:
        state = {
            "model_class": type(model).__name__.removeprefix("FSDP"),
            "epoch": epoch,
            "step": step,
            "scheduler": scheduler.state_dict() if scheduler is not None else None,
            "scaler": scaler.state_dict() if scaler is not None else None,
            "loader": loader.state_dict() if loader is not None else None,
            "rng": _rng_states(),
            "world_size": _world_size(),
        }
        _atomic_write(folder / TRAIN_STATE, lambda f: torch.save(state, f))
    _barrier()  # every rank's shards are on disk
    if main:
        marker = {"epoch": epoch, "step": step, "world_size": _world_size()}
        _atomic_write(folder / COMPLETE_MARKER, lambda f: f.write(json.dumps(marker).encode()))
        for old in complete_checkpoints(directory)[:-keep]:
            shutil.rmtree(old)
    _barrier()
    return folder


def complete_checkpoints(directory: str | os.PathLike[str]) -> list[Path]:
    """The folders of finished saves in `directory`, oldest first."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("epoch-*") if (p / COMPLETE_MARKER).is_file())


def resolve_sharded_checkpoint(path: str | os.PathLike[str]) -> Path:
    """A save's folder, or the newest complete save in a checkpoint directory."""
    folder = Path(path)
    if (folder / COMPLETE_MARKER).is_file():
        return folder
    if folder.is_file():
        raise ShardedCheckpointError(
            f'{folder} is a single-file checkpoint; a `distributed = "fsdp"` script resumes '
            "from a sharded save's folder (or the checkpoint directory holding them)"
        )
    if not folder.is_dir():
        raise ShardedCheckpointError(f"{folder}: no such checkpoint folder")
    if (folder / ".metadata").is_file() or (folder / TRAIN_STATE).is_file():
        raise ShardedCheckpointError(
            f"{folder} is an incomplete save (no `{COMPLETE_MARKER}` marker): the run that wrote "
            "it stopped while saving; resume from an earlier one"
        )
    saves = complete_checkpoints(folder)
    if not saves:
        raise ShardedCheckpointError(f"{folder} holds no complete sharded checkpoint")
    return saves[-1]


def load_sharded_checkpoint(
    path: str | os.PathLike[str],
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    scaler: torch.amp.GradScaler | None = None,
    loader: Any = None,
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Every rank calls this; the save may come from another number of ranks (DCP reshards).

    Returns rank 0's train state (`epoch`, `step`, ...)."""
    folder = resolve_sharded_checkpoint(path)
    model_state, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optimizer": optimizer_state}
    try:
        dcp.load(state, checkpoint_id=folder)
        set_state_dict(
            model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"]
        )
    except (dcp.CheckpointException, RuntimeError, KeyError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ShardedCheckpointError(f"{folder} does not fit this model ({reason})") from None
    train_state = _read_train_state(folder)
    saved, ours = train_state.get("model_class"), type(model).__name__.removeprefix("FSDP")
    if saved is not None and saved != ours:
        raise ShardedCheckpointError(
            f"{folder} holds a `{saved}` model; this script trains `{ours}`"
        )
    if scheduler is not None and train_state["scheduler"] is not None:
        scheduler.load_state_dict(train_state["scheduler"])
    if scaler is not None and train_state["scaler"] is not None:
        scaler.load_state_dict(train_state["scaler"])
    if loader is not None and train_state["loader"] is not None:
        loader.load_state_dict(train_state["loader"])
    if restore_rng:
        _restore_rng_states(train_state["rng"])
    return train_state


def consolidate_checkpoint(
    path: str | os.PathLike[str], output: str | os.PathLike[str], *, model: torch.nn.Module
) -> Path:
    """Write the weights of a sharded save as one plain state dict (`torch.save`), for inference.

    One process, no process group: DCP reads every rank's shards into `model`'s
    full tensors. `model.load_state_dict(torch.load(output))` loads the file."""
    folder = resolve_sharded_checkpoint(path)
    state = {"model": model.state_dict()}
    try:
        with warnings.catch_warnings():  # "assuming the intent is to load in a single process"
            warnings.filterwarnings("ignore", message="torch.distributed is disabled")
            dcp.load(state, checkpoint_id=folder)
    except (dcp.CheckpointException, RuntimeError, KeyError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ShardedCheckpointError(f"{folder} does not fit this model ({reason})") from None
    target = Path(output)
    weights = {key: tensor.detach().cpu() for key, tensor in state["model"].items()}
    _atomic_write(target, lambda f: torch.save(weights, f))
    return target


def _read_train_state(folder: Path) -> dict[str, Any]:
    try:
        state = torch.load(folder / TRAIN_STATE, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError) as error:
        raise ShardedCheckpointError(f"{folder / TRAIN_STATE} is not readable ({error})") from None
    if not isinstance(state, dict) or "epoch" not in state or "rng" not in state:
        raise ShardedCheckpointError(f"{folder / TRAIN_STATE} is not a TensorLoom train state")
    return state


def _rng_states() -> dict[str, Any]:
    states: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _restore_rng_states(states: dict[str, Any]) -> None:
    version, internal, gauss = states["python"]  # torch.load may make the inner tuple a list
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(states["torch"].cpu())
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([state.cpu() for state in states["cuda"]])


def _atomic_write(target: Path, write: Any) -> None:
    """Write through `write(file)` to a temporary file beside `target`, fsync, rename over it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def _world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
