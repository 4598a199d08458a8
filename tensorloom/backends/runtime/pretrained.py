"""Published weights in and out: a safetensors file, a Hugging Face folder, or a torch state dict.

    rules = (("transformer.h.{i}.attn.c_attn.weight", "h.{i}.attn.c_attn.weight", True),
             ("transformer.{a}.{p}", "{a}.{p}", False),
             ("transformer.h.{i}.attn.bias", None, False))          # None: ignored
    load_pretrained(model, "gpt2/", rules)       # every parameter filled, or WeightsError
    export_pretrained(model, "out/", rules, source="gpt2/")   # model.safetensors (+ config.json)

A rule maps a name of the file to a name of the model's state dict. `{x}` in a pattern
stands for one dot-free part of a name (a layer list's index, a layer's name) and the target
names the same parts; the first rule that matches a file tensor decides it. `transposed`
rules store the tensor the other way round in the file (Hugging Face GPT-2's `Conv1D` keeps
[in, out] where `nn.Linear` keeps [out, in]). The same rules, read backwards, write the
model out in the file's names (`export_pretrained`), so the library that published the
weights loads them again.

`tlc check` reads only the files' headers and reports each mismatch at the rule's line; the
script checks again when it loads (the files may have changed since), and a missing, corrupt
or mismatched file raises `WeightsError` with a one-line message.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

WeightRule = tuple[str, "str | None", bool]
"""(the file's name pattern, the model's name pattern or None to ignore, transposed)."""


class WeightsError(Exception):
    """Published weights that cannot be loaded into the model; the message says why."""


def weight_files(path: str | os.PathLike[str]) -> list[Path]:
    """The tensor files behind `path`: a file itself, or a folder's model.safetensors, its
    sharded index's files, or its pytorch_model.bin."""
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise WeightsError(f"{root}: no such file or folder of weights")
    index = root / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()
        except (ValueError, KeyError, TypeError) as exc:
            raise WeightsError(f"{index}: not a safetensors index ({exc})") from None
        return [root / name for name in dict.fromkeys(shards)]
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (root / name).is_file():
            return [root / name]
    raise WeightsError(f"{root}: no model.safetensors, sharded index or pytorch_model.bin in it")


def read_tensors(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Every tensor of the weights at `path`, by the file's names, on the CPU."""
    tensors: dict[str, torch.Tensor] = {}
    for file in weight_files(path):
        try:
            if file.suffix == ".safetensors":
                from safetensors.torch import load_file

                tensors.update(load_file(str(file)))
            else:
                state = torch.load(file, map_location="cpu", weights_only=True)
                tensors.update(state.get("state_dict", state) if isinstance(state, dict) else {})
        except WeightsError:
            raise
        except Exception as exc:  # a truncated or foreign file: say which and why
            raise WeightsError(f"{file}: cannot read its tensors ({exc})") from None
    return tensors


def _pattern(text: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", text)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^.]+)" for i, part in enumerate(parts)
    )
    return re.compile(regex + r"\Z")


def map_names(names: Sequence[str], rules: Sequence[WeightRule]) -> dict[str, tuple[str, bool]]:
    """file name -> (model name, transposed) for each file tensor a rule maps; ignored and
    unmatched names are left out (`unmatched_names` lists the latter)."""
    compiled = [(_pattern(source), target, transposed) for source, target, transposed in rules]
    mapped: dict[str, tuple[str, bool]] = {}
    for name in names:
        for regex, target, transposed in compiled:
            match = regex.match(name)
            if match is not None:
                if target is not None:
                    mapped[name] = (target.format(**match.groupdict()), transposed)
                break
    return mapped


def unmatched_names(names: Sequence[str], rules: Sequence[WeightRule]) -> list[str]:
    """The file's names no rule matches (not mapped, not ignored)."""
    compiled = [_pattern(source) for source, _, _ in rules]
    return [n for n in names if not any(regex.match(n) for regex in compiled)]


def load_pretrained(
    model: torch.nn.Module, path: str | os.PathLike[str], rules: Sequence[WeightRule]
) -> None:
    """Fill every parameter and buffer of `model`'s state dict from the weights at `path`.

    Raises WeightsError for a file tensor no rule covers, a model tensor none fills, two
    file tensors for one model tensor, or a shape that differs."""
    tensors = read_tensors(path)
    unmatched = unmatched_names(list(tensors), rules)
    if unmatched:
        raise WeightsError(f"{path}: no rule maps {_some(unmatched)}; map or ignore them")
    own = model.state_dict()
    state: dict[str, torch.Tensor] = {}
    for name, (target, transposed) in map_names(list(tensors), rules).items():
        tensor = tensors[name].t() if transposed else tensors[name]
        if target not in own:
            raise WeightsError(f"{path}: `{name}` maps to `{target}`, which the model lacks")
        if target in state:
            raise WeightsError(f"{path}: two tensors of the file map to `{target}`")
        if tuple(tensor.shape) != tuple(own[target].shape):
            raise WeightsError(
                f"{path}: `{name}` is {list(tensor.shape)}, the model's `{target}` is "
                f"{list(own[target].shape)}"
            )
        state[target] = tensor.to(own[target].dtype)
    missing = [k for k in own if k not in state and not _derived(model, k)]
    if missing:
        raise WeightsError(f"{path}: nothing fills the model's {_some(missing)}")
    model.load_state_dict(state, strict=False)


def _derived(model: torch.nn.Module, key: str) -> bool:
    """A state-dict entry that another one fills: a weight tied to one already loaded, or a
    non-persistent buffer."""
    own = dict(model.named_parameters(remove_duplicate=False))
    unique = dict(model.named_parameters())
    return key in own and key not in unique


def _some(names: Sequence[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:4])
    return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def export_pretrained(
    model: torch.nn.Module,
    folder: str | os.PathLike[str],
    rules: Sequence[WeightRule],
    source: str | os.PathLike[str] | None = None,
) -> Path:
    """Write `model` as `folder`/model.safetensors in the file's names (each model tensor
    named by the first rule whose target matches it, read backwards), with the source
    folder's config.json beside it: a folder the library that published the weights loads."""
    from safetensors.torch import save_file

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    inverse = [
        (_pattern(target), source_name, transposed)
        for source_name, target, transposed in rules
        if target is not None
    ]
    state: dict[str, torch.Tensor] = {}
    for key, value in model.state_dict().items():
        for regex, source_name, transposed in inverse:
            match = regex.match(key)
            if match is not None:
                tensor = value.detach().cpu()
                state[source_name.format(**match.groupdict())] = (
                    (tensor.t() if transposed else tensor).contiguous().clone()
                )
                break
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    for extra in ("config.json", "generation_config.json"):
        if source is not None and (Path(source) / extra).is_file():
            shutil.copyfile(Path(source) / extra, out / extra)
    return out


def source_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A Hugging Face folder's config.json, or {} where there is none."""
    file = Path(path) / "config.json"
    return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
