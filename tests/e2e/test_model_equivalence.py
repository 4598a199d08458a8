"""Every example model's emitted nn.Module computes what a hand-written one does.

Each case compiles TensorLoom source through the whole pipeline (frontend,
checks, `convert-nml-to-torch`, the Python printer), runs the emitted file,
copies the emitted module's weights into a hand-written PyTorch reference with
`load_state_dict` (strict, so the parameter names must be the natural ones),
and compares the two forward passes in eval mode on random input.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file

# ------------------------------------------------------------ references


class MLPReference(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class TransformerBlockReference(nn.Module):
    def __init__(self, d_model: int = 32, n_heads: int = 4, dropout_rate: float = 0.1) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x
        x = self.norm1(x)
        x = residual + self.dropout(self.attention(x, x, x, need_weights=False)[0])
        residual2 = x
        x = self.norm2(x)
        return residual2 + self.dropout(self.ff(x))


class LSTMReference(nn.Module):
    def __init__(self, vocab: int = 50, d_embed: int = 16, hidden: int = 24) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_embed)
        self.lstm = nn.LSTM(d_embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.lstm(self.embed(tokens))[0]
        return torch.log_softmax(self.head(h[:, -1]), dim=-1)


class ResBlockReference(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(channels)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        h = F.relu(h + x)
        return self.fc(self.pool(h).flatten(1))


class BlockReference(nn.Module):
    def __init__(self, width: int = 16, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = scale
        self.fc = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.norm(self.fc(x)) * self.scale


class NestedReference(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.block1 = BlockReference(width)
        self.block2 = BlockReference(width, scale=0.5)
        self.out = nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.block2(self.block1(x))))


# ----------------------------------------------------------------- sources

MLP = """
model Classifier:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 16)
    layer fc3 = Linear(16, 10)
    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2 |> relu |> self.fc3
"""

TRANSFORMER = """
@model TransformerBlock:
    @config:
        d_model = 32
        n_heads = 4
        dropout_rate = 0.1

    @layers:
        attention = MultiHeadAttention(d_model, n_heads)
        norm1     = LayerNorm(d_model)
        norm2     = LayerNorm(d_model)
        ff        = Linear(d_model, d_model)
        dropout   = Dropout(dropout_rate)

    @forward(x):
        let residual = x
        x = norm1(x)
        x = residual + dropout(attention(x))
        let residual2 = x
        x = norm2(x)
        x = residual2 + dropout(ff(x))
        return x
"""

LSTM = """
@model Tagger:
    @config:
        vocab = 50
        d_embed = 16
        hidden = 24

    @layers:
        embed = Embedding(vocab, d_embed)
        lstm  = LSTM(d_embed, hidden)
        head  = Linear(hidden, 5)

    @forward(tokens):
        let h = lstm(embed(tokens))
        return log_softmax(head(h[:, -1]), dim=-1)
"""

RESNET = """
@model ResBlock:
    @config:
        channels = 8

    @layers:
        conv1 = Conv2d(channels, channels, 3, padding=1)
        bn1   = BatchNorm2d(channels)
        conv2 = Conv2d(channels, channels, 3, padding=1)
        bn2   = BatchNorm2d(channels)
        pool  = AdaptiveAvgPool2d(1)
        fc    = Linear(channels, 10)

    @forward(x):
        let h = relu(bn1(conv1(x)))
        h = bn2(conv2(h))
        h = relu(h + x)
        return fc(flatten(pool(h)))
"""

NESTED = """
@model Block:
    @config:
        width = 16
        scale = 1.0

    @layers:
        fc   = Linear(width, width)
        norm = LayerNorm(width)

    @forward(x):
        return x + norm(fc(x)) * scale

@model Net:
    @config:
        width = 16

    @layers:
        block1 = Block(width)
        block2 = Block(width, scale=0.5)
        out    = Linear(width, 3)

    @forward(x):
        return out(gelu(block2(block1(x))))
"""


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    suffix: str
    model: str
    reference: Callable[[], nn.Module]
    make_input: Callable[[], torch.Tensor]
    state_keys: tuple[str, ...]


CASES = [
    Case(
        "mlp",
        MLP,
        ".tl",
        "Classifier",
        MLPReference,
        lambda: torch.randn(5, 64),
        ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"),
    ),
    Case(
        "transformer",
        TRANSFORMER,
        ".nml",
        "TransformerBlock",
        TransformerBlockReference,
        lambda: torch.randn(3, 7, 32),
        ("attention.in_proj_weight", "attention.out_proj.weight", "norm1.weight", "ff.bias"),
    ),
    Case(
        "lstm",
        LSTM,
        ".nml",
        "Tagger",
        LSTMReference,
        lambda: torch.randint(0, 50, (4, 9)),
        ("embed.weight", "lstm.weight_ih_l0", "lstm.weight_hh_l0", "head.weight"),
    ),
    Case(
        "resnet",
        RESNET,
        ".nml",
        "ResBlock",
        ResBlockReference,
        lambda: torch.randn(2, 8, 6, 6),
        ("conv1.weight", "bn1.running_mean", "bn2.num_batches_tracked", "fc.weight"),
    ),
    Case(
        "nested",
        NESTED,
        ".nml",
        "Net",
        NestedReference,
        lambda: torch.randn(4, 16),
        ("block1.fc.weight", "block1.norm.bias", "block2.fc.weight", "out.weight"),
    ),
]


def emit(tmp_path: Path, case: Case) -> str:
    path = tmp_path / f"{case.name}{case.suffix}"
    path.write_text(textwrap.dedent(case.source).lstrip())
    result = compile_file(path, until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    return print_python(result.module)


def load(text: str, name: str) -> ModuleType:
    module = ModuleType(f"emitted_{name}")
    exec(compile(text, f"<emitted {name}>", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_emitted_forward_equals_reference(tmp_path: Path, case: Case) -> None:
    torch.manual_seed(0)
    emitted = getattr(load(emit(tmp_path, case), case.name), case.model)()
    reference = case.reference()
    reference.load_state_dict(emitted.state_dict(), strict=True)
    if case.name == "resnet":  # non-trivial running statistics
        _randomize_batchnorm(emitted)
        reference.load_state_dict(emitted.state_dict(), strict=True)
    emitted.eval()
    reference.eval()
    x = case.make_input()
    with torch.no_grad():
        torch.testing.assert_close(emitted(x), reference(x), rtol=0, atol=0)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_state_dict_keys_are_the_natural_ones(tmp_path: Path, case: Case) -> None:
    emitted = getattr(load(emit(tmp_path, case), case.name), case.model)()
    keys = set(emitted.state_dict())
    assert keys == set(case.reference().state_dict())
    assert set(case.state_keys) <= keys


def test_config_overrides_are_init_keywords(tmp_path: Path) -> None:
    """`TransformerBlock(d_model=16, n_heads=2)` builds the smaller block."""
    case = CASES[1]
    module = load(emit(tmp_path, case), case.name)
    emitted = module.TransformerBlock(d_model=16, n_heads=2, dropout_rate=0.0)
    reference = TransformerBlockReference(16, 2, 0.0)
    reference.load_state_dict(emitted.state_dict(), strict=True)
    x = torch.randn(2, 5, 16)
    emitted.eval()
    reference.eval()
    with torch.no_grad():
        torch.testing.assert_close(emitted(x), reference(x), rtol=0, atol=0)


def test_dropout_follows_training_mode(tmp_path: Path) -> None:
    """In train mode the emitted block drops activations; in eval mode it does not."""
    case = CASES[1]
    block = load(emit(tmp_path, case), case.name).TransformerBlock(dropout_rate=0.5)
    x = torch.randn(2, 5, 32)
    block.train()
    torch.manual_seed(1)
    first = block(x)
    torch.manual_seed(2)
    assert not torch.equal(first, block(x))
    block.eval()
    torch.testing.assert_close(block(x), block(x), rtol=0, atol=0)


def test_emission_is_deterministic(tmp_path: Path) -> None:
    texts = {emit(tmp_path, case) for case in CASES[4:] for _ in range(2)}
    assert len(texts) == 1


def _randomize_batchnorm(model: nn.Module) -> None:
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2)
