"""Published weights in and out, and fine-tuning them: frozen layers, LoRA adapters.

    rules = (("transformer.h.{i}.attn.c_attn.weight", "h.{i}.attn.c_attn.weight", True),
             ("transformer.{a}.{p}", "{a}.{p}", False),
             ("transformer.h.{i}.attn.bias", None, False))          # None: ignored
    load_pretrained(model, "gpt2/", rules)       # every parameter filled, or WeightsError
    export_pretrained(model, "out/", rules, source="gpt2/")   # model.safetensors (+ config.json)

A rule maps a name of the file to a name of the model's state dict. `{x}` in a pattern
stands for one dot-free part of a name (a layer list's index, a layer's name) and the target
names the same parts; the first rule that matches a file tensor decides it. `transposed`
rules store the tensor the other way round in the file (Hugging Face GPT-2's `Conv1D` keeps
[in, out] where `nn.Linear` keeps [out, in]). A rule with several file names joins their
tensors (`torch.cat` along its `along` dim, after any transpose), one with several model
names splits the tensor into them, each as large along that dim as the model's:

    ("transformer.h.{i}.attn.c_attn.weight", ("h.{i}.q.weight", "h.{i}.k.weight",
     "h.{i}.v.weight"), True, 0)                 # GPT-2's fused q/k/v, split

The same rules, read backwards, write the model out in the file's names
(`export_pretrained`), so the library that published the weights loads them again.

`freeze_layers(model, ["wte", "h[0:6]"])` stops those layers training; `add_lora(model,
["c_attn"], rank=8, alpha=16)` adds a trainable low-rank update `B @ A * alpha / rank` beside
each named Linear (peft's LoRA: A Kaiming-uniform, B zero, so the model starts unchanged)
and freezes every other weight. The adapters are parameters of the Linear itself
(`c_attn.lora_A`, `c_attn.lora_B`), so the published names stay the state dict's; export
merges them into the weights.

Under FSDP every rank reads the file and keeps its shard of each tensor (`_place`): the
model is sharded before the load, so no rank's accelerator ever holds more than its shards
and one whole tensor.

`tlc check` reads only the files' headers and reports each mismatch at the rule's line; the
script checks again when it loads (the files may have changed since), and a missing, corrupt
or mismatched file raises `WeightsError` with a one-line message.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import torch

WeightRule = tuple[Any, ...]
"""(the file's name pattern(s), the model's name pattern(s) or None to ignore, transposed),
and the dim several names are joined or split along after them (0 if not given)."""
Rules = list[WeightRule] | tuple[WeightRule, ...]


class WeightsError(Exception):
    """Published weights that cannot be loaded into the model; the message says why."""


def weight_files(path: str | os.PathLike[str]) -> list[Path]:
    """The tensor files behind `path`: a file itself, or a folder's model.safetensors, its
    sharded index's files, or its pytorch_model.bin."""
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise WeightsError(
            f"the published weights `{root}` are not here (relative to {Path.cwd()}): fetch "
            f"them (a Hugging Face model: `huggingface-cli download NAME --local-dir {root}`), "
            "or pass --weights PATH"
        )
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


def weight_sources(defaults: dict[str, str], given: list[str]) -> dict[str, str]:
    """Each model's source: `defaults` (the `weights` blocks'), each `MODEL=PATH` of `given`
    (a block of several models' --weights) in place of its model's."""
    sources = dict(defaults)
    for entry in given:
        name, sep, path = entry.partition("=")
        if not sep or name not in defaults:
            models = ", ".join(defaults)
            raise WeightsError(f"--weights {entry}: give MODEL=PATH, MODEL one of {models}")
        sources[name] = path
    return sources


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


def _rule_names(names: Any) -> tuple[str, ...]:
    if not names:
        return ()
    return (names,) if isinstance(names, str) else tuple(names)


def _rule_parts(rule: WeightRule) -> tuple[tuple[str, ...], tuple[str, ...], bool, int]:
    """(file patterns, model patterns, transposed, along) of a rule as WEIGHT_RULES writes it."""
    along = rule[3] if len(rule) > 3 and rule[3] is not None else 0
    return _rule_names(rule[0]), _rule_names(rule[1]), bool(rule[2]), int(along)


def match_names(
    names: list[str] | tuple[str, ...], rules: Rules
) -> tuple[list[tuple[tuple[str, ...], tuple[str, ...], int]], list[str], list[list[str]]]:
    """(file names, model names, rule) for each group of file tensors a rule maps; the
    names no rule matches; for each join missing a tensor, the names it lacks."""
    compiled = [[_pattern(s) for s in _rule_parts(rule)[0]] for rule in rules]
    unmatched: list[str] = []
    groups: dict[tuple[int, tuple[tuple[str, str], ...]], dict[int, str]] = {}
    for name in names:
        found = _first_match(name, compiled)
        if found is None:
            unmatched.append(name)
        elif _rule_parts(rules[found[0]])[1]:
            groups.setdefault((found[0], found[2]), {})[found[1]] = name
    mapped: list[tuple[tuple[str, ...], tuple[str, ...], int]] = []
    partial: list[list[str]] = []
    for (index, parts), pieces in groups.items():
        sources, targets, _, _ = _rule_parts(rules[index])
        values = dict(parts)
        if len(pieces) < len(sources):
            partial.append([s.format(**values) for k, s in enumerate(sources) if k not in pieces])
            continue
        files = tuple(pieces[k] for k in range(len(sources)))
        mapped.append((files, tuple(t.format(**values) for t in targets), index))
    return mapped, unmatched, partial


def _first_match(
    name: str, compiled: list[list[re.Pattern[str]]]
) -> tuple[int, int, tuple[tuple[str, str], ...]] | None:
    for index, regexes in enumerate(compiled):
        for piece, regex in enumerate(regexes):
            match = regex.match(name)
            if match is not None:
                return index, piece, tuple(sorted(match.groupdict().items()))
    return None


def load_pretrained(model: torch.nn.Module, path: str | os.PathLike[str], rules: Rules) -> None:
    """Fill every parameter and buffer of `model`'s state dict from the weights at `path`.

    Raises WeightsError for a file tensor no rule covers, a join missing one of its tensors,
    a model tensor none fills, two file tensors for one model tensor, or a shape that
    differs."""
    tensors = read_tensors(path)
    mapped, unmatched, partial = match_names(list(tensors), rules)
    if unmatched:
        raise WeightsError(f"{path}: no rule maps {_some(unmatched)}; map or ignore them")
    if partial:
        raise WeightsError(f"{path}: a rule joins {_some(partial[0])}, which it lacks")
    own = model.state_dict()
    state: dict[str, torch.Tensor] = {}
    for files, targets, index in mapped:
        _, _, transposed, along = _rule_parts(rules[index])
        for target in targets:
            if target not in own:
                raise WeightsError(
                    f"{path}: `{files[0]}` maps to `{target}`, which the model lacks"
                )
            if target in state:
                raise WeightsError(f"{path}: two tensors of the file map to `{target}`")
        pieces = [tensors[f].t() if transposed else tensors[f] for f in files]
        for target, tensor in zip(
            targets, _regroup(pieces, [own[t] for t in targets], along, path, files), strict=True
        ):
            if tuple(tensor.shape) != tuple(own[target].shape):
                raise WeightsError(
                    f"{path}: `{', '.join(files)}` give {list(tensor.shape)} for the model's "
                    f"`{target}`, which is {list(own[target].shape)}"
                )
            state[target] = tensor.to(own[target].dtype)
    derived = _derived_keys(model)
    missing = [k for k in own if k not in state and k not in derived]
    if missing:
        raise WeightsError(f"{path}: nothing fills the model's {_some(missing)}")
    _place(model, state, own)


def _place(
    model: torch.nn.Module, state: dict[str, torch.Tensor], own: dict[str, torch.Tensor]
) -> None:
    """Copy the whole tensors of `state` into `model`, in place (an optimizer built over its
    parameters keeps them). A model FSDP2 sharded (its tensors DTensors) keeps only this
    rank's shard of each: every rank read the whole file, and torch's `set_model_state_dict`
    cuts each tensor along the model's placements (on the parameters' device, one whole
    tensor at a time)."""
    if not any(hasattr(t, "device_mesh") for t in own.values()):  # no DTensor: one process
        model.load_state_dict(state, strict=False)
        return
    # imported here, as a module: a script without FSDP does not pay for torch.distributed
    from torch.distributed.checkpoint import state_dict as distributed_state

    whole = distributed_state.StateDictOptions(full_state_dict=True, strict=False)
    distributed_state.set_model_state_dict(model, state, options=whole)


def _regroup(
    pieces: list[torch.Tensor],
    wanted: list[torch.Tensor],
    along: int,
    path: object,
    names: tuple[str, ...],
) -> list[torch.Tensor]:
    """`pieces` joined along `along` and split into tensors as large as `wanted`'s there."""
    if len(pieces) == 1 and len(wanted) == 1:
        return pieces
    try:
        whole = pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=along)
        sizes = [w.shape[along] for w in wanted]
        if whole.shape[along] != sum(sizes):
            raise WeightsError(
                f"{path}: `{', '.join(names)}` give {whole.shape[along]} along dim {along}, "
                f"the model's tensors take {' + '.join(map(str, sizes))}"
            )
        return list(whole.split(sizes, dim=along))
    except (RuntimeError, IndexError) as exc:
        raise WeightsError(f"{path}: cannot join or split `{', '.join(names)}` ({exc})") from None


def _derived_keys(model: torch.nn.Module) -> set[str]:
    """The state-dict entries the file does not fill: LoRA adapters, and the second name of
    a weight tied to one already loaded."""
    unique = dict(model.named_parameters())
    return {
        key
        for key, _ in model.named_parameters(remove_duplicate=False)
        if key not in unique or key.endswith((".lora_A", ".lora_B"))
    }


def _some(names: list[str] | tuple[str, ...]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:4])
    return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def export_pretrained(
    model: torch.nn.Module,
    folder: str | os.PathLike[str],
    rules: Rules,
    source: str | os.PathLike[str] | None = None,
) -> Path:
    """Write `model` as `folder`/model.safetensors in the file's names (each model tensor
    named by the first rule whose target matches it, read backwards), with the source
    folder's config.json beside it: a folder the library that published the weights loads.

    A join is split back into the source's tensors, as large as the source's where it is
    at hand and in equal parts otherwise; a split is joined back."""
    return export_state(merged_state_dict(model), folder, rules, source)


def export_state(
    state: dict[str, torch.Tensor],
    folder: str | os.PathLike[str],
    rules: Rules,
    source: str | os.PathLike[str] | None = None,
) -> Path:
    """`export_pretrained` of a model's (merged) state dict: a sharded model's, gathered."""
    from safetensors.torch import save_file

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    sizes = _source_shapes(source)
    written: dict[str, torch.Tensor] = {}
    done: set[str] = set()
    for key in state:
        if key in done:
            continue
        found = _inverse_match(key, rules)
        if found is None:
            continue
        index, values = found
        files, targets, transposed, along = _rule_parts(rules[index])
        names = [t.format(**values) for t in targets]
        if any(n not in state for n in names):
            raise WeightsError(f"`{key}` is split from a tensor the model has not all of")
        done.update(names)
        for name, tensor in _file_tensors(
            [state[n].detach().cpu() for n in names],
            [f.format(**values) for f in files], transposed, along, sizes,
        ):  # fmt: skip
            written[name] = tensor.contiguous().clone()
    save_file(written, str(out / "model.safetensors"), metadata={"format": "pt"})
    for extra in ("config.json", "generation_config.json"):
        if source is not None and (Path(source) / extra).is_file():
            shutil.copyfile(Path(source) / extra, out / extra)
    return out


def _inverse_match(key: str, rules: Rules) -> tuple[int, dict[str, str]] | None:
    """The first rule with a target pattern matching the model's `key`, and its parts."""
    for index, rule in enumerate(rules):
        for target in _rule_parts(rule)[1]:
            match = _pattern(target).match(key)
            if match is not None:
                return index, match.groupdict()
    return None


def _file_tensors(
    tensors: list[torch.Tensor],
    names: list[str],
    transposed: bool,
    along: int,
    sizes: dict[str, tuple[int, ...]],
) -> list[tuple[str, torch.Tensor]]:
    """The model's tensors as the file names them: joined, split back, transposed back."""
    whole = tensors[0] if len(tensors) == 1 else torch.cat(tensors, dim=along)
    if len(names) == 1:
        pieces = [whole]
    else:
        known = [sizes.get(n) for n in names]
        if all(k is not None for k in known):
            split = [k[-1 - along] if transposed else k[along] for k in known if k is not None]
        elif whole.shape[along] % len(names) == 0:
            split = [whole.shape[along] // len(names)] * len(names)
        else:
            raise WeightsError(
                f"cannot tell the sizes of {_some(names)} (their source is not at hand, and "
                f"{whole.shape[along]} does not split evenly): pass the source with --weights"
            )
        pieces = list(whole.split(split, dim=along))
    return [(n, p.t() if transposed else p) for n, p in zip(names, pieces, strict=True)]


def _source_shapes(source: str | os.PathLike[str] | None) -> dict[str, tuple[int, ...]]:
    """The source's tensor shapes by name, read from safetensors headers (no data), for
    splitting a join back into tensors of the sizes it was made of; {} if not at hand."""
    if source is None:
        return {}
    try:
        files = weight_files(source)
    except WeightsError:
        return {}
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        if file.suffix != ".safetensors":
            continue
        from safetensors import safe_open

        with safe_open(str(file), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open is not iterable)
                shapes[name] = tuple(f.get_slice(name).get_shape())
    return shapes


def _layer_names(model: torch.nn.Module, path: str) -> list[str]:
    """`h[0:6]` as `h.0` ... `h.5` (the list's own length bounds the slice); other paths as
    they are."""
    match = re.fullmatch(r"(.+)\[(\d*):(\d*)\]", path)
    if match is None:
        return [path]
    base, low, high = match.group(1), match.group(2), match.group(3)
    layers = model.get_submodule(base)
    indices = range(len(layers))[int(low or 0) : int(high) if high else None]  # type: ignore[arg-type]
    return [f"{base}.{i}" for i in indices]


def freeze_layers(model: torch.nn.Module, paths: list[str] | tuple[str, ...]) -> int:
    """Stop the named layers training (`freeze = [wte, h[0:6]]`): their parameters get no
    gradients and no optimizer state. Returns how many parameters froze."""
    frozen = 0
    for path in paths:
        for name in _layer_names(model, path):
            try:
                layer = model.get_submodule(name)
                params = list(layer.parameters())
            except AttributeError:
                params = [model.get_parameter(name)]
            for p in params:
                if p.requires_grad:
                    p.requires_grad_(False)
                    frozen += p.numel()
    return frozen


def add_lora(
    model: torch.nn.Module,
    targets: list[str] | tuple[str, ...],
    rank: int,
    alpha: float,
    dropout: float = 0.0,
) -> list[str]:
    """LoRA adapters on every Linear whose name is, or ends in, a target; every other weight
    freezes. Returns the adapted layers' names."""
    for p in model.parameters():
        p.requires_grad_(False)
    adapted: list[str] = []
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        if not any(name == t or name.endswith("." + t) for t in targets):
            continue
        weight = module.weight
        a = torch.empty(rank, module.in_features, device=weight.device, dtype=weight.dtype)
        torch.nn.init.kaiming_uniform_(a, a=5**0.5)
        module.lora_A = torch.nn.Parameter(a)
        module.lora_B = torch.nn.Parameter(torch.zeros_like(a.new_empty(module.out_features, rank)))
        module.lora_dropout = torch.nn.Dropout(dropout)
        module.lora_scale = alpha / rank
        module.register_forward_hook(_lora_forward)
        adapted.append(name)
    if not adapted:
        raise ValueError(f"no Linear layer is named {', '.join(targets)}")
    return adapted


def _lora_forward(module: torch.nn.Module, inputs: tuple[Any, ...], output: torch.Tensor) -> Any:
    x = module.lora_dropout(inputs[0])
    update = torch.nn.functional.linear(torch.nn.functional.linear(x, module.lora_A), module.lora_B)
    return output + update * module.lora_scale


def merged_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each LoRA adapter merged into its Linear's weight, adapters left
    out: the weights as the published model's class holds them."""
    state = {k: v.detach() for k, v in model.state_dict().items()}
    for name, module in model.named_modules():
        if hasattr(module, "lora_A") and isinstance(module, torch.nn.Linear):
            prefix = f"{name}." if name else ""
            update = (module.lora_B @ module.lora_A).detach() * module.lora_scale
            state[prefix + "weight"] = state[prefix + "weight"] + update.to(module.weight.dtype)
            del state[prefix + "lora_A"], state[prefix + "lora_B"]
    return state
