"""A folder of pairs as `tlc check` reads it (catalogue/pair_folders.py) and as the script
loads it (runtime/folders.py): the same fields, shapes and element types, on folders written
here in the real formats."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tensorloom.backends.runtime import tokens
from tensorloom.backends.runtime.folders import load_folder_dataset
from tensorloom.catalogue.file_heads import FileProblem
from tensorloom.catalogue.pair_folders import (
    MISSING_PARTNER,
    SHAPES_DIFFER,
    UNREADABLE_FILE,
    WORD,
    FolderFacts,
    read_folder,
)

Image = pytest.importorskip("PIL.Image")


def test_the_word_pattern_is_the_words_datasets() -> None:
    assert WORD.pattern == tokens._WORD.pattern


def _folder(root: Path) -> Path:
    """rgb/ 12x10 RGB PNGs, grey/ 8x8 grey, caption/ texts of several lines, cls/, vec/ and
    ids/ .npy arrays (float64 and int32)."""
    rng = np.random.default_rng(1)
    folder = root / "set"
    for name in ("rgb", "grey", "caption", "cls", "vec", "ids"):
        (folder / name).mkdir(parents=True)
    for i in range(7):
        stem = f"s{i}"
        Image.fromarray(rng.integers(0, 256, (10, 12, 3), np.uint8), "RGB").save(
            folder / "rgb" / f"{stem}.png")  # fmt: skip
        Image.fromarray(rng.integers(0, 256, (8, 8), np.uint8), "L").save(
            folder / "grey" / f"{stem}.png")  # fmt: skip
        text = "a cat, on (the) mat\n" * (1 + i % 3) + "ünïcode 42"
        (folder / "caption" / f"{stem}.txt").write_text(text, encoding="utf-8")
        (folder / "cls" / f"{stem}.cls").write_text(str(i))
        np.save(folder / "vec" / f"{stem}.npy", rng.standard_normal((2, 5)).astype(np.float64))
        np.save(folder / "ids" / f"{stem}.npy", np.arange(4, dtype=np.int32))
    return folder


@pytest.mark.parametrize("text", ["bytes", "words"])
def test_check_time_shapes_are_the_loaded_ones(tmp_path: Path, text: str) -> None:
    folder = _folder(tmp_path)
    facts = read_folder(folder, None, text, None)
    assert isinstance(facts, FolderFacts) and facts.count == 7
    names = tuple(f.name for f in facts.fields)
    assert names == ("caption", "cls", "grey", "ids", "rgb", "vec")  # sorted
    train, _, _ = load_folder_dataset(str(folder), text=text, val_fraction=0.0)
    for field, tensor in zip(facts.fields, train, strict=True):
        assert tuple(tensor.shape[1:]) == field.shape, field.name
        assert (tensor.dtype == torch.int64) == (field.dtype == "i64"), field.name
    assert dict((f.name, f.shape) for f in facts.fields)["rgb"] == (3, 10, 12)


def test_length_cuts_and_pads_at_check_time_as_at_load(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    facts = read_folder(folder, ["caption"], "words", 4)
    assert isinstance(facts, FolderFacts) and facts.fields[0].shape == (4,)
    (caption,), _, _ = load_folder_dataset(str(folder), fields=("caption",), text="words",
                                           length=4, val_fraction=0.0)  # fmt: skip
    assert caption.shape == (7, 4)


def test_layout_problems_carry_their_codes(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "cls" / "s3.cls").unlink()
    missing = read_folder(folder, ["grey", "cls"], "bytes", None)
    assert isinstance(missing, FileProblem) and missing.code == MISSING_PARTNER
    assert "`" + str(folder / "cls") + "/` has no file for the sample `s3`" in missing.message
    Image.fromarray(np.zeros((9, 9), np.uint8), "L").save(folder / "grey" / "s5.png")
    differ = read_folder(folder, ["grey"], "bytes", None)
    assert isinstance(differ, FileProblem) and differ.code == SHAPES_DIFFER
    assert differ.message.startswith("`grey/s5.png` is [1, 9, 9], but `grey/s0.png` is [1, 8, 8]")
    Image.new("P", (8, 8)).save(folder / "rgb" / "s1.png")
    palette = read_folder(folder, ["rgb"], "bytes", None)
    assert isinstance(palette, FileProblem) and palette.code == UNREADABLE_FILE
    assert "colour type 3" in palette.message
