"""A model's `state_dict()` as the compiler knows it: every parameter's and buffer's name and shape.

    shapes = state_shapes(models["GPT"], env, models)
    shapes["h.0.attn.c_attn.weight"]     # (288, 96)

Names are PyTorch's (the catalogue's `param_shapes` and `buffer_shapes` under each layer's
name; a layer list's copies under `name.0.`, `name.1.`, ...; a nested model's under its
layer's name), so they are the keys the emitted model's `state_dict()` has. check-weights
compares them with a weights file's header.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tensorloom.catalogue.layers import lookup
from tensorloom.catalogue.layers.base import Value
from tensorloom.dialects.nml import LayerOp, ModelOp
from tensorloom.passes.support.model_env import (
    MAX_NESTING,
    MAX_POSITIONS,
    ArgFailure,
    bind_layer,
    element_env,
    layer_built,
    layer_count,
    layers_of,
    model_env,
    nested_model,
    nested_overrides,
)


@dataclass(slots=True)
class ModelTree:
    """What `named_modules()` will give: each layer's path and kind (`h.0.attn`:
    "MultiHeadAttention", `h.0`: "Block"), each layer list's length (`h`: 12), and the
    state dict's shapes."""

    kinds: dict[str, str] = field(default_factory=dict[str, str])
    lists: dict[str, int] = field(default_factory=dict[str, int])
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict[str, tuple[int, ...]])
    buffers: set[str] = field(default_factory=set[str])  # the shapes that are not parameters
    integers: set[str] = field(default_factory=set[str])  # the int64 buffers (BatchNorm's count)

    def parameters(self) -> dict[str, tuple[int, ...]]:
        return {k: s for k, s in self.shapes.items() if k not in self.buffers}

    def linear_paths(self) -> list[str]:
        """Every Linear `named_modules()` will hold: the model's own, and the projections
        inside its catalogue layers (attention's `c_attn`, `out_proj`): a 2-D `weight` of no
        layer."""
        own = [p for p, kind in self.kinds.items() if _builds(kind, "nn.Linear")]
        inner = [
            k[: -len(".weight")] for k, shape in self.shapes.items()
            if k.endswith(".weight") and len(shape) == 2 and k[: -len(".weight")] not in self.kinds
        ]  # fmt: skip
        return own + inner

    def layer_names(self, path: str) -> list[str]:
        """`h[0:6]` as `h.0` ... `h.5` (within the list's length); other paths as they are."""
        sliced = re.fullmatch(r"(.+)\[(\d*):(\d*)\]", path)
        if sliced is None:
            return [path]
        base, low, high = sliced.group(1), sliced.group(2), sliced.group(3)
        count = self.lists.get(base, 0)
        return [f"{base}.{i}" for i in range(count)[int(low or 0) : int(high) if high else None]]

    def trainable(self, freeze: Sequence[str], lora: Mapping[str, object] | None) -> int:
        """The parameters that train under `freeze` and `lora` (every other one frozen, as
        the emitted script's `freeze_layers` and `add_lora` freeze them)."""
        params = self.parameters()
        if lora is not None:
            rank = int(lora.get("rank", 0))  # type: ignore[arg-type]
            targets = [str(t) for t in lora.get("targets", ())]  # type: ignore[union-attr]
            adapted = [p for p in self.linear_paths()
                       if any(p == t or p.endswith("." + t) for t in targets)]  # fmt: skip
            return sum(rank * (params[p + ".weight"][1] + params[p + ".weight"][0])
                       for p in adapted if p + ".weight" in params)  # fmt: skip
        frozen = {
            key for path in freeze for name in self.layer_names(path) for key in params
            if key == name or key.startswith(name + ".")
        }  # fmt: skip
        return sum(_numel(s) for k, s in params.items() if k not in frozen)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class UnknownState(Exception):
    """A layer whose arguments do not evaluate, so its tensors are not known."""


def state_shapes(
    model: ModelOp, env: Mapping[str, Value], models: Mapping[str, ModelOp]
) -> dict[str, tuple[int, ...]]:
    """Every state-dict entry of `model` under `env`, in registration order.

    Raises UnknownState where a layer's arguments have no value (resolve-nml reported why)."""
    return model_tree(model, env, models).shapes


def model_tree(
    model: ModelOp, env: Mapping[str, Value], models: Mapping[str, ModelOp]
) -> ModelTree:
    """Every layer, layer list and state-dict entry of `model` under `env` (UnknownState
    where a layer's arguments have no value)."""
    tree = ModelTree()
    _walk(model, env, models, "", tree, 0)
    return tree


def _walk(
    model: ModelOp,
    env: Mapping[str, Value],
    models: Mapping[str, ModelOp],
    prefix: str,
    tree: ModelTree,
    depth: int,
) -> None:
    if depth > MAX_NESTING:
        raise UnknownState(f"models nest deeper than {MAX_NESTING}")
    for name, layer in layers_of(model).items():
        if not layer_built(layer, env):
            continue  # `if project:` in `@layers`, false here: the script stores None
        count = layer_count(layer, env)
        if layer.count is not None and count is None:
            raise UnknownState(f"the length of `{name}`")
        if count is not None and count > MAX_POSITIONS:  # TL0209 said so; no tree to walk
            raise UnknownState(f"`{name}`, {count:,} copies (at most {MAX_POSITIONS:,})")
        if count is not None:
            tree.lists[prefix + name] = count
        positions = range(count) if count is not None else [None]
        for position in positions:
            p = f"{prefix}{name}." if position is None else f"{prefix}{name}.{position}."
            here = element_env(layer, env, position) if position is not None else env
            tree.kinds[p[:-1]] = layer.kind.data
            _element(layer, name, here, models, p, tree, depth)


def _element(
    layer: LayerOp,
    name: str,
    env: Mapping[str, Value],
    models: Mapping[str, ModelOp],
    prefix: str,
    tree: ModelTree,
    depth: int,
) -> None:
    """One layer (or one position of a layer list, under its own loop variable) at `prefix`."""
    nested = nested_model(layer, models)
    if nested is not None:
        overrides = nested_overrides(layer, nested, env)
        if isinstance(overrides, ArgFailure):
            raise UnknownState(f"the arguments of `{name}`")
        _walk(nested, model_env(nested, overrides), models, prefix, tree, depth + 1)
        return
    bound = bind_layer(layer, env)
    spec = lookup(layer.kind.data)
    if bound is None or spec is None:
        raise UnknownState(f"the arguments of `{name}`")
    params, buffers = spec.param_shapes(bound), spec.buffer_shapes(bound)
    for key, shape in (params | buffers).items():
        tree.shapes[prefix + key if key else prefix[:-1]] = shape
    tree.buffers.update(prefix + key for key in buffers)
    tree.integers.update(prefix + key for key in spec.integer_buffers(bound))


def _builds(kind: str, torch_class: str) -> bool:
    """Whether a layer of this kind is a module of `torch_class` (a catalogue layer's)."""
    spec = lookup(kind)
    return spec is not None and spec.torch_class == torch_class
