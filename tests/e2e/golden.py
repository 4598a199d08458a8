"""The golden emitted scripts: what `tlc compile` writes for each example, kept in the tree.

    python tests/e2e/golden.py            # (make golden) rewrite tests/e2e/reference/
    python tests/e2e/golden.py --check    # exit 1 if any differs, naming it

`reference/<example>.py` is the single file (`tlc compile --single-file`);
`reference/program/<example>.py` is the program file `tlc compile -o` writes, and beside it
the runtime module it imports (`tensorloom_rt_<version>_<hash>.py`, one per distinct runtime).

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


PROGRAMS = REFERENCE / "program"


def program_files(example: Path) -> dict[Path, str]:
    """The files `tlc compile EXAMPLE -o program/<example>.py` writes: path -> text."""
    from tensorloom.diagnostics.ir import reporting
    from tensorloom.pipeline import compile_file, python_program

    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        result = compile_file(example)
        assert result.module is not None and result.ok, f"{example} does not compile"
        with reporting(result.sink):
            printed = python_program(result.module, str(example))
    finally:
        os.chdir(cwd)
    files = {PROGRAMS / f"{example.stem}.py": printed.program}
    if printed.runtime is not None:
        files[PROGRAMS / printed.runtime.file_name] = printed.runtime.text
    return files


Counts = tuple[int, int, int]
"""An example's lines: the single file, the program file, its runtime module."""


def counts_of(single: str, files: dict[Path, str]) -> Counts:
    texts = list(files.values())
    runtime = texts[1].count("\n") if len(texts) > 1 else 0
    return single.count("\n"), texts[0].count("\n"), runtime


def line_table(counts: dict[Path, Counts]) -> str:
    """The docs' table of each example's emitted line counts."""
    rows = [f"| `{example}` | {p:,} | {r:,} | {s:,} |" for example, (s, p, r) in counts.items()]
    header = "| example | program file | runtime module | `--single-file` |"
    return "\n".join([header, "|---|---:|---:|---:|", *rows])


def with_table(doc: str, table: str) -> str:
    begin, end = doc.index(TABLE_BEGIN) + len(TABLE_BEGIN), doc.index(TABLE_END)
    return doc[:begin] + "\n" + table + "\n" + doc[end:]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    counts: dict[Path, Counts] = {}
    wanted: dict[Path, str] = {}
    for example in examples():
        text, files = emitted(example), program_files(example)
        counts[example] = counts_of(text, files)
        wanted |= {golden_path(example): text, **files}
    PROGRAMS.mkdir(exist_ok=True)
    for old in PROGRAMS.glob("*.py"):
        if old not in wanted:
            stale.append(str(old.relative_to(ROOT))) if check else old.unlink()
    for target, text in wanted.items():
        if check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(str(target.relative_to(ROOT)))
            continue
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)} ({text.count(chr(10))} lines)")
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
