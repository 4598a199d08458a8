"""The hand-written lexer: source text to tokens, with Python-style layout.

    model Net:              NAME(model) NAME(Net) COLON NEWLINE
        layer fc = Linear(  INDENT NAME(layer) NAME(fc) EQ NAME(Linear) LPAREN
            4, 2)           INT(4) COMMA INT(2) RPAREN NEWLINE
                            DEDENT EOF

Indentation opens and closes blocks (INDENT/DEDENT); newlines inside brackets
are ignored; `//` line comments and `/* */` block comments are skipped. Errors
(TL00xx) go to the sink and lexing carries on, so the parser still sees a
token stream for the rest of the file.
"""

from __future__ import annotations

import keyword
import math
import re
import unicodedata

from tensorloom.catalogue.args import INT64_MAX
from tensorloom.diagnostics import Diagnostic, DiagnosticSink, Label
from tensorloom.frontend.tokens import CLOSING, KEYWORDS, OPENING, PUNCTUATION, Token, TokenKind
from tensorloom.source import Span

_NAME = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(
    r"[0-9][0-9_]*(?P<frac>\.[0-9_]*)?(?P<exp>[eE][+-]?[0-9]+)?|\.[0-9][0-9_]*([eE][+-]?[0-9]+)?"
)
_IDENT_CHAR = re.compile(r"\w")
# The common case in one match: blanks, then a name or an operator that cannot
# start a comment or a float. Everything else takes the slower path below.
_FAST = re.compile(
    r"[ \t\f]*(?:(?P<name>[^\W\d]\w*)"
    r"|(?P<punct>\.\.\.|\*\*|->|\|>|==|!=|<=|>=|[-+*/]=|[-+*%@=<>()\[\]{},:]|\.(?![0-9])|/(?![/*])))"
)
_PUNCT_KINDS = dict(PUNCTUATION)
_BRACKET_TEXTS = frozenset("()[]{}")  # str keys: hashing an Enum member runs Python code
_BLANK = re.compile(r"[ \t\f]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}
TAB_WIDTH = 4
# Python's keywords that are not TensorLoom's: as names they would break the script.
# `None`, `True` and `False` are values in kernels (`x[:, None]`, as Triton writes
# them); irgen rejects them where a name is declared (CONSTANT_NAMES).
CONSTANT_NAMES = frozenset({"None", "True", "False"})
PYTHON_KEYWORDS = frozenset(keyword.kwlist) - KEYWORDS.keys() - CONSTANT_NAMES
_INT_MAX_TEXT = str(INT64_MAX)

# What can only start a statement: seeing one first on a line inside brackets
# means a bracket was left open, so layout resumes there. Two names in a row
# (`model Net`) and `@word` never occur inside an expression.
_STATEMENT_START = re.compile(
    r"[ \t\f]*(?:(?:let|fn|def|return|import|if|elif|else|for)\b"
    r"|(?:model|train|layer)[ \t]+[^\W\d]|@[^\W\d])"
)
# Tokens after which `.5` would be an attribute access, not a float.
_OPERAND_ENDS = frozenset(
    {
        TokenKind.NAME,
        TokenKind.INT,
        TokenKind.FLOAT,
        TokenKind.STRING,
        TokenKind.RPAREN,
        TokenKind.RBRACKET,
        TokenKind.RBRACE,
    }
)


def normalize_name(text: str) -> str:
    """A name as Python reads it: NFKC-normalised, so the ligature U+FB01 is `fi`.

    Python applies NFKC to every identifier, so two TensorLoom names that differ
    only before it would become one name in the emitted script; normalising here
    makes them one name for the checker too.
    """
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def tokenize(text: str, path: str, sink: DiagnosticSink) -> list[Token]:
    """All tokens of `text`, ending in EOF; lexical errors go to `sink`."""
    return Lexer(text, path, sink).tokenize()


class Lexer:
    """One pass over the text; `tokenize()` returns the whole token list."""

    def __init__(self, text: str, path: str, sink: DiagnosticSink) -> None:
        self.text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.path = path
        self.sink = sink
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.tokens: list[Token] = []
        self.indents = [0]
        self.brackets: list[Token] = []
        self.indent_char: str | None = None

    # ------------------------------------------------------------ driver

    def tokenize(self) -> list[Token]:
        while self.pos < len(self.text):
            self.lex_line()
        self.finish()
        return self.tokens

    def lex_line(self) -> None:
        """One logical line: indentation, then tokens up to its NEWLINE."""
        indent = _BLANK.match(self.text, self.pos)
        assert indent is not None
        self.pos = indent.end()
        self.skip_trivia()
        if self.at_line_end():
            self.consume_newline()
            return
        self.apply_indent(indent.group(), indent.start())
        self.lex_tokens()

    def lex_tokens(self) -> None:
        while True:
            if self.lex_fast():
                continue
            self.skip_trivia()
            if self.pos >= len(self.text):
                return
            if self.text[self.pos] != "\n":
                self.lex_token()
                continue
            if not self.brackets:
                self.end_line()
                return
            self.consume_newline()
            if self.next_line_starts_statement():
                self.brackets.clear()
                self.emit_newline()
                return

    def finish(self) -> None:
        if self.tokens and self.tokens[-1].kind is not TokenKind.NEWLINE:
            self.emit_newline()
        eof = self.eof_span()
        while len(self.indents) > 1:
            self.pop_indent(eof)
        self.tokens.append(Token(TokenKind.EOF, "", eof))

    # ------------------------------------------------------------ layout

    def apply_indent(self, blank: str, start: int) -> None:
        width = self.indent_width(blank, start)
        col = len(blank) + 1
        span = Span(self.path, self.line, 1, self.line, col)
        if width > self.indents[-1]:
            self.indents.append(width)
            self.tokens.append(Token(TokenKind.INDENT, blank, span))
            return
        while width < self.indents[-1]:
            if width > self.indents[-2]:
                # Between two levels: keep the line in the inner block and let the
                # block take its width, so only this line is reported.
                self.report_bad_dedent(width)
                self.indents[-1] = width
                return
            self.pop_indent(self.here(1))

    def pop_indent(self, span: Span) -> None:
        self.indents.pop()
        self.tokens.append(Token(TokenKind.DEDENT, "", span))

    def indent_width(self, blank: str, start: int) -> int:
        odd = next((i for i, ch in enumerate(blank) if ch not in " \t"), None)
        if odd is not None:  # a form feed or vertical tab: neither a tab nor a space
            self.error(
                "TL0003",
                f"indentation holds U+{ord(blank[odd]):04X}, which is neither a space nor a tab",
                Span.point(self.path, self.line, odd + 1),
                "",
                help="indent with spaces only",
            )
            blank = blank.replace(blank[odd], "")
        if blank and self.indent_char is None:
            self.indent_char = blank[0]
        offending = next((i for i, ch in enumerate(blank) if ch != self.indent_char), None)
        if offending is not None:
            other = "tabs" if self.indent_char == "\t" else "spaces"
            self.error(
                "TL0003",
                "indentation mixes tabs and spaces",
                Span.point(self.path, self.line, offending + 1),
                "",
                help=f"this file indents with {other}; use {other} here too",
            )
        width = 0
        for ch in blank:
            width = width + TAB_WIDTH - width % TAB_WIDTH if ch == "\t" else width + 1
        return width

    def report_bad_dedent(self, width: int) -> None:
        levels = ", ".join(str(level) for level in self.indents)
        self.error(
            "TL0004",
            "unindent does not match any outer indentation level",
            self.here(1),
            f"this line is indented {width} columns",
            notes=[f"the enclosing blocks are indented {levels} columns"],
        )

    def end_line(self) -> None:
        self.emit_newline()
        self.consume_newline()

    def emit_newline(self) -> None:
        last = self.tokens[-1].span
        span = Span(self.path, last.end_line, last.end_col, last.end_line, last.end_col + 1)
        self.tokens.append(Token(TokenKind.NEWLINE, "", span))

    def consume_newline(self) -> None:
        if self.pos < len(self.text):
            self.pos += 1
            self.line += 1
            self.line_start = self.pos

    def next_line_starts_statement(self) -> bool:
        return _STATEMENT_START.match(self.text, self.pos) is not None

    def at_line_end(self) -> bool:
        return self.pos >= len(self.text) or self.text[self.pos] == "\n"

    # ------------------------------------------------------------ trivia

    def skip_trivia(self) -> None:
        """Skip blanks and comments, stopping at a newline or real text."""
        while True:
            self.pos = _BLANK.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.text.startswith("//", self.pos):
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            elif self.text.startswith("/*", self.pos):
                self.skip_block_comment()
            else:
                return

    def skip_block_comment(self) -> None:
        opening = self.here(2)
        end = self.text.find("*/", self.pos + 2)
        stop = len(self.text) if end < 0 else end + 2
        newlines = self.text.count("\n", self.pos, stop)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.pos, stop) + 1
        self.pos = stop
        if end < 0:
            self.error(
                "TL0002",
                "unterminated block comment",
                opening,
                "comment starts here",
                help="close it with `*/`",
            )

    # ------------------------------------------------------------ tokens

    def lex_fast(self) -> bool:
        match = _FAST.match(self.text, self.pos)
        if match is None:
            return False
        group = match.lastgroup or "punct"
        text = match[group]
        col = match.start(group) - self.line_start + 1
        if group == "name" and (not text.isascii() or text in PYTHON_KEYWORDS):
            self.pos = match.start(group)
            return False  # lex_name normalises and checks it
        span = Span(self.path, self.line, col, self.line, col + len(text))
        kind = KEYWORDS.get(text, TokenKind.NAME) if group == "name" else _PUNCT_KINDS[text]
        token = Token(kind, text, span)
        self.tokens.append(token)
        self.pos = match.end()
        if text in _BRACKET_TEXTS:
            self.track_bracket(token)
        return True

    def lex_token(self) -> None:
        ch = self.text[self.pos]
        if "0" <= ch <= "9" or (ch == "." and self.starts_float()):
            self.lex_number()
        elif _NAME.match(self.text, self.pos):
            self.lex_name()
        elif ch in "\"'":
            self.lex_string()
        elif not self.lex_punctuation():
            self.report_unknown_char(ch)

    def starts_float(self) -> bool:
        following = self.text[self.pos + 1 : self.pos + 2]
        previous = self.tokens[-1].kind if self.tokens else None
        return "0" <= following <= "9" and previous not in _OPERAND_ENDS

    def lex_name(self) -> None:
        match = _NAME.match(self.text, self.pos)
        assert match is not None
        text = match.group()
        name = normalize_name(text)
        if name in PYTHON_KEYWORDS:
            self.error(
                "TL0009",
                f"`{name}` is a Python keyword, so it cannot be a name",
                self.here(len(text)),
                "",
                help="the compiled script is Python: choose another name",
            )
        elif not name.isidentifier():
            bad, where = _bad_name_char(text)
            self.error(
                "TL0009",
                f"`{text}` is not a valid name: `{bad}` (U+{ord(bad):04X}) cannot {where}",
                self.here(len(text)),
                "",
                help="names are letters, digits and `_`, as in Python",
            )
        self.tokens.append(Token(KEYWORDS.get(name, TokenKind.NAME), name, self.here(len(text))))
        self.pos += len(text)

    def lex_number(self) -> None:
        match = _NUMBER.match(self.text, self.pos)
        assert match is not None
        text = match.group()
        tail = _IDENT_CHAR.match(self.text, match.end())
        if tail is not None:
            self.report_bad_number(match.end())
            return
        digits = text.replace("_", "")
        if match.group("frac") is None and match.group("exp") is None and text[0] != ".":
            self.add_int(text, digits)
        else:
            self.add_float(text, digits)

    def add_int(self, text: str, digits: str) -> None:
        """An INT token; one past 64 bits is an error (TL0008), and its value 0."""
        # Compare digit counts before converting: Python refuses to convert a
        # string of more than 4,300 digits.
        stripped = digits.lstrip("0") or "0"
        if len(stripped) > len(_INT_MAX_TEXT) or int(stripped) > INT64_MAX:
            self.report_out_of_range(text, "integer", f"the largest integer is {INT64_MAX:,}")
            self.add(TokenKind.INT, text, 0)
            return
        self.add(TokenKind.INT, text, int(stripped))

    def add_float(self, text: str, digits: str) -> None:
        value = float(digits)
        if math.isinf(value):
            self.report_out_of_range(text, "float", "the largest float is about `1.8e308`")
            value = 0.0
        self.add(TokenKind.FLOAT, text, value)

    def report_out_of_range(self, text: str, kind: str, note: str) -> None:
        shown = text if len(text) <= 24 else f"{text[:10]}...{text[-10:]}"
        self.error(
            "TL0008",
            f"{kind} literal `{shown}` is out of range",
            self.here(len(text)),
            "",
            notes=[note],
        )

    def report_bad_number(self, end: int) -> None:
        stop = _NAME.match(self.text, end)
        stop_at = stop.end() if stop else end + 1
        width = stop_at - self.pos
        text = self.text[self.pos : stop_at]
        self.error(
            "TL0006",
            f"invalid number literal `{text}`",
            self.here(width),
            "",
            help="write numbers as `42`, `0.5` or `1e-4`",
        )
        self.add(TokenKind.INT, text, 0)

    def lex_string(self) -> None:
        quote = self.text[self.pos]
        start = self.pos
        chars: list[str] = []
        i = self.pos + 1
        while i < len(self.text) and self.text[i] not in (quote, "\n"):
            if self.text[i] == "\\" and i + 1 < len(self.text) and self.text[i + 1] != "\n":
                chars.append(self.escape(i))
                i += 2
                continue
            chars.append(self.text[i])
            i += 1
        closed = i < len(self.text) and self.text[i] == quote
        if not closed:
            self.error(
                "TL0001",
                "unterminated string",
                self.here(1),
                "string starts here",
                help=f"close it with `{quote}` on the same line",
            )
        end = i + 1 if closed else i
        self.add(TokenKind.STRING, self.text[start:end], "".join(chars))

    def escape(self, i: int) -> str:
        letter = self.text[i + 1]
        if letter in _ESCAPES:
            return _ESCAPES[letter]
        span = Span.point(self.path, self.line, i - self.line_start + 1, 2)
        self.error(
            "TL0007",
            f"unknown escape sequence `\\{letter}`",
            span,
            "",
            help="the escapes are `\\n`, `\\t`, `\\r`, `\\0`, `\\\\`, `\\'` and `\\\"`",
        )
        return letter

    def lex_punctuation(self) -> bool:
        for text, kind in PUNCTUATION:
            if self.text.startswith(text, self.pos):
                token = self.add(kind, text)
                self.track_bracket(token)
                return True
        return False

    def track_bracket(self, token: Token) -> None:
        if token.kind in OPENING:
            self.brackets.append(token)
            return
        opener = CLOSING.get(token.kind)
        if opener is None or not self.brackets:
            return
        # A mismatched closer still closes something, so layout recovers.
        depth = next(
            (i for i in range(len(self.brackets) - 1, -1, -1) if self.brackets[i].kind is opener),
            len(self.brackets) - 1,
        )
        del self.brackets[depth:]

    def report_unknown_char(self, ch: str) -> None:
        hint = "comments start with `//`" if ch == "#" else None
        if ch in "!|&":
            hint = {
                "!": "did you mean `!=` or `not`?",
                "|": "did you mean `|>`?",
                "&": "did you mean `and`?",
            }[ch]
        shown = f"`{ch}`" if ch.isprintable() else f"U+{ord(ch):04X}"
        self.error("TL0005", f"unknown character {shown}", self.here(1), "", help=hint)
        self.add(TokenKind.ERROR, ch)

    # ------------------------------------------------------------ helpers

    def add(self, kind: TokenKind, text: str, value: int | float | str | None = None) -> Token:
        token = Token(kind, text, self.here(len(text)), value)
        self.tokens.append(token)
        self.pos += len(text)
        return token

    def here(self, width: int) -> Span:
        return Span.point(self.path, self.line, self.pos - self.line_start + 1, width)

    def eof_span(self) -> Span:
        if self.tokens and self.tokens[-1].kind is TokenKind.NEWLINE:
            return self.tokens[-1].span
        if self.tokens:
            last = self.tokens[-1].span
            return Span(self.path, last.end_line, last.end_col, last.end_line, last.end_col + 1)
        return Span.point(self.path, 1, 1)

    def error(
        self,
        code: str,
        message: str,
        span: Span,
        label: str,
        *,
        help: str | None = None,
        notes: list[str] | None = None,
    ) -> None:
        self.sink.emit(
            Diagnostic.error(code, message, Label(span, label), help=help, notes=notes or [])
        )


def _bad_name_char(text: str) -> tuple[str, str]:
    """The character that makes `text` no name, and what it cannot do: a superscript `²`
    is a digit once normalised (NFKC), so it cannot start one, though it may follow."""
    if not normalize_name(text[0]).isidentifier():
        return text[0], "start one"
    for ch in text[1:]:
        if not ("a" + normalize_name(ch)).isidentifier():
            return ch, "be part of one"
    return text[0], "start one"  # each piece is valid alone: their normal form is not
