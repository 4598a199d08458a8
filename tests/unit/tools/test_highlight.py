"""Highlighting: the Pygments lexers (found through their entry point) and the TextMate grammar."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation

ROOT = Path(__file__).resolve().parents[3]
VSCODE = ROOT / "editors" / "vscode"
SOURCES = sorted(ROOT.glob("examples/**/*.tl")) + sorted(ROOT.glob("examples/**/*.nml"))


def test_lexers_are_registered_by_entry_point() -> None:
    assert type(get_lexer_by_name("tensorloom")).__name__ == "TensorLoomLexer"
    assert type(get_lexer_for_filename("model.nml")).__name__ == "NmlLexer"
    assert type(get_lexer_for_filename("train.tl")).__name__ == "TensorLoomLexer"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_example_lexes_without_errors(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tokens = list(get_lexer_for_filename(path.name).get_tokens(text))
    assert [value for kind, value in tokens if kind is Error] == []
    assert "".join(value for _, value in tokens).rstrip("\n") == text.rstrip("\n")


def _kinds(source: str) -> list[tuple[Any, str]]:
    lexer = get_lexer_by_name("tensorloom")
    return [(kind, value) for kind, value in lexer.get_tokens(source) if value.strip()]


def test_tokens_of_a_model_and_a_train_block() -> None:
    source = (
        "model Net:  // a model\n"
        "    layer fc = Linear(4, 2)\n"
        "    fn forward(self, x):\n"
        "        return x |> self.fc |> relu\n"
        "train net on data:\n"
        "    lr = 1e-3\n"
        "    checkpoint every 5 epochs\n"
    )
    kinds = _kinds(source)
    assert kinds[:4] == [
        (Keyword.Declaration, "model"),
        (Name.Class, "Net"),
        (kinds[2][0], ":"),
        (Comment.Single, "// a model"),
    ]
    assert (Keyword.Declaration, "layer") in kinds and (Name.Variable, "fc") in kinds
    assert (Name.Class, "Linear") in kinds and (Name.Function, "forward") in kinds
    assert (Operator, "|>") in kinds and (Name.Builtin.Pseudo, "self") in kinds
    train = kinds.index((Keyword, "train"))
    assert kinds[train : train + 3] == [(Keyword, "train"), (Name, "net"), (Keyword, "on")]
    assert (Number.Float, "1e-3") in kinds
    assert kinds[-4:] == [
        (Keyword, "checkpoint"),
        (Keyword, "every"),
        (Number.Integer, "5"),
        (Keyword, "epochs"),
    ]


# ------------------------------------------------------------------- TextMate


def _grammar() -> dict[str, Any]:
    return json.loads((VSCODE / "syntaxes" / "tensorloom.tmLanguage.json").read_text())


def _patterns(grammar: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The rules of `node`, includes expanded, in order."""
    rules: list[dict[str, Any]] = []
    for rule in node.get("patterns", []):
        if "include" in rule:
            rules += _patterns(grammar, grammar["repository"][rule["include"].lstrip("#")])
        else:
            rules.append(rule)
    return rules


def _scopes(line: str) -> list[tuple[str, str]]:
    """(text, scope) pairs of a line, scanned as TextMate does: leftmost match, then rule order."""
    grammar = _grammar()
    rules = _patterns(grammar, grammar)
    found: list[tuple[str, str]] = []
    pos = 0
    while pos < len(line):
        best = None
        for rule in rules:
            match = re.compile(rule.get("match") or rule["begin"]).search(line, pos)
            if (
                match
                and match.end() > match.start()
                and (best is None or match.start() < best[0].start())
            ):
                best = (match, rule)
        if best is None:
            break
        match, rule = best
        end = match.end()
        if "begin" in rule:
            close = re.compile(rule["end"]).search(line, end)
            end = close.end() if close else len(line)
            found.append((line[match.start() : end], rule["name"]))
        elif "captures" in rule:
            found += [
                (match.group(int(i)), c["name"])
                for i, c in rule["captures"].items()
                if match.group(int(i))
            ]
        else:
            found.append((match.group(), rule["name"]))
        pos = end
    return found


def test_textmate_regexes_compile() -> None:
    grammar = _grammar()
    for rule in _patterns(grammar, grammar):
        for key in ("match", "begin", "end"):
            if key in rule:
                re.compile(rule[key])


def test_textmate_scopes_of_a_model() -> None:
    assert _scopes("model Classifier:  // note") == [
        ("model", "storage.type.model.tensorloom"),
        ("Classifier", "entity.name.type.class.tensorloom"),
        ("// note", "comment.line.double-slash.tensorloom"),
    ]
    assert _scopes("    layer fc1 = Linear(64, 256)") == [
        ("layer", "storage.type.layer.tensorloom"),
        ("fc1", "variable.other.member.tensorloom"),
        ("=", "keyword.operator.tensorloom"),
        ("Linear", "support.class.constructor.tensorloom"),
        ("64", "constant.numeric.integer.tensorloom"),
        ("256", "constant.numeric.integer.tensorloom"),
    ]
    assert _scopes('let data = load_dataset("digits", flatten=true)') == [
        ("let", "storage.type.tensorloom"),
        ("=", "keyword.operator.tensorloom"),
        ("load_dataset", "support.function.tensorloom"),
        ('"digits"', "string.quoted.double.tensorloom"),
        ("=", "keyword.operator.tensorloom"),
        ("true", "constant.language.tensorloom"),
    ]
    assert ("|>", "keyword.operator.pipe.tensorloom") in _scopes("return x |> self.fc1")
    assert _scopes("@model Block:")[:2] == [
        ("@model", "storage.type.model.tensorloom"),
        ("Block", "entity.name.type.class.tensorloom"),
    ]


def test_vscode_extension_files_are_consistent() -> None:
    package = json.loads((VSCODE / "package.json").read_text())
    assert (VSCODE / package["main"]).is_file()
    extensions = {e for lang in package["contributes"]["languages"] for e in lang["extensions"]}
    assert extensions == {".tl", ".nml"}
    for language in package["contributes"]["languages"]:
        json.loads((VSCODE / language["configuration"]).read_text())
    for grammar in package["contributes"]["grammars"]:
        assert (
            json.loads((VSCODE / grammar["path"]).read_text())["scopeName"] == grammar["scopeName"]
        )
    default = package["contributes"]["configuration"]["properties"]["tensorloom.server.command"]
    assert default["default"] == ["tlc", "lsp"]
    assert "vscode-languageclient" in package["dependencies"]


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_vscode_client_script_parses() -> None:
    done = subprocess.run(
        ["node", "--check", str(VSCODE / "src" / "extension.js")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


# ------------------------------------------------- the newer lines, in every grammar

TRAIN_LINES = """\
train (net, probe) on data:
    group head = params(net.decoder)
    step lm_loss with (SGD(head, lr=1.0), Adam(rest)) from epoch 2 until epoch 9
    carry h = net.h0
    target = label
"""


def test_tokens_of_step_group_carry_and_index_assignments() -> None:
    kinds = _kinds(TRAIN_LINES + "fn f(x):\n    x[x > 0.0] = 0.0\n    x[:, 0] += 1.0\n")

    def after(token: tuple[Any, str], count: int) -> list[tuple[Any, str]]:
        start = kinds.index(token)
        return kinds[start : start + count]

    assert kinds[:2] == [(Keyword, "train"), (Punctuation, "(")]
    assert (Keyword, "on") in kinds
    assert after((Keyword, "group"), 2) == [(Keyword, "group"), (Name.Variable, "head")]
    assert after((Keyword, "step"), 3) == [
        (Keyword, "step"), (Name.Function, "lm_loss"), (Keyword, "with"),
    ]  # fmt: skip
    assert after((Keyword, "from"), 3) == [
        (Keyword, "from"), (Keyword, "epoch"), (Number.Integer, "2"),
    ]  # fmt: skip
    assert after((Keyword, "until"), 3) == [
        (Keyword, "until"), (Keyword, "epoch"), (Number.Integer, "9"),
    ]  # fmt: skip
    assert after((Keyword, "carry"), 2) == [(Keyword, "carry"), (Name.Variable, "h")]
    assert (Operator, "+=") in kinds
    assert (Name.Function, "step") in _kinds("lr_schedule = step(step_size=2)\n")


def test_tokens_of_weights_maps() -> None:
    kinds = _kinds('@weights hf for Net:\n    ignore "x"\nweights net from "w" using hf\n')
    assert kinds[:4] == [
        (Name.Decorator, "@weights"), (Name, "hf"), (Keyword, "for"), (Name.Class, "Net"),
    ]  # fmt: skip
    assert (Keyword, "ignore") in kinds
    line = kinds.index((Keyword.Declaration, "weights"))
    assert kinds[line : line + 3] == [
        (Keyword.Declaration, "weights"), (Name, "net"), (Keyword, "from"),
    ]  # fmt: skip
    assert kinds[-2:] == [(Keyword, "using"), (Name, "hf")]


def test_textmate_scopes_of_the_newer_lines() -> None:
    train = "keyword.other.train.tensorloom"
    assert _scopes("train (net, probe) on data:")[:3] == [
        ("train", train), ("(net, probe)", "variable.other.tensorloom"), ("on", train),
    ]  # fmt: skip
    assert _scopes("    group head = params(net.decoder)")[:2] == [
        ("group", train), ("head", "variable.other.group.tensorloom"),
    ]  # fmt: skip
    step = _scopes("    step lm_loss with Adam(rest) from epoch 2 until epoch 9")
    assert step[:3] == [("step", train), ("lm_loss", "entity.name.function.tensorloom"),
                        ("with", train)]  # fmt: skip
    assert step[-3:] == [("until", train), ("epoch", train),
                         ("9", "constant.numeric.integer.tensorloom")]  # fmt: skip
    assert _scopes("    carry h = net.h0")[:2] == [
        ("carry", train), ("h", "variable.other.carry.tensorloom"),
    ]  # fmt: skip
    assert ("+=", "keyword.operator.assignment.augmented.tensorloom") in _scopes(
        "    x[:, 0] += 1.0"
    )
    weights = "keyword.other.weights.tensorloom"
    assert _scopes("@weights hf for Net:") == [
        ("@weights", "storage.type.weights.tensorloom"),
        ("hf", "entity.name.type.weights.tensorloom"),
        ("for", weights),
        ("Net", "entity.name.type.class.tensorloom"),
    ]
    assert _scopes('weights net from "w" using hf') == [
        ("weights", "storage.type.weights.tensorloom"),
        ("net", "variable.other.tensorloom"),
        ("from", weights),
        ('"w"', "string.quoted.double.tensorloom"),
        ("using", weights),
        ("hf", "entity.name.type.weights.tensorloom"),
    ]
    assert _scopes('    "a.weight" -> "b.weight" along 0 transposed')[-3:] == [
        ("along", weights), ("0", "constant.numeric.integer.tensorloom"), ("transposed", weights),
    ]  # fmt: skip
    assert ("with", "keyword.other.tensorloom") in _scopes("kernel_call() with x")


NEWER_PROGRAM = (
    TRAIN_LINES + 'weights net from "w" using hf\n@weights hf for Net:\n    x[:, 0] += 1.0\n'
)
# (line, word) of each word whose colour the editors' own grammars give, and its column
NEWER_WORDS = [
    (line, word, NEWER_PROGRAM.splitlines()[line - 1].index(word) + 1)
    for line, word in [(2, "group"), (3, "step"), (3, "lm_loss"), (3, "from"), (3, "epoch"),
                       (3, "until"), (4, "carry"), (6, "weights"), (6, "using"), (7, "for"),
                       (7, "Net"), (8, "+=")]
]  # fmt: skip


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed")
def test_neovim_syntax_colours_the_newer_words(tmp_path: Path) -> None:
    program = tmp_path / "prog.tl"
    program.write_text(NEWER_PROGRAM)
    positions = ", ".join(f"[{line}, {col}]" for line, _, col in NEWER_WORDS)
    script = (
        f"set runtimepath^={ROOT / 'editors' / 'neovim'}\nfiletype plugin on\nsyntax on\n"
        f"edit {program}\n"
        f"let g:found = map([{positions}], "
        "'synIDattr(synID(v:val[0], v:val[1], 1), \"name\")')\n"
        f"call writefile([join(g:found, ',')], '{tmp_path / 'out'}')\nqall!\n"
    )
    (tmp_path / "check.vim").write_text(script)
    done = subprocess.run(["nvim", "--headless", "-u", "NONE", "-S", str(tmp_path / "check.vim")],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    groups = (tmp_path / "out").read_text().strip().split(",")
    found = dict(zip([w for _, w, _ in NEWER_WORDS], groups, strict=True))
    decl = "tensorloomDecl"
    assert found == {
        "group": decl, "step": decl, "lm_loss": "tensorloomFunction",
        "from": "tensorloomStatement", "epoch": decl, "until": decl, "carry": decl,
        "weights": decl, "using": decl, "for": "tensorloomRepeat",  # Vim's keywords win
        "Net": "tensorloomModelName", "+=": "tensorloomOperator",
    }  # fmt: skip


@pytest.mark.skipif(shutil.which("emacs") is None, reason="Emacs is not installed")
def test_emacs_font_lock_colours_the_newer_words(tmp_path: Path) -> None:
    program = tmp_path / "prog.tl"
    program.write_text(NEWER_PROGRAM)
    positions = " ".join(f"({line} . {col})" for line, _, col in NEWER_WORDS[:-1])
    check = (
        f'(progn (require \'tensorloom-mode) (find-file "{program}") (font-lock-ensure)'
        f" (dolist (p '({positions})) (goto-char (point-min)) (forward-line (1- (car p)))"
        ' (forward-char (1- (cdr p))) (princ (format "%s " (get-text-property (point) \'face)))))'
    )
    done = subprocess.run(
        ["emacs", "--batch", "-Q", "-L", str(ROOT / "editors" / "emacs"), "--eval", check],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = dict(zip([w for _, w, _ in NEWER_WORDS[:-1]], done.stdout.split(), strict=True))
    keyword = "font-lock-keyword-face"
    assert found == {
        "group": keyword, "step": keyword, "lm_loss": "font-lock-function-name-face",
        "from": keyword, "epoch": keyword, "until": keyword, "carry": keyword,
        "weights": keyword, "using": keyword, "for": keyword, "Net": "font-lock-type-face",
    }  # fmt: skip
