"""The golden emitted scripts: what `tlc compile` writes for each example, kept in the tree.

    python tests/e2e/golden.py            # (make golden) rewrite tests/e2e/reference/*.py
    python tests/e2e/golden.py --check    # exit 1 if any differs, naming it

tests/e2e/test_golden_scripts.py compares them exactly, so a change to the emitted code
shows up in review as a diff of these files; the e2e tests run them as scripts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "e2e" / "reference"
DOC = ROOT / "docs" / "emitted-script.md"
TABLE_BEGIN = "<!-- line counts: make golden -->"
TABLE_END = "<!-- end of line counts -->"


def examples() -> list[Path]:
    """Every example program, as the path a user would type from the repository root."""
    found = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "examples").glob("*.nml"))
    return [p.relative_to(ROOT) for p in found]


def golden_path(example: Path) -> Path:
    return REFERENCE / f"{example.stem}.py"


def emitted(example: Path) -> str:
    """The script `tlc compile EXAMPLE` writes, run from the repository root."""
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.pipeline import compile_file, python_source

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        result = compile_file(example)
        assert result.module is not None and result.ok, f"{example} does not compile"
        with reporting(result.sink):
            return python_source(result.module, str(example))
    finally:
        os.chdir(cwd)


def line_table(counts: dict[Path, int]) -> str:
    """The docs' table of each example's emitted line count."""
    rows = [f"| `{example}` | {count:,} |" for example, count in counts.items()]
    return "\n".join(["| example | lines emitted |", "|---|---:|", *rows])


def with_table(doc: str, table: str) -> str:
    begin, end = doc.index(TABLE_BEGIN) + len(TABLE_BEGIN), doc.index(TABLE_END)
    return doc[:begin] + "\n" + table + "\n" + doc[end:]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    counts: dict[Path, int] = {}
    for example in examples():
        text, target = emitted(example), golden_path(example)
        counts[example] = text.count("\n")
        if check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(str(target.relative_to(ROOT)))
            continue
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)} ({counts[example]} lines)")
    doc = DOC.read_text(encoding="utf-8")
    if check and with_table(doc, line_table(counts)) != doc:
        stale.append(str(DOC.relative_to(ROOT)))
    elif not check:
        DOC.write_text(with_table(doc, line_table(counts)), encoding="utf-8")
    for name in stale:
        print(f"{name} is out of date: run `make golden`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
