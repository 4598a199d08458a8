"""The compiled methods of dataclasses, kept between runs: two fifths of a cold `tlc check`.

A `@dataclass` writes its `__init__`, `__repr__` and `__eq__` as Python source and
compiles each with `exec` when its module is imported. A check imports about 310 of
them (xDSL's attribute and IRDL classes, TensorLoom's records and syntax nodes):
some 1,400 calls of `compile`: without this module a cold check of the README's
transformer took 436 ms of CPU, with it 267 ms (CPython 3.11; `bench/startup.py`,
figures in bench/RESULTS.md).

The same source text always compiles to the same code, so `install()` gives the
`dataclasses` module an `exec` that looks the text up in a table first, the way the
interpreter keeps a module's bytecode in `__pycache__`. The table lives in a marshal
file in TensorLoom's cache folder (see tools/check_cache.py), one per bytecode format
(the interpreter's tag and .pyc magic number), written again, atomically (with
check_cache's `write_atomically`), only
when a run compiled text it did not hold. An unreadable file is ignored and
replaced. Nothing else changes: the code is executed with the globals and locals
`dataclasses` passes, as before.
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys
from types import CodeType
from typing import Any

from tensorloom.tools.check_cache import write_atomically

# Past this size the file is rebuilt from one run's texts (old versions' texts pile up).
MAX_BYTES = 8 << 20


class CodeTable:
    """Source text -> the code `compile(text, "<string>", "exec")` gives for it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.code: dict[str, CodeType] = _read(path)
        self.used: dict[str, CodeType] = {}
        self.compiled = 0  # texts this run compiled (not found in the table)

    def exec(self, source: Any, globals: dict[str, Any] | None = None, locals: Any = None) -> None:
        """`exec`, with a string's compiled code looked up first."""
        if isinstance(source, str):
            code = self.code.get(source)
            if code is None:
                code = compile(source, "<string>", "exec")
                self.code[source] = code
                self.compiled += 1
            self.used[source] = code
            source = code
        builtins.exec(source, globals, locals)

    def save(self) -> None:
        """Write the table if this run added to it; never fail the run over it."""
        if not self.compiled:
            return
        data = marshal.dumps(self.code)
        if len(data) > MAX_BYTES:
            data = marshal.dumps(self.used)
        write_atomically(self.path, data)  # unwritable: the next run compiles again


def _read(path: str) -> dict[str, CodeType]:
    try:
        with open(path, "rb") as f:
            table = marshal.loads(f.read())  # one read: `marshal.load(f)` reads per object
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, CodeType)}


def table_path(cache_folder: str) -> str:
    """One table per bytecode format: the interpreter's tag and its .pyc magic number."""
    from importlib.util import MAGIC_NUMBER

    tag = f"{sys.implementation.cache_tag}-{MAGIC_NUMBER.hex()}"
    return os.path.join(cache_folder, f"dataclass-code-{tag}.marshal")


def install(cache_folder: str) -> CodeTable | None:
    """Route `dataclasses`' `exec` through a table kept in `cache_folder`.

    Call it before the modules that define dataclasses are imported. Does nothing
    (returns None) where `dataclasses` does not compile through `exec`, or when
    `TENSORLOOM_NO_DATACLASS_CACHE` is set.
    """
    import dataclasses

    if os.environ.get("TENSORLOOM_NO_DATACLASS_CACHE"):
        return None
    # CPython 3.11-3.12 compile in `_create_fn`, 3.13 in `_FuncBuilder.add_fns_to_class`.
    compiles = getattr(dataclasses, "_create_fn", None) or getattr(
        getattr(dataclasses, "_FuncBuilder", None), "add_fns_to_class", None
    )
    if compiles is None or "exec" not in compiles.__code__.co_names:
        return None
    table = CodeTable(table_path(cache_folder))
    dataclasses.exec = table.exec  # type: ignore[attr-defined]  # the module's global
    atexit.register(table.save)
    return table
