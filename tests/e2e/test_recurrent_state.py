"""LSTM and GRU take an initial state and return theirs: `let (out, state) = lstm(x, state)`.

The program below runs an LSTM from a zero state (`none`), again from the state it
returned, then a GRU from a slice of that state. The test builds the emitted model and
computes the same with its own submodules called as PyTorch documents them; the types
`tlc check` gave the state are the shapes PyTorch returns.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import torch

from tensorloom.dialects.nml import FuncOp, TensorType, TupleType
from tensorloom.pipeline import compile_file, python_source

PROGRAM = """
@model Seq:
    @layers:
        lstm = LSTM(8, 16, num_layers=2)
        gru = GRU(16, 4)
    @forward(x: Tensor[2, 5, 8]):
        let (out, state) = lstm(x, none)
        let (out2, state2) = lstm(x * 0.5, state)
        let (h, c) = state2
        let (g, hg) = gru(out2, h[:1, :, :4])
        return g + hg.transpose(0, 1) + c[-1:].transpose(0, 1)[:, :, :4]
"""


def test_state_goes_in_and_comes_out(tmp_path: Path) -> None:
    path = tmp_path / "seq.nml"
    path.write_text(PROGRAM)
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    module = ModuleType("emitted_seq")
    sys.modules[module.__name__] = module
    exec(compile(python_source(result.module), "<emitted seq.nml>", "exec"), module.__dict__)
    torch.manual_seed(0)
    seq = module.Seq()
    x = torch.randn(2, 5, 8)
    _, state = seq.lstm(x)
    out2, (h, c) = seq.lstm(x * 0.5, state)
    g, hg = seq.gru(out2, h[:1, :, :4].contiguous())
    expected = g + hg.transpose(0, 1) + c[-1:].transpose(0, 1)[:, :, :4]
    torch.testing.assert_close(seq(x), expected)


def test_the_state_is_typed_as_pytorch_returns_it(tmp_path: Path) -> None:
    path = tmp_path / "seq.nml"
    path.write_text(PROGRAM)
    checked = compile_file(path, until="nml")
    assert checked.module is not None
    lstm_types = [
        op.results[0].type
        for op in checked.module.walk()
        if op.name == "nml.apply" and isinstance(op.results[0].type, TupleType)
    ]
    output, state = lstm_types[0].elements.data
    assert isinstance(output, TensorType) and output.dims == (2, 5, 16)
    assert isinstance(state, TupleType)
    assert [t.dims for t in state.elements.data] == [(2, 2, 16), (2, 2, 16)]
    gru_state = lstm_types[-1].elements.data[1]
    assert isinstance(gru_state, TensorType) and gru_state.dims == (1, 2, 4)
    assert any(isinstance(op, FuncOp) for op in checked.module.walk())


NESTED = """
@model Seq:
    @layers:
        lstm = LSTM(8, 16, num_layers=2)
    @forward(x: Tensor[2, 5, 8]):
        let (out, (h, c)) = lstm(x, none)
        let (out2, (h2, c2)) = lstm(x * 0.5, (h, c))
        return out2 + h2[-1].unsqueeze(1) + c2[0].unsqueeze(1) + out
"""


def test_a_nested_pattern_takes_the_state_apart(tmp_path: Path) -> None:
    """`let (out, (h, c)) = lstm(x, none)`, PyTorch's `out, (h, c) = lstm(x)`: each name
    the element at its place, typed as PyTorch returns it and computed as it does."""
    path = tmp_path / "nested.nml"
    path.write_text(NESTED)
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    module = ModuleType("emitted_nested")
    sys.modules[module.__name__] = module
    exec(compile(python_source(result.module), "<emitted nested.nml>", "exec"), module.__dict__)
    torch.manual_seed(0)
    seq = module.Seq()
    x = torch.randn(2, 5, 8)
    out, (h, c) = seq.lstm(x)
    out2, (h2, c2) = seq.lstm(x * 0.5, (h, c))
    expected = out2 + h2[-1].unsqueeze(1) + c2[0].unsqueeze(1) + out
    torch.testing.assert_close(seq(x), expected)
    checked = compile_file(path, until="nml")
    assert checked.module is not None
    returned = [op for op in checked.module.walk() if op.name == "nml.return"]
    assert [str(op.operands[0].type) for op in returned] == ["!nml.tensor<[2, 5, 16], f32>"]
