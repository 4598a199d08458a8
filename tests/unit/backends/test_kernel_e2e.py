"""Kernels compiled from .tl source, printed as Python and run under TRITON_INTERPRET=1.

Each test compiles an example kernel through irgen, `check-kernels`,
`synthesize-launchers` and `convert-kernel-to-triton`, prints the Python,
imports it and compares what its launcher computes with torch.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit runs, at import of the printed file

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import tensorloom.backends.print_triton  # noqa: E402, F401  (registers the handlers)
from tensorloom.backends.python_printer import print_python  # noqa: E402
from tensorloom.pipeline import compile_text  # noqa: E402

EXAMPLES = Path(__file__).parents[3] / "examples"


def compile_kernel(path: Path, tmp_path: Path) -> ModuleType:
    result = compile_text(path.read_text(), str(path), until="torch")
    assert result.module is not None, [d.message for d in result.sink]
    assert not result.sink.has_errors, [d.message for d in result.sink]
    out = tmp_path / f"{path.stem}_gen.py"
    out.write_text(print_python(result.module))
    spec = importlib.util.spec_from_file_location(path.stem + "_gen", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a script's dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_vector_add_launcher_takes_two_tensors_and_returns_the_sum(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "vector_add.tl", tmp_path)
    x, y = torch.randn(3000), torch.randn(3000)
    torch.testing.assert_close(generated.vector_add_launcher(x, y), x + y)


def test_vector_add_writes_into_a_given_output_with_a_smaller_block(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "vector_add.tl", tmp_path)
    x, y, z = torch.randn(1000), torch.randn(1000), torch.empty(1000)
    returned = generated.vector_add_launcher(x, y, z=z, BLOCK=128)
    assert returned is z
    torch.testing.assert_close(z, x + y)


def test_scaled_add_takes_alpha_positionally(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "kernels" / "scaled_add.tl", tmp_path)
    x, y = torch.randn(2500), torch.randn(2500)
    torch.testing.assert_close(generated.scaled_add_launcher(x, y, 0.5), x + 0.5 * y)


def test_softmax_rows_matches_torch_softmax(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "kernels" / "softmax_rows.tl", tmp_path)
    x = torch.randn(37, 100)
    torch.testing.assert_close(generated.softmax_rows_launcher(x), torch.softmax(x, dim=1))


def test_bias_gelu_on_a_2d_grid_matches_the_unfused_torch_sequence(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "kernels" / "bias_gelu.tl", tmp_path)
    x, b = torch.randn(70, 90), torch.randn(90)
    expected = torch.nn.functional.gelu(x + b)
    torch.testing.assert_close(generated.bias_gelu_launcher(x, b), expected)


def test_launcher_rejects_a_block_that_is_not_a_power_of_two(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "vector_add.tl", tmp_path)
    with pytest.raises(ValueError, match="BLOCK must be a power of two, got 1000"):
        generated.vector_add_launcher(torch.randn(8), torch.randn(8), BLOCK=1000)


def test_launcher_rejects_non_contiguous_inputs(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "vector_add.tl", tmp_path)
    x = torch.randn(8, 8).t()
    with pytest.raises(ValueError, match="`x` is not contiguous"):
        generated.vector_add_launcher(x, torch.randn(8, 8))


def test_launcher_rejects_inputs_on_different_devices(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "vector_add.tl", tmp_path)
    with pytest.raises(ValueError, match="`y` is on meta but `x` is on cpu"):
        generated.vector_add_launcher(torch.randn(8), torch.empty(8, device="meta"))


def test_a_model_forward_calls_the_kernel_launcher(tmp_path: Path) -> None:
    generated = compile_kernel(EXAMPLES / "custom_kernel.tl", tmp_path)
    net = generated.KernelMLP()
    x = torch.randn(4, 784)
    with torch.no_grad():
        expected = net.fc2(torch.nn.functional.gelu(net.fc1(x)))
        torch.testing.assert_close(net(x), expected)


IF_ELSE_KERNEL = """\
@kernel def relu_or_neg(x_ptr, out_ptr, n, NEG: tl.constexpr = 0, BLOCK: tl.constexpr = 128):
    let pid = tl.program_id(axis=0)
    let offs = pid * BLOCK + tl.arange(0, BLOCK)
    let mask = offs < n
    let x = tl.load(x_ptr + offs, mask=mask)
    if NEG:
        tl.store(out_ptr + offs, -x, mask=mask)
    else:
        tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
"""


def test_if_else_in_a_kernel_lowers_both_branches(tmp_path: Path) -> None:
    """fuzz-findings/04: convert-kernel-to-triton lost the `else` region (IndexError)."""
    source = tmp_path / "relu_or_neg.tl"
    source.write_text(IF_ELSE_KERNEL)
    generated = compile_kernel(source, tmp_path)
    x = torch.randn(300)
    torch.testing.assert_close(generated.relu_or_neg_launcher(x), torch.relu(x))
    torch.testing.assert_close(generated.relu_or_neg_launcher(x, NEG=1), -x)
