"""catalogue/train_keys.py: every train-block key is one record; check-train's check of each
plain key follows its record's type, range and choices, and train-config writes every key's
fields, by the rule the record names or as the value itself: neither pass keeps a table of
keys."""

from __future__ import annotations

import pytest

from tensorloom.catalogue.train_keys import CONFIG_FIELDS, FIELDS, KEYS, TRAIN_KEYS, TrainKey
from tensorloom.catalogue.train_rules import write_plain
from tensorloom.passes.check_train import SETTINGS

PLAIN = [k for k in TRAIN_KEYS if k.check is None and not k.switch and not k.off]


def test_check_train_accepts_exactly_the_records() -> None:
    assert list(SETTINGS) == [k.name for k in TRAIN_KEYS]
    assert all(SETTINGS[k.name].doc == k.summary for k in TRAIN_KEYS)
    assert len(KEYS) == len(TRAIN_KEYS)  # no key twice
    assert len(FIELDS) == len(CONFIG_FIELDS)  # no field twice
    for key in TRAIN_KEYS:
        assert (key.value is None) == (key.check is not None), key.name
        assert key.older_name_of is None or key.older_name_of in KEYS


def test_every_key_reaches_train_config() -> None:
    """A key whose value is written as it is has a field of the plain value's type; a key
    with a structured value (its own `check`) names its own `reach` too, or is a name
    written as a string."""
    for key in TRAIN_KEYS:
        if key.older_name_of is not None:
            assert not key.fields
        elif key.reach is write_plain:
            assert key.fields[0].kind in ("int", "float", "bool", "str"), key.name
            assert key.value is not None or key.fields[0].kind == "str", key.name


@pytest.mark.parametrize("key", PLAIN, ids=lambda k: k.name)
def test_a_plain_keys_check_follows_its_record(key: TrainKey) -> None:
    check, arg = SETTINGS[key.name].check, key.value
    assert arg is not None
    wrong = problem_code(check(key.name, "text" if arg.type != "str" else 3))
    assert wrong in ("TL0402", "TL0407")
    if arg.type == "bool":
        assert check(key.name, True) is None and problem_code(check(key.name, 1)) == "TL0402"
    elif arg.choices:
        assert all(check(key.name, c) is None for c in arg.choices)
        assert problem_code(check(key.name, arg.choices[0] + "x")) == "TL0407"
    elif arg.type == "int":
        assert arg.low is not None and not arg.open_low
        low = int(arg.low)
        assert check(key.name, low) is None
        assert problem_code(check(key.name, low - 1)) == "TL0403"
        assert problem_code(check(key.name, low + 0.5)) == "TL0402"
    elif arg.type == "float":
        assert arg.low is not None
        assert problem_code(check(key.name, arg.low)) == "TL0403"
        if arg.high is not None:
            assert problem_code(check(key.name, arg.high)) == "TL0403"
    else:
        raise AssertionError(f"{key.name}: a plain {arg.type} this test does not cover")


def test_ema_is_a_decay_below_one() -> None:
    check = SETTINGS["ema"].check
    assert check("ema", 0.999) is None
    assert [problem_code(check("ema", v)) for v in (0.0, 1.0, "x")] == [
        "TL0403",
        "TL0403",
        "TL0402",
    ]


def test_a_switch_takes_true_false_and_its_strings() -> None:
    check = SETTINGS["compile"].check
    assert all(check("compile", v) is None for v in (True, False, "max-autotune"))
    assert problem_code(check("compile", "fast")) == "TL0407"
    assert KEYS["distributed"].describe() == '`true`, `false`, "ddp" or "fsdp"'


def test_grad_clip_is_off_with_false() -> None:
    check = SETTINGS["grad_clip"].check
    assert check("grad_clip", False) is None and check("grad_clip", 1.0) is None
    assert problem_code(check("grad_clip", 0)) == "TL0403"
    assert problem_code(check("grad_clip", True)) == "TL0402"
    assert KEYS["grad_clip"].describe() == "float > 0, or `false`"


def problem_code(problem: object) -> str | None:
    return getattr(problem, "code", None)


def test_a_new_key_is_refused_by_a_block_of_steps_until_its_record_takes_it() -> None:
    """A key the steps lowering does not read is TL0431 there, never silently dropped."""
    from tensorloom.catalogue.args import Arg
    from tensorloom.passes.support.objectives import NOT_WITH_STEPS, PER_OPTIMIZER, STEP_EXCLUSIVE

    assert TrainKey("new_key", "a new key", Arg("new_key", "bool")).steps == "not_yet"
    assert STEP_EXCLUSIVE == ("optimizer", "loss", "objective")
    assert PER_OPTIMIZER == ("lr_schedule", "grad_clip")
    assert {"grad_accum", "accumulate_steps", "log_every"} <= set(NOT_WITH_STEPS)
    assert "epochs" not in NOT_WITH_STEPS and "seed" not in NOT_WITH_STEPS
    assert "metrics" not in NOT_WITH_STEPS  # `fn`s of the models and the batch
