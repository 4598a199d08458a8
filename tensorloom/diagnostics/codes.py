"""The diagnostic code registry: look a code up, render it for `tlc explain`, write the docs page.

    $ tlc explain TL0201
    $ python -m tensorloom.diagnostics.codes > docs/diagnostics.md

The entries themselves live in `codes_data.py`, the one record of every code;
docs/diagnostics.md is this module's `markdown()` of them, and a test
(tests/unit/diagnostics/test_codes.py) checks that the page is in step and that
every code the compiler reports has an entry.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Code:
    """One diagnostic code: its title, what it means, and an example of its output."""

    code: str
    title: str
    explanation: str
    example: str
    more: str = ""  # markdown after the example


@dataclass(frozen=True, slots=True)
class Section:
    """A heading of docs/diagnostics.md: an introduction, then codes and subsections."""

    title: str
    intro: str
    entries: tuple[Code | Section, ...] = field(default_factory=tuple)


def all_codes() -> Iterator[Code]:
    """Every registered code, in the order of the docs page."""
    from tensorloom.diagnostics.codes_data import SECTIONS

    for section in SECTIONS:
        yield from _codes_in(section)


def _codes_in(section: Section) -> Iterator[Code]:
    for entry in section.entries:
        if isinstance(entry, Code):
            yield entry
        else:
            yield from _codes_in(entry)


def lookup(code: str) -> Code | None:
    """The entry for `code` (any case: `tl0201` finds TL0201), or None."""
    wanted = code.strip().upper()
    return next((c for c in all_codes() if c.code == wanted), None)


def explain(entry: Code) -> str:
    """What `tlc explain` prints: the title, the explanation and the example, as plain text."""
    parts = [f"{entry.code}: {entry.title}\n"]
    if entry.explanation:
        parts.append(entry.explanation)
    parts.append("Example:\n\n" + _indent(entry.example))
    if entry.more:
        parts.append(_plain(entry.more))
    return "\n".join(parts)


def _indent(text: str) -> str:
    return "".join(f"    {line}" if line.strip() else line for line in text.splitlines(True))


def _plain(markdown: str) -> str:
    """Markdown with its ```text fences turned into indented blocks."""
    lines: list[str] = []
    in_block = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        lines.append(f"    {line}" if in_block and line.strip() else line)
    return "\n".join(lines) + "\n"


def markdown() -> str:
    """docs/diagnostics.md, generated from the registry."""
    from tensorloom.diagnostics.codes_data import PREAMBLE, SECTIONS, TITLE

    blocks = [f"# {TITLE}\n", PREAMBLE]
    for section in SECTIONS:
        blocks.extend(_section_blocks(section, 2))
    return "\n".join(blocks)


def _section_blocks(section: Section, level: int) -> list[str]:
    blocks = [f"{'#' * level} {section.title}\n"]
    if section.intro:
        blocks.append(section.intro)
    for entry in section.entries:
        if isinstance(entry, Section):
            blocks.extend(_section_blocks(entry, level + 1))
        else:
            blocks.extend(_code_blocks(entry, level + 1))
    return blocks


def _code_blocks(entry: Code, level: int) -> list[str]:
    blocks = [f"{'#' * level} {entry.code}: {entry.title}\n"]
    if entry.explanation:
        blocks.append(entry.explanation)
    blocks.append(f"```text\n{entry.example}```\n")
    if entry.more:
        blocks.append(entry.more)
    return blocks


if __name__ == "__main__":
    # Through the package: run as __main__, this file's classes are not codes_data's.
    from tensorloom.diagnostics import codes

    sys.stdout.write(codes.markdown())
