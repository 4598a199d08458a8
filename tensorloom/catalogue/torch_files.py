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

`read_pt_labels` reads one integer tensor's values (a classifier's labels, for their
number of classes) straight from its storage member: raw numbers, never a pickle.
"""

from __future__ import annotations

import pickle
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

MAX_PICKLE_BYTES = 16 * 1024 * 1024  # a data.pkl of tensors is small: its data lies beside it
MAX_LABEL_BYTES = 64 * 1024 * 1024  # the labels tensor read for its range, as a .npz's

# `torch.<Name>Storage` -> the tensor dtype, for the storage types torch.save writes.
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool",
}  # fmt: skip
# An integer dtype -> (bytes per element, struct code): the labels `read_pt_labels` reads.
INTEGER_CODES = {
    "int64": (8, "q"), "int32": (4, "i"), "int16": (2, "h"), "int8": (1, "b"), "uint8": (1, "B"),
}  # fmt: skip
SAVE_HELP = 'save a dict of tensors: `torch.save({"image": x, "label": y}, path)`'


@dataclass(frozen=True, slots=True)
class TensorHeader:
    """One saved tensor: its dtype name (`float32`, `int64`) and its shape; where its
    numbers lie (the storage's zip member, the offset and strides, in elements), which
    two headers of one tensor need not share."""

    dtype: str
    shape: tuple[int, ...]
    storage: str | None = field(default=None, compare=False)
    offset: int = field(default=0, compare=False)
    stride: tuple[int, ...] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class PtProblem:
    message: str
    help: str | None = None
    foreign: bool = False  # the pickle holds something other than tensors (TL0719)


@dataclass(frozen=True, slots=True)
class _Storage:
    dtype: str
    key: str


@dataclass(frozen=True, slots=True)
class _StorageType:
    dtype: str


class _Refused(Exception):
    """The pickle names a global that is not a tensor's: `module.name`."""


def _rebuild_tensor(
    storage: object, offset: object, size: object, stride: object = None, *_rest: object
) -> object:
    if not isinstance(storage, _Storage) or not isinstance(size, tuple):
        raise _Refused("a tensor rebuilt from something other than a storage")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in size):
        raise _Refused(f"a tensor of shape {size!r}")
    where = offset if isinstance(offset, int) and offset >= 0 else 0
    steps = tuple(stride) if isinstance(stride, tuple) and len(stride) == len(size) else None
    return TensorHeader(storage.dtype, size, storage.key, where, steps)  # type: ignore[arg-type]


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
                return _Storage(kind.dtype, str(pid[2]))  # type: ignore[reportUnknownArgumentType]
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


def _pickle_member(archive: zipfile.ZipFile) -> str | None:
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
    return pickles[0] if len(pickles) == 1 else None


def _payload(path: Path, archive: zipfile.ZipFile) -> object:
    member = _pickle_member(archive)
    if member is None:
        return PtProblem(f"`{path}` is not a torch.save file (no `data.pkl` in it)", SAVE_HELP)
    info = archive.getinfo(member)
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


def read_pt_labels(path: Path, tensor: TensorHeader) -> int | PtProblem | None:
    """The largest of an integer tensor's values + 1 (0 for none), read from its storage
    in `path` (a header `read_pt_headers` gave): a classifier's number of classes. None
    where it cannot be said cheaply: float targets, a strided view, over `MAX_LABEL_BYTES`."""
    if tensor.dtype not in INTEGER_CODES or tensor.storage is None:
        return None
    width, code = INTEGER_CODES[tensor.dtype]
    count = _product(tensor.shape)
    if count * width > MAX_LABEL_BYTES or not _contiguous(tensor):
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            data, order = _storage_bytes(archive, tensor, count * width)
    except (zipfile.BadZipFile, EOFError, KeyError, ValueError, NotImplementedError, OSError):
        return None  # read_pt_headers has said what is wrong with the file
    if len(data) < count * width:
        return PtProblem(f"`{path}`'s labels are cut short: {len(data) // width:,} of {count:,}")
    if count == 0:
        return 0
    values = struct.unpack(f"{order}{count}{code}", data)
    if min(values) < 0:
        low = min(values)
        return PtProblem(f"`{path}`'s `y` has a negative class label ({low})",
                         "class labels count from 0")  # fmt: skip
    return max(values) + 1


def _storage_bytes(archive: zipfile.ZipFile, tensor: TensorHeader, size: int) -> tuple[bytes, str]:
    """`size` bytes of `tensor`'s storage from its offset, and their byte order for struct."""
    member = _pickle_member(archive)
    prefix = member.removesuffix("data.pkl") if member is not None else ""
    names = set(archive.namelist())
    order = "<"
    if f"{prefix}byteorder" in names:
        order = ">" if archive.read(f"{prefix}byteorder").strip() == b"big" else "<"
    width = INTEGER_CODES[tensor.dtype][0]
    with archive.open(f"{prefix}data/{tensor.storage}") as stream:
        stream.read(tensor.offset * width)
        return stream.read(size), order


def _contiguous(tensor: TensorHeader) -> bool:
    """Whether the tensor's numbers are its storage's, in order, from its offset."""
    if tensor.stride is None:
        return False
    step = 1
    for size, stride in reversed(list(zip(tensor.shape, tensor.stride, strict=True))):
        if size > 1 and stride != step:
            return False
        step *= size
    return True


def _product(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count
