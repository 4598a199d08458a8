"""The `tlc check`/`tlc compile` cache: hits replay output and exit status; changes miss."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tensorloom.tools import check_cache, launcher, tlc

MODEL = """\
@model TransformerBlock:
    @config:
        d_model = 512
        n_heads = 8

    @layers:
        attention = MultiHeadAttention(d_model, n_heads)
        norm1     = LayerNorm(d_model)
        ff        = Linear(d_model, d_model)

    @forward(x):
        let residual = x
        x = norm1(x)
        x = residual + attention(x)
        return ff(x)
"""
SCRIPT = """\
import transformer.nml as CustomTransformer

let net = CustomTransformer(d_model=256, n_heads=4)
let data = load_dataset()

train net on data:
    epochs = 15
    optimizer = Adam(lr=0.0001)
    loss = CrossEntropy
    precision = fp16
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("TENSORLOOM_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "transformer.nml").write_text(MODEL)
    script = tmp_path / "train_transformer.tl"
    script.write_text(SCRIPT)
    return script


def check(*args: str) -> tuple[int, str, str]:
    return tlc_run("check", *args)


def tlc_run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(tlc.cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def entries(cache: Path, command: str = "check") -> list[Path]:
    return sorted((cache / command).glob("*.json")) if (cache / command).is_dir() else []


def tamper(entry: Path) -> None:
    """Mark a stored entry, so that a run replaying it is told from one that checks."""
    data = json.loads(entry.read_text())
    data["stdout"] = "replayed\n"
    entry.write_text(json.dumps(data))


def test_hit_replays_output_and_warning_exit_0(cache: Path, program: Path) -> None:
    first = check(str(program))
    assert first[0] == 0 and "TL0411" in first[2] and "TransformerBlock" in first[1]
    assert len(entries(cache)) == 1
    assert check(str(program)) == first
    tamper(entries(cache)[0])
    assert check(str(program))[1] == "replayed\n"


def test_hit_replays_errors_and_exit_1(cache: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.tl"
    bad.write_text("let net = Missing()\n")
    first = check(str(bad))
    assert first[0] == 1 and "error[" in first[2]
    assert check(str(bad)) == first
    assert len(entries(cache)) == 1


def test_json_format_has_its_own_entry(cache: Path, program: Path) -> None:
    text, as_json = check(str(program)), check(str(program), "--format", "json")
    assert json.loads(as_json[1])["ok"] is True
    assert check(str(program), "--format", "json") == as_json
    assert check(str(program)) == text
    assert len(entries(cache)) == 2


def test_editing_an_imported_model_invalidates(cache: Path, program: Path) -> None:
    check(str(program))
    tamper(entries(cache)[0])
    model = program.parent / "transformer.nml"
    model.write_text(MODEL.replace("Linear(d_model, d_model)", "Linear(d_model, 7)"))
    code, out, _ = check(str(program))
    assert code == 0 and out != "replayed\n"
    assert "Linear(256, 7)" in out


def test_editing_the_root_file_invalidates(cache: Path, program: Path) -> None:
    check(str(program))
    program.write_text(SCRIPT.replace("d_model=256", "d_model=128"))
    code, out, _ = check(str(program))
    assert code == 0 and "LayerNorm(128)" in out
    assert len(entries(cache)) == 2


def test_no_cache_neither_reads_nor_writes(cache: Path, program: Path) -> None:
    fresh = check(str(program), "--no-cache")
    assert entries(cache) == []
    check(str(program))
    tamper(entries(cache)[0])
    assert check(str(program), "--no-cache") == fresh


def test_corrupt_entry_is_ignored_and_rewritten(cache: Path, program: Path) -> None:
    first = check(str(program))
    for garbage in ("{not json", '{"files": 3, "stdout": "x", "stderr": "", "status": 0}', "[]"):
        entries(cache)[0].write_text(garbage)
        assert check(str(program)) == first
    assert json.loads(entries(cache)[0].read_text())["status"] == 0


def test_unwritable_cache_dir_still_checks(tmp_path: Path, program: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TENSORLOOM_CACHE_DIR", str(blocker / "cache"))
    first = check(str(program))
    assert first[0] == 0 and "TransformerBlock" in first[1]
    assert check(str(program)) == first


def test_import_errors_are_not_stored(cache: Path, tmp_path: Path) -> None:
    script = tmp_path / "lonely.tl"
    script.write_text(SCRIPT)  # transformer.nml does not exist (yet)
    assert check(str(script))[0] == 1
    assert entries(cache) == []


def test_compile_hit_replays_ir_and_follows_imports(cache: Path, program: Path) -> None:
    first = tlc_run("compile", str(program), "--emit", "nml")
    assert first[0] == 0 and "nml.model @TransformerBlock" in first[1]
    assert tlc_run("compile", str(program), "--emit", "nml") == first
    tamper(entries(cache, "compile")[0])
    assert tlc_run("compile", str(program), "--emit", "nml")[1] == "replayed\n"
    (program.parent / "transformer.nml").write_text(MODEL.replace("d_model = 512", "d_model = 64"))
    code, out, _ = tlc_run("compile", str(program), "--emit", "nml")
    assert code == 0 and out != "replayed\n" and "d_model = 64" in out


def test_compile_hit_writes_the_output_file(cache: Path, program: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    first = tlc_run("compile", str(program), "--emit", "nml", "-o", str(target))
    written = target.read_text()
    target.unlink()
    assert tlc_run("compile", str(program), "--emit", "nml", "-o", str(target)) == first
    assert target.read_text() == written and written == tlc_run(
        "compile", str(program), "--emit", "nml", "--no-cache")[1]  # fmt: skip


def test_compile_errors_replay_exit_1_and_no_output(cache: Path, tmp_path: Path) -> None:
    bad, target = tmp_path / "bad.tl", tmp_path / "out.py"
    bad.write_text("let net = Missing()\n")
    first = tlc_run("compile", str(bad), "-o", str(target))
    assert first[0] == 1 and "error[" in first[2]
    assert tlc_run("compile", str(bad), "-o", str(target)) == first
    assert not target.exists()


def test_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TENSORLOOM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert check_cache.cache_dir() == str(tmp_path / "tensorloom")
    monkeypatch.setenv("TENSORLOOM_CACHE_DIR", str(tmp_path / "mine"))
    assert check_cache.cache_dir() == str(tmp_path / "mine")


def test_fingerprint_follows_compiler_sources(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:  # fmt: skip
    source = tmp_path / "pass.py"
    source.write_text("x = 1\n")
    monkeypatch.setattr(check_cache, "PACKAGE_DIR", str(tmp_path))
    before = check_cache.compiler_fingerprint()
    assert check_cache.compiler_fingerprint() == before
    os.utime(source, ns=(1, 1))
    assert check_cache.compiler_fingerprint() != before


@pytest.mark.parametrize(("argv", "expected"), [
    (["check", "a.tl"], ("a.tl", "check --format text")),
    (["check", "--format", "json", "a.tl"], ("a.tl", "check --format json")),
    (["check", "a.tl", "--format=text"], ("a.tl", "check --format text")),
    (["compile", "a.tl"], ("a.tl", "compile --emit python")),
    (["compile", "--emit", "nml", "a.tl"], ("a.tl", "compile --emit nml")),
    (["compile", "a.tl", "-o", "out.py"], None),
    (["compile", "a.tl", "--format", "json"], None),
    (["check", "a.tl", "--no-cache"], None),
    (["check", "a.tl", "--format"], None),
    (["check", "a.tl", "--format", "--no-cache"], None),
    (["check", "a.tl", "b.tl"], None),
    (["--debug", "check", "a.tl"], None),
    (["ast", "a.tl"], None),
    ([], None),
])  # fmt: skip
def test_launcher_recognises_cacheable_commands(argv: list[str], expected: object) -> None:
    assert launcher._cached_command(argv) == expected  # pyright: ignore[reportPrivateUsage]


def test_whole_process_hit_loads_neither_click_nor_xdsl(cache: Path, program: Path) -> None:
    tlc_script = Path(sys.executable).with_name("tlc")
    command = [str(tlc_script), "check", program.name]
    first = subprocess.run(command, cwd=program.parent, capture_output=True, text=True)
    probe = ("import sys; from tensorloom.tools import launcher\n"
             "sys.argv = ['tlc', *sys.argv[1:]]\n"
             "try:\n    launcher.main()\nexcept SystemExit:\n"
             "    sys.stderr.write(repr(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('click', 'xdsl', 'tensorloom'))))\n    raise\n")  # fmt: skip
    second = subprocess.run([sys.executable, "-c", probe, "check", program.name],
                            cwd=program.parent, capture_output=True, text=True)  # fmt: skip
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout)
    replayed, modules = second.stderr.rsplit("\n", 1)
    assert replayed + "\n" == first.stderr
    assert modules == repr(["tensorloom", "tensorloom.tools", "tensorloom.tools.check_cache",
                            "tensorloom.tools.launcher"])  # fmt: skip


@pytest.mark.parametrize(("argv", "expected"), [
    (["check", "a.tl"], ("a.tl", "text", True)),
    (["check", "--no-cache", "a.tl"], ("a.tl", "text", False)),
    (["check", "a.tl", "--format=json", "--no-cache"], ("a.tl", "json", False)),
    (["check", "--json", "a.tl"], ("a.tl", "json", True)),
    (["check", "a.tl", "--format", "yaml"], None),  # click's usage error
    (["check", "folder"], None),  # likewise
    (["check", "missing.tl"], None),  # click runs it: the check reports TL0601
    (["check", "a.tl", "--debug"], None),
    (["compile", "--no-cache", "a.tl"], None),
])  # fmt: skip
def test_launcher_runs_only_plain_checks_itself(
    argv: list[str], expected: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.tl").write_text("")
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    assert launcher._plain_check(argv) == expected  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("argv", [["--no-cache"], ["--no-cache", "--format", "json"], []])
def test_whole_process_check_without_click_prints_what_click_does(
    cache: Path, program: Path, argv: list[str]
) -> None:
    probe = ("import sys; from tensorloom.tools import launcher\n"
             "sys.argv = ['tlc', *sys.argv[1:]]\n"
             "try:\n    launcher.main()\nexcept SystemExit:\n"
             "    sys.stderr.write('\\n' + str('click' in sys.modules))\n    raise\n")  # fmt: skip
    fresh = subprocess.run([sys.executable, "-c", probe, "check", *argv, str(program)],
                           capture_output=True, text=True)  # fmt: skip
    output, loaded_click = fresh.stderr.rsplit("\n", 1)
    assert loaded_click == "False"
    assert (fresh.returncode, fresh.stdout, output) == check(*argv, str(program))


def test_a_crash_in_a_check_without_click_is_an_internal_error(
    program: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crash(path: Path) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr("tensorloom.tools.check.check_file", crash)
    monkeypatch.setattr(gc, "set_threshold", lambda *_: None)  # leave pytest's collector be
    monkeypatch.setattr(sys, "argv", ["tlc", "check", "--no-cache", str(program)])
    with pytest.raises(SystemExit) as exit_:
        launcher.main()
    assert exit_.value.code == 3
    assert "internal compiler error: RuntimeError: boom" in capsys.readouterr().err
