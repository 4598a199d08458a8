"""Assignment into a tensor in a forward (`x[:, 0] = y`, `x[mask] = 0.0`,
`out[idx] = v`, `results[idx] += v`) computes what PyTorch computes, values and gradients.

Each model is compiled from source and run on random inputs beside the same forward written
in torch (a `clone()` where the language's assignment makes a new value); outputs and the
gradients of every input and parameter must agree. The emitted forward writes in place only
where nothing else sees the tensor (passes/support/in_place.py); the tests also check that a
forward's input and a value named before the assignment keep their values.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file

PROGRAM = """
@model Column:                          // a slice of a layer's output replaced, then updated
    @layers:
        fc = Linear(8, 8)
    @forward(x: Tensor[B, 4, 8], y: Tensor[B, 8]):
        let h = fc(x)
        h[:, 0] = y
        h[:, 1:3] += y.unsqueeze(1) * 2.0
        h[:, -1] *= sigmoid(y)
        h[..., 0] -= 1.0
        h[:, 2] /= 2.0
        return h

@model Masked:                          // a mask made from the tensor itself
    @layers:
        fc = Linear(8, 8)
    @forward(x: Tensor[B, 8]):
        let h = fc(x)
        h[h > 0.1] = 0.0
        h[h < -0.5] += 1.0
        return h

@model RowMask:                         // a mask of the leading dims, a value per row
    @forward(x: Tensor[B, 6, 8], m: Tensor[B, 6], v: Tensor[8]):
        x[m > 0.0] = v
        return x * 2.0

@model Routed:                          // rows chosen by integer indices, only they computed
    @layers:
        gate = Linear(8, 1)
        expert = Linear(8, 8)
    @forward(x: Tensor[N, 8]):
        let out = zeros_like(x)
        let idx = where(gate(x).squeeze(-1) > 0.0)[0]
        out[idx] = expert(x[idx]) * sigmoid(gate(x[idx]))
        return out

@model Experts:                         // Mixtral's loop: each expert adds into its rows
    @config:
        n = 4
    @layers:
        router = Linear(8, n)
        experts = [Linear(8, 8) for _ in range(n)]
    @forward(x: Tensor[N, 8]):
        let (top, chosen) = router(x).topk(2, dim=-1)
        let weights = softmax(top, dim=1)
        results = zeros_like(x)
        for i in range(n):
            let (rows, nth) = where(chosen == i)
            results[rows] += weights[rows, nth, none] * experts[i](x[rows])
        return results

@model Aliases:                         // a value named before the assignment keeps its values
    @layers:
        fc = Linear(8, 8)
    @forward(x: Tensor[B, 8]):
        let h = fc(x)
        let before = h
        h[:, 0] = 0.0
        h += before
        return h + before * x

@model Columns:                         // assigned in a loop over a range, and in a branch
    @config:
        widen = true
    @forward(x: Tensor[B, 4]):
        let out = zeros_like(x)
        for i in range(4):
            out[:, i] = x[:, i] * i
        if widen:
            out[:, 0] = x[:, 1]
        x[:, 3] = 1.0
        return out + x
"""


def column(m: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    h = m.fc(x).clone()
    h[:, 0] = y
    h[:, 1:3] += y.unsqueeze(1) * 2.0
    h[:, -1] *= torch.sigmoid(y)
    h[..., 0] -= 1.0
    h[:, 2] /= 2.0
    return h


def masked(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    h = m.fc(x).clone()
    h[h > 0.1] = 0.0
    h[h < -0.5] += 1.0
    return h


def row_mask(m: nn.Module, x: torch.Tensor, mask: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x[mask > 0.0] = v
    return x * 2.0


def routed(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    idx = torch.where(m.gate(x).squeeze(-1) > 0.0)[0]
    out[idx] = m.expert(x[idx]) * torch.sigmoid(m.gate(x[idx]))
    return out


def experts(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    top, chosen = m.router(x).topk(2, dim=-1)
    weights = torch.softmax(top, dim=1)
    results = torch.zeros_like(x)
    for i, expert in enumerate(m.experts):
        rows, nth = torch.where(chosen == i)
        results[rows] += weights[rows, nth, None] * expert(x[rows])
    return results


def aliases(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    before = m.fc(x)
    h = before.clone()
    h[:, 0] = 0.0
    h = h + before
    return h + before * x


def columns(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    for i in range(4):
        out[:, i] = x[:, i] * i
    out[:, 0] = x[:, 1]
    x = x.clone()
    x[:, 3] = 1.0
    return out + x


CASES: dict[str, tuple[Callable[..., torch.Tensor], Callable[[], list[torch.Tensor]]]] = {
    "Column": (column, lambda: [torch.randn(3, 4, 8), torch.randn(3, 8)]),
    "Masked": (masked, lambda: [torch.randn(5, 8)]),
    "RowMask": (row_mask, lambda: [torch.randn(2, 6, 8), torch.randn(2, 6), torch.randn(8)]),
    "Routed": (routed, lambda: [torch.randn(16, 8)]),
    "Experts": (experts, lambda: [torch.randn(16, 8)]),
    "Aliases": (aliases, lambda: [torch.randn(5, 8)]),
    "Columns": (columns, lambda: [torch.randn(3, 4)]),
}
FLOAT_INPUTS = {"RowMask": (0, 2)}
"""Inputs that take a gradient (the others: all); RowMask's mask only picks rows."""


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    path: Path = tmp_path_factory.mktemp("index_put") / "index_put.nml"
    path.write_text(PROGRAM)
    result = compile_file(path, until="torch")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    module = ModuleType("emitted_index_put")
    source = print_python(result.module)
    exec(compile(source, "<emitted index_put>", "exec"), module.__dict__)
    module.__dict__["SOURCE"] = source
    return module


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_equal_pytorch(emitted: ModuleType, name: str) -> None:
    reference, make_inputs = CASES[name]
    torch.manual_seed(0)
    model: nn.Module = getattr(emitted, name)()
    inputs = make_inputs()
    graded = FLOAT_INPUTS.get(name, range(len(inputs)))
    ours = [t.clone().requires_grad_(i in graded) for i, t in enumerate(inputs)]
    theirs = [t.clone().requires_grad_(i in graded) for i, t in enumerate(inputs)]
    out = model(*ours)
    expected = reference(model, *theirs)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    for t, original in zip(ours, inputs, strict=True):
        assert torch.equal(t.detach(), original), "a forward's input changed"
    weights = torch.randn_like(expected)
    params = list(model.parameters())
    mine = torch.autograd.grad((out * weights).sum(), [ours[i] for i in graded] + params)
    model.zero_grad()
    ref = torch.autograd.grad((expected * weights).sum(), [theirs[i] for i in graded] + params)
    for a, b in zip(mine, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_in_place_only_where_nothing_else_sees_the_tensor(emitted: ModuleType) -> None:
    """A fresh `zeros_like` is written in place; a layer's output, an input and a value
    named before the assignment are copied first."""
    classes = {
        chunk.split("(", 1)[0]: chunk for chunk in emitted.SOURCE.split("\nclass ")[1:]
    }
    clones = {name: classes[name].count(".clone()") for name in CASES}
    assert clones == {
        "Column": 1, "Masked": 1, "RowMask": 1, "Routed": 0, "Experts": 0, "Aliases": 1,
        "Columns": 1,
    }  # fmt: skip


def test_assignment_through_indices_runs_under_autocast(emitted: ModuleType) -> None:
    """Under autocast a layer's output is bf16 while `zeros_like(x)` is f32: PyTorch's
    index_put does not cast, so the script casts the value (`v.to(out.dtype)`); `+=`
    needs no cast (the region is read, added to in its own dtype, written back)."""
    torch.manual_seed(0)
    for name in ("Routed", "Experts", "RowMask"):
        model: nn.Module = getattr(emitted, name)()
        inputs = CASES[name][1]()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(*inputs)
            expected = CASES[name][0](model, *inputs) if name != "Routed" else None
        assert out.dtype == torch.float32, name
        if expected is not None:
            torch.testing.assert_close(out, expected.float(), rtol=0, atol=1e-6)
