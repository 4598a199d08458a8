"""The one restricted unpickler (`torch_save.py`) that both readers of .pt files use.

A dataset (`torch_files.read_pt_headers`, TL0719 in `tlc check`) and a state dict of weights
(`weight_files.torch_state_header`, TL0802) accept the same pickles and refuse the same ones
with the same words, and reading a refused one runs none of its code.
"""

from __future__ import annotations

import collections
import pickle
import subprocess
import zipfile
from pathlib import Path

import pytest
import torch

from tensorloom.catalogue import weight_files
from tensorloom.catalogue.torch_files import PtProblem, read_pt_headers
from tensorloom.catalogue.torch_save import TensorHeader, TorchSaveError, read_torch_save

# --- pickles written opcode by opcode (protocol 0/2 opcodes, as pickletools names them) ---


def _global(module: str, name: str) -> bytes:
    return f"c{module}\n{name}\n".encode()


def _text(value: str) -> bytes:
    return f"V{value}\n".encode()


def _int(value: int) -> bytes:
    return f"I{value}\n".encode()


def _tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def _tensor(dtype: str = "FloatStorage", size: int = 2) -> bytes:
    """`_rebuild_tensor_v2(storage, 0, (size,), (1,), False, OrderedDict())`, as torch.save
    writes a tensor, its storage a persistent id."""
    storage = _tuple(_text("storage"), _global("torch", dtype), _text("0"), _text("cpu"),
                     _int(size)) + b"Q"  # fmt: skip
    hooks = _global("collections", "OrderedDict") + _tuple() + b"R"
    arguments = _tuple(storage, _int(0), _tuple(_int(size)), _tuple(_int(1)), b"I00\n", hooks)
    return _global("torch._utils", "_rebuild_tensor_v2") + arguments + b"R"


def _dict_of(value: bytes) -> bytes:
    """`{"x": value}`."""
    return b"}" + _text("x") + value + b"s."


def _saved(folder: Path, pickled: bytes, name: str = "file.pt") -> Path:
    """A zip laid out as torch.save's: `archive/data.pkl` (and no storages: never read)."""
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
    return path


def _both(path: Path) -> tuple[PtProblem, str]:
    """What the dataset reader and the weights reader say about a refused file."""
    problem = read_pt_headers(path)
    assert isinstance(problem, PtProblem), problem
    with pytest.raises(weight_files.WeightFileError) as refused:
        weight_files.torch_state_header(path)
    return problem, str(refused.value)


def test_the_hand_written_tensor_reads_as_torch_writes_it(tmp_path: Path) -> None:
    path = _saved(tmp_path, _dict_of(_tensor()))
    assert read_torch_save(path) == {"x": TensorHeader("float32", (2,))}
    assert read_pt_headers(path) == {"x": TensorHeader("float32", (2,))}
    assert weight_files.torch_state_header(path) == {"x": weight_files.TensorHeader("F32", (2,))}


class _Runs:
    """Pickles as `subprocess.getoutput(command)`: what a file that runs code on loading holds."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (subprocess.getoutput, (self.command,))


def _malicious(marker: Path) -> dict[str, tuple[bytes, str]]:
    touch = _text(f"touch {marker}")
    return {
        "global-reduce": (_global("os", "system") + _tuple(touch) + b"R.", "`os.system`"),
        "reduce-eval": (
            _global("builtins", "eval") + _tuple(_text("print(1)")) + b"R.",
            "`builtins.eval`",
        ),
        "inst": (b"(" + touch + b"ios\nsystem\n.", "`os.system`"),
        "stack-global": (
            pickle.dumps(_Runs(f"touch {marker}"), protocol=4),
            "`subprocess.getoutput`",
        ),
        "inside-a-dict": (
            _dict_of(_global("subprocess", "getoutput") + _tuple(touch) + b"R"),
            "`subprocess.getoutput`",
        ),
        "torch-load": (
            _global("torch", "load") + _tuple(_text("other.pt")) + b"R.",
            "`torch.load`",
        ),
        "other-torch-utils": (
            _global("torch._utils", "_rebuild_device_tensor_from_numpy") + b".",
            "`torch._utils._rebuild_device_tensor_from_numpy`",
        ),
        "persistent-id": (_text("/etc/passwd") + b"Q.", "a storage of an unknown kind"),
        "storage-of-a-global": (
            _tensor().replace(_global("torch", "FloatStorage"), _global("os", "getcwd")),
            "`os.getcwd`",
        ),
        "build-on-a-tensor": (
            b"}" + _text("x") + _tensor() + _tuple(_text("evil"), _tuple(_int(-1))) + b"bs.",
            "a tensor whose dtype or shape is set after it is rebuilt",
        ),
        "negative-size": (_dict_of(_tensor(size=-3)), "a tensor of shape (-3,)"),
    }


@pytest.mark.parametrize("case", sorted(_malicious(Path("m"))))
def test_a_malicious_pickle_is_refused_by_both_readers_alike(tmp_path: Path, case: str) -> None:
    marker = tmp_path / "ran"
    pickled, words = _malicious(marker)[case]
    path = _saved(tmp_path, pickled)
    dataset, weights = _both(path)
    assert dataset.foreign and words in dataset.message
    assert dataset.message.endswith("not only tensors: it is not read"), dataset
    assert weights == dataset.message
    assert not marker.exists()


def test_a_torch_save_that_would_run_code_is_refused_alike(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    torch.save({"x": torch.zeros(2), "hook": _Runs(f"touch {marker}")}, tmp_path / "evil.pt")
    dataset, weights = _both(tmp_path / "evil.pt")
    # torch.save's protocol 2 writes Python 2's name for it (pickle's fix_imports)
    words = "holds `commands.getoutput`, not only tensors: it is not read"
    assert dataset.message == f"`{tmp_path / 'evil.pt'}` {words}"
    assert dataset.foreign and weights == dataset.message
    assert not marker.exists()


@pytest.mark.parametrize(
    ("written", "words"),
    [
        (b"", "damaged torch.save file"),
        (b"\x80\x02}q\x00", "damaged torch.save file"),  # cut off before STOP
        (b"\x80\x05" + b"\xff" * 8, "damaged torch.save file"),  # an unknown protocol
        (b"\x80\x02" + _text("x") + b"R.", "damaged torch.save file"),  # a REDUCE of a str
    ],
)
def test_a_damaged_pickle_is_damaged_for_both_and_not_foreign(
    tmp_path: Path, written: bytes, words: str
) -> None:
    dataset, weights = _both(_saved(tmp_path, written))
    assert not dataset.foreign and words in dataset.message
    assert weights == dataset.message


def test_not_a_zip_and_no_pickle_read_alike(tmp_path: Path) -> None:
    (tmp_path / "text.pt").write_text("not a zip")
    with zipfile.ZipFile(tmp_path / "empty.pt", "w") as archive:
        archive.writestr("archive/version", "3")
    for name, words in (("text", "no zip archive"), ("empty", "no `data.pkl` in it")):
        dataset, weights = _both(tmp_path / f"{name}.pt")
        assert weights == dataset.message and words in weights


def test_a_state_dict_reads_as_torch_loads_it(tmp_path: Path) -> None:
    """A module's state dict (an OrderedDict with `_metadata`, parameters, buffers of three
    dtypes): the names, shapes and dtypes `torch.load` gives, in safetensors' spelling."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4)).half()
    state = model.state_dict()
    state["mask"] = torch.ones(3, 3, dtype=torch.bool)
    torch.save(state, tmp_path / "model.pt")
    torch.save({"state_dict": state, "epoch": 3}, tmp_path / "wrapped.pt")
    spelled = {torch.float16: "F16", torch.int64: "I64", torch.bool: "BOOL"}
    want = {
        k: weight_files.TensorHeader(spelled[v.dtype], tuple(v.shape)) for k, v in state.items()
    }
    for name in ("model", "wrapped"):
        assert weight_files.torch_state_header(tmp_path / f"{name}.pt") == want
    loaded = read_torch_save(tmp_path / "model.pt")
    assert isinstance(loaded, collections.OrderedDict) and list(loaded) == list(state)


def test_a_file_without_a_dict_holds_no_state_dict(tmp_path: Path) -> None:
    torch.save(torch.zeros(2), tmp_path / "one.pt")
    with pytest.raises(weight_files.WeightFileError, match="holds no state dict"):
        weight_files.torch_state_header(tmp_path / "one.pt")


def test_torch_save_error_says_what_went_wrong(tmp_path: Path) -> None:
    path = _saved(tmp_path, _global("os", "system") + b".")
    with pytest.raises(TorchSaveError) as refused:
        read_torch_save(path)
    assert refused.value.problem == "foreign"
