"""The reference models of docs/examples.md against the libraries they come from (issue 31).

Each example is taken from docs/examples.md as written there, checked and compiled, and
its emitted module is given the reference's weights through a state-dict map; outputs
must agree within 1e-5 and parameter counts exactly.

- ResNet-50: `torchvision.models.resnet50()`'s own module (torchvision imported through
  tests/e2e/_torchvision.py's shim, which also lets transformers import beside it); the
  example uses torchvision's module names, so the weights map by name one to one.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file
from tests.e2e._torchvision import import_torchvision

torchvision = import_torchvision()  # transformers imports it too: the shim comes first

EXAMPLES_MD = Path(__file__).resolve().parents[2] / "docs" / "examples.md"


def example(marker: str) -> str:
    """The `nml` block of docs/examples.md that declares `@model <marker>`."""
    blocks = re.findall(r"```nml\n(.*?)```", EXAMPLES_MD.read_text(), re.DOTALL)
    [block] = [b for b in blocks if f"@model {marker}:" in b]
    return block


def emit(tmp_path: Path, source: str, name: str) -> ModuleType:
    """Check and compile `source`; the emitted script's module, executed."""
    path = tmp_path / f"{name}.nml"
    path.write_text(source)
    result = compile_file(path, until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    module = ModuleType(f"emitted_{name}")
    exec(compile(print_python(result.module), f"<emitted {name}>", "exec"), module.__dict__)
    return module


def count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ------------------------------------------------------------------------- ResNet-50


def resnet50_as_sequentials() -> str:
    """The docs' ResNet-50 with each stage a `Sequential` of blocks, as `_make_layer`
    builds it, applied as one layer."""
    source = example("ResNet50")
    stages = {1: (64, 64, 3, 1), 2: (256, 128, 4, 2), 3: (512, 256, 6, 2), 4: (1024, 512, 3, 2)}
    for n, (inplanes, planes, blocks, stride) in stages.items():
        first = f"Bottleneck({inplanes}, {planes}, {stride})"
        rest = [f"Bottleneck({planes * 4}, {planes})"] * (blocks - 1)
        source = re.sub(
            rf"layer{n} = \[.*\]\n", f"layer{n} = Sequential({', '.join([first, *rest])})\n", source
        )
        loop = f"for block in layer{n}:\n            x = block(x)"
        source = source.replace(loop, f"x = layer{n}(x)")
    assert "for block" not in source and source.count("Sequential(Bottleneck") == 4
    return source


RESNET_SPELLINGS = {"lists": lambda: example("ResNet50"), "sequentials": resnet50_as_sequentials}


@pytest.mark.parametrize("spelling", list(RESNET_SPELLINGS))
def test_resnet50_equals_torchvision(tmp_path: Path, spelling: str) -> None:
    """Stages as per-position lists (the docs) or as `Sequential`s of blocks, against
    `torchvision.models.resnet50()` itself: the same state-dict keys (so its weights load
    by name), 25,557,032 parameters each, outputs within 1e-5."""
    torch.manual_seed(0)
    reference = torchvision.models.resnet50().eval()
    emitted = emit(tmp_path, RESNET_SPELLINGS[spelling](), f"resnet50_{spelling}").ResNet50()
    emitted.eval()
    assert list(emitted.state_dict()) == list(reference.state_dict())
    assert count(emitted) == count(reference) == 25_557_032
    for module in reference.modules():  # BatchNorm statistics that are not the identity
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    emitted.load_state_dict(reference.state_dict(), strict=True)
    x = torch.randn(2, 3, 64, 48)
    with torch.no_grad():
        torch.testing.assert_close(emitted(x), reference(x), rtol=0, atol=1e-5)


# ------------------------------------------------------------------------ sparse MoE


def mixtral_config(**overrides: int) -> object:
    from transformers import MixtralConfig

    sizes = dict(
        hidden_size=32, intermediate_size=64, num_local_experts=8, num_experts_per_tok=2,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=101,
        max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
    )  # fmt: skip
    return MixtralConfig(**(sizes | overrides), router_jitter_noise=0.0)


def moe_state(block: nn.Module, prefix: str = "") -> dict[str, torch.Tensor]:
    """transformers' MixtralSparseMoeBlock weights under the example's names: the router
    is `gate`; each expert's fused `gate_up_proj` rows are `w1` (gate) then `w3` (up)."""
    experts = block.experts
    hidden = experts.intermediate_dim
    state = {f"{prefix}gate.weight": block.gate.weight}
    for e in range(experts.num_experts):
        gate_up = experts.gate_up_proj[e]
        state[f"{prefix}experts.{e}.w1.weight"] = gate_up[:hidden]
        state[f"{prefix}experts.{e}.w3.weight"] = gate_up[hidden:]
        state[f"{prefix}experts.{e}.w2.weight"] = experts.down_proj[e]
    return state


def test_sparse_moe_equals_transformers_block(tmp_path: Path) -> None:
    """docs/examples.md's `MoeLayer` against transformers' MixtralSparseMoeBlock on the same
    weights: equal outputs and parameter counts; only the chosen experts run."""
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    torch.manual_seed(0)
    reference = MixtralSparseMoeBlock(mixtral_config()).eval()
    for weight in reference.parameters():
        nn.init.normal_(weight, std=0.2)
    emitted = emit(tmp_path, example("MoeLayer"), "moe").MoeLayer().eval()
    emitted.load_state_dict(moe_state(reference), strict=True)
    assert count(emitted) == count(reference) == 8 * 3 * 32 * 64 + 8 * 32
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        expected = reference(x)
        expected = expected[0] if isinstance(expected, tuple) else expected
        torch.testing.assert_close(emitted(x), expected, rtol=0, atol=1e-5)
    calls: list[int] = []  # each expert runs on its tokens only: 2 x 5 tokens x top-2 rows
    for expert in emitted.experts:
        expert.register_forward_hook(lambda m, inputs, out: calls.append(inputs[0].shape[0]))
    with torch.no_grad():
        emitted(x)
    assert sum(calls) == 2 * 5 * 2


# ----------------------------------------------------------------------------- Llama

LLAMA_NAMES = {  # transformers' LlamaForCausalLM -> the example's (llama2.c's) names
    r"model\.embed_tokens\.": "tok_embeddings.",
    r"model\.layers\.(\d+)\.self_attn\.([qkvo])_proj\.": r"layers.\1.attention.w\2.",
    r"model\.layers\.(\d+)\.mlp\.gate_proj\.": r"layers.\1.feed_forward.w1.",
    r"model\.layers\.(\d+)\.mlp\.down_proj\.": r"layers.\1.feed_forward.w2.",
    r"model\.layers\.(\d+)\.mlp\.up_proj\.": r"layers.\1.feed_forward.w3.",
    r"model\.layers\.(\d+)\.input_layernorm\.": r"layers.\1.attention_norm.",
    r"model\.layers\.(\d+)\.post_attention_layernorm\.": r"layers.\1.ffn_norm.",
    r"model\.norm\.": "norm.",
    r"lm_head\.": "output.",
}


def renamed(state: dict[str, torch.Tensor], names: dict[str, str]) -> dict[str, torch.Tensor]:
    """`state` under the example's names: each key through the first rule it matches."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        rule = next(r for r in names if re.match(r, key))
        out[re.sub(rule, names[rule], key, count=1)] = value
    return out


def test_llama_equals_transformers(tmp_path: Path) -> None:
    """docs/examples.md's Llama (head_dim and the feed-forward width derived from configs,
    RoPE, grouped-query attention) against transformers' LlamaForCausalLM, random-
    initialised at a small config, weights mapped by name: equal counts and logits."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=192, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0,
        max_position_embeddings=64, tie_word_embeddings=False, attn_implementation="eager",
    )  # fmt: skip
    reference = LlamaForCausalLM(config).eval()
    for weight in reference.parameters():  # RMSNorm weights away from 1 too
        nn.init.normal_(weight, std=0.1)
    emitted = emit(tmp_path, example("Llama"), "llama").Llama().eval()
    emitted.load_state_dict(renamed(reference.state_dict(), LLAMA_NAMES), strict=True)
    assert count(emitted) == count(reference) == 115_008
    tokens = torch.randint(0, 128, (2, 11))
    with torch.no_grad():
        expected = reference(tokens).logits
        torch.testing.assert_close(emitted(tokens), expected, rtol=0, atol=1e-5)


# --------------------------------------------------------------------------- Mixtral

MIXTRAL_NAMES = {
    **{k: v for k, v in LLAMA_NAMES.items() if "mlp" not in k},
    r"model\.layers\.(\d+)\.mlp\.": r"layers.\1.feed_forward.",
}


def mixtral_state(reference: nn.Module) -> dict[str, torch.Tensor]:
    """MixtralForCausalLM's weights under the example's (mistral-src's) names."""
    state = {k: v for k, v in reference.state_dict().items() if ".mlp." not in k}
    out = renamed(state, MIXTRAL_NAMES)
    for i, layer in enumerate(reference.model.layers):
        out |= moe_state(layer.mlp, f"layers.{i}.feed_forward.")
    return out


def test_mixtral_equals_transformers(tmp_path: Path) -> None:
    """docs/examples.md's Mixtral (the Llama attention, the sparse MoeLayer as the
    feed-forward) against transformers' MixtralForCausalLM on the same weights."""
    from transformers import MixtralForCausalLM

    torch.manual_seed(0)
    config = mixtral_config(vocab_size=128)
    config._attn_implementation = "eager"  # type: ignore[attr-defined]
    reference = MixtralForCausalLM(config).eval()
    for weight in reference.parameters():
        nn.init.normal_(weight, std=0.2)
    emitted = emit(tmp_path, example("Mixtral"), "mixtral").Mixtral().eval()
    emitted.load_state_dict(mixtral_state(reference), strict=True)
    assert count(emitted) == count(reference) == 113_312
    tokens = torch.randint(0, 128, (2, 9))
    with torch.no_grad():
        expected = reference(tokens).logits
        torch.testing.assert_close(emitted(tokens), expected, rtol=0, atol=1e-5)


def test_info_counts_the_selected_experts_only(tmp_path: Path) -> None:
    """`tlc info` on the MoeLayer: each expert is counted for the N·k/E tokens a balanced
    router sends it (`where(selected_experts == i)` after a top-k of E), so the experts'
    FLOPs are those of N·k token-expert pairs, a quarter of running all 8 on every token."""
    from tensorloom.analysis.report import InfoRequest, info_json

    path = tmp_path / "moe.nml"
    path.write_text(example("MoeLayer"))
    info = info_json(path, InfoRequest(batch_size=2, bindings={"T": 16}))
    assert info["ok"], info["diagnostics"]
    moe = next(m for m in info["models"] if m["name"] == "MoeLayer")
    assert moe["unknown_dims"] == []
    [loop] = [layer for layer in moe["layers"] if layer["kind"] == "loop"]
    assert loop["repeat"] == 8
    rows = {layer["output_shape"][0] for layer in loop["layers"] if layer["kind"] == "Linear"}
    assert rows == {2 * 16 * 2 // 8}  # N·k/E tokens per expert
    linear = sum(layer["flops"] for layer in loop["layers"] if layer["kind"] == "Linear")
    tokens, k, dim, hidden = 2 * 16, 2, 32, 64
    assert linear * loop["repeat"] == 2 * tokens * k * 3 * dim * hidden


# ----------------------------------------------------------------------------- U-Net


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2, after milesial/Pytorch-UNet's unet_parts.py."""

    def __init__(self, in_channels: int, out_channels: int, mid_channels: int | None = None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv (unet_parts.py)."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv (unet_parts.py, `bilinear=False`): the transposed
    convolution's map padded to the skip's size, then concatenated after it."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = nn.functional.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class MilesialUNet(nn.Module):
    """milesial/Pytorch-UNet's UNet (unet_model.py, `bilinear=False`), HAND-WRITTEN IN THIS
    TEST after that source, at a base width `width` (the source's 64)."""

    def __init__(self, n_channels: int, n_classes: int, width: int = 64) -> None:
        super().__init__()
        self.inc = DoubleConv(n_channels, width)
        self.down1 = Down(width, width * 2)
        self.down2 = Down(width * 2, width * 4)
        self.down3 = Down(width * 4, width * 8)
        self.down4 = Down(width * 8, width * 16)
        self.up1 = Up(width * 16, width * 8)
        self.up2 = Up(width * 8, width * 4)
        self.up3 = Up(width * 4, width * 2)
        self.up4 = Up(width * 2, width)
        self.outc = OutConv(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x5 = self.down4(x4)
        x = self.up1(x5, x4)
        x = self.up2(x, x3)
        x = self.up3(x, x2)
        x = self.up4(x, x1)
        return self.outc(x)


def test_unet_equals_milesial_on_sizes_not_multiples_of_16(tmp_path: Path) -> None:
    """docs/examples.md's UNet (the pad to the skip's size computed in the forward with
    `floordiv`) against milesial's, hand-written above, on the same weights: the same
    state-dict keys and counts, outputs within 1e-5 on 57x75 inputs, where every `Up`
    pads (57 -> 28 -> 14 -> 7 -> 3 comes back as 6, 14, 28, 56)."""
    torch.manual_seed(0)
    reference = MilesialUNet(n_channels=1, n_classes=2, width=8).eval()
    emitted = emit(tmp_path, example("UNet"), "unet").UNet().eval()
    assert list(emitted.state_dict()) == list(reference.state_dict())
    assert count(emitted) == count(reference) == 486_418
    for module in reference.modules():
        if isinstance(module, nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
            nn.init.normal_(module.weight, 1.0, 0.1)
            nn.init.normal_(module.bias, 0.0, 0.1)
    emitted.load_state_dict(reference.state_dict(), strict=True)
    for shape in [(2, 1, 57, 75), (1, 1, 33, 40)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            out = emitted(x)
            torch.testing.assert_close(out, reference(x), rtol=0, atol=1e-5)
        assert out.shape == (shape[0], 2, *shape[2:])


def test_info_gives_the_unet_shapes(tmp_path: Path) -> None:
    """`tlc info` follows the pads: every layer's shape is known, the output is the input's
    size for H=57, W=75."""
    from tensorloom.analysis.report import InfoRequest, info_json

    path = tmp_path / "unet.nml"
    path.write_text(example("UNet"))
    info = info_json(path, InfoRequest(batch_size=2, bindings={"H": 57, "W": 75}))
    assert info["ok"], info["diagnostics"]
    unet = next(m for m in info["models"] if m["name"] == "UNet")
    assert unet["unknown_dims"] == []
    shapes = {layer["name"]: layer["output_shape"] for layer in unet["layers"]}
    assert shapes["down4"] == [2, 128, 3, 4]
    assert shapes["up1"] == [2, 64, 7, 9]
    assert shapes["outc"] == [2, 2, 57, 75]
