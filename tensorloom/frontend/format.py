"""The formatter (`tlc fmt`): one canonical layout for `.tl` and `.nml`, from the token stream.

    @layers:                                    @layers:
      c_fc = Linear(n_embd,4*n_embd)              c_fc   = Linear(n_embd, 4 * n_embd)
      c_proj=Linear( 4*n_embd , n_embd,  ──▶      c_proj = Linear(4 * n_embd, n_embd,
          bias = false )   // out                                 bias=false)  // out

What it decides: four spaces per block level; the spaces between tokens (binary
operators and `=` spaced, keyword arguments `a=b` (an annotated parameter's default
`n: int = 4`, as PEP 8 has it), none inside brackets or before
`,` `:`, one after `,`, slices `x[1:, None]`, unary `-x`, decorators `@forward(x)`);
a continuation line's indent (under the first argument when the bracket has one on its
line, else one level in, its closer back at the statement's indent); the `=` of a run
of `@layers` entries aligned (as the examples and nanoGPT's model.py align them), and
the `//` comments of consecutive commented lines aligned two spaces after the longest
code (gofmt aligns both so); at most one blank line in a row, none at the start or
end; one newline at the end.

What it keeps: every token and comment, where the user broke lines, and a comment's
block (its indent is the nearest enclosing block's; the lines of a `/* */` comment move
with its first). It never wraps a line.

It knows no production of the grammar: a form added to the language later is laid out by
the same token rules, and a pair of tokens no rule covers keeps whether it had a space.
The result is lexed again and must give the same tokens, layout and comments; otherwise
the text comes back unchanged (`Unchanged`). A file that does not lex or parse is not
formatted (`Unformattable`, with the diagnostics), as gofmt and ruff refuse one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tensorloom.diagnostics import Diagnostic, DiagnosticSink
from tensorloom.frontend.lexer import TAB_WIDTH, tokenize
from tensorloom.frontend.tokens import CLOSING, KEYWORDS, LAYOUT, OPENING, Token, TokenKind

INDENT = "    "
K = TokenKind
OPERAND_ENDS = frozenset(
    {K.NAME, K.INT, K.FLOAT, K.STRING, K.RPAREN, K.RBRACKET, K.RBRACE, K.TRUE, K.FALSE, K.NONE,
     K.ELLIPSIS}
)  # fmt: skip
CALLABLE_ENDS = frozenset({K.NAME, K.RPAREN, K.RBRACKET})  # `f(x)`, `g(x)(y)`, `x[0][1]`
PREFIX = frozenset({K.MINUS, K.PLUS, K.STAR, K.DOUBLE_STAR})  # unary after a non-operand
# Every keyword the lexer knows (one added later included), but the literals among them.
KEYWORD_KINDS = frozenset(KEYWORDS.values()) - {K.TRUE, K.FALSE, K.NONE}
SPACED = KEYWORD_KINDS | frozenset(
    {K.PLUS, K.MINUS, K.STAR, K.SLASH, K.PERCENT, K.DOUBLE_STAR, K.EQ_EQ, K.NOT_EQ, K.LT,
     K.LT_EQ, K.GT, K.GT_EQ, K.ARROW, K.PIPE, K.AT, K.PLUS_EQ, K.MINUS_EQ, K.STAR_EQ,
     K.SLASH_EQ}
)  # fmt: skip
WORDS = OPERAND_ENDS - {K.RPAREN, K.RBRACKET, K.RBRACE} | KEYWORD_KINDS
ALIGNED_SECTIONS = ("layers",)  # the `@layers:` entries align their `=`, as nanoGPT's do


class Unformattable(Exception):
    """The file does not lex or parse; the diagnostics say why."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(f"{len(diagnostics)} error(s)")
        self.diagnostics = diagnostics


class Unchanged(Exception):
    """Formatting would have changed the tokens or comments (a formatter bug): none is made."""


@dataclass(frozen=True, slots=True)
class Comment:
    """A `//` or `/* */` comment: where it starts and ends (1-based, end exclusive)."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str

    @property
    def is_line(self) -> bool:
        return self.text.startswith("//")


@dataclass
class SourceLine:
    """One physical line of the input, with what the token stream says about it."""

    number: int
    text: str
    tokens: list[Token] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    starts_statement: bool = False  # its first token begins a logical line
    depth: int = 0  # the block depth of that statement
    open_brackets: list[Token] = field(default_factory=list)  # open at the line's start
    verbatim: bool = False  # past the first line of a comment that spans lines: copied, shifted

    @property
    def blank(self) -> bool:
        return not self.tokens and not self.comments and not self.verbatim


def format_text(text: str, path: str = "<input>") -> str:
    """`text` in the canonical layout; raises Unformattable or Unchanged."""
    from tensorloom.frontend.parser import parse_text

    text = text.replace("\r\n", "\n").replace("\r", "\n")
    sink = DiagnosticSink()
    tokens = tokenize(text, path, sink)
    if not sink.has_errors:
        parse_text(text, path, sink, "nml" if Path(path).suffix == ".nml" else "tl")
    if sink.has_errors:
        raise Unformattable(sink.sorted())
    comments = scan_comments(text)
    formatted = Layout(text, tokens, comments).render()
    if fingerprint(formatted, path) != (_token_kinds(tokens), _comment_texts(comments)):
        raise Unchanged(path)
    return formatted


def fingerprint(text: str, path: str) -> tuple[list[tuple[TokenKind, str]], list[str]]:
    """What formatting must keep: the tokens (layout included) and the comments' text."""
    sink = DiagnosticSink()
    tokens = tokenize(text, path, sink)
    return _token_kinds(tokens), _comment_texts(scan_comments(text))


def _token_kinds(tokens: list[Token]) -> list[tuple[TokenKind, str]]:
    return [(t.kind, "" if t.kind in LAYOUT else t.text) for t in tokens]


def _comment_texts(comments: list[Comment]) -> list[str]:
    """Each comment's text, as far as layout may not change it: its lines after the first are
    moved with the first, so their leading blanks are layout too."""
    texts: list[str] = []
    for comment in comments:
        first, *rest = comment.text.split("\n")
        texts.append("\n".join([first.rstrip(), *(line.strip() for line in rest)]))
    return texts


def scan_comments(text: str) -> list[Comment]:
    """Every comment of a text that lexes, in order (strings skipped, as the lexer does)."""
    comments: list[Comment] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        char = text[pos]
        if char == "\n":
            pos, line, line_start = pos + 1, line + 1, pos + 1
        elif char in "\"'":
            pos = _string_end(text, pos)
        elif text.startswith("//", pos):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            col = pos - line_start + 1
            comments.append(Comment(line, col, line, col + end - pos, text[pos:end]))
            pos = end
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            end = len(text) if end < 0 else end + 2
            body = text[pos:end]
            end_line = line + body.count("\n")
            last_start = line_start if "\n" not in body else pos + body.rfind("\n") + 1
            comments.append(
                Comment(line, pos - line_start + 1, end_line, end - last_start + 1, body)
            )
            line, line_start, pos = end_line, last_start, end
        else:
            pos += 1
    return comments


def _string_end(text: str, pos: int) -> int:
    quote, pos = text[pos], pos + 1
    while pos < len(text) and text[pos] not in (quote, "\n"):
        pos += 2 if text[pos] == "\\" and text[pos + 1 : pos + 2] not in ("", "\n") else 1
    return pos + 1 if pos < len(text) and text[pos] == quote else pos


class Layout:
    """Lays out one file: classify its lines, then render them top to bottom."""

    def __init__(self, text: str, tokens: list[Token], comments: list[Comment]) -> None:
        self.lines = [SourceLine(n + 1, t) for n, t in enumerate(text.split("\n"))]
        self.tokens = tokens
        self.index = {id(token): number for number, token in enumerate(tokens)}
        self.continued: dict[int, Comment] = {}  # line -> the comment it is the rest of
        self.moved: dict[int, int] = {}  # id(comment) -> columns its first line moved by
        self._place(comments)
        self._classify()
        self.padding = self._aligned_keys()
        self.opener_at: dict[int, tuple[int, int, bool]] = {}  # id -> (col, line indent, hanging)
        self.widths: list[int] = [0]  # the input's indent width of each open block level

    # ------------------------------------------------------------ reading the input

    def _place(self, comments: list[Comment]) -> None:
        for comment in comments:
            self.lines[comment.line - 1].comments.append(comment)
            for number in range(comment.line + 1, comment.end_line + 1):
                self.lines[number - 1].verbatim = True
                self.continued[number] = comment

    def _classify(self) -> None:
        """Each line's tokens, whether it starts a statement, its depth and open brackets."""
        depth, brackets, at_start = 0, list[Token](), True
        for token in self.tokens:
            if token.kind is K.INDENT:
                depth += 1
            elif token.kind is K.DEDENT:
                depth -= 1
            elif token.kind is K.NEWLINE:
                brackets, at_start = [], True
            elif token.kind is not K.EOF:
                line = self.lines[token.span.line - 1]
                if not line.tokens:
                    line.starts_statement, line.depth = at_start, depth
                    line.open_brackets = list(brackets)
                line.tokens.append(token)
                at_start = False
                self._track(brackets, token)
        self._open_at_comments()

    def _open_at_comments(self) -> None:
        """A comment-only line between the lines of a bracketed expression is a continuation."""
        still_open: list[Token] = []
        for line in self.lines:
            if not line.tokens:
                line.open_brackets = list(still_open)
                continue
            still_open = list(line.open_brackets)
            for token in line.tokens:
                self._track(still_open, token)

    @staticmethod
    def _track(brackets: list[Token], token: Token) -> None:
        if token.kind in OPENING:
            brackets.append(token)
        elif token.kind in CLOSING and brackets:
            del brackets[-1]

    def _aligned_keys(self) -> dict[int, tuple[int, int]]:
        """Line number -> (the width its key is padded to, its key's width)."""
        padding: dict[int, tuple[int, int]] = {}
        run: list[tuple[int, int]] = []
        headers: dict[int, list[Token]] = {}
        previous: SourceLine | None = None
        for line in self.lines:
            if line.blank or (not line.tokens and line.comments) or line.verbatim:
                run = self._close_run(run, padding)
                continue
            if not line.starts_statement:
                continue
            headers[line.depth] = line.tokens
            key = _key_width(line.tokens, headers.get(line.depth - 1, []))
            same_block = previous is not None and previous.depth == line.depth
            if key is None or not same_block:
                run = self._close_run(run, padding)
            if key is not None:
                run.append((line.number, key))
            previous = line
        self._close_run(run, padding)
        return padding

    @staticmethod
    def _close_run(
        run: list[tuple[int, int]], padding: dict[int, tuple[int, int]]
    ) -> list[tuple[int, int]]:
        width = max((key for _, key in run), default=0)
        padding.update({number: (width, key) for number, key in run})
        return []

    # ------------------------------------------------------------ writing the output

    def render(self) -> str:
        out: list[tuple[str, str]] = []  # (code, trailing `//` comment)
        for line in self.lines:
            if line.verbatim:
                moved = self.moved.get(id(self.continued[line.number]), 0)
                out.append((_shifted(line.text, moved).rstrip(), ""))
                self._note_indent(line)
            elif line.blank:
                if out and out[-1] != ("", ""):
                    out.append(("", ""))
            else:
                out.append(self._render_line(line))
        while out and out[-1] == ("", ""):
            out.pop()
        return "".join(line + "\n" for line in _align_comments(out))

    def _note_indent(self, line: SourceLine) -> None:
        if line.tokens and line.starts_statement:
            del self.widths[line.depth + 1 :]
            self.widths += [0] * (line.depth + 1 - len(self.widths))
            self.widths[line.depth] = _width(line.text)

    def _render_line(self, line: SourceLine) -> tuple[str, str]:
        """The line's code (indent included) and its trailing `//` comment."""
        indent = self._indent(line)
        parts: list[str] = []
        column = len(indent)
        trailing = ""
        previous: Token | None = None
        for index, item in enumerate(sorted([*line.tokens, *line.comments], key=_col)):
            if isinstance(item, Comment) and item.is_line:
                trailing = item.text.rstrip()
                continue
            if isinstance(item, Comment):
                gap = " " if index > 0 else ""
                self.moved[id(item)] = column + len(gap) - (item.col - 1)
                text = gap + item.text.split("\n")[0]  # the rest: the lines after, moved alike
            else:
                text = self._gap(line, previous, item, index)
                if item.kind in OPENING:
                    hanging = item is line.tokens[-1]
                    self.opener_at[id(item)] = (column + len(text), len(indent), hanging)
                text += line.text[item.span.col - 1 : item.span.end_col - 1]
                previous = item
            parts.append(text)
            column += len(text)
        if not parts:
            return indent + trailing, ""  # a comment on a line of its own
        return indent + "".join(parts), trailing

    def _gap(self, line: SourceLine, previous: Token | None, token: Token, index: int) -> str:
        if index == 0:
            return ""
        if previous is None:
            return " "  # after a leading block comment
        if line.number in self.padding and token is line.tokens[1]:
            width, key = self.padding[line.number]
            return " " * (width - key + 1)
        spaces = self._spaces(line, previous, token)
        if spaces is None:  # no rule: keep whether there was a space
            spaces = int(token.span.col > previous.span.end_col)
        return " " * spaces

    def _spaces(self, line: SourceLine, a: Token, b: Token) -> int | None:
        inner = self._inner_bracket(line, b)
        if a.kind in OPENING or b.kind in CLOSING or b.kind is K.COMMA:
            return 0
        if a.kind is K.COMMA:
            return 1
        if K.DOT in (a.kind, b.kind) or self._is_prefix(line, a):
            return 0
        if b.kind in (K.LPAREN, K.LBRACKET) and a.kind in CALLABLE_ENDS:
            return 1 if self._is_train_word(line, a) else 0
        if K.EQ in (a.kind, b.kind):
            equals = b if b.kind is K.EQ else a
            return 0 if inner is K.LPAREN and not self._annotated(equals) else 1
        if b.kind is K.COLON:
            return 0
        if a.kind is K.COLON:
            return 0 if inner is K.LBRACKET else 1
        if a.kind in SPACED or b.kind in SPACED or (a.kind in WORDS and b.kind in WORDS):
            return 1
        return None

    def _is_train_word(self, line: SourceLine, token: Token) -> bool:
        """`train` and `on` of a train block's header, words the parser reads as keywords
        there: `train (G, D) on data:` is no call of `train`."""
        first = line.tokens[0]
        if not (line.starts_statement and first.is_word("train")):
            return False
        return token is first or (token.is_word("on") and self._inner_bracket(line, token) is None)

    def _is_prefix(self, line: SourceLine, token: Token) -> bool:
        """A unary `-x`, `*args`, or the `@` of a decorator (`@forward(x)`)."""
        before = self._before(line, token)
        if token.kind is K.AT:
            return before is None and line.starts_statement
        if token.kind not in PREFIX:
            return False
        return before is None or before.kind not in OPERAND_ENDS

    def _before(self, line: SourceLine, token: Token) -> Token | None:
        """The token before `token` in its statement (possibly on an earlier line)."""
        position = line.tokens.index(token)
        if position > 0:
            return line.tokens[position - 1]
        if line.starts_statement:
            return None
        previous = self.tokens[self.index[id(token)] - 1]
        return None if previous.kind in LAYOUT else previous

    def _annotated(self, equals: Token) -> bool:
        """Whether `=` gives an annotated parameter's default (`BLOCK: tl.constexpr = 4`)."""
        depth = 0
        for token in reversed(self.tokens[: self.index[id(equals)]]):
            if token.kind in CLOSING:
                depth += 1
            elif token.kind in OPENING:
                depth -= 1
            if depth < 0 or (depth == 0 and token.kind is K.COMMA):
                return False  # the parameter's start: no annotation before its `=`
            if depth == 0 and token.kind is K.COLON:
                return True
        return False

    @staticmethod
    def _inner_bracket(line: SourceLine, token: Token) -> TokenKind | None:
        brackets = list(line.open_brackets)
        for other in line.tokens:
            if other is token:
                break
            Layout._track(brackets, other)
        return brackets[-1].kind if brackets else None

    def _indent(self, line: SourceLine) -> str:
        if line.open_brackets:
            return " " * self._continuation(line)
        if line.tokens:
            self._note_indent(line)
            return INDENT * line.depth
        return INDENT * self._comment_depth(line)

    def _continuation(self, line: SourceLine) -> int:
        """Under the first argument (visual), else one level in; a closer at the opener's line."""
        opener = line.open_brackets[-1]
        if id(opener) not in self.opener_at:  # opened on a line copied verbatim
            return _width(line.text)
        column, line_indent, hanging = self.opener_at[id(opener)]
        first = line.tokens[0] if line.tokens else None
        if first is not None and first.kind is OPENING.get(opener.kind):
            return line_indent
        return line_indent + len(INDENT) if hanging else column + 1

    def _comment_depth(self, line: SourceLine) -> int:
        """The deepest open block whose indent the comment reaches (the next line's included)."""
        width = _width(line.text)
        following = next((n for n in self.lines[line.number :] if n.tokens), None)
        widths = list(self.widths)
        opens_block = following is not None and following.depth == len(widths)
        if following is not None and following.starts_statement and opens_block:
            widths.append(_width(following.text))
        return max(d for d, w in enumerate(widths) if w <= width or d == 0)


def _key_width(tokens: list[Token], header: list[Token]) -> int | None:
    """The width of the key of an aligned entry, or None when the line is not one."""
    in_section = (
        len(header) == 3
        and header[0].kind is K.AT
        and header[1].text in ALIGNED_SECTIONS
        and header[2].kind is K.COLON
    )
    if in_section and len(tokens) >= 3 and tokens[0].kind is K.NAME and tokens[1].kind is K.EQ:
        return len(tokens[0].text)
    return None


def _align_comments(lines: list[tuple[str, str]]) -> list[str]:
    """Each run of consecutive lines with code and a `//` comment: the comments in one column."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        end = index
        while end < len(lines) and lines[end][0].strip() and lines[end][1]:
            end += 1
        if end == index:
            code, comment = lines[index]
            out.append(f"{code}  {comment}" if comment else code)
            index += 1
            continue
        column = max(len(code) for code, _ in lines[index:end]) + 2
        out += [f"{code:<{column}}{comment}" for code, comment in lines[index:end]]
        index = end
    return out


def _shifted(text: str, columns: int) -> str:
    """`text` moved right by `columns`, or left by as many of its leading blanks as it has."""
    if columns >= 0:
        return " " * columns + text if text.strip() else text
    blanks = len(text) - len(text.lstrip(" "))
    return text[min(blanks, -columns) :]


def _width(text: str) -> int:
    """A line's indent width as the lexer counts it (a tab to the next multiple of 4)."""
    width = 0
    for char in text:
        if char == " ":
            width += 1
        elif char == "\t":
            width += TAB_WIDTH - width % TAB_WIDTH
        else:
            break
    return width


def _col(item: Token | Comment) -> int:
    return item.span.col if isinstance(item, Token) else item.col
