"""FLOPs by hand, and saved-for-backward bytes against what autograd actually saves."""

from __future__ import annotations

import pytest
import torch
from layer_helpers import bind, build, forward

from tensorloom.catalogue.layers import SavedTensors, Value
from tensorloom.catalogue.shapes import Unifier


def test_linear_flops_by_hand() -> None:
    spec, bound = bind("Linear", 784, 256)
    # 32 rows x 784 x 256 multiply-adds, x2, plus one bias add per output element
    assert spec.flops(bound, (32, 784), (32, 256)) == 2 * 32 * 784 * 256 + 32 * 256


def test_conv2d_flops_by_hand() -> None:
    spec, bound = bind("Conv2d", 4, 8, 3, groups=2, bias=False)
    # each of 8 x 6 x 6 outputs reads (4 / 2) x 3 x 3 inputs
    assert spec.flops(bound, (1, 4, 8, 8), (1, 8, 6, 6)) == 2 * (8 * 6 * 6) * (2 * 9)


def test_attention_and_lstm_flops_by_hand() -> None:
    spec, bound = bind("MultiHeadAttention", 64, 4, bias=False)
    b, t, e = 2, 10, 64
    assert spec.flops(bound, (b, t, e), (b, t, e)) == 2 * b * t * 4 * e * e + 4 * b * t * t * e
    spec, bound = bind("LSTM", 8, 16)
    per_step = 4 * 16 * 8 + 4 * 16 * 16 + 2 * 4 * 16  # weights and both biases
    assert spec.flops(bound, (2, 5, 8), (2, 5, 16)) == 2 * 2 * 5 * per_step


def test_param_counts_by_hand() -> None:
    spec, bound = bind("LSTM", 10, 20, 2, bidirectional=True)
    first = 4 * 20 * (10 + 20) + 2 * 4 * 20
    second = 4 * 20 * (40 + 20) + 2 * 4 * 20
    assert spec.param_count(bound) == 2 * (first + second)
    spec, bound = bind("MultiHeadAttention", 512, 8)
    assert spec.param_count(bound) == 4 * 512 * 512 + 4 * 512


def _measure(
    name: str, args: list[Value], kwargs: dict[str, Value], shape: tuple[int, ...]
) -> tuple[SavedTensors, SavedTensors]:
    """(what autograd saved on CPU, what the catalogue predicts), fp32."""
    spec, bound = bind(name, *args, **kwargs)
    module = build(spec, bound).train()
    alive = {t.untyped_storage().data_ptr() for t in (*module.parameters(), *module.buffers())}
    if name == "Embedding":
        x = torch.randint(0, 10, shape)
    else:
        x = torch.randn(shape, requires_grad=True)
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in alive:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = forward(spec, module, x)
    got_in = saved.pop(x.untyped_storage().data_ptr(), 0)
    got_out = saved.pop(out.untyped_storage().data_ptr(), 0)
    got = SavedTensors(got_in, got_out, sum(saved.values()))
    return got, spec.saved_tensors(bound, tuple(x.shape), tuple(out.shape), 4)


# Layers whose CPU kernels save what their CUDA kernels save. Dropout (a bool
# mask on CUDA, a float one on CPU), LSTM/GRU (cuDNN reserve space) and
# MultiHeadAttention (fused attention) follow their CUDA kernels and differ on CPU.
SAME_ON_CPU: list[tuple[str, list[Value], dict[str, Value], tuple[int, ...]]] = [
    ("Linear", [16, 8], {}, (4, 16)),
    ("Linear", [16, 8], {}, (2, 3, 16)),
    ("Conv2d", [3, 8, 3], {}, (2, 3, 8, 8)),
    ("ConvTranspose2d", [3, 4, 3], {}, (2, 3, 5, 5)),
    ("ReLU", [], {}, (4, 16)),
    ("GELU", [], {}, (4, 16)),
    ("SiLU", [], {}, (4, 16)),
    ("Tanh", [], {}, (4, 16)),
    ("Sigmoid", [], {}, (4, 16)),
    ("Softmax", [], {"dim": -1}, (4, 16)),
    ("LayerNorm", [16], {}, (4, 5, 16)),
    ("BatchNorm2d", [3], {}, (2, 3, 4, 4)),
    ("BatchNorm1d", [3], {}, (2, 3)),
    ("GroupNorm", [2, 4], {}, (2, 4, 5)),
    ("Embedding", [10, 4], {}, (2, 3)),
    ("MaxPool2d", [2], {}, (2, 3, 8, 8)),
    ("AvgPool2d", [2], {}, (2, 3, 8, 8)),
    ("AdaptiveAvgPool2d", [1], {}, (2, 3, 8, 8)),
    ("AdaptiveAvgPool2d", [2], {}, (2, 3, 8, 8)),
    ("Flatten", [], {}, (2, 3, 4)),
    ("Identity", [], {}, (2, 3, 4)),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "shape"), SAME_ON_CPU)
def test_saved_bytes_match_autograd(
    name: str, args: list[Value], kwargs: dict[str, Value], shape: tuple[int, ...]
) -> None:
    got, predicted = _measure(name, args, kwargs, shape)
    assert predicted == got


def test_dropout_mask_is_one_byte_per_element_on_cuda() -> None:
    spec, bound = bind("Dropout", 0.1)
    assert spec.saved_tensors(bound, (4, 16), (4, 16), 2) == SavedTensors(extra_bytes=64)
    spec, bound = bind("Dropout", 0.0)
    assert spec.activation_bytes(bound, (4, 16), (4, 16), 2) == 0


def test_layernorm_statistics_by_hand() -> None:
    spec, bound = bind("LayerNorm", 768)
    # fp16 input saved (2 bytes/elt) + fp32 mean and rstd per row
    saved = spec.saved_tensors(bound, (8, 197, 768), (8, 197, 768), 2)
    assert saved == SavedTensors(input_bytes=8 * 197 * 768 * 2, extra_bytes=2 * 8 * 197 * 4)


# Saved-for-backward bytes measured with saved_tensors_hooks on an H200 (torch
# 2.11+cu130, cuDNN LSTM/GRU, fused attention), parameters and buffers excluded:
# (layer, args, kwargs, input shape, element size, (input, output, extra) bytes).
MEASURED_ON_H200: list[
    tuple[str, list[Value], dict[str, Value], tuple[int, ...], int, tuple[int, int, int]]
] = [
    ("LSTM", [64, 128], {}, (8, 32, 64), 4, (65536, 131072, 663808)),
    ("LSTM", [64, 128, 2], {}, (8, 32, 64), 4, (65536, 131072, 1458432)),
    ("LSTM", [64, 128, 2], {"bidirectional": True}, (8, 32, 64), 4, (65536, 262144, 2916608)),
    ("LSTM", [64, 256], {}, (16, 64, 64), 2, (131072, 524288, 2638080)),
    ("GRU", [64, 128], {}, (8, 32, 64), 4, (65536, 131072, 790784)),
    ("GRU", [64, 128, 2], {"bidirectional": True}, (8, 32, 64), 2, (32768, 131072, 1712384)),
    ("MultiHeadAttention", [256, 8], {}, (8, 64, 256), 4, (0, 0, 3162128)),
    ("MultiHeadAttention", [256, 8], {"dropout": 0.1}, (8, 64, 256), 2, (0, 0, 1327120)),
    ("MultiHeadAttention", [512, 8], {}, (4, 100, 512), 4, (0, 0, 4931600)),
    ("MultiHeadAttention", [512, 8], {}, (4, 100, 512), 2, (0, 0, 2060816)),
    ("Dropout", [0.1], {}, (64, 128), 2, (0, 0, 8192)),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "shape", "size", "measured"), MEASURED_ON_H200)
def test_saved_bytes_match_cuda_measurements(
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    shape: tuple[int, ...],
    size: int,
    measured: tuple[int, int, int],
) -> None:
    spec, bound = bind(name, *args, **kwargs)
    out = spec.infer_shape(bound, [shape], Unifier())
    assert isinstance(out, tuple)
    concrete = tuple(d for d in out if isinstance(d, int))
    saved = spec.saved_tensors(bound, shape, concrete, size)
    assert (saved.input_bytes, saved.output_bytes, saved.extra_bytes) == measured
