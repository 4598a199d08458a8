"""A layer's `init=` keywords, run: the emitted model's weights have the spread asked for.

Each case compiles TensorLoom source through the whole pipeline, builds the emitted
model and measures its tensors: the standard deviation of a weight drawn with
`init="normal", std=s` is s (within 3% on 65,536 draws or more), a `bias_init="zeros"`
bias is zero, a `std` written with the model's configs follows a config given to the
constructor, and the other `nn.init` names give their documented spreads. The
example GPT, initialised as nanoGPT is, starts at a loss of about ln(256) on bytes.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

INITS = """
@model Net:
    @config:
        d = 256
        n_layer = 3
    @layers:
        emb  = Embedding(1024, d, init="normal", std=0.02, mean=0.5)
        fc   = Linear(d, d, init="normal", std=0.02 / sqrt(2 * n_layer), bias_init="zeros")
        att  = MultiHeadAttention(d, 4, causal=true, init="normal", std=0.02,
                                  out_std=0.01, bias_init="zeros")
        mha  = MultiHeadAttention(d, 4, init="trunc_normal", std=0.05)
        hs   = [Linear(d, d, init="xavier_uniform", bias_init="ones") for _ in range(n_layer)]
        seq  = Sequential(Linear(d, 2 * d, init="kaiming_normal"), GELU, Linear(2 * d, d))
        conv = Conv1d(d, d, 3, init="orthogonal", bias_init="zeros")
        keep = Linear(d, d)
    @forward(idx: Tensor[B, T]):
        x = emb(idx)
        x = att(fc(x))
        x = mha(x)
        for h in hs:
            x = h(x)
        x = keep(seq(x))
        return conv(x.transpose(1, 2))
"""


def build(tmp_path: Path, name: str, source: str) -> ModuleType:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip())
    result = compile_file(path, until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    module = ModuleType(f"emitted_{path.stem}")
    exec(compile(print_python(result.module), f"<emitted {name}>", "exec"), module.__dict__)
    return module


def close(measured: float, expected: float, rel: float = 0.03) -> bool:
    return abs(measured - expected) <= rel * expected


def test_each_init_gives_its_spread(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = build(tmp_path, "inits.nml", INITS).Net()
    d = 256
    assert close(net.emb.weight.std().item(), 0.02)
    assert close(net.emb.weight.mean().item(), 0.5, rel=0.001)
    assert close(net.fc.weight.std().item(), 0.02 / math.sqrt(6))
    assert torch.count_nonzero(net.fc.bias) == 0
    assert close(net.att.c_attn.weight.std().item(), 0.02)
    assert close(net.att.c_proj.weight.std().item(), 0.01)
    assert torch.count_nonzero(net.att.c_attn.bias) + torch.count_nonzero(net.att.c_proj.bias) == 0
    # nn.MultiheadAttention: trunc_normal_ on the packed and the output projection
    assert close(net.mha.in_proj_weight.std().item(), 0.05)
    assert close(net.mha.out_proj.weight.std().item(), 0.05)
    for layer in net.hs:  # U(-a, a), a = sqrt(6 / (fan_in + fan_out)): std a / sqrt(3)
        assert close(layer.weight.std().item(), math.sqrt(6 / (2 * d)) / math.sqrt(3))
        assert torch.equal(layer.bias, torch.ones(d))
    assert close(net.seq[0].weight.std().item(), math.sqrt(2 / d))  # kaiming: gain sqrt(2)
    rows = net.conv.weight.reshape(d, -1)  # orthogonal: the rows are orthonormal
    torch.testing.assert_close(rows @ rows.T, torch.eye(d), atol=1e-4, rtol=0)
    # No init keyword: PyTorch's own kaiming_uniform(a=sqrt(5)), std 1 / sqrt(3 d)
    assert close(net.keep.weight.std().item(), 1 / math.sqrt(3 * d))
    assert torch.count_nonzero(net.keep.bias) == d


def test_a_std_written_with_configs_follows_the_constructor(tmp_path: Path) -> None:
    torch.manual_seed(1)
    module = build(tmp_path, "inits.nml", INITS)
    net = module.Net(n_layer=8)
    assert close(net.fc.weight.std().item(), 0.02 / 4)
    assert len(net.hs) == 8


def test_the_example_gpt_is_initialised_as_nanogpt() -> None:
    result = compile_file(EXAMPLES / "gpt.nml", until="torch")
    assert result.ok and result.module is not None
    module = ModuleType("emitted_gpt")
    exec(compile(print_python(result.module), "<emitted gpt>", "exec"), module.__dict__)
    torch.manual_seed(2)
    n_layer = 8
    model = module.GPT(vocab_size=256, block_size=64, n_layer=n_layer, n_head=4, n_embd=256)
    residual = 0.02 / math.sqrt(2 * n_layer)
    for name, tensor in model.named_parameters():
        if name.endswith("c_proj.weight"):
            assert close(tensor.std().item(), residual), name
        elif name.startswith("ln") or ".ln_" in name:
            expected = 1.0 if name.endswith("weight") else 0.0
            assert torch.all(tensor == expected), name
        elif name.endswith("bias"):
            assert torch.count_nonzero(tensor) == 0, name
        else:
            assert close(tensor.std().item(), 0.02, rel=0.05), name
    # An untrained byte model is about uniform over the 256 bytes: ln(256) = 5.55 plus
    # about half the logits' variance (the tied head's 0.02 over 256 unit features:
    # 0.32^2 / 2 = 0.05). With nn.Embedding's N(0, 1) weights it was 14.5.
    idx = torch.randint(0, 256, (8, 64))
    with torch.no_grad():
        logits = model.eval()(idx)
    loss = F.cross_entropy(logits.reshape(-1, 256), idx.roll(-1, dims=1).reshape(-1)).item()
    assert abs(loss - math.log(256)) < 0.15


MORE_INITS = """
@model Net:
    @layers:
        conv = Conv2d(64, 128, 3, bias=false, init="kaiming_normal", mode="fan_out",
                      nonlinearity="relu")
        unif = Linear(256, 256, init="uniform", a=-0.1, b=0.3, bias_init="zeros")
        cons = Linear(16, 16, init="constant", value=0.5)
        kai  = Linear(512, 512, init="kaiming_uniform", a=2.0)
        bn   = BatchNorm2d(128, init="zeros")
        ln   = LayerNorm(4096, init="normal", std=0.5, mean=1.0, bias_init="ones")
        gn   = GroupNorm(4, 128, init="constant", value=2.0)
        logit_scale = Parameter(init="constant", value=2.6592)
        mix  = Parameter(values=[[0.5, 0.25], [0.125, 1.0]])
        u    = Parameter(256, 256, init="uniform", a=-2.0, b=-1.0)
        zero = Parameter()
    @forward(x: Tensor[B, 64, 8, 8]):
        return gn(bn(conv(x))) * logit_scale.exp() + zero + mix.sum() + u.mean()
"""


def test_inits_with_their_options(tmp_path: Path) -> None:
    """kaiming with `mode`/`nonlinearity`/`a`, `uniform(a, b)`, `constant`, the norms' scale
    and shift, a 0-d Parameter (CLIP's `logit_scale`) and one from given values (issue 31)."""
    torch.manual_seed(0)
    net = build(tmp_path, "more_inits.nml", MORE_INITS).Net()
    fan_out = 128 * 3 * 3
    assert close(net.conv.weight.std().item(), math.sqrt(2 / fan_out))
    w = net.unif.weight
    assert w.min().item() >= -0.1 and w.max().item() <= 0.3
    assert close(w.mean().item(), 0.1, rel=0.05) and torch.count_nonzero(net.unif.bias) == 0
    assert torch.equal(net.cons.weight, torch.full((16, 16), 0.5))
    bound = math.sqrt(2 / (1 + 2.0**2)) * math.sqrt(3 / 512)  # leaky_relu's gain, slope a
    assert close(net.kai.weight.abs().max().item(), bound, rel=0.01)
    assert torch.count_nonzero(net.bn.weight) == 0 and torch.count_nonzero(net.bn.bias) == 0
    assert close(net.ln.weight.std().item(), 0.5, rel=0.05)
    assert close(net.ln.weight.mean().item(), 1.0, rel=0.05)
    assert torch.equal(net.ln.bias, torch.ones(4096))
    assert torch.equal(net.gn.weight, torch.full((128,), 2.0))
    assert net.logit_scale.shape == () and abs(net.logit_scale.item() - 2.6592) < 1e-6
    assert net.logit_scale.requires_grad and net.zero.shape == ()
    assert torch.equal(net.mix, torch.tensor([[0.5, 0.25], [0.125, 1.0]]))
    assert net.mix.dtype == torch.float32 and net.mix.requires_grad
    assert net.u.min().item() >= -2.0 and net.u.max().item() <= -1.0
    assert net(torch.randn(2, 64, 8, 8)).shape == (2, 128, 6, 6)
