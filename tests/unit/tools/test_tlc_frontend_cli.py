"""`tlc tokens`, `tlc ast`, `tlc check`: output streams and exit statuses 0/1/2/3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tensorloom.tools import tlc
from tensorloom.tools.guard import REPORT_URL

NET = (
    "model Net:\n    layer fc = Linear(4, 2)\n"
    "    fn forward(self, x):\n        return x |> self.fc\n"
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(tlc.cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def net(tmp_path: Path) -> Path:
    path = tmp_path / "net.tl"
    path.write_text(NET)
    return path


def test_version() -> None:
    code, out, _ = run("--version")
    assert code == 0
    assert out.startswith("tlc, version ")


def test_check_clean_file_exits_0_without_diagnostics(net: Path) -> None:
    code, _, err = run("check", str(net))
    assert (code, err) == (0, "")


def test_check_errors_exit_1_with_carets(tmp_path: Path) -> None:
    path = tmp_path / "bad.tl"
    path.write_text("let x = (1 +\n")
    code, out, err = run("check", str(path))
    assert (code, out) == (1, "")
    assert err.splitlines()[:5] == [
        "error[TL0102]: unclosed `(`",
        f" --> {path}:1:9",
        "  |",
        "1 | let x = (1 +",
        "  |         ^ this `(` is never closed",
    ]


def test_check_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.nml"
    path.write_text("@model M:\n    @layer:\n        a = A()\n")
    code, out, _ = run("check", str(path), "--format", "json")
    assert code == 1
    (diag,) = json.loads(out)["diagnostics"]
    assert (diag["code"], diag["primary"]["line"], diag["primary"]["column"]) == ("TL0107", 2, 6)


def test_usage_error_exits_2() -> None:
    assert run("check")[0] == 2
    assert run("check", "x.tl", "--format", "xml")[0] == 2


def test_tokens(net: Path) -> None:
    code, out, _ = run("tokens", str(net))
    assert code == 0
    assert out.splitlines()[:4] == [
        "1:1      NAME        model",
        "1:7      NAME        Net",
        "1:10     COLON       :",
        "1:11     NEWLINE",
    ]


def test_ast_text_and_json(net: Path) -> None:
    code, out, _ = run("ast", str(net))
    assert code == 0
    assert out.splitlines()[2] == "    - ModelDecl name=Net syntax=tl <1:1>"
    code, out, _ = run("ast", str(net), "--json")
    tree = json.loads(out)
    assert tree["items"][0]["layers"][0]["ctor"]["func"] == {
        "kind": "Name",
        "span": {"line": 2, "column": 16, "end_line": 2, "end_column": 22},
        "id": "Linear",
    }


def test_internal_error_exits_3(net: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(tlc, "load_and_parse", explode)
    code, out, err = run("ast", str(net))
    assert (code, out) == (3, "")
    assert err.splitlines()[:2] == [
        "error: internal compiler error: RuntimeError: boom",
        "note: this is a bug in TensorLoom, not in your program; please report it at "
        f"{REPORT_URL} with the input file",
    ]
    assert "Traceback" not in err
    assert "Traceback" in run("--debug", "ast", str(net))[2]
