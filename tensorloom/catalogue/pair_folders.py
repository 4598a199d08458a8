"""What a folder of pairs says about itself at check time: its fields and their shapes.

    pairs/image/0001.png   pairs/text/0001.txt   pairs/label/0001.cls

    facts = read_folder(Path("pairs"), text="bytes", length=None)
    facts.fields   # (FolderField("image", (1, 8, 8), "f32", ".png"), ("text", (20,), "i64"), ...)
    facts.count    # 40: the stems every field folder holds

The layout is the runtime's (`tensorloom/backends/runtime/folders.py`, which loads it):
one folder per field, named as the field; in it one file per sample, named by the sample's
stem, the same stems in every field folder; a field's files share one extension:

- `.png`: the 8-bit grey, grey and alpha, RGB or RGBA PNGs the runtime decodes: [C, H, W]
  float32, read from each file's IHDR chunk (its first 33 bytes), every file's the same;
- `.txt`: token ids, [L] int64, L the `length=` option or the longest text's tokens: its
  UTF-8 bytes (`text="bytes"`) or the `words` dataset's words (`text="words"`, `words_of`;
  `WORD` is runtime/tokens.py's pattern, tests/unit/catalogue/test_pair_folders.py checks it);
- `.cls`: an integer class, [] int64, each file read;
- `.npy`: [*shape] from each header, float32 (integer arrays int64).

A layout the loader would refuse is a `FileProblem`: a missing partner file (TL0715),
files of a field that differ in shape (TL0716), a file no reader takes (TL0717). The
reading it shares with a single data file (finding the folder, .npy headers, a file's head
or text, the cache) is `file_heads.py`. Nothing here imports numpy or torch.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from pathlib import Path

from tensorloom.catalogue.data_files import ABSENT, DataCheck, DatasetProblem, dataset_problem
from tensorloom.catalogue.datasets import DataField, DatasetInfo
from tensorloom.catalogue.file_heads import (
    FileProblem,
    ReadCache,
    cannot_read,
    element_type,
    find_place,
    read_head,
    read_npy_file,
    read_text,
)

MISSING_PARTNER = "TL0715"  # a stem one field folder has and another lacks
SHAPES_DIFFER = "TL0716"  # two files of one field of different shapes
UNREADABLE_FILE = "TL0717"  # a file or folder the loader cannot read

READERS = (".png", ".txt", ".cls", ".npy")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_CHANNELS = {0: 1, 4: 2, 2: 3, 6: 4}  # colour type: grey, grey+alpha, RGB, RGBA
PNG_COLOURS = {1: "grey", 2: "grey and alpha", 3: "RGB", 4: "RGBA"}
WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9]+|\S")
"""A word of the `words` dataset (runtime/tokens.py's `_WORD`)."""


@dataclass(frozen=True, slots=True)
class FolderField:
    """One field folder: its name, one sample's shape, its element type, its extension."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "f32" or "i64", as in `!nml.tensor`
    suffix: str


@dataclass(frozen=True, slots=True)
class FolderFacts:
    count: int
    fields: tuple[FolderField, ...]

    @property
    def what(self) -> str:
        """Where the figures come from, for `tlc check`'s report."""
        kinds = ", ".join(f"{f.name}/ ({f.suffix})" for f in self.fields)
        return f"{self.count} samples of {kinds}"


def read_folder(
    folder: Path, fields: list[str] | None, text: str, length: int | None
) -> FolderFacts | FileProblem:
    """The folder's fields (`fields`, or every field folder, sorted) and their shapes."""
    names = fields if fields is not None else sorted(_field_folders(folder))
    if not names:
        put = "put each field's files in a folder named as the field: `image/`, `text/`"
        return FileProblem(f"`{folder}/` holds no field folders", put, UNREADABLE_FILE)
    files: dict[str, dict[str, Path]] = {}
    for name in names:
        held = _field_files(folder, name)
        if isinstance(held, FileProblem):
            return held
        files[name] = held
    partner = _partners(folder, files)
    if partner is not None:
        return partner
    read: list[FolderField] = []
    for name in names:
        field = _field(folder, name, files[name], text, length)
        if isinstance(field, FileProblem):
            return field
        read.append(field)
    return FolderFacts(len(next(iter(files.values()))), tuple(read))


def _field_folders(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]


def _field_files(folder: Path, name: str) -> dict[str, Path] | FileProblem:
    place = folder / name
    if not name.isidentifier():
        return FileProblem(f"`{place}/` is no field name: a field folder is named as the "
                           "field the program takes", "rename it to an identifier",
                           UNREADABLE_FILE)  # fmt: skip
    if not place.is_dir():
        return FileProblem(f"`{folder}/` has no field folder `{name}/`", None, UNREADABLE_FILE)
    try:
        listed = [p for p in place.iterdir() if p.is_file() and not p.name.startswith(".")]
    except OSError as error:
        return cannot_read(place, error, UNREADABLE_FILE)
    files = {p.stem: p for p in listed}
    kinds = sorted({p.suffix.lower() for p in listed})
    if len(kinds) != 1 or kinds[0] not in READERS:
        listed = ", ".join(f"`{k or '(none)'}`" for k in kinds) or "no files"
        return FileProblem(
            f"`{place}/` holds {listed}: a field's files share one extension the loader reads",
            f"use one of {', '.join(f'`{r}`' for r in READERS)} for every sample",
            UNREADABLE_FILE,
        )
    return files


def _partners(folder: Path, files: dict[str, dict[str, Path]]) -> FileProblem | None:
    """TL0715: the first stem (sorted) that one field folder has and another lacks."""
    everyone = sorted({stem for held in files.values() for stem in held})
    for stem in everyone:
        for name, held in files.items():
            if stem in held:
                continue
            has = next(f[stem] for f in files.values() if stem in f)
            return FileProblem(
                f"`{folder / name}/` has no file for the sample `{stem}` "
                f"(`{has.relative_to(folder)}` has no partner there)",
                "every field folder holds one file per sample, named by its stem",
                MISSING_PARTNER,
            )
    return None


def _field(
    folder: Path, name: str, files: dict[str, Path], text: str, length: int | None
) -> FolderField | FileProblem:
    stems = sorted(files)
    suffix = files[stems[0]].suffix.lower()
    if suffix == ".txt":
        longest = _longest_text([files[s] for s in stems], text)
        if isinstance(longest, FileProblem):
            return longest
        return FolderField(name, (length if length is not None else longest,), "i64", suffix)
    if suffix == ".cls":
        for stem in stems:
            problem = _class_problem(files[stem])
            if problem is not None:
                return problem
        return FolderField(name, (), "i64", suffix)
    reader = _png_shape if suffix == ".png" else _npy_shape
    first: tuple[tuple[int, ...], str] | None = None
    for stem in stems:
        shape = reader(files[stem])
        if isinstance(shape, FileProblem):
            return shape
        if first is not None and shape != first:
            return _differ(folder, files[stem], shape, files[stems[0]], first)
        first = shape
    assert first is not None
    return FolderField(name, first[0], first[1], suffix)


def _differ(
    folder: Path, path: Path, shape: tuple[tuple[int, ...], str], other: Path,
    first: tuple[tuple[int, ...], str],
) -> FileProblem:  # fmt: skip
    return FileProblem(
        f"`{path.relative_to(folder)}` is {list(shape[0])}, but `{other.relative_to(folder)}` "
        f"is {list(first[0])}: a field's samples share one shape",
        "resize or convert the files so that every sample of the field has one shape",
        SHAPES_DIFFER,
    )


def _png_shape(path: Path) -> tuple[tuple[int, ...], str] | FileProblem:
    """[C, H, W] from the IHDR chunk; the PNGs runtime/folders.py's `read_png` decodes."""
    head = read_head(path, 33, UNREADABLE_FILE)
    if isinstance(head, FileProblem):
        return head
    if not head.startswith(PNG_SIGNATURE) or head[12:16] != b"IHDR" or len(head) < 29:
        return FileProblem(f"`{path}` is not a PNG file", None, UNREADABLE_FILE)
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", head[16:29])
    if depth != 8 or colour not in PNG_CHANNELS or interlace != 0:
        laced = ", interlaced" if interlace else ""
        return FileProblem(
            f"`{path}` is a {depth}-bit PNG of colour type {colour}{laced}: the loader reads "
            "8-bit grey, grey and alpha, RGB or RGBA PNGs, not interlaced",
            'save it as an 8-bit PNG without interlacing (Pillow: `image.convert("RGB")`)',
            UNREADABLE_FILE,
        )
    return (PNG_CHANNELS[colour], height, width), "f32"


def _npy_shape(path: Path) -> tuple[tuple[int, ...], str] | FileProblem:
    header = read_npy_file(path, UNREADABLE_FILE)
    if isinstance(header, FileProblem):
        return header
    return header.shape, element_type(header.dtype)


def _class_problem(path: Path) -> FileProblem | None:
    written = read_text(path, UNREADABLE_FILE)
    if isinstance(written, FileProblem):
        return written
    written = written.strip()
    try:
        int(written)
    except ValueError:
        return FileProblem(f"`{path}` holds `{written[:20]}`, not an integer class",
                           "a .cls file holds one integer", UNREADABLE_FILE)  # fmt: skip
    return None


def _longest_text(paths: list[Path], text: str) -> int | FileProblem:
    """The most tokens a text has: its bytes, or its words (each line's, then `<eos>`)."""
    longest = 0
    for path in paths:
        written = read_text(path, UNREADABLE_FILE)
        if isinstance(written, FileProblem):
            return written
        written = written.rstrip()
        if text == "bytes":
            count = len(written.encode("utf-8"))
        else:
            count = sum(len(WORD.findall(line)) + 1 for line in written.splitlines())
        longest = max(longest, count)
    return longest


NO_FIELDS = "TL0718"  # an absent folder whose fields `fields=` does not name


def check_folder(info: DatasetInfo, base: Path | None) -> DataCheck:
    """A folder of pairs (`lookup_dataset`'s `info`) with its fields' shapes from its files;
    `base` is the program's folder."""
    found = find_place(info.name, base, folder=True)
    declared = info.options.get("fields")
    names = [str(n) for n in declared] if isinstance(declared, list) else None
    if found is None:
        return _absent(info, names)
    text = info.options.get("text", "bytes")
    length = info.options.get("length")
    facts = _cached(found, names, str(text), length if isinstance(length, int) else None)
    if isinstance(facts, FileProblem):
        option = "fields" if names is not None and "no field folder" in facts.message else None
        return DataCheck(info, "", (dataset_problem(facts, UNREADABLE_FILE, option),))
    fields = tuple(DataField(f.name, f.shape, f.dtype) for f in facts.fields)
    return DataCheck(replace(info, fields=fields), f"`{info.name}`: {facts.what}")


def _absent(info: DatasetInfo, names: list[str] | None) -> DataCheck:
    """TL0708 (a warning) where `fields=` names the fields, their shapes unknown; TL0718
    where nothing says which fields the folder holds."""
    if names is not None:
        problem = DatasetProblem(
            ABSENT,
            f"`{info.name}` is not there at check time: its fields' shapes are not checked",
            None,
            "fine if the folder lives on the training machine; the run stops if it is not there",
        )
        return DataCheck(info, f"`fields=` (`{info.name}` not found)", (problem,))
    problem = DatasetProblem(
        NO_FIELDS,
        f"`{info.name}` is not there at check time, and nothing says which fields it holds",
        None,
        'name its field folders: `load_dataset("' + info.name + '", fields=["image", "label"])`',
    )
    return DataCheck(info, "", (problem,))


def _folder_stamp(folder: Path) -> int:
    """The modification times of the folder and its field folders, which a file added,
    removed or renamed changes (a file rewritten in place does not)."""
    stamp = folder.stat().st_mtime_ns
    return stamp + sum(p.stat().st_mtime_ns for p in folder.iterdir() if p.is_dir())


_FOLDERS = ReadCache[FolderFacts](_folder_stamp)


def _cached(
    folder: Path, names: list[str] | None, text: str, length: int | None
) -> FolderFacts | FileProblem:
    """`read_folder`, once per folder state and options."""
    options = (text, length, tuple(names) if names else None)
    return _FOLDERS.read(folder, options, lambda: read_folder(folder, names, text, length))
