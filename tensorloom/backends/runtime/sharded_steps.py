"""FSDP2 for blocks of `step` lines: every model sharded, one sharded save of them all.

    shard_model(G, FSDP_BLOCKS["G"])                 # runtime/sharded.py, once per model
    with gathered_models(G, D, emas=emas):           # validation: no collectives per batch
        ...
    save_sharded_models("ckpt/last", models={"G": G, "D": D}, optimizers=optimizers,
                        scalers=scalers, epoch=2, step=50, emas=emas, loader=train_loader)
    state = load_sharded_models("ckpt", models=models, optimizers=optimizers, scalers=scalers)

A save is the folder a one-model FSDP script writes (runtime/sharded.py): DCP's shards,
which every rank writes, `train_state.pt` (rank 0) and the `COMPLETE` marker, last, the
folder written as `.last.partial/` and renamed into place. The shards hold every model
under its name (`models.G.fc.weight`; a frozen model too), each optimizer under its key
(`optimizers.d_loss`, its state keyed by the parameters' names in the models: an
optimizer may span several models) and each `ema` average (`emas.G`); the train state
holds the scalers, lr schedulers, the loader's place, every rank's RNG (each rank draws its
own noise, seeded `seed + rank`) and `extra` (a cut epoch's objective sums). DCP reshards
on load, so a save of N ranks resumes on M. `consolidate_models` writes the trained models'
weights of a save as one file (`--consolidate`).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from tensorloom.backends.runtime.recipe import ModelEMA
from tensorloom.backends.runtime.sharded import (
    ShardedCheckpointError,
    _atomic_write,
    _misfit,
    _read_train_state,
    _restore_rng_states,
    _rng_states,
    _world_size,
    gathered_parameters,
    replace_folder,
    resolve_sharded_checkpoint,
    write_sharded_folder,
)
from tensorloom.backends.runtime.steps import _plain, _rank_and_size, sync_buffers


@contextlib.contextmanager
def gathered_models(*models: nn.Module, emas: dict[str, ModelEMA] | None = None) -> Iterator[None]:
    """`gathered_parameters` of each model (and each `ema` average) at once: a block's
    validation, on every rank, with rank 0's buffers (`sync_buffers`)."""
    sync_buffers(*models, emas=emas)
    averages = [e.module for e in (emas or {}).values()]
    with contextlib.ExitStack() as stack:
        for model in [*models, *averages]:
            stack.enter_context(gathered_parameters(model))
        yield


def _together(models: dict[str, nn.Module]) -> nn.Module:
    """One module holding each model under its name (its `Frozen` or compiled wrapper
    taken off): the parameters' names an optimizer's state is keyed by."""
    return nn.ModuleDict({name: _plain(model) for name, model in models.items()})


def _classes(models: dict[str, nn.Module]) -> dict[str, str]:
    return {name: type(_plain(m)).__name__.removeprefix("FSDP") for name, m in models.items()}


def save_sharded_models(
    folder: str | os.PathLike[str], *, models: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    scalers: dict[str, torch.amp.GradScaler | None], epoch: int, step: int,
    schedulers: dict[str, Any] | None = None, emas: dict[str, ModelEMA] | None = None,
    loader: Any = None, extra: dict[str, Any] | None = None,
) -> Path:  # fmt: skip
    """Every rank calls this: the run after `epoch` epochs (and `step` batches), replacing
    `folder` once complete. The buffers saved are rank 0's (`sync_buffers`), as every rank's
    resume then holds."""
    sync_buffers(*models.values(), emas=emas)
    whole = _together(models)
    shards: dict[str, Any] = {
        "models": get_model_state_dict(whole),
        "optimizers": {k: get_optimizer_state_dict(whole, o) for k, o in optimizers.items()},
    }
    if emas:
        shards["emas"] = {name: get_model_state_dict(e.module) for name, e in emas.items()}
    state = {
        "model_classes": _classes(models),
        "epoch": epoch,
        "step": step,
        "scalers": {k: s.state_dict() for k, s in scalers.items() if s is not None},
        "schedulers": {k: s.state_dict() for k, s in (schedulers or {}).items()},
        "emas": {name: e.state_dict() for name, e in (emas or {}).items()},
        "loader": loader.state_dict() if loader is not None else None,
        "rng": _rng_states(),
        "rng_by_rank": _gathered_rng_states(),
        "world_size": _world_size(),
        "extra": extra or {},
    }
    return replace_folder(folder, lambda f: write_sharded_folder(f, shards, state))


def load_sharded_models(
    path: str | os.PathLike[str], *, models: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer] | None = None,
    scalers: dict[str, torch.amp.GradScaler | None] | None = None,
    schedulers: dict[str, Any] | None = None, emas: dict[str, ModelEMA] | None = None,
    loader: Any = None,
) -> dict[str, Any]:  # fmt: skip
    """Every rank calls this: restore what `save_sharded_models` wrote (the models' weights
    alone without `optimizers`, for --evaluate); returns rank 0's train state."""
    folder = resolve_sharded_checkpoint(path)
    train_state = _read_train_state(folder)
    saved = train_state.get("model_classes")
    if not isinstance(saved, dict):
        raise ShardedCheckpointError(f"{folder} is a one-model save; this script trains several")
    if saved != _classes(models):
        raise ShardedCheckpointError(f"{folder} holds {_models_named(saved)}; this script trains "
                                     f"{_models_named(_classes(models))}")  # fmt: skip
    whole = _together(models)
    state: dict[str, Any] = {"models": get_model_state_dict(whole)}
    if optimizers is not None:
        state["optimizers"] = {k: get_optimizer_state_dict(whole, o) for k, o in optimizers.items()}
    if optimizers is not None and emas:
        state["emas"] = {name: get_model_state_dict(e.module) for name, e in emas.items()}
    try:
        dcp.load(state, checkpoint_id=folder)
        set_model_state_dict(whole, state["models"])
        for key, optimizer in (optimizers or {}).items():
            set_optimizer_state_dict(whole, optimizer, state["optimizers"][key])
        for name, average in (emas or {}).items() if "emas" in state else ():
            set_model_state_dict(average.module, state["emas"][name])
            average.load_state_dict(train_state["emas"][name])
    except (dcp.CheckpointException, RuntimeError, KeyError, ValueError) as error:
        raise _misfit(folder, error) from None
    if optimizers is None:
        return train_state
    _restore_train_state(train_state, scalers, schedulers, loader)
    return train_state


def _restore_train_state(
    state: dict[str, Any], scalers: dict[str, torch.amp.GradScaler | None] | None,
    schedulers: dict[str, Any] | None, loader: Any,
) -> None:  # fmt: skip
    for key, scaler in (scalers or {}).items():
        if scaler is not None and key in state["scalers"]:
            scaler.load_state_dict(state["scalers"][key])
    for key, scheduler in (schedulers or {}).items():
        scheduler.load_state_dict(state["schedulers"][key])
    if loader is not None and state["loader"] is not None:
        loader.load_state_dict(state["loader"])
    rank, size = _rank_and_size()
    ranks = state.get("rng_by_rank")
    if ranks and len(ranks) == size:
        _restore_rng_states(ranks[rank])
        return
    _restore_rng_states(state["rng"])
    if rank > 0:  # resumed on another world size: rank 0's stream, then one of its own
        torch.manual_seed(int(torch.randint(0, 2**62, ())) + rank)


def _gathered_rng_states() -> list[dict[str, Any]]:
    """Every rank's RNG states, in rank order (a collective: every rank calls it)."""
    _, size = _rank_and_size()
    if size == 1:
        return [_rng_states()]
    ranks: list[Any] = [None] * size
    torch.distributed.all_gather_object(ranks, _rng_states())
    return ranks


def consolidate_models(
    path: str | os.PathLike[str], output: str | os.PathLike[str], *, models: dict[str, nn.Module]
) -> Path:
    """--consolidate DIR OUT.pt: the weights of `models` (the block's trained ones, by name)
    in a sharded save, as one `torch.save` file of a plain state dict per model,
    `{"G": {...}, "D": {...}}`, for inference. One process, no process group: DCP reads
    every rank's shards into the models' full tensors; `G.load_state_dict(torch.load(OUT)["G"])`
    loads one."""
    folder = resolve_sharded_checkpoint(path)
    saved = _read_train_state(folder).get("model_classes")
    if not isinstance(saved, dict):
        raise ShardedCheckpointError(f"{folder} is a one-model save; this script trains several")
    classes = _classes(models)
    if any(saved.get(name) != kind for name, kind in classes.items()):
        raise ShardedCheckpointError(f"{folder} holds {_models_named(saved)}; this script trains "
                                     f"{_models_named(classes)}")  # fmt: skip
    state = {"models": _together(models).state_dict()}
    try:
        with warnings.catch_warnings():  # "assuming the intent is to load in a single process"
            warnings.filterwarnings("ignore", message="torch.distributed is disabled")
            dcp.load(state, checkpoint_id=folder)
    except (dcp.CheckpointException, RuntimeError, KeyError, ValueError) as error:
        raise _misfit(folder, error) from None
    weights: dict[str, dict[str, torch.Tensor]] = {name: {} for name in models}
    for key, tensor in state["models"].items():
        name, _, rest = key.partition(".")
        weights[name][rest] = tensor.detach().cpu()
    target = Path(output)
    _atomic_write(target, lambda f: torch.save(weights, f))
    return target


def _models_named(classes: dict[str, str]) -> str:
    return ", ".join(f"`{name}` (`{kind}`)" for name, kind in classes.items())
