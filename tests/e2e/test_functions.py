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

model Numerics:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let a = softplus(x) + floor(x) + x.ceil() + round(x * 3.0) + pow(x, 2) + x.abs().pow(0.5)
        let b = cumsum(x, dim=-1) + x.cumprod(1) + x.cumsum(0)
        let n = norm(x, dim=-1, keepdim=true) + x.norm(p=1.0, dim=[1, 2], keepdim=true) + norm(x)
        let v = torch.linalg.vector_norm(x, ord=3.0, dim=1, keepdim=true)
        let c = x.long().float() + x.half().float() + (x > 0.0).float() + x.bool().float()
        let d = x.bfloat16().to(torch.float32) + x.to(torch.int64).to(torch.float32)
        let h = one_hot(x.argmax(dim=-1), num_classes=8).float().unsqueeze(1)
        let bce = binary_cross_entropy(sigmoid(x), sigmoid(x * 2.0), reduction="none")
        return a + b + n + v + c + d + h + bce + binary_cross_entropy(sigmoid(x), sigmoid(x))

model Picks:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let (v, i) = x.max(dim=-1)
        let (m, j) = min(x, dim=1, keepdim=true)
        let (tv, ti) = topk(x, 3, dim=-1)
        let (bv, bi) = x.topk(2, dim=1, largest=false)
        let g = x.gather(-1, ti) + gather(x, 2, ti)
        let s = x.scatter(2, ti, 0.0) + x.scatter_add(-1, ti, tv) + scatter(x, 2, ti, tv * 2.0)
        let ia = x.index_add(1, argmin(x[0, :, 0:2], dim=1), x * 3.0)
        let a = v.unsqueeze(-1) + m + i.unsqueeze(-1).float() + j.float() + x.max() + x.min()
        let b = tv.sum(dim=-1, keepdim=true) + bv.sum(dim=1, keepdim=true) + bi.float()[:, :1]
        let e = g.sum(dim=-1, keepdim=true) + argmax(x).float() + x.argmin(-1, keepdim=true).float()
        return a + b + e + s + ia

model Padding:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let d = 12 - x.size(2)
        let p = pad(x, [1, 2]) + pad(x, [0, 3, 1, 0], value=1.5)[:, 1:]
        let q = pad(x, [2, 1], mode="reflect") + pad(x, [0, d], mode="replicate")[:, :, :11]
        let w = zeros_like(x[:, :, :2])
        for i in range(3):
            w = w + x.narrow(2, i, 2) * narrow(x, -1, 6, 2)
        return p + q + pad(w, [0, 9])

model TensorIndex:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let (v, order) = x[0, 0].topk(8)
        let idx = x[1].argmax(dim=0)
        let rows = x[:, idx].sum(dim=1, keepdim=true) + x[:, arange(2)].sum(dim=1, keepdim=true)
        return x[..., order] * 2.0 + rows + x[arange(1)]

model Routing:
    fn forward(self, x: Tensor[2, 3, 8]) -> Tensor:
        let flat = x.reshape(6, 8)
        let (top, chosen) = flat.topk(2, dim=-1)
        out = zeros_like(flat)
        for e in range(8):
            let (rows, nth) = where(chosen == e)
            out = out.index_add(0, rows, flat[rows] * top[rows, nth, none])
        let (positive,) = nonzero(x[0, 0] > 0.0, as_tuple=true)
        return out.reshape(2, 3, 8) + x[0, 0][positive].sum()
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


def numerics(x: torch.Tensor) -> torch.Tensor:
    a = F.softplus(x) + x.floor() + x.ceil() + (x * 3).round() + x**2 + x.abs() ** 0.5
    b = x.cumsum(-1) + x.cumprod(1) + x.cumsum(0)
    n = x.norm(dim=-1, keepdim=True) + x.abs().sum(dim=(1, 2), keepdim=True) + x.norm()
    v = torch.linalg.vector_norm(x, ord=3, dim=1, keepdim=True)
    c = x.long().float() + x.half().float() + (x > 0).float() + (x != 0).float()
    d = x.bfloat16().float() + x.long().float()
    h = F.one_hot(x.argmax(-1), 8).float().unsqueeze(1)
    bce = F.binary_cross_entropy(x.sigmoid(), (2 * x).sigmoid(), reduction="none")
    return a + b + n + v + c + d + h + bce + F.binary_cross_entropy(x.sigmoid(), x.sigmoid())


def picks(x: torch.Tensor) -> torch.Tensor:
    v, i = x.max(-1)
    m, j = x.min(1, keepdim=True)
    tv, ti = x.topk(3, dim=-1)
    bv, bi = x.topk(2, dim=1, largest=False)
    g = 2 * x.gather(-1, ti)
    s = x.scatter(2, ti, 0.0) + x.scatter_add(-1, ti, tv) + x.scatter(2, ti, tv * 2)
    ia = x.index_add(1, x[0, :, 0:2].argmin(1), x * 3)
    a = v.unsqueeze(-1) + m + i.unsqueeze(-1).float() + j.float() + x.max() + x.min()
    b = tv.sum(-1, keepdim=True) + bv.sum(1, keepdim=True) + bi.float()[:, :1]
    e = g.sum(-1, keepdim=True) + x.argmax().float() + x.argmin(-1, keepdim=True).float()
    return a + b + e + s + ia


def padding(x: torch.Tensor) -> torch.Tensor:
    p = F.pad(x, (1, 2)) + F.pad(x, (0, 3, 1, 0), value=1.5)[:, 1:]
    q = F.pad(x, (2, 1), mode="reflect") + F.pad(x, (0, 4), mode="replicate")[:, :, :11]
    w = sum(x[:, :, i : i + 2] * x[:, :, 6:8] for i in range(3))
    return p + q + F.pad(w, (0, 9))


def tensor_index(x: torch.Tensor) -> torch.Tensor:
    order = x[0, 0].topk(8).indices
    idx = x[1].argmax(0)
    rows = x[:, idx].sum(1, keepdim=True) + x[:, :2].sum(1, keepdim=True)
    return x[..., order] * 2 + rows + x[:1]


def routing(x: torch.Tensor) -> torch.Tensor:
    flat = x.reshape(6, 8)
    top, chosen = flat.topk(2, dim=-1)
    out = torch.zeros_like(flat)
    for e in range(8):
        rows, nth = torch.where(chosen == e)
        out = out.index_add(0, rows, flat[rows] * top[rows, nth, None])
    (positive,) = torch.nonzero(x[0, 0] > 0, as_tuple=True)
    return out.reshape(2, 3, 8) + x[0, 0][positive].sum()


CASES: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], tuple[int, ...]]] = {
    "Elementwise": (elementwise, (2, 3, 8)),
    "Reductions": (reductions, (2, 3, 8)),
    "Shapes": (shapes, (2, 3, 8)),
    "Matrices": (matrices, (2, 3, 8)),
    "Sampling": (sampling, (2, 3, 8)),
    "Attention": (attention, (2, 4, 5, 8)),
    "Numerics": (numerics, (2, 3, 8)),
    "Picks": (picks, (2, 3, 8)),
    "Padding": (padding, (2, 3, 8)),
    "TensorIndex": (tensor_index, (2, 3, 8)),
    "Routing": (routing, (2, 3, 8)),
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
    called |= {name for name in FUNCTIONS if f".{name}()" in PROGRAM}  # `.float()`
    losses = set(LOSSES)  # the functional losses: tests/e2e/test_loss_functions.py runs them
    assert set(FUNCTIONS) - called - losses == {"dropout", "concat"}
