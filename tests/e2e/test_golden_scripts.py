"""Each example's emitted script equals its golden copy, and carries nothing it cannot reach."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.e2e.golden import (
    DOC,
    PROGRAMS,
    counts_of,
    emitted,
    examples,
    golden_path,
    line_table,
    program_files,
    with_table,
)

EXAMPLES = examples()


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_emitted_script_equals_its_golden_copy(example: Path) -> None:
    golden = golden_path(example)
    assert golden.is_file(), f"no {golden.name}: run `make golden`"
    assert emitted(example) == golden.read_text(encoding="utf-8"), "run `make golden`"


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_program_file_and_runtime_module_equal_their_golden_copies(example: Path) -> None:
    for path, text in program_files(example).items():
        assert path.is_file(), f"no {path.name}: run `make golden`"
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run `make golden`"


def test_the_program_folder_holds_only_what_the_examples_write() -> None:
    wanted = {path for example in EXAMPLES for path in program_files(example)}
    assert set(PROGRAMS.glob("*.py")) == wanted, "run `make golden`"


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_program_and_its_runtime_define_nothing_unused(example: Path) -> None:
    """Read as one: the runtime module holds only what the program reaches."""
    files = program_files(example)
    if len(files) == 1:
        return
    program, runtime = files.values()
    trees = [ast.parse(runtime), ast.parse(program)]
    body = [node for tree in trees for node in tree.body]
    unused = _unused_top_level(body)
    assert unused == []


def _unused_top_level(text: str | list[ast.stmt]) -> list[str]:
    """Top-level functions and classes no other part of the script names."""
    body = ast.parse(text).body if isinstance(text, str) else text
    unused = []
    for node in body:
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        others = [other for other in body if other is not node]
        read = {n.id for o in others for n in ast.walk(o) if isinstance(n, ast.Name)}
        if node.name not in read:
            unused.append(node.name)
    return unused


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_top_level_definition_is_used(example: Path) -> None:
    text = golden_path(example).read_text(encoding="utf-8")
    tree = ast.parse(text)
    has_main = any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
    unused = _unused_top_level(text)
    if not has_main:  # a model file: its classes are the product, used by whoever imports it
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        unused = [name for name in unused if name not in classes]
    assert unused == []


def test_digits_script_has_no_image_reader_download_or_process_group() -> None:
    text = golden_path(Path("examples/mnist.tl")).read_text(encoding="utf-8")
    names = {n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    for absent in ("_read_cifar", "read_idx", "_download", "_read_csv", "setup_distributed",
                   "all_reduce_sum", "barrier", "HostLoader", "load_dataset"):  # fmt: skip
        assert absent not in names
    assert "import torch.distributed" not in text and "urllib" not in text


def test_docs_list_each_example_s_line_count() -> None:
    counts = {e: counts_of(emitted(e), program_files(e)) for e in EXAMPLES}
    doc = DOC.read_text(encoding="utf-8")
    assert with_table(doc, line_table(counts)) == doc, "run `make golden`"
