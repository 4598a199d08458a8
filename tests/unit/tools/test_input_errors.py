"""A missing file, a directory, an unreadable file: TL0601 and exit 1, in `tlc` and `tl-opt`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tensorloom.tools import tl_opt, tlc

COMMANDS = ["tokens", "ast", "check", "compile", "info", "run", "graph"]


def _case(tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """The input for `case` and the reason TL0601 gives."""
    if case == "missing":
        return tmp_path / "missing.tl", "no such file or directory"
    if case == "directory":
        folder = tmp_path / "models.tl"
        folder.mkdir()
        return folder, "is a directory"
    path = tmp_path / "locked.tl"
    path.write_text("let x = 1\n")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:  # tests run as root, where chmod 000 still reads
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    return path, "permission denied"


@pytest.mark.parametrize("case", ["missing", "directory", "unreadable"])
@pytest.mark.parametrize("command", COMMANDS)
def test_tlc_reports_tl0601(
    command: str, case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, reason = _case(tmp_path, case, monkeypatch)
    result = CliRunner().invoke(tlc.cli, [command, str(path)])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[:2] == [
        f"error[TL0601]: cannot read `{path}`: {reason}",
        f" --> {path}:1:1",
    ]


@pytest.mark.parametrize("case", ["missing", "directory", "unreadable"])
def test_tl_opt_reports_tl0601(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, reason = _case(tmp_path, case, monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        tl_opt.main([str(path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.splitlines()[:2] == [
        f"error[TL0601]: cannot read `{path}`: {reason}",
        f" --> {path}:1:1",
    ]
    assert "Traceback" not in err


def _tl_opt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        tl_opt.main(list(args))
    code = exit_info.value.code
    return code if isinstance(code, int) else 1, capsys.readouterr().err


def test_tl_opt_unknown_pass_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.mlir"
    path.write_text("builtin.module {}\n")
    code, err = _tl_opt(capsys, str(path), "-p", "desugar-pipe")
    assert code == 2
    assert err.splitlines() == [
        "tl-opt: error: unknown pass `desugar-pipe`",
        "  = help: did you mean `desugar-pipes`?",
    ]


def test_tl_opt_unsupported_file_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "train.py"
    path.write_text("print(1)\n")
    code, err = _tl_opt(capsys, str(path))
    assert code == 1
    assert err.splitlines()[0] == "error[TL0604]: unsupported file type `.py`"


def test_tl_opt_malformed_mlir_is_the_users_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text('"foo.bar"() : () -> ()\n')
    code, err = _tl_opt(capsys, str(path))
    assert code == 1
    assert err.splitlines()[0] == "error: cannot parse the input"
    assert "Operation foo.bar is not registered" in err
    assert "Traceback" not in err


def test_tl_opt_crash_is_a_compiler_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.mlir"
    path.write_text("builtin.module {}\n")

    def crash(self: tl_opt.TLOptMain) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(tl_opt.TLOptMain, "_run_passes", crash)
    code, err = _tl_opt(capsys, str(path))
    assert code == 3
    assert err.splitlines()[0] == "error: internal compiler error: RuntimeError: boom"
    assert "this is a bug in TensorLoom" in err


@pytest.mark.parametrize("args", [["--json"], ["--format", "json"]])
@pytest.mark.parametrize("command", ["ast", "check", "info"])
def test_json_output_by_format_or_alias(command: str, args: list[str], tmp_path: Path) -> None:
    path = tmp_path / "net.tl"
    path.write_text("let x = 1\n")
    result = CliRunner().invoke(tlc.cli, [command, str(path), *args])
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), dict)
