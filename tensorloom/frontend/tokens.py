"""Token kinds and the token value the lexer hands to the parser.

    let x = 1e-4  // comment

lexes to `LET NAME("x") EQ FLOAT(0.0001) NEWLINE`; blocks are delimited by
INDENT and DEDENT tokens, as in Python.

Only words that can never be an ordinary name are keywords. `model`, `layer`,
`train`, `on`, `checkpoint`, `every`, `epochs` and `steps` are contextual: they
lex as NAME, and the parser recognises them where a declaration can start.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tensorloom.source import Span


class TokenKind(Enum):
    """Each kind's value is how messages spell it (`expected `)``)."""

    NAME = "identifier"
    INT = "integer"
    FLOAT = "float"
    STRING = "string"
    NEWLINE = "end of line"
    INDENT = "indent"
    DEDENT = "dedent"
    EOF = "end of file"
    ERROR = "unknown character"  # already reported by the lexer; the parser stays quiet

    # keywords
    LET = "let"
    FN = "fn"
    DEF = "def"
    RETURN = "return"
    IF = "if"
    ELIF = "elif"
    ELSE = "else"
    FOR = "for"
    IN = "in"
    AND = "and"
    OR = "or"
    NOT = "not"
    TRUE = "true"
    FALSE = "false"
    NONE = "none"
    IMPORT = "import"
    AS = "as"
    FROM = "from"
    WITH = "with"  # `step d_loss with Adam(D)` in a train block

    # brackets and punctuation
    LPAREN = "("
    RPAREN = ")"
    LBRACKET = "["
    RBRACKET = "]"
    LBRACE = "{"
    RBRACE = "}"
    COMMA = ","
    COLON = ":"
    DOT = "."
    ELLIPSIS = "..."
    AT = "@"
    ARROW = "->"
    PIPE = "|>"

    # operators
    PLUS = "+"
    MINUS = "-"
    STAR = "*"
    SLASH = "/"
    PERCENT = "%"
    DOUBLE_STAR = "**"
    EQ = "="
    PLUS_EQ = "+="
    MINUS_EQ = "-="
    STAR_EQ = "*="
    SLASH_EQ = "/="
    EQ_EQ = "=="
    NOT_EQ = "!="
    LT = "<"
    LT_EQ = "<="
    GT = ">"
    GT_EQ = ">="


_KEYWORD_KINDS = (
    TokenKind.LET,
    TokenKind.FN,
    TokenKind.DEF,
    TokenKind.RETURN,
    TokenKind.IF,
    TokenKind.ELIF,
    TokenKind.ELSE,
    TokenKind.FOR,
    TokenKind.IN,
    TokenKind.AND,
    TokenKind.OR,
    TokenKind.NOT,
    TokenKind.TRUE,
    TokenKind.FALSE,
    TokenKind.NONE,
    TokenKind.IMPORT,
    TokenKind.AS,
    TokenKind.FROM,
    TokenKind.WITH,
)
KEYWORDS: dict[str, TokenKind] = {kind.value: kind for kind in _KEYWORD_KINDS}

# Longest first, so `**` wins over `*` and `...` over `.`.
PUNCTUATION: list[tuple[str, TokenKind]] = sorted(
    (
        (kind.value, kind)
        for kind in TokenKind
        if not kind.value.isidentifier() and " " not in kind.value and kind.value
    ),
    key=lambda pair: -len(pair[0]),
)

OPENING = {
    TokenKind.LPAREN: TokenKind.RPAREN,
    TokenKind.LBRACKET: TokenKind.RBRACKET,
    TokenKind.LBRACE: TokenKind.RBRACE,
}
CLOSING = {close: open_ for open_, close in OPENING.items()}

# `x[i] += v`: the augmented assignments, each the binary operator before its `=`.
AUGMENTED = (TokenKind.PLUS_EQ, TokenKind.MINUS_EQ, TokenKind.STAR_EQ, TokenKind.SLASH_EQ)

# Kinds with no text of their own: shown by name in `tlc tokens` and messages.
LAYOUT = frozenset({TokenKind.NEWLINE, TokenKind.INDENT, TokenKind.DEDENT, TokenKind.EOF})


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    text: str
    span: Span
    value: int | float | str | None = None  # the literal's value for INT, FLOAT, STRING

    def is_word(self, word: str) -> bool:
        """True for a NAME spelled `word` (a contextual keyword such as `model`)."""
        return self.kind is TokenKind.NAME and self.text == word

    def describe(self) -> str:
        """How a message names this token: `` `foo` `` or `end of line`."""
        if self.kind in LAYOUT:
            return self.kind.value
        return f"`{self.text}`"
