"""Every builtin function runs as emitted and computes what PyTorch computes.

One program calls each function of the catalogue (as a function and as a tensor
method); the test compiles it, executes the emitted Python, and compares each
model's forward with the same computation written directly in torch. The shapes
`tlc check` inferred are compared with the real outputs too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from tensorloom.catalogue.functions import FUNCTIONS
from tensorloom.dialects.nml import LOSSES, FuncOp, ModelOp, TensorType
from tensorloom.pipeline import compile_file, python_source

PROGRAM = """
model Elementwise:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let a = exp(x) + x.exp() + log(abs(x) + 1.0) + sqrt(x.abs()) + rsqrt(abs(x) + 1.0)
        let b = sin(x) * x.cos() + tanh(x) + sigmoid(x) + relu(x) + silu(x) + x.detach()
        let c = gelu(x) + gelu(x, approximate="tanh") + clamp(x, min=-0.5, max=0.5)
        return a + b + c + x.clamp(min=0.0) + zeros_like(x) + x.ones_like() + randn_like(x) * 0.0

model Reductions:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let a = x.amax(dim=-1) + amin(x, -1) + x.var(dim=-1) + std(x, dim=-1, correction=0)
        let b = x.mean(dim=-1) + x.sum(dim=-1) + softmax(x, dim=-1).sum(-1)
        let c = log_softmax(x, dim=1).amax(dim=[1, 2], keepdim=true).squeeze(-1)
        return a + b + c

model Shapes:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let s = stack([x, x * 2.0], dim=1)
        let halves = x.split(4, dim=-1)
        let chunks = chunk(x, 2, dim=-1)
        let e = x.split([2, 6], dim=2)
        let f = cat([halves[0] * halves[1], chunks[0] + chunks[-1]], dim=-1) + e[0].repeat(1, 1, 4)
        let g = x[:, :1].expand(2, 3, 8) + x.unsqueeze(1).squeeze(1)
        let h = x.reshape(2, 24).view(2, 3, 8).permute(0, 2, 1).transpose(1, 2)
        return s.sum(dim=1) + f.repeat(1, 1, 1) + g + h + x.flatten(1).reshape(2, 3, 8)

model Sampling:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let n = randn(2, 3, 8) + rand([x.size(0), 3, 8]) + rand_like(x) + bernoulli(sigmoid(x))
        let t = randint(0, 8, [2, 3])
        let g = linspace(0.0, 1.0, 8)[t].unsqueeze(-1)
        let k = multinomial(softmax(x[0], dim=-1), 4, replacement=true).sum(-1).unsqueeze(-1)
        return n + cumprod(sigmoid(x), -1) + x.cumprod(1) + g + k * 1.0

model Matrices:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let m = einsum("bij,bkj->bik", x, x)
        let w = x[0] @ x[0].T + matmul(x[1], x[1].t())
        let t = tril(m) + triu(m, diagonal=1) + w
        let z = where(t > 0.0, t, 0.0).masked_fill(t < -1.0, 2.0)
        return normalize(z, dim=-1) + normalize(z, p=1.0, dim=1)

model Attention:
    fn forward(self, q: Tensor[2, 4, 5, 8]) -> Tensor:
        let a = scaled_dot_product_attention(q, q * 0.5, q + 1.0, causal=true)
        let b = scaled_dot_product_attention(q, q, q, scale=0.25)
        return a + b + arange(q.size(2)).unsqueeze(-1)
"""


def elementwise(x: torch.Tensor) -> torch.Tensor:
    a = x.exp() * 2 + (x.abs() + 1).log() + x.abs().sqrt() + (x.abs() + 1).rsqrt()
    b = x.sin() * x.cos() + x.tanh() + x.sigmoid() + F.relu(x) + F.silu(x) + x
    c = F.gelu(x) + F.gelu(x, approximate="tanh") + x.clamp(-0.5, 0.5)
    return a + b + c + x.clamp(min=0.0) + 1


def reductions(x: torch.Tensor) -> torch.Tensor:
    a = x.amax(-1) + x.amin(-1) + x.var(-1) + x.std(-1, correction=0)
    b = x.mean(-1) + x.sum(-1) + 1
    c = torch.log_softmax(x, dim=1).amax(dim=(1, 2), keepdim=True).squeeze(-1)
    return a + b + c


def shapes(x: torch.Tensor) -> torch.Tensor:
    s = torch.stack([x, x * 2], dim=1)
    a, b = x.split(4, dim=-1)
    c, d = x.chunk(2, dim=-1)
    e = x.split([2, 6], dim=2)
    f = torch.cat([a * b, c + d], dim=-1) + e[0].repeat(1, 1, 4)
    return s.sum(1) + f + x[:, :1].expand(2, 3, 8) + x + x + x


def matrices(x: torch.Tensor) -> torch.Tensor:
    m = torch.einsum("bij,bkj->bik", x, x)
    t = m.tril() + m.triu(1) + x[0] @ x[0].T + x[1] @ x[1].T
    z = torch.where(t > 0, t, 0.0).masked_fill(t < -1, 2.0)
    return F.normalize(z, dim=-1) + F.normalize(z, p=1.0, dim=1)


def attention(q: torch.Tensor) -> torch.Tensor:
    a = F.scaled_dot_product_attention(q, q * 0.5, q + 1, is_causal=True)
    b = F.scaled_dot_product_attention(q, q, q, scale=0.25)
    return a + b + torch.arange(5).unsqueeze(-1)


def sampling(x: torch.Tensor) -> torch.Tensor:
    n = torch.randn(2, 3, 8) + torch.rand(2, 3, 8) + torch.rand_like(x)
    n = n + torch.bernoulli(torch.sigmoid(x))
    t = torch.randint(0, 8, (2, 3))
    g = torch.linspace(0.0, 1.0, 8)[t].unsqueeze(-1)
    k = torch.multinomial(torch.softmax(x[0], dim=-1), 4, replacement=True).sum(-1).unsqueeze(-1)
    return n + torch.cumprod(torch.sigmoid(x), -1) + x.cumprod(1) + g + k * 1.0


CASES: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], tuple[int, ...]]] = {
    "Elementwise": (elementwise, (2, 3, 8)),
    "Reductions": (reductions, (2, 3, 8)),
    "Shapes": (shapes, (2, 3, 8)),
    "Matrices": (matrices, (2, 3, 8)),
    "Sampling": (sampling, (2, 3, 8)),
    "Attention": (attention, (2, 4, 5, 8)),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, dict[str, object]]:
    path = tmp_path_factory.mktemp("functions") / "functions.tl"
    path.write_text(PROGRAM)
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    checked = compile_file(path, until="nml")
    assert checked.module is not None
    outputs = {
        m.sym_name.data: next(
            o for o in m.walk() if isinstance(o, FuncOp)
        ).function_type.outputs.data[0]
        for m in checked.module.walk()
        if isinstance(m, ModelOp)
    }
    module = ModuleType("emitted_functions")
    sys.modules[module.__name__] = module
    exec(compile(python_source(result.module), "<emitted functions.tl>", "exec"), module.__dict__)
    return module, outputs


@pytest.mark.parametrize("model", list(CASES))
def test_forward_equals_torch(compiled: tuple[ModuleType, dict[str, object]], model: str) -> None:
    module, outputs = compiled
    reference, shape = CASES[model]
    torch.manual_seed(0)
    x = torch.randn(shape)
    rng = torch.get_rng_state()  # the sampling functions draw the same numbers in both
    got = getattr(module, model)()(x)
    torch.set_rng_state(rng)
    torch.testing.assert_close(got, reference(x), rtol=1e-5, atol=1e-5)
    inferred = outputs[model]
    assert isinstance(inferred, TensorType) and inferred.dims == tuple(got.shape)


def test_every_function_is_called() -> None:
    """Each catalogue function but `dropout` (random; tests/e2e/test_examples.py trains with
    it) and the alias `concat` is called by the program above."""
    called = {name for name in FUNCTIONS if f"{name}(" in PROGRAM}
    losses = set(LOSSES)  # the functional losses: tests/e2e/test_loss_functions.py runs them
    assert set(FUNCTIONS) - called - losses == {"dropout", "concat"}
