"""The reading a data file and a folder of pairs share (catalogue/file_heads.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tensorloom.catalogue.file_heads import (
    ArrayHeader,
    FileProblem,
    ReadCache,
    element_type,
    find_place,
    read_head,
    read_npy_file,
    read_text,
)


def test_a_place_is_found_here_then_beside_the_program(tmp_path: Path) -> None:
    (tmp_path / "pairs").mkdir()
    (tmp_path / "train.npz").write_bytes(b"")
    assert find_place("train.npz", tmp_path) == tmp_path / "train.npz"
    assert find_place("pairs", tmp_path, folder=True) == tmp_path / "pairs"
    assert find_place("pairs", tmp_path) is None  # a folder is not a file
    assert find_place("train.npz", tmp_path, folder=True) is None
    assert find_place("absent.npz", tmp_path) is None
    assert find_place("bad\0name", tmp_path) is None  # no ValueError escapes


def test_an_unreadable_file_is_a_problem_with_the_callers_code(tmp_path: Path) -> None:
    head = read_head(tmp_path / "gone.png", 33, "TL0717")
    assert head == FileProblem(
        f"cannot read `{tmp_path / 'gone.png'}`: No such file or directory", None, "TL0717"
    )
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9")
    assert read_text(tmp_path / "latin.txt", "TL0717") == FileProblem(
        f"`{tmp_path / 'latin.txt'}` is not UTF-8 text", None, "TL0717"
    )
    (tmp_path / "short.png").write_bytes(b"\x89PNG")
    assert read_head(tmp_path / "short.png", 33) == b"\x89PNG"


def test_an_npy_file_header_names_the_file_in_its_problem(tmp_path: Path) -> None:
    np.save(tmp_path / "ok.npy", np.zeros((3, 2), dtype=np.int32))
    assert read_npy_file(tmp_path / "ok.npy") == ArrayHeader("i4", (3, 2))
    (tmp_path / "bad.npy").write_bytes(b"PK not numpy")
    problem = read_npy_file(tmp_path / "bad.npy", "TL0717")
    assert isinstance(problem, FileProblem) and problem.code == "TL0717"
    assert problem.message == f"`{tmp_path / 'bad.npy'}`: not a .npy array (no `\\x93NUMPY` magic)"


def test_element_types_are_the_runtimes() -> None:
    floats = ("float32", "float64", "float16", "bfloat16")
    assert [element_type(d) for d in floats] == ["f32"] * 4
    others = ("int64", "int32", "int16", "int8", "uint8", "bool")
    assert [element_type(d) for d in others] == ["i64"] * 6


def test_the_cache_reads_again_only_when_the_stamp_or_options_change(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("one")
    reads: list[str] = []
    cache = ReadCache[str](lambda p: p.stat().st_mtime_ns)

    def read() -> str:
        reads.append(path.read_text())
        return reads[-1]

    assert cache.read(path, ("a",), read) == "one"
    assert cache.read(path, ("a",), read) == "one" and len(reads) == 1
    assert cache.read(path, ("b",), read) == "one" and len(reads) == 2
    path.write_text("two")
    os.utime(path, ns=(1, 1))
    assert cache.read(path, ("a",), read) == "two" and len(reads) == 3
    missing = cache.read(tmp_path / "gone", (), read)
    assert isinstance(missing, FileProblem) and "cannot read" in missing.message
