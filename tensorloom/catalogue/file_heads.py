"""Reading the head of a data file at check time: where it is, its first bytes, its header.

    found = find_place("train.npz", base)               # or find_place("pairs", base, folder=True)
    header = read_npy_file(found)                        # (ArrayHeader("f4", (40, 64)), 128)
    facts = _FILES.read(found, (target,), lambda: ...)  # read once per state of the file

What a single file (`data_files.py`) and a folder of pairs (`pair_folders.py`) share: both
find the data as the emitted script will, read only headers (a .npy's header dict, a PNG's
first bytes, a text), turn an unreadable file into a `FileProblem` instead of a traceback,
and keep what they read for as long as the file or folder is unchanged. Nothing here
imports numpy or torch.
"""

from __future__ import annotations

import ast
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Generic, TypeVar

_MAX_HEADER = 65_536  # a .npy header longer than this is not one numpy writes

# .npy `descr` kinds and sizes the runtime reads (runtime/data.py's _NPY_DTYPES).
INTEGER_DESCRS = {"i8": 8, "i4": 4, "i2": 2, "i1": 1, "u1": 1, "b1": 1}
FLOAT_DESCRS = {"f4": 4, "f8": 8, "f2": 2}
_DESCR_NAMES = {
    "f4": "float32", "f8": "float64", "f2": "float16", "i8": "int64", "i4": "int32",
    "i2": "int16", "i1": "int8", "u1": "uint8", "b1": "bool",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class FileProblem:
    """Why a data file cannot be what the program loads it as."""

    message: str
    help: str | None = None
    code: str | None = None  # TL0711, TL0712, TL0719, TL0715-TL0717; None: TL0710


def cannot_read(path: Path, error: OSError, code: str | None = None) -> FileProblem:
    """A file or folder the operating system will not read (permissions, a broken link)."""
    return FileProblem(f"cannot read `{path}`: {error.strerror or error}", None, code)


def find_place(path: str, base: Path | None, *, folder: bool = False) -> Path | None:
    """`path` as the emitted script will open it: relative to the working directory, else
    (a check run from elsewhere) to the program's folder `base`; None if it is not there."""
    candidate = Path(path)
    places = [candidate]
    if not candidate.is_absolute() and base is not None:
        places.append(base / candidate)
    for place in places:
        try:
            if place.is_dir() if folder else place.is_file():
                return place
        except (OSError, ValueError):
            continue
    return None


def read_head(path: Path, size: int, code: str | None = None) -> bytes | FileProblem:
    """The first `size` bytes of the file (fewer if it is shorter)."""
    try:
        with path.open("rb") as stream:
            return stream.read(size)
    except OSError as error:
        return cannot_read(path, error, code)


def read_text(path: Path, code: str | None = None) -> str | FileProblem:
    """The whole file as UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return FileProblem(f"`{path}` is not UTF-8 text", None, code)
    except OSError as error:
        return cannot_read(path, error, code)


# --- .npy headers ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArrayHeader:
    """A .npy array's header: `descr` without its byte order (`f4`, `i8`), and its shape."""

    descr: str
    shape: tuple[int, ...]

    @property
    def dtype(self) -> str:
        return _DESCR_NAMES.get(self.descr, self.descr)


def element_type(dtype: str) -> str:
    """A numpy or torch dtype name as the element type of `!nml.tensor`: float arrays are
    f32, the rest (integers, bool) i64, as the runtime converts them."""
    return "f32" if "float" in dtype else "i64"


def read_npy_header(stream: IO[bytes]) -> tuple[ArrayHeader, int] | FileProblem:
    """The header of the .npy array at the start of `stream`, and the header's length."""
    magic = stream.read(8)
    if len(magic) < 8 or magic[:6] != b"\x93NUMPY":
        return FileProblem("not a .npy array (no `\\x93NUMPY` magic)")
    major = magic[6]
    if major not in (1, 2, 3):
        return FileProblem(f"unknown .npy format version {major}.{magic[7]}")
    width = 2 if major == 1 else 4
    size_bytes = stream.read(width)
    if len(size_bytes) < width:
        return FileProblem("the .npy header is cut short")
    (length,) = struct.unpack("<H" if width == 2 else "<I", size_bytes)
    if length > _MAX_HEADER:
        return FileProblem(f"a .npy header of {length:,} bytes is not one numpy writes")
    text = stream.read(length).decode("utf-8" if major == 3 else "latin1", errors="replace")
    header = _header_dict(text)
    if isinstance(header, FileProblem):
        return header
    descr, shape, fortran = header
    if descr[:1] == ">" or descr[1:] not in {**INTEGER_DESCRS, **FLOAT_DESCRS} or fortran:
        return FileProblem(
            f"unsupported array type `{descr}`{' in Fortran order' if fortran else ''}",
            "save plain numeric C-order arrays: `np.ascontiguousarray(a)`",
        )
    return ArrayHeader(descr[1:], shape), 8 + len(size_bytes) + length


def read_npy_file(path: Path, code: str | None = None) -> ArrayHeader | FileProblem:
    """The header of the .npy file at `path`; a problem names the file."""
    try:
        with path.open("rb") as stream:
            header = read_npy_header(stream)
    except OSError as error:
        return cannot_read(path, error, code)
    if isinstance(header, FileProblem):
        return FileProblem(f"`{path}`: {header.message}", header.help, code)
    return header[0]


def _header_dict(text: str) -> tuple[str, tuple[int, ...], bool] | FileProblem:
    try:
        header = ast.literal_eval(text.strip())  # a Python literal: no code runs
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return FileProblem("the .npy header is not a dictionary literal")
    if not isinstance(header, dict):
        return FileProblem("the .npy header is not a dictionary literal")
    descr, shape, fortran = header.get("descr"), header.get("shape"), header.get("fortran_order")
    if not isinstance(descr, str) or not isinstance(shape, tuple) or not isinstance(fortran, bool):
        return FileProblem("the .npy header lacks `descr`, `shape` or `fortran_order`")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        return FileProblem(f"the .npy header's shape {shape!r} is not a tuple of sizes")
    if descr[:1] in ("<", ">", "|", "="):
        return descr, shape, fortran
    return f"<{descr}", shape, fortran


# --- what was read, once per state of the file -------------------------------------------

_Facts = TypeVar("_Facts")


class ReadCache(Generic[_Facts]):
    """What was read from files or folders, kept while they are unchanged: keyed by the
    resolved path, a stamp of its state (`stamp(path)`: modification times, size) and the
    options the read took. In-process only: a later `tlc` process reads them again."""

    def __init__(self, stamp: Callable[[Path], object]) -> None:
        self._stamp = stamp
        self._held: dict[tuple[object, ...], _Facts | FileProblem] = {}

    def read(
        self, path: Path, options: tuple[object, ...], read: Callable[[], _Facts | FileProblem]
    ) -> _Facts | FileProblem:
        try:
            key = (str(path.resolve()), self._stamp(path), *options)
        except OSError as error:
            return cannot_read(path, error)
        if key not in self._held:
            self._held[key] = read()
        return self._held[key]
