"""Pygments lexers for .tl scripts and .nml models (registered as `tensorloom` and `nml`).

    $ pygmentize -l tensorloom examples/mnist.tl
    $ pygmentize -l nml -f html examples/transformer.nml

pyproject.toml registers both under the `pygments.lexers` entry point, so
Pygments (and Sphinx, MkDocs, ...) find them once TensorLoom is installed. The
keywords come from the lexer's own table (frontend/tokens.py), plus the words
the parser reads as keywords only where a declaration or a line starts (`model Name`,
`layer name`, `train net on`, `checkpoint every N epochs`, a train block's `step f with`,
`group name =`, `carry name`, `from`/`until epoch N`, `weights net from`, `@weights hf for
Net`, `using hf`); a capitalised
name before `(` is a layer or model constructor, a lower-case one a function.
editors/vscode/syntaxes/tensorloom.tmLanguage.json is the same grammar for
TextMate editors.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from tensorloom.frontend.tokens import KEYWORDS

CONSTANTS = ("true", "false", "none")
DECLARATIONS = ("fn", "def")
SECTIONS = ("@model", "@config", "@layers", "@forward", "@kernel")
IDENT = r"([A-Za-z_]\w*)"
CHECKPOINT = r"(checkpoint)(\s+)(every)(\s+)(\d+)(\s+)(epochs|steps)\b"

Rules = list[tuple[object, ...]]


def _rules() -> dict[str, Rules]:
    plain = sorted(k for k in KEYWORDS if k not in CONSTANTS and k not in DECLARATIONS)
    return {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*", Comment.Multiline, "comment"),
            (r'"', String.Double, "string"),
            (
                r"(@weights)(\s+)([A-Za-z_]\w*)(\s+)(for)(\s+)([A-Za-z_]\w*)",
                bygroups(
                    Name.Decorator, Whitespace, Name, Whitespace, Keyword, Whitespace, Name.Class
                ),
            ),
            (words(SECTIONS, suffix=r"\b"), Name.Decorator),
            (r"(model)(\s+)([A-Za-z_]\w*)", bygroups(Keyword.Declaration, Whitespace, Name.Class)),
            (
                r"(fn|def)(\s+)([A-Za-z_]\w*)",
                bygroups(Keyword.Declaration, Whitespace, Name.Function),
            ),
            (
                r"(from|until)(\s+)(epoch)(\s+)(\d+)\b",  # a step's epochs, before `from`
                bygroups(Keyword, Whitespace, Keyword, Whitespace, Number.Integer),
            ),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(tuple(plain), suffix=r"\b"), Keyword),
            (
                r"(layer)(\s+)([A-Za-z_]\w*)",
                bygroups(Keyword.Declaration, Whitespace, Name.Variable),
            ),
            (
                r"(train)(\s+)([A-Za-z_]\w*)(\s+)(on)\b",
                bygroups(Keyword, Whitespace, Name, Whitespace, Keyword),
            ),
            (r"(train)(?=\s+\()", Keyword),  # `train (G, D) on data:`
            (r"(on)(?=\s+[A-Za-z_]\w*\s*:)", Keyword),
            (
                r"(weights)(\s+)([A-Za-z_]\w*)(\s+)(from)\b",
                bygroups(Keyword.Declaration, Whitespace, Name, Whitespace, Keyword),
            ),
            (r"(using)(\s+)([A-Za-z_]\w*)", bygroups(Keyword, Whitespace, Name)),
            (
                r"(step)(\s+)([A-Za-z_]\w*)(\s+)(with)\b",
                bygroups(Keyword, Whitespace, Name.Function, Whitespace, Keyword),
            ),
            (
                r"(group|carry)(\s+)([A-Za-z_]\w*)(?=\s*(=|//|$))",
                bygroups(Keyword, Whitespace, Name.Variable),
            ),
            (r"\b(ignore|config)(?=\s+[\"'])", Keyword),
            (r"\b(transposed)(?=\s*(//.*)?$)", Keyword),
            (r"(along)(\s+)(\d+)\b", bygroups(Keyword, Whitespace, Number.Integer)),
            (
                r"(checkpoint)(\s+)(every)(\s+)(\d+)(\s+)(epochs|steps)\b",
                bygroups(
                    Keyword, Whitespace, Keyword, Whitespace, Number.Integer, Whitespace, Keyword
                ),
            ),
            (r"\bself\b", Name.Builtin.Pseudo),
            (r"\d+\.\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|\d+[eE][+-]?\d+", Number.Float),
            (r"\d+", Number.Integer),
            (r"[A-Z]\w*(?=\()", Name.Class),
            (r"[a-z_]\w*(?=\()", Name.Function),
            (r"[A-Za-z_]\w*", Name),
            (r"\|>|->|\*\*|==|!=|<=|>=|\+=|-=|\*=|/=|[-+*/%<>=@]", Operator),
            (r"[()\[\]{}:,.]", Punctuation),
            (r".", Text),
        ],
        "comment": [
            (r"[^*]+", Comment.Multiline),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"\*", Comment.Multiline),
        ],
        "string": [
            (r'\\[ntr0\\\'"]', String.Escape),
            (r'[^"\\\n]+', String.Double),
            (r'"', String.Double, "#pop"),
            (r"\n", String.Double, "#pop"),  # unterminated: TL0001; stop at the line's end
            (r"\\", String.Double),
        ],
    }


class TensorLoomLexer(RegexLexer):
    """TensorLoom training scripts (.tl)."""

    name = "TensorLoom"
    aliases = ("tensorloom", "tl")
    filenames = ("*.tl",)
    mimetypes = ("text/x-tensorloom",)
    tokens: ClassVar[dict[str, Rules]] = _rules()  # type: ignore[assignment]


class NmlLexer(TensorLoomLexer):
    """TensorLoom model blueprints (.nml): the same tokens, `@model` sections."""

    name = "TensorLoom NML"
    aliases = ("nml",)
    filenames = ("*.nml",)
    mimetypes = ("text/x-tensorloom-nml",)


__all__ = ["NmlLexer", "TensorLoomLexer"]
