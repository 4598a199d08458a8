"""Folders of pairs: one subfolder per field, one file per sample, partners sharing a stem.

    pairs/image/0001.png   pairs/text/0001.txt   pairs/label/0001.cls
    pairs/image/0002.png   pairs/text/0002.txt   pairs/label/0002.cls

    train, val, info = load_folder_dataset("pairs/", fields=("image", "text", "label"))
    image, text, label = train   # [N, C, H, W] float32, [N, L] int64, [N] int64

The layout of segmentation sets (`images/`, `masks/`) and image-caption folders: each
field's folder is named as the field, and holds one file per sample named by the sample's
stem; every field folder holds the same stems, and the samples are taken in sorted stem
order. A field's files share one extension, which says how they read:

- `.png`: 8-bit grey, grey and alpha, RGB or RGBA, not interlaced (`read_png`, a PNG
  decoder on the standard library's zlib; its rows are unfiltered in Python, 2 to 8 ms for
  a 64x64 RGB image on a 2-core machine): float32 [C, H, W] in [0, 1];
- `.txt`: UTF-8 text as token ids, `length` of them (default: the longest text's), as the
  `text` dataset reads it (`text="bytes"`: each byte an id 0-255, padded with 0) or the
  `words` dataset (`text="words"`: `words_of`, ids from a `vocab`-word vocabulary of the
  folder's texts, `<unk>` 0, padded with `<eos>`);
- `.cls`: one integer, a class: int64 [];
- `.npy`: one array: float32 (an integer array int64).

Validation is a seeded `val_fraction` hold-out, as for a .npz. tensorloom/catalogue/
pair_folders.py reads the same layout at check time (the PNG headers, the .npy headers, the
texts' lengths); a layout the loader cannot read is `DatasetUnavailable`, one line.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import torch

from tensorloom.backends.runtime.data import (
    DataInfo,
    DatasetUnavailable,
    Tensors,
    read_npy,
    split_fields,
)
from tensorloom.backends.runtime.tokens import END_OF_LINE, word_vocabulary, words_of

FOLDER_READERS = (".png", ".txt", ".cls", ".npy")
"""The extensions a field's files may have, each with its reader."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_CHANNELS = {0: 1, 4: 2, 2: 3, 6: 4}  # colour type: grey, grey+alpha, RGB, RGBA


def load_folder_dataset(
    path: str | os.PathLike[str],
    *,
    data_root: str | os.PathLike[str] | None = None,
    fields: tuple[str, ...] | None = None,
    text: str = "bytes",
    length: int | None = None,
    vocab: int = 10000,
    split_seed: int = 0,
    val_fraction: float = 0.1,
) -> tuple[Tensors, Tensors, DataInfo]:
    """The fields `fields` (default: every field folder, in sorted order) of the folder at
    `path`, one row per stem, and a seeded hold-out for validation (see the module doc)."""
    folder = Path(path)
    if not folder.is_dir():
        raise DatasetUnavailable(f"{path} is not a folder: a folder of pairs holds one folder "
                                 "per field")  # fmt: skip
    chosen = fields if fields is not None else tuple(sorted(_field_folders(folder)))
    files = {name: _field_files(folder, name) for name in chosen}
    stems = _common_stems(folder, files)
    tensors = tuple(_read_field(folder / name, files[name], stems, text, length, vocab)
                    for name in chosen)  # fmt: skip
    info = DataInfo(folder.name, tuple(tensors[0].shape[1:]), (), None, "fields")
    return (*split_fields(tensors, val_fraction, split_seed), info)


def _field_folders(folder: Path) -> list[str]:
    names = [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if not names:
        raise DatasetUnavailable(f"{folder} holds no field folders (as image/, text/)")
    return names


def _field_files(folder: Path, name: str) -> dict[str, Path]:
    """The field's files by stem; one extension, one the loader reads."""
    place = folder / name
    if not place.is_dir():
        raise DatasetUnavailable(f"{folder} has no field folder {name}/")
    listed = [p for p in place.iterdir() if p.is_file() and not p.name.startswith(".")]
    files = {p.stem: p for p in listed}
    kinds = {p.suffix.lower() for p in listed}
    if len(kinds) != 1 or not kinds <= set(FOLDER_READERS):
        listed = ", ".join(sorted(kinds)) or "no files"
        raise DatasetUnavailable(f"{place}/ holds {listed}: a field's files share one of "
                                 f"the extensions {', '.join(FOLDER_READERS)}")  # fmt: skip
    return files


def _common_stems(folder: Path, files: dict[str, dict[str, Path]]) -> list[str]:
    """Every field's stems, sorted; a stem some field lacks is an error naming the file."""
    everyone = sorted({stem for held in files.values() for stem in held})
    for name, held in files.items():
        for stem in everyone:
            if stem not in held:
                partner = next(f[stem] for f in files.values() if stem in f)
                raise DatasetUnavailable(f"{folder / name}/ has no file for {stem} "
                                         f"(the partner of {partner})")  # fmt: skip
    return everyone


def _read_field(
    place: Path, files: dict[str, Path], stems: list[str], text: str, length: int | None,
    vocab: int,
) -> torch.Tensor:  # fmt: skip
    """One row per stem, stacked; every row of one shape."""
    suffix = files[stems[0]].suffix.lower()
    if suffix == ".txt":
        return _texts([files[s] for s in stems], text, length, vocab)
    if suffix == ".cls":
        return torch.tensor([_class_of(files[s]) for s in stems], dtype=torch.int64)
    reader = read_png if suffix == ".png" else _read_array
    rows = [reader(files[s]) for s in stems]
    first = rows[0]
    for stem, row in zip(stems, rows, strict=True):
        if row.shape != first.shape:
            raise DatasetUnavailable(
                f"{files[stem]} is {list(row.shape)}, but {files[stems[0]]} is "
                f"{list(first.shape)}: a field's samples share one shape"
            )
    return torch.stack(rows)


def _read_array(path: Path) -> torch.Tensor:
    array = read_npy(path.read_bytes())
    return array.float() if array.is_floating_point() else array.long()


def _class_of(path: Path) -> int:
    written = path.read_text(encoding="utf-8").strip()
    try:
        return int(written)
    except ValueError:
        raise DatasetUnavailable(f"{path} holds {written[:20]!r}, not an integer class") from None


def text_tokens(texts: list[str], text: str, vocab: int) -> tuple[list[list[int]], int]:
    """Each text's token ids, and the id that pads them: its UTF-8 bytes (pad 0), or its
    words in a `vocab`-word vocabulary of them all (pad `<eos>`)."""
    if text == "bytes":
        return [list(t.rstrip().encode("utf-8")) for t in texts], 0
    words = [words_of(t.rstrip()) for t in texts]
    vocabulary = word_vocabulary([w for ws in words for w in ws], vocab)
    ids = {w: i for i, w in enumerate(vocabulary)}
    return [[ids.get(w, 0) for w in ws] for ws in words], ids.get(END_OF_LINE, 0)


def _texts(paths: list[Path], text: str, length: int | None, vocab: int) -> torch.Tensor:
    """`[N, length]` token ids, each text cut or padded to `length` (default: the longest)."""
    tokens, pad = text_tokens([p.read_text(encoding="utf-8") for p in paths], text, vocab)
    width = length if length is not None else max(len(t) for t in tokens)
    rows = [t[:width] + [pad] * (width - len(t[:width])) for t in tokens]
    return torch.tensor(rows, dtype=torch.int64)


def read_png(path: str | os.PathLike[str]) -> torch.Tensor:
    """An 8-bit, non-interlaced PNG (grey, grey and alpha, RGB, RGBA) as float32 [C, H, W]
    in [0, 1]: its IDAT chunks inflated, each scanline unfiltered (PNG's five filters)."""
    data = Path(path).read_bytes()
    if not data.startswith(PNG_SIGNATURE):
        raise DatasetUnavailable(f"{path} is not a PNG file")
    header, idat = _png_chunks(path, data)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in PNG_CHANNELS or interlace != 0:
        raise DatasetUnavailable(
            f"{path} is a {depth}-bit PNG of colour type {colour}"
            f"{', interlaced' if interlace else ''}: the reader takes 8-bit grey, grey and "
            "alpha, RGB or RGBA, not interlaced"
        )
    channels = PNG_CHANNELS[colour]
    try:
        raw = zlib.decompress(idat)
    except zlib.error as error:
        raise DatasetUnavailable(f"{path}: its image data does not inflate ({error})") from None
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise DatasetUnavailable(f"{path}: its image data is not {height} rows of {width} pixels")
    pixels = _unfilter(raw, height, stride, channels, path)
    image = torch.frombuffer(pixels, dtype=torch.uint8).view(height, width, channels)
    return image.permute(2, 0, 1).float() / 255.0


def _png_chunks(path: str | os.PathLike[str], data: bytes) -> tuple[bytes, bytes]:
    """The IHDR body and the IDAT bodies joined, each chunk's CRC checked."""
    at, header, idat = len(PNG_SIGNATURE), b"", bytearray()
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + size]
        crc = data[at + 8 + size : at + 12 + size]
        if len(body) != size or len(crc) != 4:
            raise DatasetUnavailable(
                f"{path} is cut short inside its {kind.decode('latin1')} chunk"
            )
        if zlib.crc32(kind + body) & 0xFFFFFFFF != struct.unpack(">I", crc)[0]:
            raise DatasetUnavailable(f"{path}: its {kind.decode('latin1')} chunk fails its CRC")
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        at += 12 + size
    if len(header) != 13 or not idat:
        raise DatasetUnavailable(f"{path} has no IHDR or no IDAT chunk")
    return header, bytes(idat)


def _unfilter(raw: bytes, height: int, stride: int, bpp: int, path: object) -> bytearray:
    """The scanlines without their filters: None, Sub, Up, Average, Paeth (PNG spec 9.2)."""
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                corner = previous[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, previous[i], corner)) & 0xFF
        elif kind != 0:
            raise DatasetUnavailable(f"{path}: row {row} has filter {kind}, not one of 0-4")
        out[row * stride : (row + 1) * stride] = line
        previous = line
    return out


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c
