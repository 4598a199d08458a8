"""Config expressions (issue 31): the Llama block of docs/examples.md, whose head size,
query heads per key head and feed-forward width are computed from other configs, checks,
compiles, and computes what a hand-written llama2.c-style module does, at the defaults and
under overrides that change every derived size. Every `nml` block of docs/examples.md is
also checked and compiled (`test_examples_md_blocks_compile`)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file

EXAMPLES_MD = Path(__file__).resolve().parents[2] / "docs" / "examples.md"


def nml_blocks() -> list[str]:
    return re.findall(r"```nml\n(.*?)```", EXAMPLES_MD.read_text(), re.DOTALL)


def llama_block() -> str:
    [block] = [b for b in nml_blocks() if "@model LlamaBlock" in b]
    return block


def emit(tmp_path: Path, source: str, name: str = "llama") -> ModuleType:
    path = tmp_path / f"{name}.nml"
    path.write_text(source)
    result = compile_file(path, until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    module = ModuleType(f"emitted_{name}")
    exec(compile(print_python(result.module), f"<emitted {name}>", "exec"), module.__dict__)
    return module


class Attention(nn.Module):
    """llama2.c's Attention, without RoPE: grouped-query heads repeated n_rep times."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.n_rep = n_heads // n_kv_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(b, t, self.n_kv_heads, self.head_dim)
        k = k.repeat_interleave(self.n_rep, dim=2).transpose(1, 2)
        v = v.repeat_interleave(self.n_rep, dim=2).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, t, d))


class FeedForward(nn.Module):
    def __init__(self, dim: int, multiple_of: int) -> None:
        super().__init__()
        hidden = int(2 * 4 * dim / 3)
        hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, multiple_of: int) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(dim, eps=1e-5)
        self.attention = Attention(dim, n_heads, n_kv_heads)
        self.ffn_norm = nn.RMSNorm(dim, eps=1e-5)
        self.feed_forward = FeedForward(dim, multiple_of)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


CONFIGS = [
    {"dim": 64, "n_heads": 8, "n_kv_heads": 2, "multiple_of": 32},
    {"dim": 96, "n_heads": 6, "n_kv_heads": 3, "multiple_of": 32},
    {"dim": 120, "n_heads": 4, "n_kv_heads": 1, "multiple_of": 48},
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"dim{c['dim']}")
def test_llama_block_equals_hand_written(tmp_path: Path, config: dict[str, int]) -> None:
    torch.manual_seed(0)
    emitted = emit(tmp_path, llama_block()).LlamaBlock(**config)
    reference = LlamaBlock(**config)
    reference.load_state_dict(emitted.state_dict(), strict=True)
    count = sum(p.numel() for p in emitted.parameters())
    assert count == sum(p.numel() for p in reference.parameters())
    x = torch.randn(2, 5, config["dim"])
    with torch.no_grad():
        torch.testing.assert_close(emitted(x), reference(x), rtol=1e-5, atol=1e-6)


def test_derived_sizes_are_ints_computed_in_init(tmp_path: Path) -> None:
    module = emit(tmp_path, llama_block())
    attention = module.Attention(dim=96, n_heads=6, n_kv_heads=2)
    assert (attention.head_dim, attention.n_rep) == (16, 3)
    assert isinstance(attention.head_dim, int)
    hidden = module.FeedForward(dim=96, multiple_of=32).w1.out_features
    assert hidden == 32 * math.ceil(2 * 4 * 96 / 3 / 32) == 256


@pytest.mark.parametrize("index", range(len(nml_blocks())))
def test_examples_md_blocks_compile(tmp_path: Path, index: int) -> None:
    emit(tmp_path, nml_blocks()[index], f"block{index}")


DROPOUT_RATE = """\
@model A:
    @config:
        p = 0.1
    @forward(x: Tensor[B, T, 8]):
        return dropout(x, p)
"""


def test_config_dropout_rate_follows_the_instance(tmp_path: Path) -> None:
    """`dropout(x, p)` with `p` a config (fuzz-findings/real-models/
    config_dropout_rate_rejected.nml) reads the instance's rate: A(p=0.75) zeroes about
    three quarters in training and nothing in eval."""
    module = emit(tmp_path, DROPOUT_RATE, "rate")
    torch.manual_seed(0)
    x = torch.ones(64, 16, 8)
    model = module.A(p=0.75)
    zeroed = (model(x) == 0).float().mean().item()
    assert abs(zeroed - 0.75) < 0.02
    model.eval()
    torch.testing.assert_close(model(x), x)
    assert (module.A()(x) == 0).float().mean().item() < 0.15


COMPUTED_SLICES = """\
@model Crop:
    @config:
        L = 3
        n = 4
    @layers:
        fc = Linear(1, 2)
    @forward(x: Tensor[B, C, T], w: Tensor[B, n]):
        let total = fc(w[:, 0:1])
        for i in range(n):
            total = total + fc(w[:, i:i + 1])
        return (x[:, :, :L], x[:, :, L:2 * L], total)
"""


def test_computed_slice_bounds_run_as_checked(tmp_path: Path) -> None:
    """`x[:, :, :L]`, `x[:, :, L:2 * L]` and `w[:, i:i + 1]` in a loop (they were TL0138)."""
    torch.manual_seed(0)
    model = emit(tmp_path, COMPUTED_SLICES, "crop").Crop(L=2, n=3)
    x, w = torch.randn(2, 3, 8), torch.randn(2, 3)
    a, b, total = model(x, w)
    torch.testing.assert_close(a, x[:, :, :2])
    torch.testing.assert_close(b, x[:, :, 2:4])
    expected = model.fc(w[:, 0:1]) + sum(model.fc(w[:, i : i + 1]) for i in range(3))
    torch.testing.assert_close(total, expected)


PER_POSITION = """\
@model Block:
    @config:
        cin = 16
        cout = 16
        stride = 1
    @layers:
        conv = Conv2d(cin, cout, 3, stride=stride, padding=1)
        norm = BatchNorm2d(cout)
    @forward(x):
        let h = relu(norm(conv(x)))
        if stride == 1 and cin == cout:
            h = x + h
        return h

@model Net:
    @config:
        widths = [8, 16, 32]
        depth = 2
    @layers:
        stem = Conv2d(3, 8, 3, padding=1)
        stages = [Block(widths[k - 1] if k > 0 else 8, widths[k], min(k + 1, 2)) for k in range(3)]
        blocks = [Block(32, 32, stride=1) for i in range(depth)]
        heads = [Linear(w, 10) for w in widths]
    @forward(x: Tensor[B, 3, H, W]):
        x = stem(x)
        for s in stages:
            x = s(x)
        for b in blocks:
            x = b(x)
        return heads[2](x.mean(dim=[2, 3]))
"""


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride, self.same = stride, cin == cout
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.norm = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.norm(self.conv(x)))
        return x + h if self.stride == 1 and self.same else h


class Net(nn.Module):
    """The stages written out as torchvision writes them: the first of each different."""

    def __init__(self, widths: tuple[int, ...] = (8, 16, 32), depth: int = 2) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        ins = (8, *widths[:-1])
        self.stages = nn.ModuleList(
            Block(c, w, min(k + 1, 2)) for k, (c, w) in enumerate(zip(ins, widths, strict=True))
        )
        self.blocks = nn.ModuleList(Block(32, 32, 1) for _ in range(depth))
        self.heads = nn.ModuleList(nn.Linear(w, 10) for w in widths)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for layer in [*self.stages, *self.blocks]:
            x = layer(x)
        return self.heads[2](x.mean(dim=(2, 3)))


@pytest.mark.parametrize("depth", [2, 3])
def test_per_position_lists_equal_hand_written(tmp_path: Path, depth: int) -> None:
    """Lists whose elements differ by position or by a list config (issue 31): emitted as
    `nn.ModuleList([... for k in range(3)])` / `[... for w in widths]`, the same modules,
    parameters and outputs as the hand-written network."""
    torch.manual_seed(0)
    emitted = emit(tmp_path, PER_POSITION, "stages").Net(depth=depth)
    reference = Net(depth=depth)
    reference.load_state_dict(emitted.state_dict(), strict=True)
    assert sum(p.numel() for p in emitted.parameters()) == sum(
        p.numel() for p in reference.parameters()
    )
    emitted.eval()
    reference.eval()
    x = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        torch.testing.assert_close(emitted(x), reference(x), rtol=0, atol=0)


CONDITIONAL = """\
@model BasicBlock:
    @config:
        cin = 8
        cout = 8
        stride = 1
        downsample = false
    @layers:
        conv1 = Conv2d(cin, cout, 3, stride=stride, padding=1, bias=false)
        bn1 = BatchNorm2d(cout)
        conv2 = Conv2d(cout, cout, 3, padding=1, bias=false)
        bn2 = BatchNorm2d(cout)
        if downsample:
            down = Sequential(Conv2d(cin, cout, 1, stride=stride, bias=false), BatchNorm2d(cout))
    @forward(x):
        let h = bn2(conv2(relu(bn1(conv1(x)))))
        let identity = x
        if downsample:
            identity = down(x)
        return relu(h + identity)

@model Net:
    @layers:
        blocks = [BasicBlock(8 if i == 0 else 16, 16, 2 if i == 0 else 1, i == 0) for i in range(2)]
    @forward(x: Tensor[B, 8, H, W]):
        for b in blocks:
            x = b(x)
        return x
"""


class BasicBlock(nn.Module):
    """torchvision's BasicBlock with its `downsample` projection."""

    def __init__(self, cin: int, cout: int, stride: int, downsample: bool) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if downsample:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(h + (self.down(x) if self.down is not None else x))


def test_conditional_layer_equals_torchvision_block(tmp_path: Path) -> None:
    """`if downsample:` in `@layers` (issue 31): the first block of the stage has the
    projection, the second none; state dicts, counts and outputs as torchvision's."""
    torch.manual_seed(0)
    emitted = emit(tmp_path, CONDITIONAL, "basic").Net()
    reference = nn.ModuleDict(
        {"blocks": nn.ModuleList([BasicBlock(8, 16, 2, True), BasicBlock(16, 16, 1, False)])}
    )
    reference.load_state_dict(emitted.state_dict(), strict=True)
    assert emitted.blocks[1].down is None
    emitted.eval()
    reference.eval()
    x = torch.randn(2, 8, 10, 10)
    expected = x
    for block in reference["blocks"]:
        expected = block(expected)
    with torch.no_grad():
        torch.testing.assert_close(emitted(x), expected, rtol=0, atol=0)
