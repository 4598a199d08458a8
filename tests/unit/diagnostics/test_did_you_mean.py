"""The one did-you-mean engine: fewest edits first (a swap counts as one), then difflib."""

from __future__ import annotations

import pytest

from tensorloom.diagnostics.core import did_you_mean
from tensorloom.passes.check_train import SETTINGS


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("epoch", "epochs"), ("Adma", "Adam"), ("batchsize", "batch_size"), ("sed", "seed")],
)
def test_the_fewest_edits_win(typo: str, meant: str) -> None:
    candidates = [*SETTINGS, "Adam", "AdamW", "Adamax"]
    assert did_you_mean(typo, candidates) == meant


def test_letter_case_is_ignored() -> None:
    assert did_you_mean("linear", ["Linear", "LayerNorm"]) == "Linear"


def test_a_swap_of_neighbours_is_one_edit() -> None:
    # difflib alone ranks `Adamax` first for `Adma`; one swap away, `Adam` is meant
    assert did_you_mean("Adma", ["Adamax", "Adam"]) == "Adam"


def test_past_the_edit_budget_difflib_still_finds_shared_letters() -> None:
    assert did_you_mean("desugar-pipe", ["desugar-pipes", "resolve-nml"]) == "desugar-pipes"
    assert did_you_mean("conv_layer", ["Conv2d", "conv_layers_2d"]) == "conv_layers_2d"


def test_nothing_close_is_no_guess() -> None:
    assert did_you_mean("xyz", ["epochs", "optimizer"]) is None
    assert did_you_mean("anything", []) is None


def test_a_tie_goes_to_difflibs_ranking() -> None:
    assert did_you_mean("fc3", ["fc1", "fc2"]) == "fc2"


def test_a_one_letter_name_is_not_one_edit_from_every_other() -> None:
    assert did_you_mean("x", ["k", "n"]) is None
    assert did_you_mean("X", ["x"]) == "x"
