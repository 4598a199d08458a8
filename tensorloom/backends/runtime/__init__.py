"""The Python that emitted training scripts carry, kept here as real, tested modules.

Each module (`data`, `tokens`, `loader`, `checkpoint`, `metrics`, `distributed`, `amp`,
`graphs`, `attention`, `recipe`, `serve`, `sharded`) imports only the standard library
and torch at its top, never another runtime module, and no two define the same top-level
name, so the backend can paste any subset into one script. `inline_source(["data", "loader"])`
does that pasting: one merged import block, then each module's body under a banner
naming its file. The script it goes into must start with
`from __future__ import annotations`, as every module does.

This package itself never imports torch: the compiler reads these files as text.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

RUNTIME_DIR = Path(__file__).resolve().parent
# In dependency order of the names the modules' users need; all are independent.
MODULES = (
    "distributed", "amp", "data", "tokens", "loader", "checkpoint", "metrics", "graphs",
    "attention", "recipe", "serve", "sharded",
)  # fmt: skip


def module_text(name: str) -> str:
    """The source text of one runtime module."""
    if name not in MODULES:
        raise KeyError(f"no runtime module `{name}`; there are {', '.join(MODULES)}")
    return (RUNTIME_DIR / f"{name}.py").read_text(encoding="utf-8")


def split_module(text: str) -> tuple[str, list[str], str]:
    """(docstring, import statements, body) of a runtime module."""
    docstring, imports, body = _split_module(text)
    return docstring, list(imports), body


@lru_cache(maxsize=64)  # a script pastes the same modules each compile
def _split_module(text: str) -> tuple[str, tuple[str, ...], str]:
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    docstring = ast.get_docstring(tree) or ""
    imports: list[str] = []
    body_start = len(lines)
    for node in tree.body:
        if _is_docstring(node):
            continue
        if not _is_import(node):
            first_line = _first_line(node) - 1
            body_start = first_line - len(_leading_comments(lines, first_line))
            break
        imports.append("".join(lines[node.lineno - 1 : node.end_lineno]).rstrip())
    return docstring, tuple(imports), "".join(lines[body_start:]).strip() + "\n"


def inline_source(names: Sequence[str]) -> str:
    """The named modules pasted into one block of Python: merged imports, then bodies."""
    parts = [split_module(module_text(name)) for name in names]
    imports: list[str] = []
    for _, module_imports, _ in parts:
        imports += [i for i in module_imports if i not in imports and "__future__" not in i]
    chunks = [_import_block(imports)]
    for name, (docstring, _, body) in zip(names, parts, strict=True):
        chunks.append(_banner(name, docstring) + body)
    return "\n\n".join(chunks)


def _import_block(imports: list[str]) -> str:
    """Standard library, then torch, then optional imports, each group sorted."""
    groups: list[list[str]] = [[], [], []]
    for statement in imports:
        groups[_import_group(statement)].append(statement)
    blocks = ["\n".join(sorted(group, key=_import_order)) for group in groups if group]
    return "\n\n".join(blocks) + "\n"


def _import_order(statement: str) -> tuple[bool, str]:
    return statement.startswith("from "), statement


def _import_group(statement: str) -> int:
    if statement.startswith("try:"):
        return 2
    return 1 if statement.split()[1].split(".")[0] == "torch" else 0


def _banner(name: str, docstring: str) -> str:
    comment = "\n".join(f"# {line}".rstrip() for line in docstring.splitlines())
    return f"# {'-' * 20} runtime: {name}.py {'-' * 20}\n{comment}\n\n"


def _first_line(node: ast.stmt) -> int:
    """A statement's first line, counting its decorators."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _is_import(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    # `try: from tqdm import tqdm / except ImportError: tqdm = None` counts as an import.
    return isinstance(node, ast.Try) and all(
        isinstance(stmt, ast.Import | ast.ImportFrom) for stmt in node.body
    )


def _leading_comments(lines: list[str], index: int) -> list[str]:
    """The comment lines directly above line `index` (0-based), which belong to it."""
    comments: list[str] = []
    while index > 0 and lines[index - 1].lstrip().startswith("#"):
        index -= 1
        comments.append(lines[index])
    return comments
