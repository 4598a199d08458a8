"""What data files say about themselves at check time (catalogue/data_files.py, issue 15).

The files are written by numpy here (as users write them), read back by the
compiler's own header parser, which never imports numpy or torch.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tensorloom.catalogue.data_files import (
    FLOATS,
    INDICES,
    FileFacts,
    check_data,
    read_facts,
    token_count,
)
from tensorloom.catalogue.datasets import DatasetInfo, lookup_dataset
from tensorloom.catalogue.file_heads import FileProblem, read_npy_header


def header(array: np.ndarray, version: tuple[int, int] | None = None) -> object:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version)
    buffer.seek(0)
    return read_npy_header(buffer)


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_header_versions(version: tuple[int, int]) -> None:
    found = header(np.zeros((7, 3, 2), dtype=np.float32), version)
    assert not isinstance(found, FileProblem)
    assert found[0].descr == "f4" and found[0].shape == (7, 3, 2)
    assert found[0].dtype == "float32"


@pytest.mark.parametrize(
    ("array", "words"),
    [
        (np.zeros((2, 2), dtype=">f4"), "unsupported array type `>f4`"),
        (np.asfortranarray(np.zeros((2, 3), dtype=np.float32)), "in Fortran order"),
        (np.array(["a", "b"]), "unsupported array type"),
    ],
)
def test_npy_header_refuses_what_the_runtime_cannot_read(array: np.ndarray, words: str) -> None:
    found = header(array)
    assert isinstance(found, FileProblem) and words in found.message


def test_npy_header_refuses_garbage() -> None:
    assert isinstance(read_npy_header(io.BytesIO(b"PK\x03\x04 not numpy")), FileProblem)
    bad = b"\x93NUMPY\x01\x00" + (20).to_bytes(2, "little") + b"__import__('os')    "
    found = read_npy_header(io.BytesIO(bad))
    assert isinstance(found, FileProblem) and "not a dictionary literal" in found.message


def test_npz_facts_read_headers_and_label_range(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    labels = np.array([0, 3, 11, 2] * 5, dtype=np.int64)
    np.savez_compressed(path, x=np.zeros((20, 1, 8, 8), dtype=np.float32), y=labels)
    facts = read_facts(path)
    assert isinstance(facts, FileFacts)
    assert (facts.count, facts.sample_shape, facts.targets) == (20, (1, 8, 8), INDICES)
    assert facts.num_classes == 12 and facts.target_shape == ()


def test_npz_float_targets_are_regression(tmp_path: Path) -> None:
    path = tmp_path / "r.npz"
    np.savez(path, x=np.zeros((5, 4), np.float32), y=np.zeros((5, 2), np.float64))
    facts = read_facts(path)
    assert isinstance(facts, FileFacts)
    assert facts.targets == FLOATS and facts.target_shape == (2,) and facts.num_classes is None
    info = lookup_dataset(str(path), {})
    assert isinstance(info, DatasetInfo)
    checked = check_data(info, None)
    assert checked.problems == ()
    assert checked.info.sample_shape == (4,) and checked.info.task == "regression"
    assert checked.info.target_dtype == "f32"


@pytest.mark.parametrize(
    ("arrays", "words"),
    [
        ({"x": np.zeros((3, 2)), "y": np.zeros(4, np.int64)}, "3 samples (`x`) but 4 targets"),
        ({"x": np.zeros((3, 2)), "y": np.array([0, -1, 2])}, "negative class label (-1)"),
    ],
)
def test_npz_problems(tmp_path: Path, arrays: dict[str, np.ndarray], words: str) -> None:
    path = tmp_path / "p.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    found = read_facts(path)
    assert isinstance(found, FileProblem) and words in found.message


# --- a .npz of named arrays: fields (issue 30) ------------------------------------------------


def test_npz_of_named_arrays_gives_each_field(tmp_path: Path) -> None:
    path = tmp_path / "pairs.npz"
    image = np.zeros((50, 1, 8, 8), np.float32)
    text = np.zeros((50, 4), np.int32)
    np.savez_compressed(path, image=image, text=text, weight=np.ones(50, np.float64))
    facts = read_facts(path)
    assert isinstance(facts, FileFacts) and facts.fields is not None
    found = [(f.name, f.shape, f.dtype, f.count) for f in facts.fields]
    assert found == [("image", (1, 8, 8), "float32", 50), ("text", (4,), "int32", 50),
                     ("weight", (), "float64", 50)]  # fmt: skip
    assert facts.layout is not None and "must hold arrays named `x` and `y`" in facts.layout.message
    info = lookup_dataset(str(path), {})
    assert isinstance(info, DatasetInfo)
    checked = check_data(info, None)
    assert checked.problems == () and checked.layout is not None  # a problem for a `loss` only
    assert checked.info.fields is not None
    fields = [(f.name, f.shape, f.dtype) for f in checked.info.fields]
    assert fields == [("image", (1, 8, 8), "f32"), ("text", (4,), "i64"), ("weight", (), "f32")]


def test_npz_with_x_and_y_keeps_its_facts_and_lists_every_field(tmp_path: Path) -> None:
    path = tmp_path / "xyz.npz"
    np.savez(path, x=np.zeros((6, 3), np.float32), y=np.arange(6), z=np.zeros((6, 2, 2)))
    facts = read_facts(path)
    assert isinstance(facts, FileFacts) and facts.layout is None
    assert facts.sample_shape == (3,) and facts.num_classes == 6
    assert facts.fields is not None and [f.name for f in facts.fields] == ["x", "y", "z"]


@pytest.mark.parametrize(
    ("arrays", "code", "words"),
    [
        ({"image": np.zeros((5, 2)), "text": np.zeros((4, 3))}, "TL0711",
         "holds 5 samples of `image` but 4 of `text`"),
        ({"image": np.zeros((5, 2)), "scale": np.float32(2.0)}, "TL0712",
         "`scale` is a scalar, not an array of samples"),
        ({"x": np.zeros((3, 2))}, None, None),
    ],
)  # fmt: skip
def test_npz_field_problems(
    tmp_path: Path, arrays: dict[str, np.ndarray], code: str | None, words: str | None
) -> None:
    path = tmp_path / "f.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    found = read_facts(path)
    if code is None:  # `x` alone: named arrays, which a `loss` block cannot take
        assert isinstance(found, FileFacts) and found.layout is not None
        assert "must hold arrays named `x` and `y`; it holds `x`" in found.layout.message
        return
    assert isinstance(found, FileProblem) and found.code == code
    assert words is not None and words in found.message
    info = lookup_dataset(str(path), {})
    assert isinstance(info, DatasetInfo)
    checked = check_data(info, None)
    assert [p.code for p in checked.problems] == [code]


def test_an_unsupported_array_names_its_field(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, image=np.zeros((2, 3)), caption=np.array(["a", "b"]))
    found = read_facts(path)
    assert isinstance(found, FileProblem) and "`caption`: unsupported array type" in found.message


def test_a_damaged_archive_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "cut.npz"
    np.savez(path, x=np.zeros((100, 10)), y=np.zeros(100, np.int64))
    path.write_bytes(path.read_bytes()[:300])
    assert isinstance(read_facts(path), FileProblem)
    with zipfile.ZipFile(tmp_path / "empty.npz", "w"):
        pass
    assert isinstance(read_facts(tmp_path / "empty.npz"), FileProblem)
    (tmp_path / "text.npz").write_text("not a zip")
    assert isinstance(read_facts(tmp_path / "text.npz"), FileProblem)


def test_csv_facts(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,kind\n1,2,cat\n3,4,dog\n5,6,cat\n")
    facts = read_facts(path, "kind")
    assert isinstance(facts, FileFacts)
    assert facts.sample_shape == (2,) and facts.count == 3
    assert facts.targets == INDICES and facts.num_classes == 2  # words become classes
    path.write_text("a,b,y\n1,2,0.5\n3,4,1\n")
    facts = read_facts(path, "y")
    assert isinstance(facts, FileFacts) and facts.targets == FLOATS
    path.write_text("a,b,y\n1,2,0\n3,4\n")
    found = read_facts(path, "y")
    assert isinstance(found, FileProblem) and "row 3" in found.message


def test_token_file_size(tmp_path: Path) -> None:
    path = tmp_path / "train.bin"
    np.arange(10, dtype=np.uint32).tofile(path)
    assert token_count(path, "uint32") == 10
    assert token_count(path, "uint16") == 20
    path.write_bytes(b"\0" * 7)
    assert isinstance(token_count(path, "uint16"), FileProblem)


def test_absent_file_is_a_warning_and_a_relative_path_is_found_beside_the_program(
    tmp_path: Path,
) -> None:
    info = lookup_dataset("data/d.npz", {})
    assert isinstance(info, DatasetInfo)
    checked = check_data(info, tmp_path)
    assert [p.code for p in checked.problems] == ["TL0708"] and checked.problems[0].is_warning
    (tmp_path / "data").mkdir()
    np.savez(tmp_path / "data" / "d.npz", x=np.zeros((3, 5)), y=np.array([0, 1, 1]))
    checked = check_data(info, tmp_path)
    assert checked.problems == () and checked.info.sample_shape == (5,)
    assert checked.info.num_classes == 2


def test_declared_fields_take_the_files_shapes_or_name_the_missing_array(tmp_path: Path) -> None:
    path = tmp_path / "pairs.npz"
    np.savez(path, image=np.zeros((8, 64), np.float32), text=np.zeros((8, 4), np.int64))
    info = lookup_dataset(str(path), {"fields": ["text", "image"]})
    assert isinstance(info, DatasetInfo)
    checked = check_data(info, None)
    assert checked.problems == () and checked.info.fields is not None
    assert [(f.name, f.shape, f.dtype) for f in checked.info.fields] == [
        ("text", (4,), "i64"), ("image", (64,), "f32")]  # fmt: skip
    info = lookup_dataset(str(path), {"fields": ["image", "caption"]})
    assert isinstance(info, DatasetInfo)
    [problem] = check_data(info, None).problems
    assert problem.code == "TL0714" and problem.option == "fields"
    assert "has no array `caption`: it holds `image`, `text`" in problem.message
