"""The one escaper for text from the user's program that lands in the emitted Python.

    py_string('a"b\\n')           ->  "a\\"b\\n"       (a string literal)
    py_comment("x.tl\\nrun()")    ->  x.tl\\nrun()     (one line, safe after `#`)
    py_docstring('say "hi"')     ->  \"\"\"say "hi\\"\"\"\"

Every string the printer and the lowerings write into a script goes through one
of these: dataset names, `target=`, `data_root=`, file names in header comments,
docstrings. A quote, a backslash, a newline, a NUL or a character that some
tool counts as a line break (U+2028, form feed, `\\x0b`) never ends the literal
or the comment early, so the program's text cannot become code in the script.
"""

from __future__ import annotations


def py_string(text: str) -> str:
    """A double-quoted Python string literal whose value is `text`."""
    body = "".join(_escape_char(ch, '"') for ch in text)
    return f'"{body}"'


def py_comment(text: str) -> str:
    """`text` as it may stand after `#`: one line, with line breaks and controls escaped."""
    return "".join(ch if ch.isprintable() else _escaped(ch) for ch in text)


def py_docstring(text: str) -> str:
    """A triple-quoted docstring whose value is `text` (newlines kept as lines)."""
    body = "".join(ch if ch == "\n" else _escape_char(ch, "") for ch in text)
    body = body.replace('"""', '\\"""')
    if body.endswith('"'):
        body = body[:-1] + '\\"'
    return f'"""{body}"""'


def _escape_char(ch: str, quote: str) -> str:
    if ch == "\\":
        return "\\\\"
    if ch == quote:
        return "\\" + quote
    if not ch.isprintable():
        return _escaped(ch)
    return ch


def _escaped(ch: str) -> str:
    """A non-printable character as its Python escape (`\\n`, `\\x0c`, `\\u2028`)."""
    return repr(ch)[1:-1]
