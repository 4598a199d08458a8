"""Kernels with a backward, run on the CPU under TRITON_INTERPRET=1.

examples/kernels/bias_gelu.tl and fused_layernorm.tl are compiled to scripts and
imported; each kernel's forward and the gradients its backward kernel computes are
compared with PyTorch autograd of the unfused op, through the custom op eagerly and
under torch.compile (fullgraph: no graph break), and a few training steps of each
example's model with the kernels give the losses of the same model on PyTorch's ops.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # read when triton is imported, and at @triton.jit

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tensorloom.backends.python_printer import print_python  # noqa: E402
from tensorloom.pipeline import compile_text  # noqa: E402

KERNELS = Path(__file__).parents[2] / "examples" / "kernels"
LIT_BACKENDS = Path(__file__).parents[1] / "lit" / "backends"
F = torch.nn.functional


def compile_example(name: str, tmp_path: Path, folder: Path = KERNELS) -> ModuleType:
    path = folder / name
    result = compile_text(path.read_text(), str(path), until="torch")
    assert result.module is not None and not result.sink.has_errors, [
        d.message for d in result.sink
    ]
    out = tmp_path / f"{path.stem}_gen.py"
    out.write_text(print_python(result.module))
    spec = importlib.util.spec_from_file_location(f"{path.stem}_gen", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the script's dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bias_gelu(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return compile_example("bias_gelu.tl", tmp_path_factory.mktemp("bias_gelu"))


@pytest.fixture(scope="module")
def layernorm(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return compile_example("fused_layernorm.tl", tmp_path_factory.mktemp("layernorm"))


def gradients(fn: Callable[..., Any], inputs: list[Any], upstream: Any) -> tuple[Any, list[Any]]:
    """`fn`'s output and the gradients of `inputs` for the upstream gradient."""
    leaves = [i.detach().clone().requires_grad_() for i in inputs]
    out = fn(*leaves)
    grads = torch.autograd.grad(out, leaves, upstream)
    return out.detach(), list(grads)


def assert_same_gradients(
    ours: Callable[..., Any], reference: Callable[..., Any], inputs: list[Any]
) -> None:
    torch.manual_seed(1)
    upstream = torch.randn_like(reference(*inputs))
    out, grads = gradients(ours, inputs, upstream)
    expected, expected_grads = gradients(reference, inputs, upstream)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ bias + GELU


def test_bias_gelu_backward_matches_autograd_of_the_unfused_op(bias_gelu: ModuleType) -> None:
    torch.manual_seed(0)
    x, b = torch.randn(70, 90), torch.randn(90)  # neither a multiple of the tiles
    assert_same_gradients(bias_gelu.bias_gelu_op, lambda x, b: F.gelu(x + b), [x, b])


def test_bias_gelu_gradients_under_torch_compile_without_a_graph_break(
    bias_gelu: ModuleType,
) -> None:
    torch.manual_seed(0)
    x, b = torch.randn(33, 40), torch.randn(40)
    compiled = torch.compile(lambda x, b: bias_gelu.bias_gelu_op(x, b) * 2.0, fullgraph=True)
    assert_same_gradients(compiled, lambda x, b: F.gelu(x + b) * 2.0, [x, b])


def test_bias_gelu_only_returns_the_gradients_autograd_asks_for(bias_gelu: ModuleType) -> None:
    x = torch.randn(8, 16, requires_grad=True)
    b = torch.randn(16)  # a constant: its gradient is not returned
    bias_gelu.bias_gelu_op(x, b).sum().backward()
    assert x.grad is not None and b.grad is None


def test_bias_gelu_is_autotuned_on_the_sizes_with_one_config_in_the_interpreter(
    bias_gelu: ModuleType,
) -> None:
    tuner = bias_gelu.bias_gelu
    assert tuner.keys == ["M", "N"]
    assert len(tuner.configs) == 1  # Triton's interpreter has no GPU timer to tune with
    assert tuner.configs[0].kwargs == {"BLOCK_M": 32, "BLOCK_N": 32}
    doc = bias_gelu.bias_gelu_launcher.__doc__
    assert "`BLOCK_M` in 32, 64; `BLOCK_N` in 32, 64, 128; `num_warps` in 4, 8" in doc


def test_bias_gelu_model_trains_to_the_losses_of_the_unfused_model(bias_gelu: ModuleType) -> None:
    def unfused(x: Any, b: Any) -> Any:
        return F.gelu(x + b)

    data = torch.randn(1, 16, 64).expand(4, 16, 64), torch.randint(0, 10, (1, 16)).expand(4, 16)
    ours = train_losses(bias_gelu, "BiasGeluMLP", data, {})
    reference = train_losses(bias_gelu, "BiasGeluMLP", data, {"bias_gelu_op": unfused})
    torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-5)
    assert ours[-1] < ours[0]


def test_a_row_scale_with_an_accumulated_gradient_matches_autograd(tmp_path: Path) -> None:
    """tests/lit/backends/triton-autograd.tl: `ds` is a zeroed fp32 accumulator."""
    module = compile_example("triton-autograd.tl", tmp_path, LIT_BACKENDS)
    torch.manual_seed(0)
    x, s = torch.randn(45, 30), torch.randn(45)
    assert_same_gradients(module.scale_rows_op, lambda x, s: x * s[:, None], [x, s])


# ------------------------------------------------------------------- LayerNorm


def torch_layer_norm(x: Any, w: Any, b: Any, eps: float = 1e-5) -> Any:
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def test_layer_norm_backward_matches_autograd_of_f_layer_norm(layernorm: ModuleType) -> None:
    torch.manual_seed(0)
    x = torch.randn(37, 100) * 3 + 1  # 37 rows: not a multiple of any ROWS candidate
    w, b = torch.randn(100), torch.randn(100)
    ours = lambda x, w, b: layernorm.layer_norm_apply(x, w, b, 1e-5)  # noqa: E731
    assert_same_gradients(ours, torch_layer_norm, [x, w, b])


def test_layer_norm_saves_mean_and_rstd_without_gradients(layernorm: ModuleType) -> None:
    x = torch.randn(5, 12, requires_grad=True)
    y, mean, rstd = layernorm.layer_norm_op(x, torch.ones(12), torch.zeros(12), 1e-5)
    assert y.requires_grad and not mean.requires_grad and not rstd.requires_grad
    assert mean.dtype == rstd.dtype == torch.float32
    torch.testing.assert_close(mean, x.detach().mean(1))


def test_layer_norm_under_torch_compile_without_a_graph_break(layernorm: ModuleType) -> None:
    torch.manual_seed(0)
    x, w, b = torch.randn(20, 64), torch.randn(64), torch.randn(64)
    compiled = torch.compile(
        lambda x, w, b: layernorm.layer_norm_apply(x.relu(), w, b, 1e-5), fullgraph=True
    )
    assert_same_gradients(compiled, lambda x, w, b: torch_layer_norm(x.relu(), w, b), [x, w, b])


def test_layer_norm_under_autocast_keeps_the_declared_dtypes(layernorm: ModuleType) -> None:
    x = torch.randn(6, 32).bfloat16()
    w, b = torch.randn(32), torch.randn(32)  # fp32 weights, as under autocast
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, mean, rstd = layernorm.layer_norm_op(x, w, b, 1e-5)
    assert y.dtype == torch.bfloat16 and mean.dtype == rstd.dtype == torch.float32
    expected = torch_layer_norm(x.float(), w, b)
    torch.testing.assert_close(y.float(), expected, rtol=2e-2, atol=2e-2)


def test_layer_norm_launcher_names_a_wrong_shape(layernorm: ModuleType) -> None:
    with pytest.raises(ValueError, match=r"`w` must be \[N\] with N=8, got shape \(7,\)"):
        layernorm.layer_norm_launcher(torch.randn(4, 8), torch.randn(7), torch.randn(8), 1e-5)


def test_transformer_with_kernel_layernorms_trains_to_the_losses_of_f_layer_norm(
    layernorm: ModuleType,
) -> None:
    def unfused(x: Any, w: Any, b: Any, eps: float) -> Any:
        return torch_layer_norm(x, w, b, eps)

    torch.manual_seed(0)
    tokens = torch.randint(0, 256, (1, 2, 17)).expand(3, 2, 17)  # one batch, three steps
    data = tokens[:, :, :-1], tokens[:, :, 1:]
    ours = train_losses(layernorm, "TinyGPT", data, {})
    reference = train_losses(layernorm, "TinyGPT", data, {"layer_norm_apply": unfused})
    torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-5)
    assert ours[-1] < ours[0]


# ---------------------------------------------------------------------- helpers


def train_losses(
    module: ModuleType, model: str, data: tuple[Any, Any], replaced: dict[str, Any]
) -> Any:
    """The losses of a few AdamW steps of `model`, with some of the script's kernel
    functions replaced by PyTorch's ops; the same initial weights every time."""
    saved = {name: getattr(module, name) for name in replaced}
    for name, function in replaced.items():
        setattr(module, name, function)
    try:
        torch.manual_seed(0)
        net = getattr(module, model)()
        optimizer = torch.optim.AdamW(net.parameters(), lr=3e-3)
        losses = []
        for inputs, targets in zip(*data, strict=True):
            logits = net(inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        return torch.stack(losses)
    finally:
        for name, function in saved.items():
            setattr(module, name, function)
