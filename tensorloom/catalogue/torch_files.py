"""The tensors a `torch.save` file holds, read from its pickle without importing torch.

    headers = read_pt_headers(Path("pairs.pt"))
    # {"image": TensorHeader("float32", (1000, 1, 8, 8)), "text": ..., "label": ...}
    # torch.save((x, y), "data.pt") reads as {"x": ..., "y": ...}

A `torch.save` file is a zip holding `<name>/data.pkl`, a pickle whose tensors are
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)` calls (inside
`_rebuild_parameter` for an `nn.Parameter`) over storages
named by persistent ids `("storage", torch.FloatStorage, key, location, numel)`; the
storages themselves are the zip's `<name>/data/<key>` members, never read here. The
pickle is read by `_HeaderUnpickler`, whose `find_class` gives stand-ins for exactly
those names and refuses every other: no code from the file runs. A dict of tensors
(`{"image": x, "label": y}`) is its fields by name; a tuple or list of two tensors is
`x` and `y`. A problem is a `PtProblem`; `data_files.py` turns it into a FileProblem.
"""

from __future__ import annotations

import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

MAX_PICKLE_BYTES = 16 * 1024 * 1024  # a data.pkl of tensors is small: its data lies beside it

# `torch.<Name>Storage` -> the tensor dtype, for the storage types torch.save writes.
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool",
}  # fmt: skip
SAVE_HELP = 'save a dict of tensors: `torch.save({"image": x, "label": y}, path)`'


@dataclass(frozen=True, slots=True)
class TensorHeader:
    """One saved tensor: its dtype name (`float32`, `int64`) and its shape."""

    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PtProblem:
    message: str
    help: str | None = None
    foreign: bool = False  # the pickle holds something other than tensors (TL0719)


@dataclass(frozen=True, slots=True)
class _Storage:
    dtype: str


@dataclass(frozen=True, slots=True)
class _StorageType:
    dtype: str


class _Refused(Exception):
    """The pickle names a global that is not a tensor's: `module.name`."""


def _rebuild_tensor(storage: object, _offset: object, size: object, *_rest: object) -> object:
    if not isinstance(storage, _Storage) or not isinstance(size, tuple):
        raise _Refused("a tensor rebuilt from something other than a storage")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in size):
        raise _Refused(f"a tensor of shape {size!r}")
    return TensorHeader(storage.dtype, size)


def _rebuild_parameter(data: object, *_rest: object) -> object:
    """An `nn.Parameter`, which `torch.load(weights_only=True)` reads as its tensor."""
    if not isinstance(data, TensorHeader):
        raise _Refused("a parameter of something other than a tensor")
    return data


class _HeaderUnpickler(pickle.Unpickler):
    """Rebuilds tensors as `TensorHeader`s; any global but a tensor's is refused."""

    def find_class(self, module: str, name: str) -> object:
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(STORAGE_DTYPES[name])
        if module == "collections" and name == "OrderedDict":
            return _ordered_dict  # a tensor's (empty) backward hooks, or the container
        raise _Refused(f"`{module}.{name}`")

    def persistent_load(self, pid: object) -> object:
        if isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage":
            kind = pid[1]
            if isinstance(kind, _StorageType):
                return _Storage(kind.dtype)
        raise _Refused("a storage of an unknown kind")


def _ordered_dict(*args: object) -> dict[object, object]:
    if args:
        raise _Refused("`collections.OrderedDict` with arguments")
    return {}


def read_pt_headers(path: Path) -> dict[str, TensorHeader] | PtProblem:
    """The file's tensors by field name, in the saved order, or why it is not data."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        return PtProblem(
            f"`{path}` is not a torch.save file (no zip archive: cut short, or the legacy format)",
            f"{SAVE_HELP}, with torch.save's default format",
        )
    with archive:
        try:
            payload = _payload(path, archive)
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as error:
            return PtProblem(f"`{path}` is a damaged torch.save file: {error}")
    return payload if isinstance(payload, PtProblem) else _fields(path, payload)


def _payload(path: Path, archive: zipfile.ZipFile) -> object:
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
    if len(pickles) != 1:
        return PtProblem(f"`{path}` is not a torch.save file (no `data.pkl` in it)", SAVE_HELP)
    info = archive.getinfo(pickles[0])
    if info.file_size > MAX_PICKLE_BYTES:
        return PtProblem(
            f"`{path}`'s pickle is {info.file_size:,} bytes: not a dict of tensors", SAVE_HELP
        )
    with archive.open(info) as stream:
        return _unpickle(path, stream)


def _unpickle(path: Path, stream: IO[bytes]) -> object:
    try:
        return _HeaderUnpickler(stream).load()
    except _Refused as refused:
        return PtProblem(
            f"`{path}` holds {refused}, not only tensors: it is not read", SAVE_HELP, foreign=True
        )
    except (pickle.UnpicklingError, TypeError, AttributeError, IndexError, KeyError,
            OverflowError, RecursionError) as error:  # fmt: skip
        return PtProblem(f"`{path}` is a damaged torch.save file: {error}")
    except MemoryError:  # a length in the pickle that no dict of tensors has
        return PtProblem(f"`{path}` is a damaged torch.save file: a size out of range")


def _fields(path: Path, payload: object) -> dict[str, TensorHeader] | PtProblem:
    """A dict of tensors by its keys; a tuple or list of two tensors as `x` and `y`."""
    if isinstance(payload, dict):
        items = list(payload.items())  # type: ignore[reportUnknownArgumentType]
        names = [key for key, _ in items]
        if not all(isinstance(key, str) and key.isidentifier() for key in names):
            bad = next(k for k in names if not (isinstance(k, str) and k.isidentifier()))
            return PtProblem(
                f"`{path}`'s dict has the key `{bad!r}`, not a field name", SAVE_HELP, True
            )
        fields = {str(key): value for key, value in items}
    elif isinstance(payload, tuple | list) and len(payload) == 2:  # type: ignore[reportUnknownArgumentType]
        fields = {"x": payload[0], "y": payload[1]}
    elif isinstance(payload, tuple | list):
        count = len(payload)  # type: ignore[reportUnknownArgumentType]
        return PtProblem(
            f"`{path}` holds a sequence of {count} tensors: only `(x, y)` has field names",
            SAVE_HELP,
            True,
        )
    else:
        what = "a tensor" if isinstance(payload, TensorHeader) else f"a {type(payload).__name__}"
        return PtProblem(f"`{path}` holds {what}, not a dict of tensors", SAVE_HELP, True)
    for name, value in fields.items():
        if not isinstance(value, TensorHeader):
            what = type(value).__name__
            return PtProblem(f"`{path}`'s `{name}` is `{what}`, not a tensor", SAVE_HELP, True)
    return fields  # type: ignore[return-value]
