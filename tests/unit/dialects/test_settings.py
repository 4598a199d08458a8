"""catalogue/settings.py: every train-block key is one record, and check-train's check of
each plain key follows its record's type and range."""

from __future__ import annotations

import pytest

from tensorloom.catalogue.settings import SETTING_RECORDS, SETTING_SPECS, SettingSpec
from tensorloom.passes.check_train import SETTINGS

PLAIN = [s for s in SETTING_SPECS if s.kind == "value"]


def test_check_train_accepts_exactly_the_records() -> None:
    assert list(SETTINGS) == [s.name for s in SETTING_SPECS]
    assert all(SETTINGS[s.name].doc == s.summary for s in SETTING_SPECS)
    assert len(SETTING_RECORDS) == len(SETTING_SPECS)  # no key twice
    for spec in SETTING_SPECS:
        assert (spec.value is None) == (spec.kind != "value"), spec.name
        assert spec.older_name_of is None or spec.older_name_of in SETTING_RECORDS


@pytest.mark.parametrize("spec", PLAIN, ids=lambda s: s.name)
def test_a_plain_keys_check_follows_its_record(spec: SettingSpec) -> None:
    check, arg = SETTINGS[spec.name].check, spec.value
    assert arg is not None
    wrong = problem_code(check(spec.name, "text" if arg.type != "str" else 3))
    assert wrong in ("TL0402", "TL0407")
    if arg.type == "bool":
        assert check(spec.name, True) is None and problem_code(check(spec.name, 1)) == "TL0402"
    elif arg.choices:
        assert all(check(spec.name, c) is None for c in arg.choices)
        assert problem_code(check(spec.name, arg.choices[0] + "x")) == "TL0407"
    elif arg.type == "int":
        assert arg.low is not None and not arg.open_low
        low = int(arg.low)
        assert check(spec.name, low) is None
        assert problem_code(check(spec.name, low - 1)) == "TL0403"
        assert problem_code(check(spec.name, low + 0.5)) == "TL0402"
    else:
        raise AssertionError(f"{spec.name}: a plain {arg.type} this test does not cover")


def test_ema_is_a_decay_below_one() -> None:
    check = SETTINGS["ema"].check
    assert check("ema", 0.999) is None
    assert [problem_code(check("ema", v)) for v in (0.0, 1.0, "x")] == [
        "TL0403",
        "TL0403",
        "TL0402",
    ]


def problem_code(problem: object) -> str | None:
    return getattr(problem, "code", None)
