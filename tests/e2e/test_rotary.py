"""`Rotary(dim)` runs as emitted and computes rotary positions as PyTorch's complex numbers do.

The reference is written independently of the runtime's `Rotary`: each head's vector as
complex numbers x1 + i x2 (its two halves), multiplied by exp(-i t theta_j) with
theta_j = base^(-2j / dim), which is modded-nanogpt's (x1 cos + x2 sin, x2 cos - x1 sin).
The model below is the speedrun's attention (examples/modern_gpt.nml) at a small size:
its output is compared with the same attention written directly in torch.
"""

from __future__ import annotations

import sys
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from tensorloom.pipeline import compile_file, python_source

PROGRAM = """
model Rotate:
    layer rotary = Rotary(8, base=100.0)
    fn forward(self, x: Tensor[2, 5, 3, 8]) -> Tensor:
        return self.rotary(x)

model Attend:
    layer c_q = Linear(16, 16, bias=false)
    layer c_k = Linear(16, 16, bias=false)
    layer c_v = Linear(16, 16, bias=false)
    layer q_norm = RMSNorm(8, elementwise_affine=false)
    layer k_norm = RMSNorm(8, elementwise_affine=false)
    layer rotary = Rotary(8)
    fn forward(self, x: Tensor[2, 6, 16]) -> Tensor:
        let q = self.rotary(self.q_norm(self.c_q(x).view(2, 6, 2, 8)))
        let k = self.rotary(self.k_norm(self.c_k(x).view(2, 6, 2, 8)))
        let v = self.c_v(x).view(2, 6, 2, 8).transpose(1, 2)
        let y = scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v, causal=true)
        return y.transpose(1, 2).reshape(2, 6, 16)
"""


def rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary positions on [B, T, H, D] through complex multiplication."""
    T, D = x.size(1), x.size(3)
    theta = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    angles = torch.outer(torch.arange(T, dtype=torch.float64), theta)
    turn = torch.polar(torch.ones_like(angles), -angles)[None, :, None, :]
    x1, x2 = x.double().chunk(2, dim=-1)
    turned = torch.complex(x1, x2) * turn
    return torch.cat([turned.real, turned.imag], dim=-1).to(x.dtype)


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    path = tmp_path_factory.mktemp("rotary") / "rotary.tl"
    path.write_text(PROGRAM)
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    module = ModuleType("emitted_rotary")
    sys.modules[module.__name__] = module
    exec(compile(python_source(result.module), "<emitted rotary.tl>", "exec"), module.__dict__)
    return module


def test_rotary_equals_complex_rotation(emitted: ModuleType) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 5, 3, 8, requires_grad=True)
    layer = emitted.Rotate()
    got = layer(x)
    torch.testing.assert_close(got, rope(x, base=100.0), rtol=1e-5, atol=1e-5)
    assert not list(layer.parameters()) and not layer.state_dict()
    # a rotation keeps each pair's length, so the gradient of the squared norm is 2x
    (got.square().sum()).backward()
    assert x.grad is not None
    torch.testing.assert_close(x.grad, 2 * x.detach(), rtol=1e-5, atol=1e-5)


def test_attention_with_qk_norm_and_rotary_equals_torch(emitted: ModuleType) -> None:
    torch.manual_seed(1)
    model = emitted.Attend()
    x = torch.randn(2, 6, 16)
    shape = (2, 6, 2, 8)
    q = rope(F.rms_norm(model.c_q(x).view(shape), (8,)))
    k = rope(F.rms_norm(model.c_k(x).view(shape), (8,)))
    v = model.c_v(x).view(shape)
    y = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
    )
    torch.testing.assert_close(model(x), y.transpose(1, 2).reshape(2, 6, 16), rtol=1e-5, atol=1e-5)
