"""tools/dataclass_code.py: dataclasses' methods from a kept table behave as compiled anew."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tensorloom.tools import dataclass_code

# A child process defines dataclasses after install() and prints what they do.
CHILD = textwrap.dedent(
    """
    import sys
    from tensorloom.tools import dataclass_code
    table = dataclass_code.install(sys.argv[1])
    from dataclasses import dataclass, field

    @dataclass(slots=True, frozen=True)
    class Point:
        x: int
        y: int = 2
        tags: tuple[str, ...] = ()

    @dataclass(order=True)
    class Box:
        lo: int
        items: list[int] = field(default_factory=list)

    p = Point(1)
    print(p, p == Point(1, 2), hash(p) == hash(Point(1, 2)), Box(1) < Box(2), Box(3).items)
    try:
        p.x = 5
    except Exception as error:
        print(type(error).__name__)
    print("compiled", table.compiled if table else None)
    """
)


def _run(folder: Path, **env: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder)],
        capture_output=True, text=True, check=True, env={**os.environ, **env},
    )  # fmt: skip
    return done.stdout.splitlines()


def test_second_run_compiles_nothing_and_behaves_the_same(tmp_path: Path) -> None:
    first = _run(tmp_path)
    table = Path(dataclass_code.table_path(str(tmp_path)))
    assert table.is_file()
    second = _run(tmp_path)
    expected = "Point(x=1, y=2, tags=()) True True True []"
    assert first[:2] == second[:2] == [expected, "FrozenInstanceError"]
    assert int(first[2].split()[1]) > 0  # the first run compiled the methods ...
    assert second[2] == "compiled 0"  # ... the second found every one in the table
    uncached = _run(tmp_path, TENSORLOOM_NO_DATACLASS_CACHE="1")
    assert uncached == [expected, "FrozenInstanceError", "compiled None"]


def test_an_unreadable_table_is_replaced(tmp_path: Path) -> None:
    table = Path(dataclass_code.table_path(str(tmp_path)))
    table.write_bytes(b"not marshal data \x00\xff")
    lines = _run(tmp_path)
    assert lines[0].startswith("Point(x=1")
    assert int(lines[2].split()[1]) > 0
    assert _run(tmp_path)[2] == "compiled 0"


def test_a_cache_folder_that_cannot_be_made_costs_only_the_table(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    folder = tmp_path / "a-file" / "cache"  # makedirs fails: not a directory
    assert _run(folder)[0].startswith("Point(x=1")
    assert not folder.exists()
