"""Import resolution: relative to the importer, cycles, missing files, aliases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorloom.diagnostics import DiagnosticSink
from tensorloom.diagnostics.ir import reporting
from tensorloom.diagnostics.render_text import render
from tensorloom.frontend import ast
from tensorloom.frontend.imports import Program, load_program
from tensorloom.frontend.parser import parse_file
from tensorloom.source import SourceMap, Span

BLOCK = """\
@model Block:
    @layers:
        fc = Linear(4, 4)
    @forward(x):
        return fc(x)
"""


def load(root: Path) -> tuple[Program | None, DiagnosticSink, SourceMap]:
    sources, sink = SourceMap(), DiagnosticSink()
    with reporting(sink):
        module = parse_file(root, sources, sink)
        assert module is not None
        program = load_program(module, lambda p: parse_file(p, sources, sink))
    return program, sink, sources


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_imports_are_relative_to_the_importer_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "proj" / "blocks" / "block.nml", BLOCK)
    root = write(tmp_path / "proj" / "train.tl", "import blocks.block.nml as B\nlet net = B()\n")
    write(tmp_path / "elsewhere" / "blocks" / "block.nml", "@model Wrong:\n")
    monkeypatch.chdir(tmp_path / "elsewhere")
    program, sink, _ = load(root)
    assert not sink.has_errors
    assert program is not None
    assert [Path(u.path) for u in program.imported] == [tmp_path / "proj" / "blocks" / "block.nml"]
    assert program.root.aliases == {"B": "Block"}


# The .nml grammar has no `import` yet, so the graph tests below build the
# ASTs of .nml files by hand; the loader takes the parse function as a parameter.


def nml_module(path: Path, imports: list[str], model: str) -> ast.Module:
    """An .nml file's AST: its import lines, then one model."""
    items: list[ast.Stmt] = []
    for line, target in enumerate(imports, start=1):
        span = Span(str(path), line, 8, line, 8 + len(target))
        items.append(
            ast.ImportDecl(
                Span(str(path), line, 1, line, 8 + len(target)), target, span, None, None
            )
        )
    name_span = Span(str(path), len(imports) + 1, 8, len(imports) + 1, 8 + len(model))
    items.append(ast.ModelDecl(name_span, model, name_span, "nml"))
    return ast.Module(Span(str(path), 1, 1, 1, 2), str(path), "nml", items)


def load_graph(
    tmp_path: Path, files: dict[str, list[str]], root: str
) -> tuple[DiagnosticSink, list[str]]:
    """Load `root` where each of `files` (name -> imported names) is an .nml file."""
    modules = {
        tmp_path / name: nml_module(tmp_path / name, deps, name.split(".")[0].upper())
        for name, deps in files.items()
    }
    for path in modules:
        path.write_text("")
    sink = DiagnosticSink()
    with reporting(sink):
        program = load_program(modules[tmp_path / root], lambda p: modules[Path(p)])
    return sink, [Path(u.path).name for u in program.imported]


def test_nested_imports_come_before_their_importers(tmp_path: Path) -> None:
    files: dict[str, list[str]] = {"main.nml": ["a.nml"], "a.nml": ["b.nml"], "b.nml": []}
    sink, order = load_graph(tmp_path, files, "main.nml")
    assert not sink.has_errors
    assert order == ["b.nml", "a.nml"]


def test_an_import_cycle_is_reported_with_the_cycle(tmp_path: Path) -> None:
    files = {"main.nml": ["a.nml"], "a.nml": ["b.nml"], "b.nml": ["a.nml"]}
    sink, _ = load_graph(tmp_path, files, "main.nml")
    (diag,) = sink.diagnostics
    a, b = tmp_path / "a.nml", tmp_path / "b.nml"
    assert diag.code == "TL0611"
    assert diag.message == f"import cycle: `{a}` -> `{b}` -> `{a}`"
    span = diag.primary.span
    assert (span.file, span.line, span.col, span.end_col) == (str(a), 1, 8, 13)
    assert diag.primary.message == "this import starts the cycle"


def test_a_file_importing_itself_is_a_cycle(tmp_path: Path) -> None:
    sink, _ = load_graph(tmp_path, {"self.nml": ["self.nml"]}, "self.nml")
    assert [d.code for d in sink.diagnostics] == ["TL0611"]


def test_a_missing_file_points_at_the_path(tmp_path: Path) -> None:
    root = write(tmp_path / "main.tl", "let x = 1\nimport nets.missing.nml as M\n")
    _, sink, sources = load(root)
    (diag,) = sink.diagnostics
    assert diag.code == "TL0610"
    assert render(diag, sources).splitlines() == [
        "error[TL0610]: cannot find `nets/missing.nml`",
        f" --> {root}:2:8",
        "  |",
        "2 | import nets.missing.nml as M",
        f"  |        ^^^^^^^^^^^^^^^^ no file `{tmp_path / 'nets' / 'missing.nml'}`",
        "  |",
        f"  = help: imports are relative to the importing file's folder, `{tmp_path}`",
    ]


def test_an_alias_picks_the_model_named_like_the_file(tmp_path: Path) -> None:
    write(
        tmp_path / "res_net.nml", BLOCK.replace("Block", "ResNet") + BLOCK.replace("Block", "Stem")
    )
    root = write(tmp_path / "main.tl", "import res_net.nml as R\n")
    program, sink, _ = load(root)
    assert not sink.has_errors and program is not None
    assert program.root.aliases == {"R": "ResNet"}


def test_an_ambiguous_alias_is_reported(tmp_path: Path) -> None:
    write(tmp_path / "two.nml", BLOCK.replace("Block", "A") + BLOCK.replace("Block", "B"))
    root = write(tmp_path / "main.tl", "import two.nml as X\n")
    _, sink, _ = load(root)
    (diag,) = sink.diagnostics
    assert diag.code == "TL0613"
    assert diag.message == f"`X` could name any of `A`, `B` in `{tmp_path / 'two.nml'}`"
    assert (diag.primary.span.line, diag.primary.span.col) == (1, 19)


def test_only_nml_files_can_be_imported(tmp_path: Path) -> None:
    write(tmp_path / "other.tl", "let x = 1\n")
    root = write(tmp_path / "main.tl", 'import "other.tl" as O\n')
    _, sink, _ = load(root)
    assert [d.code for d in sink.diagnostics] == ["TL0612"]


# --- imports stay inside the program's folder (fuzz-findings/security/import_*) --------------


def _outside_layout(tmp_path: Path) -> tuple[Path, Path]:
    project, outside = tmp_path / "project", tmp_path / "outside"
    write(outside / "secret.nml", BLOCK)
    write(outside / "secret.txt", "SECRET_TOKEN=hunter2 (not TensorLoom source)\n")
    project.mkdir()
    (project / "leak.nml").symlink_to(outside / "secret.txt")
    (project / "linked").symlink_to(outside, target_is_directory=True)
    return project, outside


@pytest.mark.parametrize(
    "path",
    ['"../outside/secret.nml"', '"{outside}/secret.nml"', "leak.nml", "linked.secret.nml",
     '"../../../../../../../../{outside}/secret.nml"'],
)  # fmt: skip
def test_an_import_outside_the_folder_is_an_error(tmp_path: Path, path: str) -> None:
    project, outside = _outside_layout(tmp_path)
    root = write(project / "main.tl", f"import {path.format(outside=outside)} as S\n")
    _, sink, sources = load(root)
    assert [d.code for d in sink] == ["TL0616"]
    rendered = render(sink.diagnostics[0], sources)
    assert "SECRET_TOKEN" not in rendered and "main.tl:1:8" in rendered


def test_a_flag_allows_imports_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, _ = _outside_layout(tmp_path)
    root = write(project / "main.tl", 'import "../outside/secret.nml" as S\n')
    monkeypatch.setenv("TENSORLOOM_ALLOW_OUTSIDE_IMPORTS", "1")
    program, sink, _ = load(root)
    assert not sink.diagnostics and program is not None and len(program.imported) == 1


def test_a_link_to_a_non_nml_file_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _ = _outside_layout(tmp_path)
    monkeypatch.setenv("TENSORLOOM_ALLOW_OUTSIDE_IMPORTS", "1")
    root = write(project / "main.tl", "import leak.nml as L\n")
    _, sink, sources = load(root)
    assert [d.code for d in sink] == ["TL0612"]
    assert "SECRET_TOKEN" not in render(sink.diagnostics[0], sources)


def test_source_map_reads_back_only_tensorloom_files(tmp_path: Path) -> None:
    other = write(tmp_path / "notes.txt", "SECRET_TOKEN=hunter2\n")
    source = write(tmp_path / "a.nml", BLOCK)
    sources = SourceMap()
    assert sources.get(str(other)) is None
    found = sources.get(str(source))
    assert found is not None and found.line(1) == "@model Block:"
