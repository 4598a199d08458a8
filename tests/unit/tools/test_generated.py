"""The generated constants are current (`make reference` rewrites them): the runtime's names
that mangle-names reserves, and the runtime's list of the catalogue's norm layers."""

from __future__ import annotations

import torch

from tensorloom.backends import runtime
from tensorloom.backends.runtime import recipe
from tensorloom.catalogue.layers import LAYERS
from tensorloom.passes.support.runtime_names import RUNTIME_NAMES
from tensorloom.tools import generated


def test_runtime_names_are_the_runtime_modules_names() -> None:
    assert runtime.top_level_names() == RUNTIME_NAMES, "run `make reference`"
    assert generated.RUNTIME_NAMES.read_text(encoding="utf-8") == generated.runtime_names_text()


def test_the_runtimes_norm_layers_are_the_catalogues() -> None:
    assert generated.RECIPE.read_text(encoding="utf-8") == generated.recipe_text(), (
        "run `make reference`"
    )
    norms = {getattr(torch.nn, s.torch_class.removeprefix("nn.")) for s in LAYERS.values()
             if s.is_norm}  # fmt: skip
    assert set(recipe._NORM_LAYERS) == norms  # pyright: ignore[reportPrivateUsage]


def test_weight_decay_skips_a_norm_layers_weights_and_every_bias() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.RMSNorm(4))
    assert recipe.no_decay_names(model) == ["0.bias", "1.weight", "1.bias", "2.weight"]

