"""PyBuilder.value: a plan's settings, as Python values, through the printer."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from tensorloom.backends.python_printer import print_python
from tensorloom.dialects import py
from tensorloom.passes.support.py_builder import PyBuilder, Value


def test_plan_values_print_as_python_writes_them() -> None:
    # floats as repr() writes them, an infinity as `float("inf")` (as the settings' text
    # was), lists, tuples and dicts as displays
    b = PyBuilder()
    setting: dict[str, Value] = {
        "lr": 0.001, "min_delta": -0.5, "clip": float("inf"), "betas": (0.9, 0.999),
        "shape": [16, 256], "flatten": True, "metric": "val_loss", "n": None,
    }  # fmt: skip
    b.assign("SETTING", b.value(setting))
    source = print_python(ModuleOp([py.ModuleOp(b.ops)]))
    assert '"lr": 0.001,\n    "min_delta": -0.5,\n    "clip": float("inf"),\n' in source
    scope: dict[str, object] = {}
    exec(compile(source, "<printed>", "exec"), scope)
    assert scope["SETTING"] == setting
