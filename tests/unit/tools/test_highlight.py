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
from pygments.token import Comment, Error, Keyword, Name, Number, Operator

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
