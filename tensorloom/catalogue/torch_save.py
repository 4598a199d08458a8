"""What a `torch.save` file holds, unpickled with tensors as headers and no code of the file's.

    payload = read_torch_save(Path("pairs.pt"))
    # {"image": TensorHeader("float32", (1000, 1, 8, 8)), "label": TensorHeader("int64", ...)}

A `torch.save` file is a zip holding `<name>/data.pkl`, a pickle whose tensors are
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)` calls (inside
`_rebuild_parameter` for an `nn.Parameter`) over storages named by persistent ids
`("storage", torch.FloatStorage, key, location, numel)`; the storages themselves are the
zip's `<name>/data/<key>` members, never read here. `_HeaderUnpickler.find_class` gives
stand-ins for exactly those names (and `collections.OrderedDict`, a state dict's container)
and refuses every other global, so `os.system`, `builtins.eval` or any callable a REDUCE
would run never loads. The compiler never imports torch.

Both readers of .pt files use this one: a dataset (`torch_files.py`, TL0710/TL0719) and a
state dict of published weights (`weight_files.py`, TL0802). A file it refuses is a
`TorchSaveError` whose message both print word for word.
"""

from __future__ import annotations

import collections
import pickle
import zipfile
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import IO, Literal

MAX_PICKLE_BYTES = 16 * 1024 * 1024  # a pickle of tensors is small: their data lies beside it

# `torch.<Name>Storage` -> the tensor dtype, for the storage types torch.save writes.
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool",
}  # fmt: skip
# `torch.<dtype>` (a pickled `torch.float16` in a checkpoint) -> its dtype name.
DTYPE_NAMES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64",
    "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "int8": "int8",
    "uint8": "uint8", "bool": "bool",
}  # fmt: skip

Problem = Literal["not-zip", "no-pickle", "too-large", "damaged", "foreign", "unreadable"]


@dataclass(frozen=True, slots=True)
class TensorHeader:
    """One saved tensor: its dtype name (`float32`, `int64`) and its shape. A weights source's
    tensors (weight_files.py) are TensorHeaders too, their dtypes spelled as safetensors
    spells them (`F32`, `I64`), a torch state dict's converted to that spelling."""

    dtype: str
    shape: tuple[int, ...]
    # Where a torch.save tensor's numbers lie (its storage's zip member, the offset and
    # strides in elements), which two headers of one tensor need not share.
    storage: str | None = field(default=None, compare=False)
    offset: int = field(default=0, compare=False)
    stride: tuple[int, ...] | None = field(default=None, compare=False)


class TorchSaveError(Exception):
    """A file that is not read: the message names the file and says why; `problem` says
    which kind (`foreign`: the pickle holds more than tensors, and none of it ran)."""

    def __init__(self, message: str, problem: Problem) -> None:
        super().__init__(message)
        self.message = message
        self.problem: Problem = problem


class _Refused(Exception):
    """The pickle names something that is not a tensor's: `module.name`, or what it is."""


@dataclass(frozen=True, slots=True)
class _Storage:
    dtype: str
    key: str


@dataclass(frozen=True, slots=True)
class _StorageType:
    dtype: str


_DTYPES = frozenset(STORAGE_DTYPES.values())


class _HeaderUnpickler(pickle.Unpickler):
    """Rebuilds tensors as `TensorHeader`s; any global but a tensor's is refused.

    The stand-ins are plain data, but a pickle's BUILD opcode can still set their fields
    (a frozen slots dataclass has `__setstate__`): a storage's dtype is checked where it is
    used, and every header made is checked, once the pickle is read, against what it was."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(stream)
        self._made: list[tuple[TensorHeader, tuple[object, ...]]] = []

    def load(self) -> object:
        payload = super().load()
        if any(astuple(header) != made for header, made in self._made):
            raise _Refused("a tensor whose dtype or shape is set after it is rebuilt")
        return payload

    def find_class(self, module: str, name: str) -> object:
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return self._rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(STORAGE_DTYPES[name])
        if module == "torch" and name in DTYPE_NAMES:
            return DTYPE_NAMES[name]
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict  # a state dict, or a tensor's backward hooks
        raise _Refused(f"`{module}.{name}`")

    def persistent_load(self, pid: object) -> object:
        if isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage":  # pyright: ignore[reportUnknownArgumentType]
            kind = pid[1]  # pyright: ignore[reportUnknownVariableType]
            if isinstance(kind, _StorageType) and kind.dtype in _DTYPES:
                return _Storage(kind.dtype, str(pid[2]))  # pyright: ignore[reportUnknownArgumentType]
        raise _Refused("a storage of an unknown kind")

    def _rebuild_tensor(
        self, storage: object, offset: object, size: object, stride: object = None, *_: object
    ) -> object:
        if not isinstance(storage, _Storage) or storage.dtype not in _DTYPES:
            raise _Refused("a tensor rebuilt from something other than a storage")
        if not isinstance(size, tuple) or not all(_is_size(d) for d in size):  # pyright: ignore[reportUnknownVariableType]
            raise _Refused(f"a tensor of shape {size!r}")
        shape: tuple[int, ...] = size  # pyright: ignore[reportUnknownVariableType]
        where = offset if isinstance(offset, int) and offset >= 0 else 0
        steps: tuple[int, ...] | None = None
        if isinstance(stride, tuple) and len(stride) == len(shape):  # pyright: ignore[reportUnknownArgumentType]
            steps = stride  # pyright: ignore[reportUnknownVariableType]
        header = TensorHeader(storage.dtype, shape, storage.key, where, steps)
        self._made.append((header, astuple(header)))
        return header


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _rebuild_parameter(data: object, *_rest: object) -> object:
    """An `nn.Parameter`, which `torch.load(weights_only=True)` reads as its tensor."""
    if not isinstance(data, TensorHeader):
        raise _Refused("a parameter of something other than a tensor")
    return data


def read_torch_save(path: Path) -> object:
    """The file's pickled object, each tensor a `TensorHeader`; `TorchSaveError` if it is
    not a torch.save file, is damaged, or names anything but tensors and containers."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise TorchSaveError(
            f"`{path}` is not a torch.save file (no zip archive: cut short, or the legacy format)",
            "not-zip",
        ) from None
    except OSError as error:
        raise TorchSaveError(
            f"cannot read `{path}`: {error.strerror or error}", "unreadable"
        ) from None
    with archive:
        try:
            return _payload(path, archive)
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as error:
            raise TorchSaveError(
                f"`{path}` is a damaged torch.save file: {error}", "damaged"
            ) from None


def pickle_member(archive: zipfile.ZipFile) -> str | None:
    """The archive's one `data.pkl` (under the archive's folder), or None."""
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
    return pickles[0] if len(pickles) == 1 else None


def _payload(path: Path, archive: zipfile.ZipFile) -> object:
    member = pickle_member(archive)
    if member is None:
        raise TorchSaveError(f"`{path}` is not a torch.save file (no `data.pkl` in it)",
                             "no-pickle")  # fmt: skip
    info = archive.getinfo(member)
    if info.file_size > MAX_PICKLE_BYTES:
        raise TorchSaveError(
            f"`{path}`'s pickle is {info.file_size:,} bytes: more than tensors' headers",
            "too-large",
        )
    with archive.open(info) as stream:
        return _unpickle(path, stream)


def _unpickle(path: Path, stream: IO[bytes]) -> object:
    try:
        return _HeaderUnpickler(stream).load()
    except _Refused as refused:
        message = f"`{path}` holds {refused}, not only tensors: it is not read"
        raise TorchSaveError(message, "foreign") from None
    except (pickle.UnpicklingError, TypeError, AttributeError, IndexError, KeyError,
            OverflowError, RecursionError) as error:  # fmt: skip
        raise TorchSaveError(f"`{path}` is a damaged torch.save file: {error}", "damaged") from None
    except MemoryError:  # a length in the pickle that no file of tensors has
        message = f"`{path}` is a damaged torch.save file: a size out of range"
        raise TorchSaveError(message, "damaged") from None
