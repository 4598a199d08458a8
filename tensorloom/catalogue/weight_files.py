"""What a file of published weights holds, read from its header: names, shapes and dtypes.

    header = read_weight_header(Path("gpt2"))       # a folder, or a file
    header.tensors["transformer.wte.weight"]         # TensorHeader("F32", (50257, 768))
    header.config                                     # config.json's entries, or {}

No tensor data is read: a safetensors file starts with its JSON header (an 8-byte
little-endian length, then the JSON); a sharded folder's model.safetensors.index.json names
the shards; a torch state dict (.pt, .pth, .bin: a zip holding a pickle) is read by
torch_save.py's restricted unpickler, which records each tensor's shape and dtype and refuses
every other global, so reading it runs no code of the file's. The compiler never imports torch.
The emitted script reads the same formats with safetensors and torch
(tensorloom/backends/runtime/pretrained.py).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tensorloom.catalogue.torch_save import TensorHeader, TorchSaveError, read_torch_save

_MAX_HEADER = 100 * 1024 * 1024
_SAFETENSORS_SIZES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U64": 8,
    "U32": 4,
    "U16": 2,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}  # fmt: skip  bytes per element of each dtype safetensors writes
# torch's dtype names (torch_save.py's headers) -> safetensors' spelling of them: every
# TensorHeader of a weights source spells its dtype as safetensors does.
_SAFETENSORS_DTYPES = {
    "float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
    "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}  # fmt: skip


@dataclass(slots=True)
class WeightHeader:
    """Every tensor of a weights source, by the file's names, and its config.json if any."""

    tensors: dict[str, TensorHeader] = field(default_factory=dict[str, TensorHeader])
    config: dict[str, Any] = field(default_factory=dict[str, Any])
    files: list[Path] = field(default_factory=list[Path])


class WeightFileError(Exception):
    """A weights source that cannot be read; the message names the file and says why."""


def read_weight_header(path: Path) -> WeightHeader:
    """The names, shapes and dtypes at `path` (a file or a Hugging Face folder)."""
    header = WeightHeader()
    if path.is_dir():
        header.config = _config(path / "config.json")
    for file in _files(path):
        header.files.append(file)
        if file.suffix == ".safetensors":
            header.tensors.update(safetensors_header(file))
        else:
            header.tensors.update(torch_state_header(file))
    return header


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise WeightFileError(f"{path}: no such file or folder")
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise WeightFileError(f"{index}: not a safetensors index ({exc})") from None
        files = [path / name for name in dict.fromkeys(shards)]
        absent = [f.name for f in files if not f.is_file()]
        if absent:
            raise WeightFileError(f"{index}: its shard {absent[0]} is not in the folder")
        return files
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (path / name).is_file():
            return [path / name]
    raise WeightFileError(f"{path}: no model.safetensors, sharded index or pytorch_model.bin")


def _config(file: Path) -> dict[str, Any]:
    if not file.is_file():
        return {}
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise WeightFileError(f"{file}: not JSON ({exc})") from None
    return config if isinstance(config, dict) else {}


def safetensors_header(file: Path) -> dict[str, TensorHeader]:
    """A safetensors file's tensors, from its header alone."""
    try:
        with file.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                raise WeightFileError(f"{file}: too short for a safetensors file")
            (length,) = struct.unpack("<Q", prefix)
            if length > _MAX_HEADER:
                raise WeightFileError(f"{file}: not a safetensors file (header of {length} bytes)")
            raw = f.read(length)
            size = file.stat().st_size
    except OSError as exc:
        raise WeightFileError(f"{file}: cannot read it ({exc.strerror})") from None
    if len(raw) < length:
        raise WeightFileError(f"{file}: truncated (its header is cut off)")
    try:
        entries = json.loads(raw)
    except ValueError:
        raise WeightFileError(f"{file}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(entries, dict):
        raise WeightFileError(f"{file}: not a safetensors file")
    tensors: dict[str, TensorHeader] = {}
    for name, entry in entries.items():  # pyright: ignore[reportUnknownVariableType]
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise WeightFileError(
                f"{file}: tensor `{name}` has no dtype, shape or offsets"
            ) from None
        tensor = _safetensors_entry(file, str(name), dtype, shape, (begin, end))
        if 8 + length + end > size:
            raise WeightFileError(f"{file}: truncated (tensor `{name}` lies past its end)")
        tensors[str(name)] = tensor
    return tensors


def _safetensors_entry(
    file: Path, name: str, dtype: object, shape: object, offsets: tuple[object, object]
) -> TensorHeader:
    """One header entry, checked as safetensors checks it: a known dtype, a shape of sizes,
    and offsets that span exactly the bytes the shape and dtype take."""
    if not isinstance(dtype, str) or dtype not in _SAFETENSORS_SIZES:
        raise WeightFileError(f"{file}: tensor `{name}` has an unknown dtype {dtype!r}")
    dims: list[object] = list(shape) if isinstance(shape, list) else [None]  # pyright: ignore[reportUnknownArgumentType]
    if not all(_is_size(d) for d in dims):
        raise WeightFileError(f"{file}: tensor `{name}` has no valid shape ({shape!r})")
    begin, end = offsets
    if not isinstance(begin, int) or not isinstance(end, int) or not 0 <= begin <= end:
        raise WeightFileError(f"{file}: tensor `{name}` has invalid offsets {[begin, end]!r}")
    sizes = tuple(d for d in dims if isinstance(d, int))
    count = _SAFETENSORS_SIZES[dtype]
    for d in sizes:
        count *= d
    if end - begin != count:
        raise WeightFileError(
            f"{file}: tensor `{name}` is {dtype} {list(sizes)}, {count} bytes, but its "
            f"offsets span {end - begin}"
        )
    return TensorHeader(dtype, sizes)


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def torch_state_header(file: Path) -> dict[str, TensorHeader]:
    """A torch state dict's tensors (torch.save's zip format), without loading their data."""
    try:
        state = read_torch_save(file)
    except TorchSaveError as exc:
        raise WeightFileError(exc.message) from None
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):  # pyright: ignore
        state = state["state_dict"]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(state, dict):
        raise WeightFileError(f"`{file}` holds no state dict")
    return {
        str(k): TensorHeader(_SAFETENSORS_DTYPES[v.dtype], v.shape)
        for k, v in state.items()  # pyright: ignore[reportUnknownVariableType]
        if isinstance(v, TensorHeader)
    }
