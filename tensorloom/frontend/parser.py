"""The recursive-descent parser: tokens to the AST in `frontend/ast.py`.

    import transformer.nml as Block         ImportDecl("transformer.nml", alias="Block")
    let net = Block(d_model=256)            LetStmt("net", Call(Name("Block"), ...))
    train net on data:                      TrainDecl(Name("net"), Name("data"),
        epochs = 10                                   [TrainSetting("epochs", IntLit(10))])

Each grammar rule is one `parse_<rule>` method whose docstring is its EBNF line;
docs/grammar.md lists the same rules. Errors (TL01xx) are recorded in the sink
and raise `ParseError`, which unwinds to the enclosing statement; the parser
then skips to the next line (panic mode) and carries on, so one run reports
every syntax error in the file. Entry points: `parse_text` and `parse_file`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeVar

from tensorloom.diagnostics import Diagnostic, DiagnosticSink, Label
from tensorloom.diagnostics.core import did_you_mean
from tensorloom.frontend import ast
from tensorloom.frontend.lexer import tokenize
from tensorloom.frontend.tokens import AUGMENTED, LAYOUT, Token, TokenKind
from tensorloom.source import SourceMap, Span

T = TypeVar("T")
Language = Literal["tl", "nml"]
TrainEntry = (
    ast.TrainSetting | ast.CheckpointClause | ast.TrainStep | ast.TrainGroup | ast.TrainCarry
)

MAX_NESTING = 200
SUFFIXES: dict[str, Language] = {".tl": "tl", ".nml": "nml"}
NML_SECTIONS = ("config", "layers", "forward")

_COMPARISONS: dict[TokenKind, ast.BinaryOp] = {
    TokenKind.EQ_EQ: "==",
    TokenKind.NOT_EQ: "!=",
    TokenKind.LT: "<",
    TokenKind.LT_EQ: "<=",
    TokenKind.GT: ">",
    TokenKind.GT_EQ: ">=",
}
_SUM_OPS: dict[TokenKind, ast.BinaryOp] = {TokenKind.PLUS: "+", TokenKind.MINUS: "-"}
_TERM_OPS: dict[TokenKind, ast.BinaryOp] = {
    TokenKind.STAR: "*",
    TokenKind.SLASH: "/",
    TokenKind.PERCENT: "%",
    TokenKind.AT: "@",
}
_UNARY_OPS: dict[TokenKind, ast.UnaryOp] = {TokenKind.MINUS: "-", TokenKind.PLUS: "+"}
_KIND_NAMES = {
    TokenKind.NAME: "a name",
    TokenKind.INT: "an integer",
    TokenKind.STRING: "a string",
    TokenKind.NEWLINE: "end of line",
    TokenKind.INDENT: "an indented block",
}


class ParseError(Exception):
    """Unwinds to the enclosing statement after an error has been recorded."""


def parse_text(
    text: str, path: str, sink: DiagnosticSink, language: Language | None = None
) -> ast.Module:
    """Parse one file's text; the language comes from the suffix unless given."""
    lang = language or SUFFIXES.get(Path(path).suffix, "tl")
    tokens = tokenize(text, path, sink)
    with _recursion_limit(MAX_NESTING * 20 + 1000):
        return Parser(tokens, path, lang, sink).parse_module()


def parse_file(path: Path, sources: SourceMap, sink: DiagnosticSink) -> ast.Module | None:
    """Read, register in `sources` and parse a file; None when it cannot be read."""
    name = str(path)
    text = read_source(path, sources, sink)
    if text is None:
        return None
    return parse_text(text, name, sink, SUFFIXES[path.suffix])


def read_source(path: Path, sources: SourceMap, sink: DiagnosticSink) -> str | None:
    name = str(path)
    where = Span.point(name, 1, 1)
    if path.is_dir():
        sink.emit(unreadable(name, IsADirectoryError(21, "is a directory")))
        return None
    if path.suffix not in SUFFIXES:
        sources.add(name, "")  # not ours to quote
        sink.emit(
            Diagnostic.error(
                "TL0604",
                f"unsupported file type `{path.suffix or path.name}`",
                where,
                help="TensorLoom reads `.tl` scripts and `.nml` model files",
            )
        )
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        sink.emit(unreadable(name, exc))
        return None
    return _decode(data, name, sources, sink)


def unreadable(name: str, exc: OSError) -> Diagnostic:
    """TL0601 for a file that is missing, a directory, or not readable (tlc and tl-opt alike)."""
    reason = (exc.strerror or str(exc)).lower()
    return Diagnostic.error("TL0601", f"cannot read `{name}`: {reason}", Span.point(name, 1, 1))


def _decode(data: bytes, name: str, sources: SourceMap, sink: DiagnosticSink) -> str | None:
    where = Span.point(name, 1, 1)
    if b"\0" in data[:8192]:
        sources.add(name, "")  # nothing printable to quote under the message
        sink.emit(
            Diagnostic.error("TL0602", f"`{name}` is a binary file, not TensorLoom source", where)
        )
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        sources.add(name, data.decode("utf-8", errors="replace"))
        sink.emit(_invalid_utf8(data, exc.start, name))
        return None
    text = text.removeprefix("\ufeff")
    sources.add(name, text)
    return text


def _invalid_utf8(data: bytes, start: int, name: str) -> Diagnostic:
    before = data[:start]
    line = before.count(b"\n") + 1
    col = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", errors="replace")) + 1
    return Diagnostic.error(
        "TL0603",
        f"`{name}` is not valid UTF-8",
        Label(Span.point(name, line, col), f"byte 0x{data[start]:02x} is not valid UTF-8"),
        help="save the file as UTF-8",
    )


@contextmanager
def _recursion_limit(limit: int) -> Generator[None]:
    """Deep but legal nesting needs more Python frames than the default allows."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


class Parser:
    """Parses one file's tokens; `parse_module()` is the start rule."""

    def __init__(
        self, tokens: list[Token], path: str, language: Language, sink: DiagnosticSink
    ) -> None:
        self.tokens = tokens
        self.path = path
        self.language: Language = language
        self.sink = sink
        self.pos = 0
        self.depth = 0
        self.brackets: list[Token] = []  # opened and not yet closed, innermost last

    # ================================================================ helpers

    def peek(self, offset: int = 0) -> Token:
        if offset == 0:
            return self.tokens[self.pos]  # `advance` never moves past EOF
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def previous(self) -> Token:
        return self.tokens[max(self.pos - 1, 0)]

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind is not TokenKind.EOF:
            self.pos += 1
        return token

    def check(self, *kinds: TokenKind) -> bool:
        return self.tokens[self.pos].kind in kinds

    def check_word(self, word: str) -> bool:
        return self.peek().is_word(word)

    def match(self, *kinds: TokenKind) -> Token | None:
        token = self.tokens[self.pos]
        if token.kind not in kinds:
            return None
        self.pos += token.kind is not TokenKind.EOF
        return token

    def expect(self, kind: TokenKind, what: str | None = None) -> Token:
        if self.check(kind):
            return self.advance()
        raise self.unexpected(what or _kind_name(kind))

    def expect_word(self, word: str) -> Token:
        if self.check_word(word):
            return self.advance()
        raise self.unexpected(f"`{word}`")

    def open_bracket(self, kind: TokenKind) -> Token:
        opener = self.expect(kind)
        self.brackets.append(opener)
        return opener

    def expect_close(self, opener: Token, closing: TokenKind, alternatives: str = "") -> Token:
        """The bracket that closes `opener`; an unclosed one is reported at `opener`."""
        if self.check(closing):
            self.brackets.pop()
            return self.advance()
        found = self.peek()
        if found.kind in LAYOUT:
            raise self.unclosed(opener)
        raise self.fail(
            Diagnostic.error(
                "TL0101",
                f"expected {alternatives}`{closing.value}`, found {found.describe()}",
                Label(found.span, f"expected {alternatives}`{closing.value}`"),
                secondary=[Label(opener.span, f"to close this `{opener.text}`")],
            )
        )

    def expect_header_colon(self) -> None:
        """The `:` ending a block header; a missing one is reported at the line's end."""
        if self.match(TokenKind.COLON):
            return
        if not self.check(TokenKind.NEWLINE):
            raise self.unexpected("`:`")
        # The block that follows is still parsed, so its errors are reported too.
        self.report(
            Diagnostic.error(
                "TL0103",
                "expected `:` at the end of this line",
                Label(self.peek().span, "add `:` here"),
            )
        )

    def unclosed(self, opener: Token) -> ParseError:
        closing = {"(": ")", "[": "]", "{": "}"}[opener.text]
        return self.fail(
            Diagnostic.error(
                "TL0102",
                f"unclosed `{opener.text}`",
                Label(opener.span, f"this `{opener.text}` is never closed"),
                help=f"add `{closing}`",
            )
        )

    def unexpected(self, what: str) -> ParseError:
        found = self.peek()
        if found.kind is TokenKind.ERROR:
            return ParseError("after a lexical error")
        if found.kind in LAYOUT and self.brackets:
            return self.unclosed(self.brackets[-1])  # the real cause of the early line end
        return self.fail(
            Diagnostic.error(
                "TL0101",
                f"expected {what}, found {found.describe()}",
                Label(found.span, f"expected {what}"),
            )
        )

    def report(self, diagnostic: Diagnostic) -> None:
        self.sink.emit(diagnostic)

    def fail(self, diagnostic: Diagnostic) -> ParseError:
        self.report(diagnostic)
        return ParseError(diagnostic.message)

    def span_from(self, start: Token | Span) -> Span:
        """From `start` to the end of the last token consumed, layout tokens aside."""
        first = start.span if isinstance(start, Token) else start
        index = self.pos - 1
        while index > 0 and self.tokens[index].kind in LAYOUT:
            index -= 1
        return first.to(self.tokens[max(index, 0)].span)

    @contextmanager
    def nested(self) -> Generator[None]:
        """Guards recursion: 1,000 nested parentheses get a diagnostic, not a crash."""
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise self.fail(
                    Diagnostic.error(
                        "TL0106",
                        f"nesting is too deep (the limit is {MAX_NESTING} levels)",
                        Label(self.peek().span, "too deeply nested"),
                        help="split the expression with `let` bindings",
                    )
                )
            yield
        finally:
            self.depth -= 1

    # ================================================================ recovery

    def recover(self, parse: Callable[[], T]) -> T | None:
        """Run one statement's rule; after an error, skip to the next statement."""
        open_brackets = len(self.brackets)
        try:
            return parse()
        except ParseError:
            del self.brackets[open_brackets:]
            self.synchronize()
            return None

    def synchronize(self) -> None:
        """Skip past the current line and any block it opens; stop at DEDENT or EOF."""
        while not self.check(TokenKind.NEWLINE, TokenKind.DEDENT, TokenKind.EOF):
            if self.check(TokenKind.INDENT):
                self.skip_block()
            else:
                self.advance()
        if self.match(TokenKind.NEWLINE) and self.check(TokenKind.INDENT):
            self.skip_block()

    def skip_block(self) -> None:
        """Skip an INDENT ... DEDENT block, nested blocks included."""
        depth = 0
        while not self.check(TokenKind.EOF):
            kind = self.advance().kind
            depth += (kind is TokenKind.INDENT) - (kind is TokenKind.DEDENT)
            if depth == 0:
                return

    def skip_unexpected_indent(self) -> bool:
        if not self.check(TokenKind.INDENT):
            return False
        self.report(
            Diagnostic.error(
                "TL0104",
                "unexpected indent",
                Label(self.peek().span, "this line is indented too far"),
                help="remove the extra indentation",
            )
        )
        self.skip_block()
        return True

    def parse_suite(self, parse_entry: Callable[[], T]) -> list[T]:
        """suite = NEWLINE INDENT entry { entry } DEDENT ;  (entries as the caller says)"""
        if self.check(TokenKind.NEWLINE) and self.peek(1).kind is not TokenKind.INDENT:
            # The newline stays unread, so recovery resumes on the very next line.
            raise self.fail(
                Diagnostic.error(
                    "TL0105",
                    "expected an indented block after this line",
                    Label(self.peek().span, "the block is missing"),
                    help="indent the lines that belong to this block",
                )
            )
        self.expect(TokenKind.NEWLINE)
        self.advance()
        entries: list[T] = []
        with self.nested():
            while not self.check(TokenKind.DEDENT, TokenKind.EOF):
                if self.match(TokenKind.NEWLINE) or self.skip_unexpected_indent():
                    continue
                entry = self.recover(parse_entry)
                if entry is not None:
                    entries.append(entry)
        self.match(TokenKind.DEDENT)
        return entries

    # ================================================================ module

    def parse_module(self) -> ast.Module:
        """module = { NEWLINE | item } EOF ;"""
        items: list[ast.Stmt] = []
        parse_item = self.parse_nml_item if self.language == "nml" else self.parse_item
        while not self.check(TokenKind.EOF):
            if self.match(TokenKind.NEWLINE, TokenKind.DEDENT) or self.skip_unexpected_indent():
                continue
            item = self.recover(parse_item)
            if item is not None:
                items.append(item)
        end = self.peek().span
        return ast.Module(
            Span(self.path, 1, 1, end.end_line, end.end_col), self.path, self.language, items
        )

    def parse_item(self) -> ast.Stmt:
        """item = import_decl | model_decl | train_decl | weights_decl | kernel_decl
        | function_decl | statement ;"""
        if self.check(TokenKind.IMPORT):
            return self.parse_import_decl()
        if self.check_word("model") and self.peek(1).kind is TokenKind.NAME:
            return self.parse_model_decl()
        if self.check_word("train") and self.peek(1).kind in (TokenKind.NAME, TokenKind.LPAREN):
            return self.parse_train_decl()
        if self.check_word("weights") and self.peek(1).kind is TokenKind.NAME:
            return self.parse_weights_decl()
        if self.check(TokenKind.AT):
            return self.parse_kernel_decl()
        if self.check(TokenKind.FN):
            return self.parse_function_decl()
        return self.parse_statement()

    def parse_function_decl(self) -> ast.FnDecl:
        """function_decl = fn_decl ;   (a top-level function: no `self`)"""
        decl = self.parse_fn_decl()
        if decl.params and decl.params[0].name == "self":
            self.report(
                Diagnostic.error(
                    "TL0101",
                    f"`{decl.name}` takes `self`, so it is a method and belongs inside a `model`",
                    Label(decl.params[0].span, "a top-level function has no `self`"),
                    help="indent it under `model Name:`, or drop `self` for a loss or metric",
                )
            )
            decl.params = decl.params[1:]  # parsing goes on as if it were not there
        return decl

    def parse_nml_item(self) -> ast.Stmt:
        """nml_item = nml_model | nml_weights ;"""
        if self.check(TokenKind.AT) and self.peek(1).is_word("model"):
            return self.parse_nml_model()
        if self.check(TokenKind.AT) and self.peek(1).is_word("weights"):
            return self.parse_nml_weights()
        found = self.peek()
        hint = (
            f"write `@{found.text} ...`" if found.is_word("model") or found.is_word("weights")
            else None
        )  # fmt: skip
        raise self.fail(
            Diagnostic.error(
                "TL0101",
                f"expected `@model` or `@weights`, found {found.describe()}",
                Label(found.span, "expected `@model` or `@weights`"),
                notes=["an .nml file holds `@model` blocks and the `@weights` maps of them"],
                help=hint,
            )
        )

    # ================================================================ declarations

    def parse_import_decl(self) -> ast.ImportDecl:
        """import_decl = "import" ( NAME { "." NAME } | STRING ) [ "as" NAME ] NEWLINE ;"""
        start = self.expect(TokenKind.IMPORT)
        path, path_span = self.parse_import_path()
        alias: Token | None = None
        if self.match(TokenKind.AS):
            alias = self.expect(TokenKind.NAME)
        span = self.span_from(start)
        self.expect(TokenKind.NEWLINE)
        return ast.ImportDecl(
            span, path, path_span, alias.text if alias else None, alias.span if alias else None
        )

    def parse_import_path(self) -> tuple[str, Span]:
        if string := self.match(TokenKind.STRING):
            return str(string.value), string.span
        first = self.expect(TokenKind.NAME, "a file path such as `blocks.resnet.nml`")
        parts = [first.text]
        while self.match(TokenKind.DOT):
            parts.append(self.expect(TokenKind.NAME).text)
        if len(parts) < 2:
            raise self.fail(
                Diagnostic.error(
                    "TL0101",
                    f"expected a file path such as `{first.text}.nml`, found `{first.text}`",
                    Label(first.span, "no file extension"),
                    help=f"write `import {first.text}.nml`",
                )
            )
        return "/".join(parts[:-1]) + "." + parts[-1], self.span_from(first)

    def parse_model_decl(self) -> ast.ModelDecl:
        """model_decl = "model" NAME ":" NEWLINE INDENT { layer_decl | fn_decl } DEDENT ;"""
        start = self.expect_word("model")
        name = self.expect(TokenKind.NAME)
        self.expect_header_colon()
        model = ast.ModelDecl(start.span, name.text, name.span, "tl")
        for member in self.parse_suite(self.parse_model_member):
            if isinstance(member, ast.LayerDecl):
                model.layers.append(member)
            else:
                model.methods.append(member)
        model.span = self.span_from(start)
        return model

    def parse_model_member(self) -> ast.LayerDecl | ast.FnDecl:
        if self.check_word("layer"):
            return self.parse_layer_decl()
        if self.check(TokenKind.FN):
            return self.parse_fn_decl()
        raise self.unexpected("`layer` or `fn` in a model body")

    def parse_layer_decl(self) -> ast.LayerDecl:
        """layer_decl = "layer" NAME "=" expression NEWLINE ;"""
        start = self.expect_word("layer")
        name = self.expect(TokenKind.NAME)
        self.expect(TokenKind.EQ)
        ctor = self.parse_expression()
        self.expect(TokenKind.NEWLINE)
        return ast.LayerDecl(start.span.to(ctor.span), name.text, name.span, ctor)

    def parse_fn_decl(self) -> ast.FnDecl:
        """fn_decl = "fn" NAME "(" [ params ] ")" [ "->" type ] ":" block ;"""
        start = self.expect(TokenKind.FN)
        name = self.expect(TokenKind.NAME)
        params = self.parse_params()
        return_type = self.parse_type() if self.match(TokenKind.ARROW) else None
        self.expect_header_colon()
        body = self.parse_block()
        return ast.FnDecl(self.span_from(start), name.text, name.span, params, return_type, body)

    def parse_params(self) -> list[ast.Param]:
        """params = "(" [ param { "," param } [ "," ] ] ")" ;"""
        opener = self.open_bracket(TokenKind.LPAREN)
        params: list[ast.Param] = []
        while not self.check(TokenKind.RPAREN):
            params.append(self.parse_param())
            if not self.match(TokenKind.COMMA):
                break
        self.expect_close(opener, TokenKind.RPAREN, "`,` or ")
        return params

    def parse_param(self) -> ast.Param:
        """param = NAME [ ":" type ] [ "=" expression ] ;"""
        name = self.expect(TokenKind.NAME, "a parameter name")
        type_ = self.parse_type() if self.match(TokenKind.COLON) else None
        default = self.parse_expression() if self.match(TokenKind.EQ) else None
        return ast.Param(self.span_from(name), name.text, type_, default)

    def parse_type(self) -> ast.TypeExpr:
        """type = NAME { "." NAME } [ "[" dim { "," dim } [ "," ] "]" ]
        | "(" type { "," type } [ "," ] ")" ;"""
        if self.check(TokenKind.LPAREN):
            return self.parse_tuple_type()
        first = self.expect(TokenKind.NAME, "a type such as `Tensor`")
        parts = [first.text]
        while self.match(TokenKind.DOT):
            parts.append(self.expect(TokenKind.NAME).text)
        dims: list[ast.Dim] | None = None
        if self.check(TokenKind.LBRACKET):
            opener = self.open_bracket(TokenKind.LBRACKET)
            dims = []
            while not self.check(TokenKind.RBRACKET):
                dims.append(self.parse_dim())
                if not self.match(TokenKind.COMMA):
                    break
            self.expect_close(opener, TokenKind.RBRACKET, "`,` or ")
        return ast.TypeExpr(self.span_from(first), ".".join(parts), dims)

    def parse_tuple_type(self) -> ast.TypeExpr:
        opener = self.open_bracket(TokenKind.LPAREN)
        elements: list[ast.TypeExpr] = []
        while not self.check(TokenKind.RPAREN):
            elements.append(self.parse_type())
            if not self.match(TokenKind.COMMA):
                break
        self.expect_close(opener, TokenKind.RPAREN, "`,` or ")
        return ast.TypeExpr(self.span_from(opener), "", None, elements)

    def parse_dim(self) -> ast.Dim:
        """dim = INT | NAME ;"""
        token = self.peek()
        if self.match(TokenKind.INT):
            return ast.Dim(token.span, int(token.value or 0))
        if self.match(TokenKind.NAME):
            return ast.Dim(token.span, token.text)
        raise self.unexpected("a dimension (an integer or a name such as `B`)")

    def parse_train_decl(self) -> ast.TrainDecl:
        """train_decl = "train" expression "on" expression ":" NEWLINE INDENT
        { train_setting | checkpoint | train_step | train_group | train_carry } DEDENT ;

        The expression after `train` is a model's name or a tuple of them, `(G, D)`."""
        start = self.expect_word("train")
        model = self.parse_expression()
        self.expect_word("on")
        data = self.parse_expression()
        self.expect_header_colon()
        train = ast.TrainDecl(start.span, model, data, [], None)
        for entry in self.parse_suite(self.parse_train_entry):
            self.add_train_entry(train, entry)
        train.span = self.span_from(start)
        return train

    def add_train_entry(self, train: ast.TrainDecl, entry: TrainEntry) -> None:
        if isinstance(entry, ast.TrainSetting):
            train.settings.append(entry)
        elif isinstance(entry, ast.TrainStep):
            train.steps.append(entry)
        elif isinstance(entry, ast.TrainGroup):
            train.groups.append(entry)
        elif isinstance(entry, ast.TrainCarry):
            train.carries.append(entry)
        elif train.checkpoint is None:
            train.checkpoint = entry
        else:
            self.report(
                Diagnostic.error(
                    "TL0111",
                    "duplicate `checkpoint` clause",
                    Label(entry.span, "second clause"),
                    secondary=[Label(train.checkpoint.span, "first clause")],
                    help="keep one `checkpoint every N epochs` line",
                )
            )

    def parse_train_entry(self) -> TrainEntry:
        if self.check_word("checkpoint") and self.peek(1).is_word("every"):
            return self.parse_checkpoint()
        if self.check_word("step") and self.peek(1).kind is TokenKind.NAME:
            return self.parse_train_step()
        if (
            self.check_word("group")
            and self.peek(1).kind is TokenKind.NAME
            and self.peek(2).kind is TokenKind.EQ
        ):
            return self.parse_train_group()
        if self.check_word("carry") and self.peek(1).kind is TokenKind.NAME:
            return self.parse_train_carry()
        return self.parse_train_setting()

    def parse_train_carry(self) -> ast.TrainCarry:
        """train_carry = "carry" NAME [ "=" expression ] NEWLINE ;

        Without `= value` the line parses; check-train reports the missing initial value."""
        start = self.expect_word("carry")
        name = self.expect(TokenKind.NAME, "the name of the carried value")
        init = self.parse_expression() if self.match(TokenKind.EQ) else None
        self.expect(TokenKind.NEWLINE)
        end = init.span if init is not None else name.span
        return ast.TrainCarry(start.span.to(end), name.text, name.span, init)

    def parse_train_step(self) -> ast.TrainStep:
        """train_step = "step" NAME "with" ( call { "," call } | "(" call { "," call } ")" )
        [ "from" "epoch" INT ] [ "until" "epoch" INT ] NEWLINE ;

        In parentheses the optimizers may span lines."""
        start = self.expect_word("step")
        objective = self.expect(TokenKind.NAME, "the name of an objective `fn`")
        self.expect(TokenKind.WITH)
        optimizers = [self.parse_expression()]
        while self.match(TokenKind.COMMA):
            optimizers.append(self.parse_expression())
        if len(optimizers) == 1 and isinstance(optimizers[0], ast.TupleExpr):
            optimizers = list(optimizers[0].elts) or optimizers
        step = ast.TrainStep(
            start.span.to(optimizers[-1].span), objective.text, objective.span, optimizers
        )
        if self.match(TokenKind.FROM) is not None:
            step.first_epoch, span = self.parse_step_epoch()
            step.window_span = span
        if self.check_word("until"):
            self.advance()
            step.last_epoch, span = self.parse_step_epoch()
            step.window_span = span if step.window_span is None else step.window_span.to(span)
        if step.window_span is not None:
            step.span = step.span.to(step.window_span)
        self.expect(TokenKind.NEWLINE)
        return step

    def parse_step_epoch(self) -> tuple[int, Span]:
        """step_epoch = "epoch" INT ; (after `from` or `until` in a step line)"""
        word = self.expect_word("epoch")
        number = self.expect(TokenKind.INT, "an epoch number, counted from 1")
        return int(number.text), word.span.to(number.span)

    def parse_train_group(self) -> ast.TrainGroup:
        """train_group = "group" NAME "=" expression NEWLINE ;"""
        start = self.expect_word("group")
        name = self.expect(TokenKind.NAME, "the group's name")
        self.expect(TokenKind.EQ)
        value = self.parse_expression()
        self.expect(TokenKind.NEWLINE)
        return ast.TrainGroup(start.span.to(value.span), name.text, name.span, value)

    def parse_train_setting(self) -> ast.TrainSetting:
        """train_setting = NAME "=" expression NEWLINE ;"""
        key = self.expect(TokenKind.NAME, "a setting such as `epochs = 10`")
        self.expect(TokenKind.EQ)
        value = self.parse_expression()
        self.expect(TokenKind.NEWLINE)
        return ast.TrainSetting(key.span.to(value.span), key.text, key.span, value)

    def parse_checkpoint(self) -> ast.CheckpointClause:
        """checkpoint = "checkpoint" "every" INT ( "epochs" | "steps" ) NEWLINE ;"""
        start = self.expect_word("checkpoint")
        self.expect_word("every")
        every = self.expect(TokenKind.INT, "a whole number")
        unit = self.peek()
        if not (unit.is_word("epochs") or unit.is_word("steps")):
            raise self.unexpected("`epochs` or `steps`")
        self.advance()
        self.expect(TokenKind.NEWLINE)
        return ast.CheckpointClause(
            start.span.to(unit.span), int(every.value or 0), every.span, unit.text
        )

    def parse_weights_decl(self) -> ast.WeightsDecl:
        """weights_decl = "weights" NAME "from" STRING [ "using" NAME ]
        ( ":" NEWLINE INDENT { weight_rule | config_rule } DEDENT | NEWLINE ) ;"""
        start = self.expect_word("weights")
        instance = self.expect(TokenKind.NAME, "the instance the weights are for")
        self.expect(TokenKind.FROM)
        path = self.expect(TokenKind.STRING, "a file or folder, as a string")
        using: Token | None = None
        if self.check_word("using"):
            self.advance()
            using = self.expect(TokenKind.NAME, "the name of a `@weights` map of the model")
        entries: list[ast.WeightRule | ast.ConfigRule] = []
        if self.check(TokenKind.NEWLINE) and self.peek(1).kind is not TokenKind.INDENT:
            self.advance()  # `weights net from "gpt2" using hf`: the map's rules alone
        else:
            self.expect_header_colon()
            entries = self.parse_suite(self.parse_weights_entry)
        return ast.WeightsDecl(
            self.span_from(start), instance.text, instance.span, str(path.value or ""),
            path.span, [e for e in entries if isinstance(e, ast.WeightRule)],
            [e for e in entries if isinstance(e, ast.ConfigRule)],
            using.text if using else None, using.span if using else None,
        )  # fmt: skip

    def parse_weights_entry(self) -> ast.WeightRule | ast.ConfigRule:
        if self.check_word("config"):
            return self.parse_config_rule()
        return self.parse_weight_rule()

    def parse_config_rule(self) -> ast.ConfigRule:
        """config_rule = "config" STRING "->" NAME NEWLINE ;"""
        start = self.expect_word("config")
        key = self.expect(TokenKind.STRING, "config.json's entry, as a string")
        self.expect(TokenKind.ARROW)
        name = self.expect(TokenKind.NAME, "the model's config entry")
        self.expect(TokenKind.NEWLINE)
        return ast.ConfigRule(
            start.span.to(name.span), str(key.value or ""), key.span, name.text, name.span
        )

    def parse_weight_rule(self) -> ast.WeightRule:
        """weight_rule = names "->" names [ "along" INT ] [ "transposed" ] NEWLINE
        | "ignore" STRING NEWLINE ;
        names = STRING | "[" STRING { "," STRING } [ "," ] "]" ;"""
        if self.check_word("ignore"):
            start = self.advance()
            source = self.expect(TokenKind.STRING, "the file's name to ignore, as a string")
            self.expect(TokenKind.NEWLINE)
            return ast.WeightRule(
                start.span.to(source.span), [str(source.value or "")], source.span, [], None,
                False,
            )  # fmt: skip
        example = 'a rule such as `"wte.weight" -> "wte.weight"`'
        sources, source_span = self.parse_weight_names(example)
        self.expect(TokenKind.ARROW)
        targets, target_span = self.parse_weight_names("the model's name, as a string")
        end, along, transposed = target_span, None, False
        if self.check_word("along"):
            self.advance()
            dim = self.expect(TokenKind.INT, "the dim the tensors are split or joined along")
            end, along = dim.span, int(dim.value or 0)
        if self.check_word("transposed"):
            end, transposed = self.advance().span, True
        self.expect(TokenKind.NEWLINE)
        return ast.WeightRule(
            source_span.to(end), sources, source_span, targets, target_span, transposed, along
        )

    def parse_weight_names(self, what: str) -> tuple[list[str], Span]:
        """names = STRING | "[" STRING { "," STRING } [ "," ] "]" ;"""
        if not self.check(TokenKind.LBRACKET):
            name = self.expect(TokenKind.STRING, what)
            return [str(name.value or "")], name.span
        opener = self.open_bracket(TokenKind.LBRACKET)
        names = [str(self.expect(TokenKind.STRING, "a name, as a string").value or "")]
        while self.match(TokenKind.COMMA) and not self.check(TokenKind.RBRACKET):
            names.append(str(self.expect(TokenKind.STRING, "a name, as a string").value or ""))
        close = self.expect_close(opener, TokenKind.RBRACKET, "`,` or ")
        return names, opener.span.to(close.span)

    def parse_kernel_decl(self) -> ast.KernelDecl:
        """kernel_decl = "@" "kernel" [ arguments ] [ NEWLINE ] "def" NAME params ":" block ;"""
        start = self.expect(TokenKind.AT)
        word = self.expect_decorator("kernel")
        options = None
        if self.check(TokenKind.LPAREN):
            options = self.parse_call(ast.Name(word.span, word.text))
        self.match(TokenKind.NEWLINE)
        self.expect(TokenKind.DEF)
        name = self.expect(TokenKind.NAME)
        params = self.parse_params()
        self.expect_header_colon()
        body = self.parse_block()
        return ast.KernelDecl(self.span_from(start), name.text, name.span, params, body, options)

    def expect_decorator(self, word: str) -> Token:
        """The word after `@` in a .tl file; `@model` gets a pointer to `model Name:`."""
        found = self.peek()
        if found.is_word(word):
            return self.advance()
        if found.is_word("model"):
            raise self.fail(
                Diagnostic.error(
                    "TL0101",
                    "`@model` blocks belong in .nml files",
                    Label(found.span, ""),
                    help="in a .tl file, write `model Name:`",
                )
            )
        raise self.unexpected(f"`{word}` after `@`")

    # ================================================================ .nml

    def parse_nml_model(self) -> ast.ModelDecl:
        """nml_model = "@" "model" NAME ":" NEWLINE INDENT { section } DEDENT ;"""
        start = self.expect(TokenKind.AT)
        self.expect_word("model")
        name = self.expect(TokenKind.NAME)
        self.expect_header_colon()
        model = ast.ModelDecl(start.span, name.text, name.span, "nml")
        seen: dict[str, Span] = {}
        for section, span, entries in self.parse_suite(self.parse_section):
            self.add_section(model, section, span, entries, seen)
        model.span = self.span_from(start)
        return model

    def parse_nml_weights(self) -> ast.WeightsMapDecl:
        """nml_weights = "@" "weights" NAME "for" NAME ":" NEWLINE INDENT
        { weight_rule | config_rule } DEDENT ;"""
        start = self.expect(TokenKind.AT)
        self.expect_word("weights")
        name = self.expect(TokenKind.NAME, "the map's name, such as `hf`")
        self.expect(TokenKind.FOR)
        model = self.expect(TokenKind.NAME, "the model the map fills")
        self.expect_header_colon()
        entries = self.parse_suite(self.parse_weights_entry)
        return ast.WeightsMapDecl(
            self.span_from(start), name.text, name.span, model.text, model.span,
            [e for e in entries if isinstance(e, ast.WeightRule)],
            [e for e in entries if isinstance(e, ast.ConfigRule)],
        )  # fmt: skip

    def add_section(
        self,
        model: ast.ModelDecl,
        section: str,
        span: Span,
        entries: list[ast.Node],
        seen: dict[str, Span],
    ) -> None:
        if section in seen:
            self.report(
                Diagnostic.error(
                    "TL0111",
                    f"duplicate `@{section}` section",
                    Label(span, "second section"),
                    secondary=[Label(seen[section], "first section")],
                    help="merge the two sections into one",
                )
            )
            return
        seen[section] = span
        model.config.extend(e for e in entries if isinstance(e, ast.ConfigEntry))
        model.layers.extend(e for e in entries if isinstance(e, ast.LayerDecl))
        model.methods.extend(e for e in entries if isinstance(e, ast.FnDecl))

    def parse_section(self) -> tuple[str, Span, list[ast.Node]]:
        """section = "@" ( config_section | layers_section | forward_section ) ;"""
        self.expect(TokenKind.AT, "a section such as `@config:`")
        word = self.peek()
        if word.kind is not TokenKind.NAME:
            raise self.unexpected("a section name")
        if word.text == "config":
            return "config", word.span, list(self.parse_config_section())
        if word.text == "layers":
            return "layers", word.span, list(self.parse_layers_section())
        if word.text == "forward":
            return "forward", word.span, [self.parse_forward_section()]
        guess = did_you_mean(word.text, NML_SECTIONS)
        hint = f"did you mean `@{guess}`?" if guess else None
        raise self.fail(
            Diagnostic.error(
                "TL0107",
                f"unknown section `@{word.text}`",
                Label(word.span, "unknown section"),
                notes=["the sections are `@config`, `@layers` and `@forward`"],
                help=hint,
            )
        )

    def parse_config_section(self) -> list[ast.ConfigEntry]:
        """config_section = "config" ":" NEWLINE INDENT { config_entry } DEDENT ;"""
        self.expect_word("config")
        self.expect_header_colon()
        return self.parse_suite(self.parse_config_entry)

    def parse_config_entry(self) -> ast.ConfigEntry:
        """config_entry = NAME "=" config_expr NEWLINE ;"""
        name = self.expect(TokenKind.NAME, "a config entry such as `d_model = 512`")
        self.expect(TokenKind.EQ)
        value = self.parse_expression()
        self.expect(TokenKind.NEWLINE)
        bad = _not_config_expr(value)
        if bad is not None:
            self.report(
                Diagnostic.error(
                    "TL0108",
                    "a config value must be a literal or an expression of earlier entries",
                    Label(bad.span, "not known when the model is built"),
                    notes=[
                        "config values are numbers, strings, `true`, `false`, `none`, lists "
                        "of them, and arithmetic on them and on earlier entries (`+ - * / % "
                        f"**`, {', '.join(f'`{f}`' for f in CONFIG_CALLS)})"
                    ],
                )
            )
        return ast.ConfigEntry(name.span.to(value.span), name.text, name.span, value)

    def parse_layers_section(self) -> list[ast.LayerDecl]:
        """layers_section = "layers" ":" NEWLINE INDENT { layer_item } DEDENT ;"""
        self.expect_word("layers")
        self.expect_header_colon()
        return [decl for item in self.parse_suite(self.parse_layer_item) for decl in item]

    def parse_layer_item(self) -> list[ast.LayerDecl]:
        """layer_item = layer_entry
        | "if" expression ":" NEWLINE INDENT { layer_item } DEDENT
          [ "else" ":" NEWLINE INDENT { layer_item } DEDENT ] ;"""
        if not self.check(TokenKind.IF):
            return [self.parse_layer_entry()]
        self.expect(TokenKind.IF)
        condition = self.parse_expression()
        self.expect_header_colon()
        taken = self._conditional_layers(condition)
        if not self.match(TokenKind.ELSE):
            return taken
        self.expect_header_colon()
        negated = ast.Unary(condition.span, "not", condition)
        return taken + self._conditional_layers(negated)

    def _conditional_layers(self, condition: ast.Expr) -> list[ast.LayerDecl]:
        """The layers of one side of an `if` in `@layers`, each built when `condition` holds
        (and the conditions of any `if` inside it)."""
        decls = [d for item in self.parse_suite(self.parse_layer_item) for d in item]
        for decl in decls:
            inner = decl.condition
            decl.condition = (
                condition
                if inner is None
                else ast.Binary(condition.span, "and", condition, inner, condition.span)
            )
        return decls

    def parse_layer_entry(self) -> ast.LayerDecl:
        """layer_entry = NAME "=" expression NEWLINE ;"""
        name = self.expect(TokenKind.NAME, "a layer such as `fc = Linear(4, 2)`")
        self.expect(TokenKind.EQ)
        ctor = self.parse_expression()
        self.expect(TokenKind.NEWLINE)
        return ast.LayerDecl(name.span.to(ctor.span), name.text, name.span, ctor)

    def parse_forward_section(self) -> ast.FnDecl:
        """forward_section = "forward" params [ "->" type ] ":" block ;"""
        name = self.expect_word("forward")
        params = self.parse_params()
        return_type = self.parse_type() if self.match(TokenKind.ARROW) else None
        self.expect_header_colon()
        body = self.parse_block()
        return ast.FnDecl(self.span_from(name), "forward", name.span, params, return_type, body)

    # ================================================================ statements

    def parse_block(self) -> list[ast.Stmt]:
        """block = NEWLINE INDENT statement { statement } DEDENT ;"""
        return self.parse_suite(self.parse_statement)

    def parse_statement(self) -> ast.Stmt:
        """statement = let_stmt | return_stmt | if_stmt | for_stmt | simple_stmt ;"""
        if self.check(TokenKind.LET):
            return self.parse_let_stmt()
        if self.check(TokenKind.RETURN):
            return self.parse_return_stmt()
        if self.check(TokenKind.IF):
            return self.parse_if_stmt()
        if self.check(TokenKind.FOR):
            return self.parse_for_stmt()
        return self.parse_simple_stmt()

    def parse_let_stmt(self) -> ast.LetStmt | ast.LetTupleStmt:
        """let_stmt = "let" ( NAME | let_pattern ) "=" expression NEWLINE ;"""
        start = self.expect(TokenKind.LET)
        if self.check(TokenKind.LPAREN):
            targets = self.parse_let_pattern(())
            self.expect(TokenKind.EQ)
            value = self.parse_expression()
            self.expect(TokenKind.NEWLINE)
            names = [name for name, _ in targets]
            paths = [path for _, path in targets]
            nested = any(len(path) > 1 for path in paths)
            return ast.LetTupleStmt(
                start.span.to(value.span),
                [n.text for n in names],
                [n.span for n in names],
                value,
                paths if nested else None,
            )
        name = self.expect(TokenKind.NAME)
        self.expect(TokenKind.EQ)
        value = self.parse_expression()
        self.expect(TokenKind.NEWLINE)
        return ast.LetStmt(start.span.to(value.span), name.text, name.span, value)

    def parse_let_pattern(self, at: tuple[int, ...]) -> list[tuple[Token, tuple[int, ...]]]:
        """let_pattern = "(" ( NAME | let_pattern ) { "," ( NAME | let_pattern ) } [ "," ] ")" ;

        Each name with its place in the value: `(out, (h, c))` is out (0,), h (1, 0), c (1, 1)."""
        opener = self.open_bracket(TokenKind.LPAREN)
        targets: list[tuple[Token, tuple[int, ...]]] = []
        index = 0
        while not self.check(TokenKind.RPAREN):
            if self.check(TokenKind.LPAREN):
                targets += self.parse_let_pattern((*at, index))
            else:
                targets.append((self.expect(TokenKind.NAME, "a name"), (*at, index)))
            index += 1
            if not self.match(TokenKind.COMMA):
                break
        self.expect_close(opener, TokenKind.RPAREN, "`,` or ")
        return targets

    def parse_return_stmt(self) -> ast.ReturnStmt:
        """return_stmt = "return" [ expression ] NEWLINE ;"""
        start = self.expect(TokenKind.RETURN)
        value = None if self.check(TokenKind.NEWLINE) else self.parse_expression()
        self.expect(TokenKind.NEWLINE)
        return ast.ReturnStmt(start.span.to(value.span if value else start.span), value)

    def parse_if_stmt(self) -> ast.IfStmt:
        """if_stmt = "if" expression ":" block { "elif" expression ":" block }
        [ "else" ":" block ] ;"""
        start = self.expect(TokenKind.IF)
        branches = [self.parse_branch()]
        while self.match(TokenKind.ELIF):
            branches.append(self.parse_branch())
        orelse: list[ast.Stmt] | None = None
        if self.match(TokenKind.ELSE):
            self.expect_header_colon()
            orelse = self.parse_block()
        return ast.IfStmt(self.span_from(start), branches, orelse)

    def parse_branch(self) -> tuple[ast.Expr, list[ast.Stmt]]:
        condition = self.parse_expression()
        self.expect_header_colon()
        return condition, self.parse_block()

    def parse_for_stmt(self) -> ast.ForStmt:
        """for_stmt = "for" NAME "in" expression ":" block ;"""
        start = self.expect(TokenKind.FOR)
        var = self.expect(TokenKind.NAME, "a loop variable")
        self.expect(TokenKind.IN)
        iterable = self.parse_expression()
        self.expect_header_colon()
        body = self.parse_block()
        return ast.ForStmt(self.span_from(start), var.text, var.span, iterable, body)

    def parse_simple_stmt(self) -> ast.Stmt:
        """simple_stmt = expression [ ( "=" | "+=" | "-=" | "*=" | "/=" ) expression ] NEWLINE ;"""
        target = self.parse_expression()
        assign = self.match(TokenKind.EQ, *AUGMENTED)
        if assign is None:
            self.expect(TokenKind.NEWLINE, "end of line")
            return ast.ExprStmt(target.span, target)
        value = self.parse_expression()
        self.expect(TokenKind.NEWLINE, "end of line")
        if not isinstance(target, ast.Name | ast.Attribute | ast.Index):
            self.report(
                Diagnostic.error(
                    "TL0110",
                    "cannot assign to this expression",
                    Label(target.span, ""),
                    help="assign to a name, an attribute or an index; "
                    "write `let name = ...` for a new variable",
                )
            )
        return ast.AssignStmt(target.span.to(value.span), target, value, assign.text)

    # ================================================================ expressions

    def parse_expression(self) -> ast.Expr:
        """expression = pipe [ "if" pipe "else" expression ] ;"""
        with self.nested():
            expr = self.parse_pipe()
            if not self.match(TokenKind.IF):
                return expr
            test = self.parse_pipe()
            self.expect(TokenKind.ELSE)
            orelse = self.parse_expression()
            return ast.IfExp(expr.span.to(orelse.span), test, expr, orelse)

    def parse_pipe(self) -> ast.Expr:
        """pipe = or_expr { "|>" or_expr } ;"""
        expr = self.parse_or()
        while self.match(TokenKind.PIPE):
            stage = self.parse_or()
            if not _is_pipe_stage(stage):
                self.report(
                    Diagnostic.error(
                        "TL0109",
                        "a pipe stage must be a name, a call or a member",
                        Label(stage.span, "not a pipe stage"),
                        help="write a function (`relu`), a call (`dropout(0.2)`) "
                        "or a layer (`self.fc1`)",
                    )
                )
            expr = ast.Pipe(expr.span.to(stage.span), expr, stage)
        return expr

    def parse_or(self) -> ast.Expr:
        """or_expr = and_expr { "or" and_expr } ;"""
        expr = self.parse_and()
        while op := self.match(TokenKind.OR):
            right = self.parse_and()
            expr = ast.Binary(expr.span.to(right.span), "or", expr, right, op.span)
        return expr

    def parse_and(self) -> ast.Expr:
        """and_expr = not_expr { "and" not_expr } ;"""
        expr = self.parse_not()
        while op := self.match(TokenKind.AND):
            right = self.parse_not()
            expr = ast.Binary(expr.span.to(right.span), "and", expr, right, op.span)
        return expr

    def parse_not(self) -> ast.Expr:
        """not_expr = "not" not_expr | comparison ;"""
        op = self.match(TokenKind.NOT)
        if op is None:
            return self.parse_comparison()
        with self.nested():
            operand = self.parse_not()
        return ast.Unary(op.span.to(operand.span), "not", operand)

    def parse_comparison(self) -> ast.Expr:
        """comparison = sum [ comp_op sum ] ;"""
        expr = self.parse_sum()
        chained = False
        while op := self.match(*_COMPARISONS):
            if chained:
                self.report(
                    Diagnostic.error(
                        "TL0112",
                        "comparisons cannot be chained",
                        Label(op.span, ""),
                        help="write `a < b and b < c`",
                    )
                )
            right = self.parse_sum()
            expr = ast.Binary(expr.span.to(right.span), _COMPARISONS[op.kind], expr, right, op.span)
            chained = True
        return expr

    def parse_sum(self) -> ast.Expr:
        """sum = term { ( "+" | "-" ) term } ;"""
        expr = self.parse_term()
        while op := self.match(*_SUM_OPS):
            right = self.parse_term()
            expr = ast.Binary(expr.span.to(right.span), _SUM_OPS[op.kind], expr, right, op.span)
        return expr

    def parse_term(self) -> ast.Expr:
        """term = unary { ( "*" | "/" | "%" | "@" ) unary } ;"""
        expr = self.parse_unary()
        while op := self.match(*_TERM_OPS):
            right = self.parse_unary()
            expr = ast.Binary(expr.span.to(right.span), _TERM_OPS[op.kind], expr, right, op.span)
        return expr

    def parse_unary(self) -> ast.Expr:
        """unary = ( "-" | "+" ) unary | power ;"""
        op = self.match(*_UNARY_OPS)
        if op is None:
            return self.parse_power()
        with self.nested():
            operand = self.parse_unary()
        span = op.span.to(operand.span)
        # A negative number is one literal, so `-1` reads as IntLit(-1) everywhere.
        if op.kind is TokenKind.MINUS and isinstance(operand, ast.IntLit):
            return ast.IntLit(span, -operand.value)
        if op.kind is TokenKind.MINUS and isinstance(operand, ast.FloatLit):
            return ast.FloatLit(span, -operand.value)
        return ast.Unary(span, _UNARY_OPS[op.kind], operand)

    def parse_power(self) -> ast.Expr:
        """power = postfix [ "**" unary ] ;"""
        base = self.parse_postfix()
        op = self.match(TokenKind.DOUBLE_STAR)
        if op is None:
            return base
        with self.nested():
            exponent = self.parse_unary()
        return ast.Binary(base.span.to(exponent.span), "**", base, exponent, op.span)

    def parse_postfix(self) -> ast.Expr:
        """postfix = primary { arguments | "." NAME | "[" subscripts "]" } ;"""
        expr = self.parse_primary()
        while True:
            if self.check(TokenKind.LPAREN):
                expr = self.parse_call(expr)
            elif self.match(TokenKind.DOT):
                attr = self.expect(TokenKind.NAME, "an attribute name")
                expr = ast.Attribute(expr.span.to(attr.span), expr, attr.text, attr.span)
            elif self.check(TokenKind.LBRACKET):
                expr = self.parse_index(expr)
            else:
                return expr

    def parse_call(self, func: ast.Expr) -> ast.Call:
        """arguments = "(" [ argument { "," argument } [ "," ] ] ")" ;"""
        opener = self.open_bracket(TokenKind.LPAREN)
        call = ast.Call(func.span, func)
        while not self.check(TokenKind.RPAREN):
            self.parse_argument(call)
            if not self.match(TokenKind.COMMA):
                break
        self.expect_close(opener, TokenKind.RPAREN, "`,` or ")
        call.span = self.span_from(func.span)
        return call

    def parse_argument(self, call: ast.Call) -> None:
        """argument = [ NAME "=" ] expression ;"""
        if self.check(TokenKind.NAME) and self.peek(1).kind is TokenKind.EQ:
            name = self.advance()
            self.advance()
            value = self.parse_expression()
            self.check_repeated_keyword(call, name)
            call.kwargs.append(ast.Keyword(name.span.to(value.span), name.text, value))
            return
        value = self.parse_expression()
        if call.kwargs:
            self.report(
                Diagnostic.error(
                    "TL0113",
                    "positional argument after keyword argument",
                    Label(value.span, ""),
                    help="put positional arguments first",
                )
            )
        call.args.append(value)

    def check_repeated_keyword(self, call: ast.Call, name: Token) -> None:
        first = next((k for k in call.kwargs if k.name == name.text), None)
        if first is None:
            return
        self.report(
            Diagnostic.error(
                "TL0114",
                f"keyword argument `{name.text}` repeated",
                Label(name.span, "given again here"),
                secondary=[Label(first.span, "first given here")],
                help="keep one of them",
            )
        )

    def parse_index(self, value: ast.Expr) -> ast.Index:
        """index = "[" subscript { "," subscript } [ "," ] "]" ;"""
        opener = self.open_bracket(TokenKind.LBRACKET)
        indices: list[ast.Expr] = []
        while not self.check(TokenKind.RBRACKET) or not indices:
            indices.append(self.parse_subscript())
            if not self.match(TokenKind.COMMA):
                break
        self.expect_close(opener, TokenKind.RBRACKET, "`,` or ")
        return ast.Index(self.span_from(value.span), value, indices)

    def parse_subscript(self) -> ast.Expr:
        """subscript = "..." | [ expression ] ":" [ expression ] [ ":" [ expression ] ]
        | expression ;"""
        start = self.peek()
        if self.match(TokenKind.ELLIPSIS):
            return ast.EllipsisLit(start.span)
        lower = None if self.check(TokenKind.COLON) else self.parse_expression()
        if not self.match(TokenKind.COLON):
            assert lower is not None
            return lower
        upper = self.parse_slice_part()
        step = self.parse_slice_part() if self.match(TokenKind.COLON) else None
        return ast.Slice(self.span_from(start), lower, upper, step)

    def parse_slice_part(self) -> ast.Expr | None:
        if self.check(TokenKind.COLON, TokenKind.COMMA, TokenKind.RBRACKET):
            return None
        return self.parse_expression()

    def parse_primary(self) -> ast.Expr:
        """primary = NAME | INT | FLOAT | STRING | "true" | "false" | "none"
        | list | parenthesised ;"""
        token = self.peek()
        literal = _literal(token)
        if literal is not None:
            self.advance()
            return literal
        if token.kind is TokenKind.LBRACKET:
            return self.parse_list()
        if token.kind is TokenKind.LPAREN:
            return self.parse_parenthesised()
        raise self.unexpected("an expression")

    def parse_list(self) -> ast.ListExpr | ast.ListComp:
        """list = "[" [ expression { "," expression } [ "," ] ] "]"
        | "[" expression "for" NAME "in" expression "]" ;"""
        opener = self.open_bracket(TokenKind.LBRACKET)
        if not self.check(TokenKind.RBRACKET):
            first = self.parse_expression()
            if self.match(TokenKind.FOR):
                var = self.expect(TokenKind.NAME, "a loop variable")
                self.expect(TokenKind.IN)
                iterable = self.parse_expression()
                self.expect_close(opener, TokenKind.RBRACKET, "")
                return ast.ListComp(self.span_from(opener), first, var.text, var.span, iterable)
            elts = [first]
            if self.match(TokenKind.COMMA):
                more, _ = self.parse_elements(opener, TokenKind.RBRACKET)
                elts += more
            else:
                self.expect_close(opener, TokenKind.RBRACKET, "`,` or ")
            return ast.ListExpr(self.span_from(opener), elts)
        elts, _ = self.parse_elements(opener, TokenKind.RBRACKET)
        return ast.ListExpr(self.span_from(opener), elts)

    def parse_parenthesised(self) -> ast.Expr:
        """parenthesised = "(" [ expression { "," expression } [ "," ] ] ")" ;

        `(x)` is `x`; `()`, `(x,)` and `(x, y)` are tuples."""
        opener = self.open_bracket(TokenKind.LPAREN)
        elts, commas = self.parse_elements(opener, TokenKind.RPAREN)
        if len(elts) == 1 and not commas:
            return elts[0]
        return ast.TupleExpr(self.span_from(opener), elts)

    def parse_elements(self, opener: Token, closing: TokenKind) -> tuple[list[ast.Expr], int]:
        elts: list[ast.Expr] = []
        commas = 0
        while not self.check(closing):
            elts.append(self.parse_expression())
            if not self.match(TokenKind.COMMA):
                break
            commas += 1
        self.expect_close(opener, closing, "`,` or ")
        return elts, commas


def _literal(token: Token) -> ast.Expr | None:
    match token.kind:
        case TokenKind.NAME:
            return ast.Name(token.span, token.text)
        case TokenKind.INT:
            return ast.IntLit(token.span, int(token.value or 0))
        case TokenKind.FLOAT:
            return ast.FloatLit(token.span, float(token.value or 0.0))
        case TokenKind.STRING:
            return ast.StrLit(token.span, str(token.value))
        case TokenKind.TRUE | TokenKind.FALSE:
            return ast.BoolLit(token.span, token.kind is TokenKind.TRUE)
        case TokenKind.NONE:
            return ast.NoneLit(token.span)
        case _:
            return None


def _kind_name(kind: TokenKind) -> str:
    return _KIND_NAMES.get(kind, f"`{kind.value}`")


CONFIG_CALLS = ("floordiv", "ceil", "floor", "round", "min", "max", "sqrt", "exp", "log")
"""The functions a config expression may call (model_env evaluates them)."""
_CONFIG_OPERATORS = ("+", "-", "*", "/", "%", "**")
_CONFIG_CONDITIONS = ("==", "!=", "<", "<=", ">", ">=", "and", "or")


def _not_config_expr(expr: ast.Expr) -> ast.Expr | None:
    """The part of a config value that is not a literal, a name or arithmetic on them
    (`dim / n_heads`, `floordiv(d, 3)`); None when it all is."""
    match expr:
        case ast.Name() | ast.IntLit() | ast.FloatLit() | ast.StrLit() | ast.BoolLit():
            return None
        case ast.NoneLit():
            return None
        case ast.Unary(op="-" | "+", operand=operand):
            return _not_config_expr(operand)
        case ast.Binary(op=op, left=left, right=right) if op in _CONFIG_OPERATORS:
            return _not_config_expr(left) or _not_config_expr(right)
        case ast.ListExpr(elts=elts) | ast.TupleExpr(elts=elts):
            return next((b for e in elts if (b := _not_config_expr(e)) is not None), None)
        case ast.Binary(op=op, left=left, right=right) if op in _CONFIG_CONDITIONS:
            return _not_config_expr(left) or _not_config_expr(right)
        case ast.Unary(op="not", operand=operand):
            return _not_config_expr(operand)
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _not_config_expr(test) or _not_config_expr(body) or _not_config_expr(orelse)
        case ast.Index(value=value, indices=[index]) if not isinstance(index, ast.Slice):
            return _not_config_expr(value) or _not_config_expr(index)
        case ast.Call(func=ast.Name(id=name), args=args, kwargs=[]) if name in CONFIG_CALLS:
            return next((b for a in args if (b := _not_config_expr(a)) is not None), None)
        case _:
            return expr


def _is_pipe_stage(expr: ast.Expr) -> bool:
    if isinstance(expr, ast.Call):
        expr = expr.func
    return isinstance(expr, ast.Name | ast.Attribute)
