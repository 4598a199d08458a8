"""Lexer: token kinds and values, layout tokens, and every lexical diagnostic."""

from __future__ import annotations

import pytest

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.frontend.lexer import tokenize
from tensorloom.frontend.tokens import Token, TokenKind

K = TokenKind


def lex(text: str) -> tuple[list[Token], DiagnosticSink]:
    sink = DiagnosticSink()
    return tokenize(text, "t.tl", sink), sink


def kinds(text: str) -> list[TokenKind]:
    tokens, sink = lex(text)
    assert not sink.diagnostics, [d.message for d in sink]
    return [t.kind for t in tokens]


def only_error(text: str) -> tuple[str, int, int]:
    _, sink = lex(text)
    assert len(sink.diagnostics) == 1, [d.message for d in sink]
    d = sink.diagnostics[0]
    return d.code, d.primary.span.line, d.primary.span.col


def test_simple_statement() -> None:
    assert kinds("let x = 1\n") == [K.LET, K.NAME, K.EQ, K.INT, K.NEWLINE, K.EOF]


def test_operators_longest_match() -> None:
    text = "a ** b |> c -> d == e != f <= g >= h < i > j @ k % l / m ... n"
    got = [t for t in kinds(text) if t not in (K.NAME, K.NEWLINE, K.EOF)]
    assert got == [
        K.DOUBLE_STAR,
        K.PIPE,
        K.ARROW,
        K.EQ_EQ,
        K.NOT_EQ,
        K.LT_EQ,
        K.GT_EQ,
        K.LT,
        K.GT,
        K.AT,
        K.PERCENT,
        K.SLASH,
        K.ELLIPSIS,
    ]


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("42", K.INT, 42),
        ("1_000", K.INT, 1000),
        ("0.1", K.FLOAT, 0.1),
        ("3.", K.FLOAT, 3.0),
        ("1e-4", K.FLOAT, 1e-4),
        ("2.5E3", K.FLOAT, 2500.0),
        (".5", K.FLOAT, 0.5),
    ],
)
def test_numbers(text: str, kind: TokenKind, value: float) -> None:
    tokens, sink = lex(text)
    assert not sink.diagnostics
    assert (tokens[0].kind, tokens[0].value) == (kind, value)


def test_dot_after_a_name_is_attribute_access() -> None:
    assert kinds("x.fc1")[:3] == [K.NAME, K.DOT, K.NAME]


def test_string_escapes() -> None:
    tokens, _ = lex(r'"a\n\t\"b\\"' + " 'c'")
    assert [t.value for t in tokens[:2]] == ['a\n\t"b\\', "c"]


def test_keywords_and_contextual_words() -> None:
    tokens, _ = lex("let model train on true false none and or not")
    assert [t.kind for t in tokens[:10]] == [
        K.LET,
        K.NAME,
        K.NAME,
        K.NAME,
        K.TRUE,
        K.FALSE,
        K.NONE,
        K.AND,
        K.OR,
        K.NOT,
    ]


def test_comments_are_skipped() -> None:
    text = "// top\nlet x = 1 // trailing\n/* block\n   over lines */\nlet y = /* inline */ 2\n"
    assert kinds(text) == [
        K.LET,
        K.NAME,
        K.EQ,
        K.INT,
        K.NEWLINE,
        K.LET,
        K.NAME,
        K.EQ,
        K.INT,
        K.NEWLINE,
        K.EOF,
    ]


def test_indent_and_dedent() -> None:
    text = "model M:\n    layer a = A()\n\n    layer b = B()\nlet x = 1\n"
    got = kinds(text)
    assert got.count(K.INDENT) == 1
    assert got.count(K.DEDENT) == 1
    assert got.index(K.DEDENT) == got.index(K.LET) - 1


def test_dedents_are_closed_at_end_of_file() -> None:
    got = kinds("if a:\n    if b:\n        c")
    assert got[-4:] == [K.NEWLINE, K.DEDENT, K.DEDENT, K.EOF]


def test_newlines_inside_brackets_are_ignored() -> None:
    got = kinds("f(1,\n  2,\n      3)\nx\n")
    assert got.count(K.NEWLINE) == 2
    assert K.INDENT not in got


def test_newline_token_sits_right_after_the_last_token() -> None:
    tokens, _ = lex("model Net   // comment\n")
    newline = tokens[2]
    assert newline.kind is K.NEWLINE
    assert (newline.span.line, newline.span.col) == (1, 10)


def test_empty_and_comment_only_files() -> None:
    assert kinds("") == [K.EOF]
    assert kinds("// nothing\n/* at all */\n\n") == [K.EOF]


def test_token_positions_are_one_based() -> None:
    tokens, _ = lex("let  x\n")
    assert [(t.span.line, t.span.col, t.span.end_col) for t in tokens[:2]] == [(1, 1, 4), (1, 6, 7)]


def test_crlf_line_endings() -> None:
    assert kinds("let x = 1\r\nlet y = 2\r\n").count(K.NEWLINE) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('let s = "abc\n', ("TL0001", 1, 9)),
        ("let x = 1\n/* never closed\n\n", ("TL0002", 2, 1)),
        ("model M:\n    layer a = A()\n\tlayer b = B()\n", ("TL0003", 3, 1)),
        ("if a:\n    b\n  c\n", ("TL0004", 3, 3)),
        ("let x = 3 $ 4\n", ("TL0005", 1, 11)),
        ("let x = 12abc\n", ("TL0006", 1, 9)),
        ('let s = "a\\q"\n', ("TL0007", 1, 11)),
    ],
)
def test_lexical_errors(text: str, expected: tuple[str, int, int]) -> None:
    assert only_error(text) == expected


def test_unknown_character_becomes_an_error_token() -> None:
    tokens, _ = lex("a ? b")
    assert [t.kind for t in tokens[:3]] == [K.NAME, K.ERROR, K.NAME]


def test_hash_comment_gets_a_hint() -> None:
    _, sink = lex("# not a comment\n")
    assert sink.diagnostics[0].help == "comments start with `//`"


def test_statement_keyword_ends_an_unclosed_bracket() -> None:
    tokens, _ = lex("let x = f(1,\nlet y = 2\n")
    got = [t.kind for t in tokens]
    assert got.count(K.NEWLINE) == 2
    assert got[got.index(K.NEWLINE) + 1] is K.LET


@pytest.mark.parametrize("blank", ["\x0c    ", "  \x0c  "])
def test_a_form_feed_in_indentation_is_named_not_called_a_tab(blank: str) -> None:
    _, sink = lex(
        f"model M:\n    layer a = Linear(8, 8)\n{blank}fn forward(self, x: Tensor) -> Tensor:\n"
    )
    messages = [(d.code, d.primary.span.line, d.message) for d in sink]
    name = f"U+{ord(blank.strip(' ')):04X}"
    assert messages == [
        ("TL0003", 3, f"indentation holds {name}, which is neither a space nor a tab")
    ]


@pytest.mark.parametrize("ch", ["\x01", "\x0b"])
def test_an_unprintable_character_is_shown_by_its_code_point(ch: str) -> None:
    _, sink = lex(f"let x = 1 {ch} 2\n")
    assert [d.message for d in sink] == [f"unknown character U+{ord(ch):04X}"]
