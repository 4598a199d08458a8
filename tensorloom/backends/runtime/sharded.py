"""FSDP2 for TensorLoom scripts: shard a model over the ranks; sharded checkpoints with DCP.

    shard_model(model, ["h"], param_dtype=torch.bfloat16)  # fully_shard each block, then the root
    with gathered_parameters(model):                       # validation: no collectives per batch
        ...
    save_sharded_checkpoint("ckpt", keep=3, epoch=2, model=model, optimizer=optimizer, step=50)
    save_sharded_state("ckpt/last", epoch=2, model=model, optimizer=optimizer, step=57)
    state = load_sharded_checkpoint("ckpt", model=model, optimizer=optimizer)  # newest complete
    load_sharded_weights("ckpt/best", model=model)         # the weights alone (or a plain .pt)
    plain = whole_model(model, GPT())                      # rank 0: an unsharded copy to serve
    consolidate_checkpoint("ckpt/epoch-0002", "model.pt", model=GPT())   # one plain state dict

`distributed = "fsdp"` scripts paste this module (its imports cost about a second,
so other scripts do not). Everything here is PyTorch's own: `fully_shard` with a
`MixedPrecisionPolicy` (parameters all-gathered in the training precision, gradients
reduce-scattered in fp32), `torch.distributed.checkpoint` (DCP) for the files.

A save is one folder per epoch, `epoch-NNNN/`: DCP's shards (`*.distcp`, `.metadata`;
every rank writes its own), `train_state.pt` (rank 0: epoch, step, schedule, loader,
RNG, the recipe's state) and last, after every rank has finished, the marker
`COMPLETE`. A folder without the marker is a save that was cut off; loading never
takes one. The saves that are overwritten (`last/` at the end of a run or when it is
interrupted, `best/` at each new best) are written as `.NAME.partial/` and renamed
into place once complete. An `ema` average (a second model sharded like the first)
is saved beside the model, under `ema`. DCP reshards on load, so a save of N ranks
resumes on M. On several machines the checkpoint folder must be one shared file system.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
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
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_state_dict,
)
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard

from tensorloom.backends.runtime.distributed import (
    gather_rng_states,
    restore_rank_rng,
    sync_buffers,
)

COMPLETE_MARKER = "COMPLETE"
TRAIN_STATE = "train_state.pt"
_SAVE_FOLDER = "epoch-{:04d}"
LAST_SAVE = "last"
_FSDP_WRAPPER_PREFIXES = ("_orig_mod.", "module.")


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
    optimizer after this: its parameters are now the shards (DTensors).

    A BatchNorm layer is a unit of its own whose weights are gathered in fp32: its
    running statistics stay fp32 buffers, and batch norm takes its weight in their
    dtype (a bf16 weight beside them is an error), as it does under autocast alone."""
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=reduce_dtype)
    if param_dtype is not None and param_dtype != torch.float32:
        whole = MixedPrecisionPolicy(param_dtype=torch.float32, reduce_dtype=reduce_dtype)
        for norm in model.modules():
            if isinstance(norm, torch.nn.modules.batchnorm._BatchNorm) and norm.affine:
                fully_shard(norm, mp_policy=whole)
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
    directory: str | os.PathLike[str], *, keep: int, epoch: int, **state: Any
) -> Path:
    """Every rank calls this: `epoch-NNNN/` in `directory` (see `save_sharded_state` for
    `state`), then the oldest complete epoch saves beyond `keep` are removed."""
    folder = Path(directory) / _SAVE_FOLDER.format(epoch)
    _write_sharded(folder, epoch=epoch, **state)
    if _rank() == 0:
        for old in complete_checkpoints(directory)[:-keep]:
            shutil.rmtree(old)
    _barrier()
    return folder


def save_sharded_state(folder: str | os.PathLike[str], *, epoch: int, **state: Any) -> Path:
    """Every rank calls this: a save that replaces `folder` (`last`, `best`) once complete.

    It is written as `.NAME.partial/` beside it, then renamed into place: a run cut off
    while saving keeps the previous one."""
    return replace_folder(folder, lambda partial: _write_sharded(partial, epoch=epoch, **state))


def replace_folder(folder: str | os.PathLike[str], write: Any) -> Path:
    """Every rank calls this: `write(partial)` fills `.NAME.partial/` beside `folder`, which
    rank 0 then renames into place (the previous save kept until then)."""
    target = Path(folder)
    partial = target.with_name(f".{target.name}.partial")
    write(partial)
    if _rank() == 0:
        old = target.with_name(f".{target.name}.old")
        if old.exists():
            shutil.rmtree(old)
        if target.exists():
            target.rename(old)
        partial.rename(target)
        if old.exists():
            shutil.rmtree(old)
    _barrier()
    return target


def _write_sharded(
    folder: Path,
    *,
    epoch: int,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    step: int,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    scaler: torch.amp.GradScaler | None = None,
    loader: Any = None,
    extra: dict[str, Any] | None = None,
    ema: torch.nn.Module | None = None,
) -> None:
    """DCP's shards (every rank), rank 0's train state, then the marker, last. The buffers
    saved are rank 0's (`sync_buffers`), as every rank's resume then holds; the train state
    keeps every rank's RNG states (each rank draws its own noise, seeded `seed + rank`)."""
    sync_buffers(model, *([ema] if ema is not None else []))
    model_state, optimizer_state = get_state_dict(model, optimizer)
    shards: dict[str, Any] = {"model": model_state, "optimizer": optimizer_state}
    if ema is not None:
        shards["ema"] = get_model_state_dict(ema)
    state = {
        "model_class": type(model).__name__.removeprefix("FSDP"),
        "epoch": epoch,
        "step": step,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "scaler": scaler.state_dict() if scaler is not None else None,
        "loader": loader.state_dict() if loader is not None else None,
        "rng": _rng_states(),
        "rng_by_rank": gather_rng_states(),
        "world_size": _world_size(),
        "extra": extra or {},
        "has_ema": ema is not None,
    }
    write_sharded_folder(folder, shards, state)


def write_sharded_folder(folder: Path, shards: dict[str, Any], state: dict[str, Any]) -> None:
    """Every rank calls this: DCP's save of `shards` (each rank its own), rank 0's `state`
    (with `epoch` and `step`) as train_state.pt, then the marker, last."""
    main = _rank() == 0
    if main and folder.exists():
        shutil.rmtree(folder)  # an earlier, cut-off save of this folder
    _barrier()
    dcp.save(shards, checkpoint_id=folder)
    if main:
        _atomic_write(folder / TRAIN_STATE, lambda f: torch.save(state, f))
    _barrier()  # every rank's shards are on disk
    if main:
        marker = {"epoch": state["epoch"], "step": state["step"], "world_size": _world_size()}
        _atomic_write(folder / COMPLETE_MARKER, lambda f: f.write(json.dumps(marker).encode()))
    _barrier()


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
    if (folder / LAST_SAVE / COMPLETE_MARKER).is_file():  # the end of a run, or an interrupt
        saves.append(folder / LAST_SAVE)
    if not saves:
        raise ShardedCheckpointError(f"{folder} holds no complete sharded checkpoint")
    return max(saves, key=_saved_step)


def _saved_step(folder: Path) -> tuple[int, int]:
    """(step, epoch) of a complete save, from its marker: the newest is the furthest on."""
    try:
        marker = json.loads((folder / COMPLETE_MARKER).read_text(encoding="utf-8"))
        return int(marker["step"]), int(marker["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1, -1


def load_sharded_checkpoint(
    path: str | os.PathLike[str],
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    scaler: torch.amp.GradScaler | None = None,
    loader: Any = None,
    ema: torch.nn.Module | None = None,
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Every rank calls this; the save may come from another number of ranks (DCP reshards).

    `ema`: the sharded EMA model, given its weights when the save holds them. Returns
    rank 0's train state (`epoch`, `step`, `extra`: the recipe's state, ...)."""
    folder = resolve_sharded_checkpoint(path)
    train_state = _read_train_state(folder)
    _check_class(folder, train_state, model)
    model_state, optimizer_state = get_state_dict(model, optimizer)
    state: dict[str, Any] = {"model": model_state, "optimizer": optimizer_state}
    if ema is not None and train_state.get("has_ema"):
        state["ema"] = get_model_state_dict(ema)
    try:
        dcp.load(state, checkpoint_id=folder)
        set_state_dict(
            model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"]
        )
        if "ema" in state and ema is not None:
            set_model_state_dict(ema, state["ema"])
    except (dcp.CheckpointException, RuntimeError, KeyError, ValueError) as error:
        raise _misfit(folder, error) from None
    if scheduler is not None and train_state["scheduler"] is not None:
        scheduler.load_state_dict(train_state["scheduler"])
    if scaler is not None and train_state["scaler"] is not None:
        scaler.load_state_dict(train_state["scaler"])
    if loader is not None and train_state["loader"] is not None:
        loader.load_state_dict(train_state["loader"])
    if restore_rng:  # rank 0's, then this rank's own where the save holds each rank's
        _restore_rng_states(train_state["rng"])
        restore_rank_rng(train_state.get("rng_by_rank"))
    return train_state


def load_sharded_weights(
    path: str | os.PathLike[str], *, model: torch.nn.Module, ema: torch.nn.Module | None = None
) -> dict[str, Any]:
    """The weights alone, for `--init-from` and `--evaluate`; every rank calls this.

    `path` is a sharded save (or a folder of them: the newest), or a file: a
    single-file TensorLoom checkpoint or a plain state dict (`--consolidate`'s).
    `ema` gets the save's EMA weights when it has them. Returns what the save says
    about itself (`epoch`, `extra`)."""
    source = Path(path)
    if source.is_file():
        return _load_file_weights(source, model, ema)
    folder = resolve_sharded_checkpoint(source)
    train_state = _read_train_state(folder)
    _check_class(folder, train_state, model)
    state: dict[str, Any] = {"model": get_model_state_dict(model)}
    if ema is not None and train_state.get("has_ema"):
        state["ema"] = get_model_state_dict(ema)
    try:
        dcp.load(state, checkpoint_id=folder)
        set_model_state_dict(model, state["model"])
        if "ema" in state and ema is not None:
            set_model_state_dict(ema, state["ema"])
    except (dcp.CheckpointException, RuntimeError, KeyError, ValueError) as error:
        raise _misfit(folder, error) from None
    return train_state


def _load_file_weights(
    file: Path, model: torch.nn.Module, ema: torch.nn.Module | None
) -> dict[str, Any]:
    try:
        saved = torch.load(file, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, EOFError, RuntimeError, ValueError, OSError, KeyError) as error:
        raise ShardedCheckpointError(
            f"{file} is not a readable weights file ({_reason(error)})"
        ) from None
    if not isinstance(saved, dict):
        raise ShardedCheckpointError(f"{file} holds no state dict")
    weights = saved["model"] if isinstance(saved.get("model"), dict) else saved
    whole = StateDictOptions(full_state_dict=True)
    extra = saved.get("extra") if isinstance(saved.get("extra"), dict) else {}
    saved_ema = ((extra or {}).get("recipe") or {}).get("ema")
    try:
        set_model_state_dict(model, _strip_prefixes(weights), options=whole)
        if ema is not None and isinstance(saved_ema, dict) and "n_averaged" in saved_ema:
            averaged = {  # an `AveragedModel`'s state: `module.` + the model's keys
                key.removeprefix("module."): value
                for key, value in saved_ema.items()
                if key.startswith("module.")
            }
            set_model_state_dict(ema, averaged, options=whole)
    except (RuntimeError, KeyError, ValueError) as error:
        raise _misfit(file, error) from None
    return {"epoch": saved.get("epoch"), "extra": extra or {}}


def whole_model(model: torch.nn.Module, plain: torch.nn.Module) -> torch.nn.Module | None:
    """Every rank calls this: `plain` (a new, unsharded model of the same class) given the
    sharded model's whole weights, on rank 0 (None elsewhere): predictions and
    `torch.export` then run on one process, with no collectives."""
    weights = get_model_state_dict(
        model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
    )
    if _rank() != 0:
        return None
    plain.load_state_dict(weights)
    return plain.eval()


def _check_class(folder: Path, train_state: dict[str, Any], model: torch.nn.Module) -> None:
    saved, ours = train_state.get("model_class"), type(model).__name__.removeprefix("FSDP")
    if saved is not None and saved != ours:
        raise ShardedCheckpointError(
            f"{folder} holds a `{saved}` model; this script trains `{ours}`"
        )


def _strip_prefixes(weights: dict[str, Any]) -> dict[str, Any]:
    stripped: dict[str, Any] = {}
    for key, value in weights.items():
        name = key
        while name.startswith(_FSDP_WRAPPER_PREFIXES):
            for prefix in _FSDP_WRAPPER_PREFIXES:
                name = name.removeprefix(prefix)
        stripped[name] = value
    return stripped


def _misfit(path: Path, error: BaseException) -> ShardedCheckpointError:
    return ShardedCheckpointError(f"{path} does not fit this model ({_reason(error)})")


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


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
        raise _misfit(folder, error) from None
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
    state.setdefault("extra", {})  # a save from before the recipe keys
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
