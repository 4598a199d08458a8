"""Constructor checking: argument errors as values, and agreement with PyTorch's own failures."""

from __future__ import annotations

import pytest
import torch
from layer_helpers import bind, build, forward
from torch import nn

from tensorloom.catalogue.layers import ArgError, BoundLayer, Value, lookup, suggest

# Each case: PyTorch refuses it, at construction or (where the arguments alone
# decide it) at the first forward on a well-shaped input.
INVALID: list[tuple[str, list[Value], dict[str, Value], tuple[int, ...], str | int]] = [
    ("Linear", [-1, 10], {}, (2, 1), 0),
    ("Conv2d", [3, 8, 3], {"groups": 2}, (1, 3, 8, 8), "groups"),
    ("Conv2d", [4, 6, 3], {"groups": 4}, (1, 4, 8, 8), "groups"),
    ("Conv2d", [3, 8, 3], {"stride": 2, "padding": "same"}, (1, 3, 8, 8), "padding"),
    ("Conv2d", [3, 8, 3], {"padding_mode": "mirror"}, (1, 3, 8, 8), "padding_mode"),
    ("Conv2d", [3, 8, 3], {"padding": "full"}, (1, 3, 8, 8), "padding"),
    ("Conv2d", [3, 8, 3], {"stride": 0}, (1, 3, 8, 8), "stride"),
    ("Conv1d", [3, 8, 3], {"groups": 0}, (1, 3, 8), "groups"),
    ("ConvTranspose2d", [4, 4, 3], {"padding_mode": "reflect"}, (1, 4, 5, 5), "padding_mode"),
    (
        "ConvTranspose2d",
        [4, 4, 3],
        {"stride": 2, "output_padding": 2},
        (1, 4, 5, 5),
        "output_padding",
    ),
    ("GroupNorm", [3, 8], {}, (2, 8, 4), 1),
    ("Dropout", [1.5], {}, (2, 3), 0),
    ("Dropout", [-0.1], {}, (2, 3), 0),
    ("Embedding", [10, 4], {"padding_idx": 10}, (2, 3), "padding_idx"),
    ("Embedding", [10, 4], {"padding_idx": -11}, (2, 3), "padding_idx"),
    ("LSTM", [10, 0], {}, (2, 3, 10), 1),
    ("LSTM", [10, 20], {"num_layers": 0}, (2, 3, 10), "num_layers"),
    ("LSTM", [10, 20], {"dropout": 2.0}, (2, 3, 10), "dropout"),
    ("LSTM", [10, 20], {"proj_size": 20}, (2, 3, 10), "proj_size"),
    ("GRU", [0, 20], {}, (2, 3, 1), 0),
    ("MultiHeadAttention", [10, 3], {}, (2, 3, 10), 1),
    ("MultiHeadAttention", [10, 0], {}, (2, 3, 10), 1),
    ("MaxPool2d", [2], {"padding": 2}, (1, 1, 8, 8), "padding"),
    ("AvgPool2d", [3], {"padding": 2}, (1, 1, 8, 8), "padding"),
    ("AvgPool2d", [3], {"divisor_override": 0}, (1, 1, 8, 8), "divisor_override"),
]


def _torch_refuses(
    name: str, args: list[Value], kwargs: dict[str, Value], shape: tuple[int, ...]
) -> bool:
    spec = lookup(name)
    assert spec is not None
    bound = BoundLayer(spec, {}, tuple(args), tuple(kwargs.items()))
    try:
        module = build(spec, bound)
        x = torch.randint(0, 10, shape) if name == "Embedding" else torch.randn(shape)
        with torch.no_grad():
            forward(spec, module, x)
    except (RuntimeError, ValueError, AssertionError, TypeError, IndexError):
        return True
    return False


@pytest.mark.parametrize(("name", "args", "kwargs", "shape", "where"), INVALID)
def test_reported_where_torch_fails(
    name: str, args: list[Value], kwargs: dict[str, Value], shape: tuple[int, ...], where: str | int
) -> None:
    spec = lookup(name)
    assert spec is not None
    bound = spec.bind(args, kwargs)
    errors = bound if isinstance(bound, list) else spec.validate(bound)
    assert errors, f"{name}{args}{kwargs} was accepted"
    located = [e.position if isinstance(where, int) else e.keyword for e in errors]
    assert where in located, errors
    assert all(e.message == e.message.lower() or "`" in e.message for e in errors)
    assert _torch_refuses(name, args, kwargs, shape)


def test_zero_sizes_are_rejected_though_torch_makes_empty_tensors() -> None:
    """Stricter than PyTorch: a zero-sized layer builds, but its output is empty."""
    for name, args in [("AdaptiveAvgPool2d", [0]), ("Linear", [4, 0])]:
        spec = lookup(name)
        assert spec is not None
        bound = spec.bind(args, {})
        assert isinstance(bound, BoundLayer) and spec.validate(bound)
        out = build(spec, bound)(torch.randn(1, 4, 4, 4))
        assert out.numel() == 0


def test_valid_arguments_are_accepted() -> None:
    bind("Conv2d", 3, 8, 3, padding="same")
    bind("MultiHeadAttention", 512, 8)
    bind("LSTM", 10, 20, 2, True, True, 0.1, True)


def test_unknown_keyword_suggests_the_parameter() -> None:
    errors = lookup("Linear").bind([784, 256], {"bais": False})  # type: ignore[union-attr]
    assert errors == [
        ArgError("`Linear` has no parameter `bais`", keyword="bais", help="did you mean `bias`?")
    ]


def test_too_many_positional_points_at_the_first_extra() -> None:
    errors = lookup("Dropout").bind([0.1, False, 3], {})  # type: ignore[union-attr]
    assert isinstance(errors, list)
    assert errors[0].position == 2
    assert errors[0].message == "`Dropout` takes at most 2 positional arguments, got 3"
    assert errors[0].help == "the signature is `Dropout(p=0.5, inplace=False)`"


def test_keyword_only_parameter_cannot_be_positional() -> None:
    errors = lookup("GroupNorm").bind([2, 4, 1e-5, True, False], {})  # type: ignore[union-attr]
    assert isinstance(errors, list) and errors[0].position == 4
    with pytest.raises(TypeError):
        nn.GroupNorm(2, 4, 1e-5, True, None, None, False)  # type: ignore[misc]


def test_missing_and_duplicate_arguments() -> None:
    spec = lookup("Conv2d")
    assert spec is not None
    missing = spec.bind([3], {})
    assert missing == [
        ArgError(
            "`Conv2d` is missing the required arguments `out_channels`, `kernel_size`",
            help="the signature is `Conv2d(in_channels, out_channels, kernel_size, stride=1, "
            'padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros")`',
        )
    ]
    twice = spec.bind([3, 8, 3], {"in_channels": 3})
    assert twice == [
        ArgError("`in_channels` is given both by position and by keyword", keyword="in_channels")
    ]


def test_type_errors_name_the_parameter() -> None:
    errors = lookup("Linear").bind([784.5, 10], {"bias": 1})  # type: ignore[union-attr]
    assert errors == [
        ArgError("`in_features` must be an integer, got `784.5`", position=0),
        ArgError("`bias` must be `true` or `false`, got `1`", keyword="bias"),
    ]
    with pytest.raises(TypeError):
        nn.Linear(784.5, 10)  # type: ignore[arg-type]


def test_default_conflict_points_at_the_whole_call() -> None:
    spec, bound = bind("Conv2d", 3, 8, 3)
    assert bound.error("groups", "x") == ArgError("x")
    del spec


def test_suggest_layer_names() -> None:
    assert suggest("linear") == "Linear"
    assert suggest("MultiheadAttention") == "MultiHeadAttention"
    assert suggest("Conv2D") == "Conv2d"
    assert suggest("LayerNrom") == "LayerNorm"
    assert suggest("Transformer") is None
