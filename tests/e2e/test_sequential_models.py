"""Models inside `Sequential` (issue 31): the emitted `nn.Sequential` holds the program's
models beside catalogue layers, as a layer and as each element of a per-position list;
its parameters are those `tlc check` counts, its state-dict keys `nn.Sequential`'s, and
the `init=` of a catalogue element reaches the right tensor (of every list element)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import torch

from tensorloom.analysis.report import InfoRequest, info_json
from tensorloom.backends.python_printer import print_python
from tensorloom.pipeline import compile_file

PROGRAM = """\
@model Block:
    @config:
        d = 8
        h = 16
    @layers:
        fc1 = Linear(d, h)
        fc2 = Linear(h, d)
    @forward(x: Tensor[B, d]):
        return x + fc2(relu(fc1(x)))

@model Net:
    @config:
        d = 8
        n = 3
    @layers:
        body = Sequential(Linear(d, d, init="zeros", bias_init="ones"), Block(d, 32), LayerNorm(d))
        parts = [Sequential(Block(d, 4 * i + 4), Linear(d, d, init="ones"), ReLU) for i in range(n)]
    @forward(x: Tensor[B, 8]):
        for s in parts:
            x = s(x)
        return body(x)
"""


def emitted(tmp_path: Path) -> tuple[ModuleType, Path]:
    path = tmp_path / "seq.nml"
    path.write_text(PROGRAM)
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    module = ModuleType("emitted_seq")
    exec(compile(print_python(result.module), "<emitted seq.nml>", "exec"), module.__dict__)
    return module, path


def test_sequential_of_models_runs_and_counts(tmp_path: Path) -> None:
    module, path = emitted(tmp_path)
    net = module.Net()
    block = lambda h: 8 * h + h + h * 8 + 8  # noqa: E731
    expected = (8 * 8 + 8) + block(32) + 16 + sum(block(4 * (i + 1)) + 72 for i in range(3))
    assert sum(p.numel() for p in net.parameters()) == expected
    info = info_json(path, InfoRequest(batch_size=2))
    assert next(m for m in info["models"] if m["name"] == "Net")["params"] == expected
    keys = list(net.state_dict())
    assert (
        "body.1.fc1.weight" in keys and "parts.2.0.fc2.bias" in keys and "parts.1.1.weight" in keys
    )
    assert isinstance(net.body, torch.nn.Sequential) and isinstance(net.parts[0][0], module.Block)
    x = torch.randn(4, 8)
    with torch.no_grad():
        expected_out = x
        for stage in net.parts:
            expected_out = stage[2](stage[1](stage[0](expected_out)))
        expected_out = net.body[2](net.body[1](net.body[0](expected_out)))
        torch.testing.assert_close(net(x), expected_out, rtol=0, atol=0)


def test_an_element_init_reaches_its_tensor(tmp_path: Path) -> None:
    """`init=` on a catalogue element of a `Sequential` that holds models: the first
    element's weight is zeros and its bias ones; every list element's `Linear` is ones."""
    module, _ = emitted(tmp_path)
    net = module.Net()
    assert torch.equal(net.body[0].weight, torch.zeros(8, 8))
    assert torch.equal(net.body[0].bias, torch.ones(8))
    for stage in net.parts:
        assert torch.equal(stage[1].weight, torch.ones(8, 8))
