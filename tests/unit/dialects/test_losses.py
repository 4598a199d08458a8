"""dialects/nml/losses.py: each functional loss's shape rule, against what PyTorch computes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import i64

from tensorloom.catalogue.shapes import ShapeMismatch, Unifier
from tensorloom.dialects.nml import LOSSES, TensorType
from tensorloom.dialects.nml.losses import loss_shape

FLOAT = TensorType.from_dims


def _indices(*dims: int | str) -> TensorType:
    return TensorType.from_dims(dims, i64)


def _shape(kind: str, out: TensorType, target: TensorType, reduction: str = "mean") -> object:
    result = loss_shape(LOSSES[kind], reduction, out, target, Unifier())
    return result.message if isinstance(result, ShapeMismatch) else result.dims  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("out", "target", "reduction"),
    [((8, 10), (8,), "none"), ((8, 10, 5), (8, 5), "none"), ((8, 10), (8,), "sum")],
)
def test_class_indices_drop_dim_1_as_pytorch_does(
    out: tuple[int, ...], target: tuple[int, ...], reduction: str
) -> None:
    expected = F.cross_entropy(
        torch.randn(out), torch.randint(0, 10 if len(out) > 1 else 1, target), reduction=reduction
    )
    assert _shape("cross_entropy", FLOAT(out), _indices(*target), reduction) == tuple(
        expected.shape
    )


def test_symbolic_batch_and_probability_targets() -> None:
    assert _shape("cross_entropy", FLOAT(("B", 10)), _indices("B")) == ()
    probabilities = F.cross_entropy(torch.randn(4, 10), torch.rand(4, 10), reduction="none")
    assert probabilities.shape == (4,)
    assert _shape("cross_entropy", FLOAT(("B", 10)), FLOAT(("B", 10)), "none") == ("B",)
    assert _shape("mse", FLOAT(("B", 3)), FLOAT(("B", 3)), "none") == ("B", 3)
    assert _shape("kl_div", FLOAT(("B", 3)), FLOAT(("B", 3))) == ()


def test_mismatches_say_what_the_target_should_be() -> None:
    message = _shape("cross_entropy", FLOAT(("B", 10, 7)), _indices("B", 10))
    assert "the target should be [B, 7], got [B, 10]" in str(message)
    assert "got class indices [B]" in str(_shape("mse", FLOAT(("B", 10)), _indices("B")))
    assert "the output is [B, 10], the target [B, 64]" in str(
        _shape("l1", FLOAT(("B", 10)), FLOAT(("B", 64)))
    )
    assert "class indices (integers)" in str(_shape("nll", FLOAT(("B", 10)), FLOAT(("B", 10))))
    assert "needs a float input" in str(_shape("mse", _indices("B"), FLOAT(("B",))))


def test_every_loss_is_a_pytorch_function() -> None:
    for spec in LOSSES.values():
        assert spec.torch_function is not None
        assert callable(getattr(F, spec.torch_function.removeprefix("F.")))
