"""The tensors of a `torch.save` dataset file by field name, read without importing torch.

    headers = read_pt_headers(Path("pairs.pt"))
    # {"image": TensorHeader("float32", (1000, 1, 8, 8)), "text": ..., "label": ...}
    # torch.save((x, y), "data.pt") reads as {"x": ..., "y": ...}

The pickle is read by `torch_save.py`'s restricted unpickler (no code from the file runs).
`read_pt_labels` reads one integer tensor's values (a classifier's labels, for their
number of classes) straight from its storage member: raw numbers, never a pickle. A dict
of tensors (`{"image": x, "label": y}`) is its fields by name; a tuple or list of two
tensors is `x` and `y`. A problem is a `PtProblem`;
`data_files.py` turns it into a FileProblem.
"""

from __future__ import annotations

import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tensorloom.catalogue.torch_save import (
    TensorHeader,
    TorchSaveError,
    pickle_member,
    read_torch_save,
)

__all__ = ["PtProblem", "TensorHeader", "read_pt_headers", "read_pt_labels"]

MAX_LABEL_BYTES = 64 * 1024 * 1024  # the labels tensor read for its range, as a .npz's
# An integer dtype -> (bytes per element, struct code): the labels `read_pt_labels` reads.
INTEGER_CODES = {
    "int64": (8, "q"), "int32": (4, "i"), "int16": (2, "h"), "int8": (1, "b"), "uint8": (1, "B"),
}  # fmt: skip
SAVE_HELP = 'save a dict of tensors: `torch.save({"image": x, "label": y}, path)`'
# How to write the file instead, by what `read_torch_save` found wrong with it.
_HELP = {
    "not-zip": f"{SAVE_HELP}, with torch.save's default format",
    "no-pickle": SAVE_HELP,
    "too-large": SAVE_HELP,
    "foreign": SAVE_HELP,
}


@dataclass(frozen=True, slots=True)
class PtProblem:
    message: str
    help: str | None = None
    foreign: bool = False  # the pickle holds something other than tensors (TL0719)


def read_pt_headers(path: Path) -> dict[str, TensorHeader] | PtProblem:
    """The file's tensors by field name, in the saved order, or why it is not data."""
    try:
        payload = read_torch_save(path)
    except TorchSaveError as error:
        return PtProblem(error.message, _HELP.get(error.problem), error.problem == "foreign")
    return _fields(path, payload)


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
    member = pickle_member(archive)
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
