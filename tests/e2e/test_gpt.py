"""examples/gpt.nml is GPT as nanoGPT writes it, with GPT-2 small's size; the ViT is ViT-B/16's.

The reference is bench/handwritten/gpt2.py, nanoGPT's model.py (causal
self-attention through `F.scaled_dot_product_attention(..., is_causal=True)`, a
GELU MLP, pre-norm blocks, learned positions, a head tied to the token
embedding), without the `transformer` ModuleDict so that the state-dict keys are
the emitted model's.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tensorloom.analysis.profile import ProfileOptions, profile_file
from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file
from tests.e2e._torchvision import import_torchvision

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GPT2_SMALL = 124_439_808


def _nanogpt() -> ModuleType:
    """bench/handwritten/gpt2.py: nanoGPT's model, the benchmark's reference too."""
    path = Path(__file__).resolve().parents[2] / "bench" / "handwritten" / "gpt2.py"
    spec = importlib.util.spec_from_file_location("handwritten_gpt2", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NanoGPT = _nanogpt().GPT


def emitted_module() -> ModuleType:
    result = compile_file(EXAMPLES / "gpt.nml", until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    module = ModuleType("emitted_gpt")
    exec(compile(print_python(result.module), "<emitted gpt>", "exec"), module.__dict__)
    return module


SMALL = {"vocab_size": 97, "block_size": 16, "n_layer": 3, "n_head": 4, "n_embd": 32}


def test_emitted_gpt_equals_nanogpt_given_the_same_weights() -> None:
    torch.manual_seed(0)
    emitted = emitted_module().GPT(**SMALL).eval()
    reference = NanoGPT(97, 16, 3, 4, 32).eval()
    reference.load_state_dict(emitted.state_dict(), strict=True)
    idx = torch.randint(0, 97, (3, 16))
    with torch.no_grad():
        difference = (emitted(idx) - reference(idx)).abs().max().item()
    assert difference <= 1e-5


def test_the_emitted_gpt_is_causal() -> None:
    torch.manual_seed(1)
    model = emitted_module().GPT(**SMALL).eval()
    idx = torch.randint(0, 97, (2, 12))
    changed = idx.clone()
    changed[:, -1] = (idx[:, -1] + 1) % 97
    with torch.no_grad():
        before, after = model(idx), model(changed)
    torch.testing.assert_close(before[:, :-1], after[:, :-1], rtol=0, atol=0)
    assert not torch.allclose(before[:, -1], after[:, -1])


def test_gpt2_small_has_its_parameters_counted_once() -> None:
    _, profiles = profile_file(EXAMPLES / "gpt.nml", ProfileOptions())
    (profile,) = [p for p in profiles if p.name == "GPT"]
    assert profile.params == GPT2_SMALL
    with torch.device("meta"):
        model = emitted_module().GPT()
    assert sum(p.numel() for p in model.parameters()) == GPT2_SMALL  # wte counted once


@pytest.mark.parametrize("n_embd", [32, 48])
def test_attention_is_scaled_dot_product(n_embd: int) -> None:
    """Another width: the heads split it as nanoGPT does."""
    torch.manual_seed(2)
    model = emitted_module().GPT(97, 16, 1, 4, n_embd).eval()
    reference = NanoGPT(97, 16, 1, 4, n_embd).eval()
    reference.load_state_dict(model.state_dict(), strict=True)
    idx = torch.randint(0, 97, (1, 5))
    with torch.no_grad():
        assert torch.allclose(model(idx), reference(idx), atol=1e-5)
    assert math.isfinite(model(idx).sum().item())


VIT_B_16 = 86_567_656


def test_vit_b_16_counts_what_torchvision_counts() -> None:
    """examples/vision_transformer.nml's defaults are torchvision's `vit_b_16`."""
    _, profiles = profile_file(EXAMPLES / "vision_transformer.nml", ProfileOptions())
    (profile,) = [p for p in profiles if p.name == "VisionTransformer"]
    assert profile.params == VIT_B_16
    result = compile_file(EXAMPLES / "vision_transformer.nml", until="torch")
    assert result.module is not None
    module = ModuleType("emitted_vit")
    exec(compile(print_python(result.module), "<emitted vit>", "exec"), module.__dict__)
    with torch.device("meta"):
        model = module.VisionTransformer()
    assert sum(p.numel() for p in model.parameters()) == VIT_B_16
    names = {name for name, _ in model.named_parameters()}
    assert {"class_token", "pos_embedding", "conv_proj.weight", "layers.11.fc2.bias"} <= names


def test_vit_b_16_counts_what_torchvisions_own_model_counts() -> None:
    """torchvision's `vit_b_16()` itself (built on the meta device): the same count, tensor
    for tensor (test_pretrained_models.py loads its weights and compares logits)."""
    torchvision = import_torchvision()
    with torch.device("meta"):
        theirs = torchvision.models.vit_b_16()
    assert sum(p.numel() for p in theirs.parameters()) == VIT_B_16
