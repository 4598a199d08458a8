"""Shared helpers for the layer catalogue tests: build the real PyTorch module
from the catalogue's own constructor source and run it the way emitted code does."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from tensorloom.backends.runtime import module_text
from tensorloom.catalogue.layers import BoundLayer, LayerSpec, Value, lookup
from tensorloom.catalogue.shapes import Shape, ShapeMismatch, Unifier

RUNTIME: dict[str, object] = {}
exec(module_text("attention"), RUNTIME)  # the layers emitted code builds from runtime modules


def bind(name: str, *args: Value, **kwargs: Value) -> tuple[LayerSpec, BoundLayer]:
    spec = lookup(name)
    assert spec is not None, name
    bound = spec.bind(list(args), kwargs)
    assert isinstance(bound, BoundLayer), bound
    assert spec.validate(bound) == [], spec.validate(bound)
    return spec, bound


def build(spec: LayerSpec, bound: BoundLayer) -> nn.Module:
    source = spec.torch_ctor(bound).source()
    module = eval(source, {"nn": nn, "float": float, **RUNTIME})
    assert isinstance(module, nn.Module)
    return module


def forward(
    spec: LayerSpec, module: nn.Module, x: torch.Tensor, bound: BoundLayer | None = None
) -> torch.Tensor:
    """The forward call as the backend emits it for the layer's call kind."""
    kind = spec.call_kind_of(bound) if bound is not None else spec.call_kind
    if kind == "first_of_tuple_self_attention":
        return module(x, x, x, need_weights=False)[0]
    if kind == "first_of_tuple":
        return module(x)[0]
    return module(x)


def sample_input(name: str, shape: tuple[int, ...], num_embeddings: int = 0) -> torch.Tensor:
    if name == "Embedding":
        return torch.randint(0, num_embeddings, shape)
    return torch.randn(shape)


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def infer(spec: LayerSpec, bound: BoundLayer, shape: tuple[Any, ...]) -> Shape | ShapeMismatch:
    return spec.infer_shape(bound, [shape], Unifier())


def check_against_torch(
    name: str, args: list[Value], kwargs: dict[str, Value], shape: tuple[int, ...]
) -> None:
    """param_shapes names and sizes every parameter as `named_parameters()` does, in
    its order; param_count is exact; infer_shape agrees with a real forward (or both fail)."""
    spec, bound = bind(name, *args, **kwargs)
    module = build(spec, bound)
    named = [(n, tuple(p.shape)) for n, p in module.named_parameters()]
    assert list(spec.param_shapes(bound).items()) == named, (name, args, kwargs)
    assert spec.param_count(bound) == n_params(module), (name, args, kwargs)
    predicted = infer(spec, bound, shape)
    num = bound.get_int("num_embeddings") if name == "Embedding" else 0
    x = sample_input(name, shape, num)
    if isinstance(predicted, ShapeMismatch):
        # A reported mismatch must be a torch failure, or an empty output (which
        # ConvTranspose2d produces without complaint, and which is always a bug).
        try:
            with torch.no_grad():
                out = forward(spec, module, x, bound)
        except (RuntimeError, ValueError, AssertionError, IndexError):
            return
        if out.numel() == 0:
            return
        raise AssertionError(f"{name}{args}{kwargs} on {shape}: predicted {predicted}, torch ran")
    with torch.no_grad():
        out = forward(spec, module, x, bound)
    assert predicted == tuple(out.shape), (name, args, kwargs, shape, predicted, tuple(out.shape))
