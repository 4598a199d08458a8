"""Print an AST as an indented tree (`tlc ast`) or as JSON (`tlc ast --json`).

    Module path=net.tl language=tl <1:1>
      LetStmt name=net <1:1>
        value: Call <1:11>
          func: Name id=Classifier <1:11>

Each line is a node kind, its scalar fields as `key=value` and its `<line:col>`;
child nodes follow one level deeper, prefixed by the field that holds them.
Fields that are absent (None or an empty list) are left out.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from tensorloom.frontend import ast
from tensorloom.source import Span

_Scalar = str | int | float | bool


def dump(node: ast.Node) -> str:
    """The tree under `node`, one node per line, ending in a newline."""
    lines: list[str] = []
    _dump_node(node, 0, "", lines)
    return "\n".join(lines) + "\n"


def _dump_node(node: ast.Node, depth: int, prefix: str, lines: list[str]) -> None:
    scalars = [
        f"{name}={_scalar(node, name, value)}"
        for name, value in _fields(node)
        if isinstance(value, _Scalar)
    ]
    where = f"<{node.span.line}:{node.span.col}>"
    lines.append("  " * depth + prefix + " ".join([type(node).__name__, *scalars, where]))
    for name, value in _fields(node):
        _dump_child(f"{name}: ", value, depth + 1, lines)


def _dump_child(prefix: str, value: object, depth: int, lines: list[str]) -> None:
    """A field's value; `prefix` is `name: ` for a field and `- ` for a list item."""
    if isinstance(value, ast.Node):
        _dump_node(value, depth, prefix, lines)
    elif isinstance(value, tuple):
        _dump_branch(value, depth, lines)  # type: ignore[arg-type]
    elif isinstance(value, list) and value and not isinstance(value[0], _Scalar):
        lines.append("  " * depth + prefix.rstrip())
        for item in value:  # type: ignore[union-attr]
            _dump_child("- ", item, depth + 1, lines)


def _dump_branch(branch: tuple[ast.Expr, list[ast.Stmt]], depth: int, lines: list[str]) -> None:
    """One `(condition, body)` pair of an IfStmt."""
    condition, body = branch
    lines.append("  " * depth + "- branch:")
    _dump_node(condition, depth + 1, "condition: ", lines)
    _dump_child("body: ", body, depth + 1, lines)


def _fields(node: ast.Node) -> list[tuple[str, object]]:
    """(name, value) of every field worth showing: no spans, nothing absent."""
    shown: list[tuple[str, object]] = []
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Span) or value is None or value == []:
            continue
        if isinstance(node, ast.AssignStmt) and f.name == "operator" and value == "=":
            continue  # a plain assignment; `operator='+='` shows an augmented one
        shown.append((f.name, value))
    return shown


def _scalar(node: ast.Node, name: str, value: _Scalar) -> str:
    blank = isinstance(value, str) and not value.strip()
    if isinstance(node, ast.StrLit) or name in ("op", "operator") or blank:
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_json(node: ast.Node) -> dict[str, Any]:
    """The tree as plain data: `kind`, `span`, then every field by name."""
    data: dict[str, Any] = {"kind": type(node).__name__}
    for f in fields(node):
        data[f.name] = _json_value(getattr(node, f.name))
    return data


def _json_value(value: object) -> Any:
    if isinstance(value, ast.Node):
        return to_json(value)
    if isinstance(value, Span):
        return {
            "line": value.line,
            "column": value.col,
            "end_line": value.end_line,
            "end_column": value.end_col,
        }
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]  # type: ignore[union-attr]
    return value
