"""TensorLoom dialects, registered by name and imported only when a tool needs them.

    for name, load in get_all_dialects().items():
        ctx.register_dialect(name, load)   # imported on first use
"""  # fmt: skip

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect

DialectFactory = Callable[[], Dialect]

# name -> (module, attribute holding the Dialect)
_DIALECTS: dict[str, tuple[str, str]] = {
    "builtin": ("xdsl.dialects.builtin", "Builtin"),
    "nml": ("tensorloom.dialects.nml", "Nml"),
    "train": ("tensorloom.dialects.train", "Train"),
    "kernel": ("tensorloom.dialects.kernel", "Kernel"),
    "py": ("tensorloom.dialects.py", "Py"),
    "torch": ("tensorloom.dialects.torch", "Torch"),
    "triton": ("tensorloom.dialects.triton", "Triton"),
}


def _loader(module: str, attr: str) -> DialectFactory:
    def load() -> Dialect:
        dialect = getattr(importlib.import_module(module), attr)
        assert isinstance(dialect, Dialect)
        return dialect

    return load


def get_all_dialects() -> dict[str, DialectFactory]:
    """Every dialect TensorLoom's IR may contain: name -> a function that imports it."""
    return {name: _loader(module, attr) for name, (module, attr) in _DIALECTS.items()}
