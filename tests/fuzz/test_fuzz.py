"""The bounded fuzz run of `make test`: generated and mutated programs, none of them a bug.

Each input is classified by fuzz_outcome.py (internal error, escaped exception,
hang over 5 s, span outside the file, check/compile disagreement, emitted Python
that does not `compile()`); careful generated programs the check accepts are
also built and run one forward on the CPU. Hypothesis drives the choices
(derandomised: the same inputs every run), and shrinks a failure to a small
program. `make fuzz` runs the same classes over many more inputs (tests/fuzz/run.py).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fuzz_forward import run_forward
from fuzz_generate import _careful, generate, make_workdir, mutate, seeds
from fuzz_outcome import classify
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BOUNDED = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SEEDS = seeds()


@pytest.fixture(scope="module")
def workdir() -> Path:
    return make_workdir()


def _assert_no_bug(workdir: Path, text: str) -> None:
    outcome = classify(workdir / "__fz__.tl", text)
    assert not outcome.is_bug, f"{outcome.kind}: {outcome.detail}\n--- input ---\n{text}"


@BOUNDED
@given(st.randoms(use_true_random=False))
def test_generated_programs(workdir: Path, r: random.Random) -> None:
    _assert_no_bug(workdir, generate(r))


@BOUNDED
@given(st.sampled_from(SEEDS), st.randoms(use_true_random=False))
def test_mutated_programs(workdir: Path, seed: tuple[str, str], r: random.Random) -> None:
    _assert_no_bug(workdir, mutate(seed[1], r))


@settings(BOUNDED, max_examples=12)
@given(st.randoms(use_true_random=False))
def test_accepted_programs_run_one_forward(workdir: Path, r: random.Random) -> None:
    text = _careful(r)
    outcome = classify(workdir / "__fz__.tl", text)
    assert not outcome.is_bug, f"{outcome.kind}: {outcome.detail}\n{text}"
    if outcome.kind == "ok":
        assert outcome.python is not None
        assert run_forward(outcome.python, outcome.flows) is None, text


POOLS = """model Pools:
    layer proj = Linear(2, 64)
    layer pool1 = MaxPool2d(2)
    layer pool2 = MaxPool2d(2)
    fn forward(self, x: Tensor[B, T, 2]) -> Tensor:
        return x |> self.proj |> self.pool1 |> self.pool2
let net = Pools()
"""


def test_the_forward_check_picks_sizes_that_keep_every_step_non_empty(workdir: Path) -> None:
    """Input 15480: two pools give T//4, so T = 3 (the default) would make an empty
    output; the harness takes T = 4, and the forward runs."""
    from fuzz_forward import sizes_for
    from fuzz_outcome import info_problem

    outcome = classify(workdir / "__fz__.tl", POOLS)
    assert outcome.kind == "ok" and outcome.python is not None
    [(model, inputs, steps)] = outcome.flows
    assert (model, inputs, steps[-1]) == ("Pools", ["[B, T, 2]"], "[B, T//4, 16]")
    assert sizes_for(inputs, steps) == {"B": 2, "T": 4}
    assert run_forward(outcome.python, outcome.flows) is None
    assert info_problem(workdir / "__fz__.tl") is None


PAIRS = """model Pairs:
    layer img = Linear(64, 16)
    layer words = Embedding(19, 16)
    fn forward(self, image: Tensor[B, 1, 8, 8], text: Tensor[B, 4]) -> Tensor:
        let i = normalize(self.img(image.flatten(1)), dim=1)
        return i @ t(normalize(mean(self.words(text), dim=1), dim=1))
let net = Pairs()
"""


def test_the_forward_check_gives_each_input_floats_or_ids(workdir: Path) -> None:
    """Seed 7311 input 0, seed 90417 input 50: an image and a caption's token ids are
    neither all floats nor all ids; the harness tries the mixes, and the forward runs."""
    outcome = classify(workdir / "__fz__.tl", PAIRS)
    assert outcome.kind == "ok" and outcome.python is not None
    assert run_forward(outcome.python, outcome.flows) is None
