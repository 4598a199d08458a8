"""The tensors of a `torch.save` dataset file by field name, read without importing torch.

    headers = read_pt_headers(Path("pairs.pt"))
    # {"image": TensorHeader("float32", (1000, 1, 8, 8)), "text": ..., "label": ...}
    # torch.save((x, y), "data.pt") reads as {"x": ..., "y": ...}

The pickle is read by `torch_save.py`'s restricted unpickler (no code from the file runs;
the storages are never read). A dict of tensors (`{"image": x, "label": y}`) is its fields
by name; a tuple or list of two tensors is `x` and `y`. A problem is a `PtProblem`;
`data_files.py` turns it into a FileProblem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tensorloom.catalogue.torch_save import TensorHeader, TorchSaveError, read_torch_save

__all__ = ["PtProblem", "TensorHeader", "read_pt_headers"]

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
