"""runtime/metrics.py's batch accuracies: `metrics = [accuracy, top_k(k)]` of one batch."""

from __future__ import annotations

import pytest
import torch

from tensorloom.backends.runtime.metrics import batch_accuracy, batch_top_k_accuracy

# Three samples of three classes; the targets are the first, second and second largest output.
OUTPUT = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.5, 0.3, 0.2]])
TARGET = torch.tensor([0, 1, 1])


def test_accuracy_is_the_share_of_argmax_predictions_that_hit() -> None:
    assert batch_accuracy(OUTPUT, TARGET).item() == pytest.approx(2 / 3)


@pytest.mark.parametrize(("k", "share"), [(1, 2 / 3), (2, 1.0), (3, 1.0)])
def test_top_k_counts_a_target_among_the_k_largest(k: int, share: float) -> None:
    assert batch_top_k_accuracy(OUTPUT, TARGET, k).item() == pytest.approx(share)


def test_a_sequence_output_is_scored_per_token() -> None:
    # [B=1, T=3, C=3]: the tokens of a sequence model, each with its own target
    output, target = OUTPUT[None], TARGET[None]
    assert batch_accuracy(output, target).item() == pytest.approx(2 / 3)
    assert batch_top_k_accuracy(output, target, 2).item() == pytest.approx(1.0)
