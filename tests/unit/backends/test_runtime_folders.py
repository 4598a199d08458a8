"""The folder-of-pairs loader and its PNG decoder, on folders written here in the real
formats: PNGs from Pillow's encoder (adaptive filters) and from a hand encoder that uses each
of PNG's five row filters, texts, class files and .npy arrays."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from tensorloom.backends.runtime.data import DatasetUnavailable
from tensorloom.backends.runtime.folders import load_folder_dataset, read_png, text_tokens
from tensorloom.backends.runtime.tokens import word_vocabulary, words_of

Image = pytest.importorskip("PIL.Image")


def _png(rows: np.ndarray, colour: int, filters: list[int]) -> bytes:
    """A PNG of `rows` [H, W, C] uint8, row `i` written with filter `filters[i % 5]`."""
    height, width, channels = rows.shape
    stride, bpp = width * channels, channels
    raw, previous = bytearray(), [0] * stride
    for index, row in enumerate(rows.reshape(height, stride).tolist()):
        kind = filters[index % len(filters)]
        out = []
        for i, value in enumerate(row):
            left = row[i - bpp] if i >= bpp else 0
            up = previous[i]
            corner = previous[i - bpp] if i >= bpp else 0
            guess = [0, left, up, (left + up) >> 1, _paeth(left, up, corner)][kind]
            out.append((value - guess) & 0xFF)
        raw += bytes([kind, *out])
        previous = row

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)  # fmt: skip

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))  # fmt: skip


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


@pytest.mark.parametrize(("mode", "channels"), [("L", 1), ("LA", 2), ("RGB", 3), ("RGBA", 4)])
def test_pillow_pngs_decode_to_their_pixels(tmp_path: Path, mode: str, channels: int) -> None:
    pixels = np.random.default_rng(channels).integers(0, 256, (13, 17, channels), np.uint8)
    path = tmp_path / "a.png"
    Image.fromarray(pixels[..., 0] if channels == 1 else pixels, mode).save(path)
    decoded = read_png(path)
    assert decoded.shape == (channels, 13, 17) and decoded.dtype == torch.float32
    expected = torch.from_numpy(pixels).permute(2, 0, 1).float() / 255.0
    torch.testing.assert_close(decoded, expected, rtol=0, atol=0)


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4])
def test_each_row_filter_decodes(tmp_path: Path, kind: int) -> None:
    pixels = np.random.default_rng(kind).integers(0, 256, (6, 5, 3), np.uint8)
    path = tmp_path / "f.png"
    path.write_bytes(_png(pixels, 2, [kind, (kind + 1) % 5]))
    assert (read_png(path) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy().tolist() == (
        pixels.tolist()
    )
    with Image.open(path) as opened:  # Pillow reads the hand encoder's file the same
        assert np.asarray(opened).tolist() == pixels.tolist()


def test_unsupported_pngs_are_one_line_errors(tmp_path: Path) -> None:
    palette = tmp_path / "p.png"
    Image.new("P", (4, 4)).save(palette)
    with pytest.raises(DatasetUnavailable, match="colour type 3"):
        read_png(palette)
    deep = tmp_path / "d.png"
    Image.fromarray(np.zeros((4, 4), np.uint16)).save(deep)
    with pytest.raises(DatasetUnavailable, match="16-bit"):
        read_png(deep)
    broken = tmp_path / "b.png"
    broken.write_bytes(_png(np.zeros((4, 4, 1), np.uint8), 0, [0])[:-20])
    with pytest.raises(DatasetUnavailable, match=r"cut short|no IHDR"):
        read_png(broken)
    (tmp_path / "t.png").write_text("not a png")
    with pytest.raises(DatasetUnavailable, match="not a PNG"):
        read_png(tmp_path / "t.png")


def _pairs(root: Path, count: int = 10) -> Path:
    """pairs/image/NNNN.png (8x8 grey), text/NNNN.txt, label/NNNN.cls, extra/NNNN.npy [3]."""
    rng = np.random.default_rng(0)
    for name in ("image", "text", "label", "extra"):
        (root / "pairs" / name).mkdir(parents=True)
    for i in range(count):
        stem = f"{i:04d}"
        Image.fromarray(rng.integers(0, 256, (8, 8), np.uint8), "L").save(
            root / "pairs" / "image" / f"{stem}.png")  # fmt: skip
        words = " ".join(["seven", "bold", "left", "high"][: 1 + i % 4])
        (root / "pairs" / "text" / f"{stem}.txt").write_text(words + "\n", encoding="utf-8")
        (root / "pairs" / "label" / f"{stem}.cls").write_text(f"{i % 3}\n")
        np.save(root / "pairs" / "extra" / f"{stem}.npy", np.full(3, i, np.float32))
    return root / "pairs"


def test_a_folder_of_pairs_loads_each_field_by_stem(tmp_path: Path) -> None:
    folder = _pairs(tmp_path)
    train, val, info = load_folder_dataset(str(folder), fields=("image", "text", "label"),
                                           val_fraction=0.2)  # fmt: skip
    image, text, label = (torch.cat([a, b]) for a, b in zip(train, val, strict=True))
    assert (len(train[0]), len(val[0])) == (8, 2) and info.task == "fields"
    assert image.shape == (10, 1, 8, 8) and text.shape == (10, 20) and label.dtype == torch.int64
    # each row's fields are one sample's: the image, text and label files of one stem
    pngs = [read_png(folder / "image" / f"{i:04d}.png") for i in range(10)]
    for row in range(10):
        (stem,) = [i for i in range(10) if torch.equal(pngs[i], image[row])]
        assert int(label[row]) == stem % 3
        words = " ".join(["seven", "bold", "left", "high"][: 1 + stem % 4])
        assert bytes(text[row][text[row] > 0].tolist()).decode() == words


def test_rows_keep_their_partners_through_the_split(tmp_path: Path) -> None:
    folder = _pairs(tmp_path)
    train, val, _ = load_folder_dataset(str(folder), fields=("extra", "label", "text"),
                                        val_fraction=0.3)  # fmt: skip
    for extra, label, text in (train, val):
        for e, lab, t in zip(extra, label, text, strict=True):
            stem = int(e[0])
            assert int(lab) == stem % 3
            assert bytes(t[t > 0].tolist()).decode() == " ".join(
                ["seven", "bold", "left", "high"][: 1 + stem % 4])  # fmt: skip


def test_words_are_the_words_datasets_ids_padded_with_eos(tmp_path: Path) -> None:
    folder = _pairs(tmp_path)
    train, _, _ = load_folder_dataset(str(folder), fields=("text",), text="words",
                                        length=6, val_fraction=0.0)  # fmt: skip
    (text,) = train
    texts = [(folder / "text" / f"{i:04d}.txt").read_text() for i in range(10)]
    vocabulary = word_vocabulary([w for t in texts for w in words_of(t.rstrip())], 10000)
    first = [vocabulary.index(w) for w in words_of(texts[0].rstrip())]
    eos = vocabulary.index("<eos>")
    rows = {tuple(r) for r in text.tolist()}
    assert tuple(first + [eos] * (6 - len(first))) in rows
    tokens, pad = text_tokens(texts, "words", 10000)
    assert pad == eos and tokens[0] == first


def test_a_missing_partner_or_mixed_files_are_one_line_errors(tmp_path: Path) -> None:
    folder = _pairs(tmp_path)
    (folder / "text" / "0007.txt").unlink()
    with pytest.raises(DatasetUnavailable, match=r"text/ has no file for 0007 \(the partner of "):
        load_folder_dataset(str(folder), fields=("image", "text"))
    (folder / "text" / "0007.md").write_text("x")
    with pytest.raises(DatasetUnavailable, match="share one of the extensions"):
        load_folder_dataset(str(folder), fields=("text",))
    Image.fromarray(np.zeros((4, 4), np.uint8), "L").save(folder / "image" / "0003.png")
    with pytest.raises(DatasetUnavailable, match=r"0003.png is \[1, 4, 4\], but .*0000.png is "):
        load_folder_dataset(str(folder), fields=("image",))
    (folder / "label" / "0002.cls").write_text("two")
    with pytest.raises(DatasetUnavailable, match="not an integer class"):
        load_folder_dataset(str(folder), fields=("label",))
    with pytest.raises(DatasetUnavailable, match="no field folder caption/"):
        load_folder_dataset(str(folder), fields=("caption",))
