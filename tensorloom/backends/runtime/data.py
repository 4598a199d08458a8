"""Datasets for TensorLoom scripts: `load_dataset(...)` returns tensors, ready to batch.

    train, val, info = load_dataset("digits", flatten=True)
    x, y = train            # x: [1617, 64] float32 in [0, 1], y: [1617] int64 in 0..9

Every source gives `(x, y)` tensor pairs for training and validation and a
`DataInfo` saying what one sample looks like:

- `"digits"` (scikit-learn, 1,797 images): x [1, 8, 8] float32 in [0, 1]
  (`flatten` gives [64]), y a class 0-9; validation is a seeded 10% hold-out.
- `"mnist"`, `"fashion-mnist"` (IDX files): x [1, 28, 28] normalised (`flatten`
  gives [784]), y a class 0-9; validation is the official test set.
- `"cifar10"` (python batches): x [3, 32, 32] normalised per channel, y a class
  0-9; validation is the official test batch.
- `"reverse"`, `"sort"`, `"copy"` (`vocab=16, length=12, size=4096, seed=0`):
  x [T] int64 tokens in 0..vocab-1, y [T] int64 tokens (the reversed, sorted or
  copied sequence); validation is a seeded hold-out.
- `*.npz` (arrays `x`, `y`), `*.pt` (a dict of tensors `x`, `y`, or `(x, y)`), `*.csv` (the
  label column named by `target=`, numeric features): shapes as stored. With
  `fields=("image", "text")`, a .npz or .pt gives those arrays, by name, instead.
- `"digits-captions"`: the digits, each with a caption of four words (`load_digit_captions`);
  fields `image` [1, 8, 8], `text` [4] word ids, `label` the digit.
- nothing (`load_dataset(sample_shape=..., num_classes=...)`): N(0, 1) inputs of
  the given shape labelled by a fixed random linear map (`DataInfo.synthetic`).

Files for the named image datasets are looked for under `data_root`,
`$TENSORLOOM_DATA` and `~/.cache/tensorloom`. Only with `download=True` (the
script's `--download`) are missing ones fetched, into the first of those: over
HTTPS only, each checked against the sha256 pinned in `DOWNLOADS` (the values
TensorFlow Datasets records for the same files), written to a temporary file and
renamed into place only once it matches. Otherwise `DatasetUnavailable` says
which files to put where.
"""

from __future__ import annotations

import ast
import csv
import gzip
import hashlib
import importlib.util
import os
import pickle
import struct
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

TensorPair = tuple[torch.Tensor, torch.Tensor]
Tensors = tuple[torch.Tensor, ...]  # one row per sample each: (x, y) or a dataset's fields


class DatasetUnavailable(Exception):
    """The data a script needs is not on this machine; the message says what to fetch."""


@dataclass(frozen=True)
class DataInfo:
    """What one sample of a loaded dataset looks like."""

    name: str
    sample_shape: tuple[int, ...]
    target_shape: tuple[int, ...]
    num_classes: int | None
    task: str  # "classification", "sequence", "regression" or "fields"
    synthetic: bool = False
    # An image dataset's per-channel (mean, std), which --predict applies to image files.
    normalisation: tuple[tuple[float, ...], tuple[float, ...]] | None = None


def synthetic_data_warning(info: DataInfo) -> str | None:
    """The line a script prints when it trains on made-up data."""
    if not info.synthetic:
        return None
    return (
        "warning: no dataset given, training on synthetic data "
        f"(random inputs of shape {list(info.sample_shape)}, labels from a fixed random "
        "linear map); pass a dataset to `load_dataset(...)` to train on real data"
    )


def load_dataset(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    data_root: str | os.PathLike[str] | None = None,
    flatten: bool = False,
    target: str | None = None,
    split_seed: int = 0,
    val_fraction: float = 0.1,
    download: bool = False,
    **task_kwargs: object,
) -> tuple[TensorPair, TensorPair, DataInfo]:
    """Load a named dataset, a file, a sequence task or synthetic data (see the module doc).

    A script calls the one `load_*` below that its dataset needs, so it carries no other.
    """
    split = {"split_seed": split_seed, "val_fraction": val_fraction}
    if name_or_path is None:
        return load_synthetic(**split, **task_kwargs)  # type: ignore[arg-type]
    name = os.fspath(name_or_path)
    if name in _SEQUENCE_TASKS:
        return load_sequence_task(name, **split, **task_kwargs)  # type: ignore[arg-type]
    if name == "digits":
        return load_digits(flatten=flatten, **split)
    if name == "digits-captions":
        return load_digit_captions(flatten=flatten, **split, **task_kwargs)  # type: ignore[arg-type]
    if name in _IMAGE_DATASETS:
        return load_image_dataset(name, data_root=data_root, flatten=flatten, download=download)
    return load_file_dataset(name, target=target, **split, **task_kwargs)  # type: ignore[arg-type]


def load_digits(
    *,
    data_root: str | os.PathLike[str] | None = None,
    flatten: bool = False,
    split_seed: int = 0,
    val_fraction: float = 0.1,
) -> tuple[TensorPair, TensorPair, DataInfo]:
    """scikit-learn's 8x8 digits, a seeded hold-out for validation (`data_root` is unused)."""
    x, y = _digits()
    x = x.flatten(1) if flatten else x
    info = DataInfo("digits", tuple(x.shape[1:]), (), 10, "classification")
    return (*_split((x, y), val_fraction, split_seed), info)


def load_image_dataset(
    name: str,
    *,
    data_root: str | os.PathLike[str] | None = None,
    flatten: bool = False,
    download: bool = False,
) -> tuple[TensorPair, TensorPair, DataInfo]:
    """MNIST, Fashion-MNIST or CIFAR-10 from its files; fetched when missing with `download`."""
    train, val, info = _image_dataset(name, _data_roots(data_root), download)
    return _flatten_pair(train, flatten), _flatten_pair(val, flatten), _flat_info(info, flatten)


def load_file_dataset(
    path: str | os.PathLike[str],
    *,
    data_root: str | os.PathLike[str] | None = None,
    target: str | None = None,
    fields: tuple[str, ...] | None = None,
    split_seed: int = 0,
    val_fraction: float = 0.1,
) -> tuple[Tensors, Tensors, DataInfo]:
    """A .npz, .pt or .csv file, a seeded hold-out for validation; with `fields`, those
    arrays of a .npz or .pt, in that order."""
    if fields is not None:
        tensors, info = _field_dataset(Path(path), fields)
        return (*_split(tensors, val_fraction, split_seed), info)
    pair, info = _file_dataset(Path(path), target)
    return (*_split(pair, val_fraction, split_seed), info)


def load_digit_captions(
    *,
    data_root: str | os.PathLike[str] | None = None,
    fields: tuple[str, ...] = ("image", "text", "label"),
    flatten: bool = False,
    split_seed: int = 0,
    val_fraction: float = 0.1,
) -> tuple[Tensors, Tensors, DataInfo]:
    """The digits, each paired with its caption (`digit_captions`); `fields` chooses among
    `image`, `text` and `label`, in that order. A seeded hold-out for validation."""
    x, y = _digits()
    named = {"image": x.flatten(1) if flatten else x, "text": digit_captions(x, y), "label": y}
    missing = [f for f in fields if f not in named]
    if missing:
        raise DatasetUnavailable(
            f"digits-captions has no field {missing[0]!r}: it has {list(named)}"
        )
    tensors = tuple(named[f] for f in fields)
    info = DataInfo("digits-captions", tuple(named["image"].shape[1:]), (), None, "fields")
    return (*_split(tensors, val_fraction, split_seed), info)


def load_sequence_task(
    name: str,
    *,
    data_root: str | os.PathLike[str] | None = None,
    split_seed: int = 0,
    val_fraction: float = 0.1,
    **task_kwargs: int,
) -> tuple[TensorPair, TensorPair, DataInfo]:
    """`reverse`, `sort` or `copy`: random token sequences, a seeded hold-out."""
    pair, info = _sequence_task(name, **task_kwargs)
    return (*_split(pair, val_fraction, split_seed), info)


def load_synthetic(
    *,
    data_root: str | os.PathLike[str] | None = None,
    split_seed: int = 0,
    val_fraction: float = 0.1,
    **task_kwargs: object,
) -> tuple[TensorPair, TensorPair, DataInfo]:
    """Synthetic data (no dataset named): Gaussian inputs, labels from a fixed linear map."""
    pair, info = _synthetic_dataset(**task_kwargs)  # type: ignore[arg-type]
    return (*_split(pair, val_fraction, split_seed), info)


def check_labels(
    train: TensorPair, val: TensorPair, info: DataInfo, *, classes: int, model: str
) -> None:
    """Class labels must index the model's outputs: say so at load time, not at the first step."""
    for _, y in (train, val):
        if y.is_floating_point() or not y.numel():
            continue
        low, high = int(y.min()), int(y.max())
        if low < 0 or high >= classes:
            raise DatasetUnavailable(
                f"the labels of {info.name} run from {low} to {high}, but `{model}` has "
                f"{classes} outputs (classes 0 to {classes - 1}); relabel the data or give "
                f"the model {high + 1} outputs"
            )


def split_train_val(
    pair: TensorPair, val_fraction: float, seed: int
) -> tuple[TensorPair, TensorPair]:
    """A seeded random hold-out: the same split on every machine and every rank."""
    return _split(pair, val_fraction, seed)


def split_fields(tensors: Tensors, val_fraction: float, seed: int) -> tuple[Tensors, Tensors]:
    """`split_train_val` of any number of tensors, one row per sample each."""
    return _split(tensors, val_fraction, seed)


def _split(tensors: Any, val_fraction: float, seed: int) -> tuple[Any, Any]:
    """The same seeded rows of every tensor held out: (train, val), each a tuple like `tensors`."""
    n = len(tensors[0])
    n_val = round(n * val_fraction)
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(n, generator=generator)
    val_idx, train_idx = order[:n_val], order[n_val:]
    return tuple(t[train_idx] for t in tensors), tuple(t[val_idx] for t in tensors)


def _flatten_pair(pair: TensorPair, flatten: bool) -> TensorPair:
    x, y = pair
    return (x.flatten(1), y) if flatten else (x, y)


def _flat_info(info: DataInfo, flatten: bool) -> DataInfo:
    if not flatten:
        return info
    size = 1
    for dim in info.sample_shape:
        size *= dim
    return DataInfo(info.name, (size,), info.target_shape, info.num_classes, info.task,
                    normalisation=info.normalisation)  # fmt: skip


# --- scikit-learn's 8x8 digits -------------------------------------------------------


def _digits() -> TensorPair:
    """scikit-learn's digits file, read as `load_digits()` reads it (64 pixels 0-16 and the
    class per row) but without importing scikit-learn: most of a second of start-up."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetUnavailable("`digits` comes with scikit-learn: pip install scikit-learn")
    folder = Path(next(iter(spec.submodule_search_locations)))
    with gzip.open(folder / "datasets" / "data" / "digits.csv.gz", "rt", encoding="utf-8") as f:
        table = torch.tensor([[float(v) for v in line.split(",")] for line in f if line.strip()])
    return table[:, :-1].reshape(-1, 1, 8, 8) / 16.0, table[:, -1].to(torch.int64)


# The caption words: a digit's name, then its ink, horizontal place and vertical place.
CAPTION_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "thin", "regular", "bold", "left", "centred", "right", "high", "middle", "low",
)  # fmt: skip


def digit_captions(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Each digit's caption as 4 word ids of `CAPTION_WORDS`: its name, then how much ink
    it has, where its ink's centre lies across and down, each in thirds of the whole set
    ("seven bold left high"). The words are computed from the image and its label by this
    rule: they are made, not written by people."""
    pixels = x.flatten(1)
    ink = pixels.sum(1)
    grid = torch.arange(8, dtype=x.dtype)
    image = x.reshape(-1, 8, 8)
    across = (image.sum(1) * grid).sum(1) / ink.clamp_min(1e-6)
    down = (image.sum(2) * grid).sum(1) / ink.clamp_min(1e-6)
    words = [y, 10 + _thirds(ink), 13 + _thirds(across), 16 + _thirds(down)]
    return torch.stack(words, dim=1).to(torch.int64)


def _thirds(values: torch.Tensor) -> torch.Tensor:
    """0, 1 or 2: which third of `values`' sorted order each value lies in."""
    cuts = torch.quantile(values, torch.tensor([1 / 3, 2 / 3], dtype=values.dtype))
    return torch.bucketize(values, cuts)


# --- MNIST, Fashion-MNIST (IDX files) and CIFAR-10 (python batches) -----------------

_IDX_FILES = {
    "train_x": "train-images-idx3-ubyte",
    "train_y": "train-labels-idx1-ubyte",
    "val_x": "t10k-images-idx3-ubyte",
    "val_y": "t10k-labels-idx1-ubyte",
}
_CIFAR_DIR = "cifar-10-batches-py"
_CIFAR_FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]

# Where each dataset's files come from, and their sha256 (as TensorFlow Datasets pins them).
# A test may point the URLs at a local mirror; `download_verified` refuses plain HTTP.
_MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_FASHION = "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/"
DOWNLOADS: dict[str, list[tuple[str, str, str]]] = {  # name: [(url, file, sha256)]
    "mnist": [
        (_MNIST + "train-images-idx3-ubyte.gz", "train-images-idx3-ubyte.gz",
         "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
        (_MNIST + "train-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
        (_MNIST + "t10k-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz",
         "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
        (_MNIST + "t10k-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
         "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
    ],
    "fashion-mnist": [
        (_FASHION + "train-images-idx3-ubyte.gz", "train-images-idx3-ubyte.gz",
         "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"),
        (_FASHION + "train-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"),
        (_FASHION + "t10k-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz",
         "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"),
        (_FASHION + "t10k-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
         "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"),
    ],
    "cifar10": [
        ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cifar-10-python.tar.gz",
         "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"),
    ],
}  # fmt: skip
DOWNLOAD_TIMEOUT_S = 10.0
DOWNLOAD_SCHEMES: tuple[str, ...] = ("https:",)  # a test adds "file:" for a local mirror

# The usual per-channel statistics of each training set.
_NORMALISATION = {
    "mnist": ((0.1307,), (0.3081,)),
    "fashion-mnist": ((0.2860,), (0.3530,)),
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
}
_IMAGE_DATASETS = ("mnist", "fashion-mnist", "cifar10")


def _data_roots(data_root: str | os.PathLike[str] | None) -> list[Path]:
    """Where to look, in order; the first is where downloads and the user's files go."""
    roots: list[Path] = []
    if data_root is not None:
        roots.append(Path(data_root))
    if os.environ.get("TENSORLOOM_DATA"):
        roots.append(Path(os.environ["TENSORLOOM_DATA"]))
    roots.append(Path.home() / ".cache" / "tensorloom")
    return roots


def _image_dataset(
    name: str, roots: list[Path], download: bool
) -> tuple[TensorPair, TensorPair, DataInfo]:
    folder = _find_folder(name, roots) or _fetch(name, roots[0], download)
    if name == "cifar10":
        train, val = _read_cifar(folder)
        shape: tuple[int, ...] = (3, 32, 32)
    else:
        train, val = _read_mnist_like(folder)
        shape = (1, 28, 28)
    mean, std = _NORMALISATION[name]
    info = DataInfo(name, shape, (), 10, "classification", normalisation=(mean, std))
    return _normalise(train, mean, std), _normalise(val, mean, std), info


def _folder_name(name: str) -> str:
    return _CIFAR_DIR if name == "cifar10" else name


def _expected_files(name: str) -> list[str]:
    return _CIFAR_FILES if name == "cifar10" else [f"{stem}.gz" for stem in _IDX_FILES.values()]


def _has_files(name: str, folder: Path) -> bool:
    if name == "cifar10":
        return all((folder / f).is_file() for f in _CIFAR_FILES)
    return all(_idx_path(folder, stem) is not None for stem in _IDX_FILES.values())


def _find_folder(name: str, roots: list[Path]) -> Path | None:
    for root in roots:
        folder = root / _folder_name(name)
        if _has_files(name, folder):
            return folder
    return None


def _fetch(name: str, root: Path, download: bool) -> Path:
    folder = root / _folder_name(name)
    if download and os.environ.get("TENSORLOOM_NO_DOWNLOAD") != "1":
        try:
            _download(name, root)
        except (OSError, DownloadError) as error:  # no network, a proxy, a bad file
            print(f"note: could not download `{name}`: {error}", file=sys.stderr)
        if _has_files(name, folder):
            return folder
    files = "\n".join(f"  {folder / f}" for f in _expected_files(name))
    how = "could not be downloaded" if download else "is not downloaded without --download"
    again = "" if download else ", or rerun with --download (HTTPS, sha256-checked)"
    raise DatasetUnavailable(
        f"dataset `{name}` was not found and {how}.\n"
        f"put these files (gzipped or not) in {folder}:\n{files}\n"
        f"or point `--data-root` or $TENSORLOOM_DATA at a directory holding "
        f"`{_folder_name(name)}/`{again}"
    )


def _download(name: str, root: Path) -> None:
    if name == "cifar10":
        url, file, sha256 = DOWNLOADS[name][0]
        archive = download_verified(url, root / file, sha256)
        with tarfile.open(archive) as tar:
            tar.extractall(root, filter="data")
        archive.unlink()
        return
    for url, file, sha256 in DOWNLOADS[name]:
        download_verified(url, root / name / file, sha256)


class DownloadError(Exception):
    """A download that was refused (not HTTPS) or did not match its pinned sha256."""


def download_verified(
    url: str,
    destination: Path,
    sha256: str,
    *,
    opener: Any = None,
    allow: tuple[str, ...] | None = None,
) -> Path:
    """Fetch `url` into `destination` if its bytes hash to `sha256`; nothing is left otherwise.

    The bytes go to a temporary file beside `destination`, hashed as they arrive, and
    are renamed into place only when the digest matches. `opener` (default
    `urllib.request.urlopen`) and `allow` (default `DOWNLOAD_SCHEMES`) are for tests."""
    if not url.startswith(allow or DOWNLOAD_SCHEMES):
        raise DownloadError(f"refusing to download {url}: only HTTPS is used")
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=destination.parent, prefix=f".{destination.name}.",
                               suffix=".part")  # fmt: skip
    digest = hashlib.sha256()
    try:
        with (
            os.fdopen(fd, "wb") as out,
            (opener or urllib.request.urlopen)(url, timeout=DOWNLOAD_TIMEOUT_S) as response,
        ):
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != sha256:
            raise DownloadError(
                f"{url} has sha256 {digest.hexdigest()}, expected {sha256}: not saved"
            )
        os.replace(tmp, destination)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return destination


def _idx_path(folder: Path, stem: str) -> Path | None:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _read_bytes(path: Path) -> bytes:
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as f:
            return f.read()
    return path.read_bytes()


def read_idx(path: Path) -> torch.Tensor:
    """An IDX file (gzipped or not) as a uint8 tensor; the header gives rank and sizes."""
    data = _read_bytes(path)
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise DatasetUnavailable(f"{path} is not an IDX file of unsigned bytes")
    dims = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    body = bytearray(data[4 + 4 * ndim :])
    return torch.frombuffer(body, dtype=torch.uint8).reshape(dims)


def _read_mnist_like(folder: Path) -> tuple[TensorPair, TensorPair]:
    tensors = {key: read_idx(_idx_path(folder, stem)) for key, stem in _IDX_FILES.items()}  # type: ignore[arg-type]
    train = (tensors["train_x"].unsqueeze(1), tensors["train_y"].long())
    val = (tensors["val_x"].unsqueeze(1), tensors["val_y"].long())
    return train, val


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickles CIFAR batches: numpy arrays, lists and dicts, and nothing that runs code."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),  # how protocol-2 pickles written by Python 3 store bytes
    }

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load `{module}.{name}` from a data file")
        return super().find_class(module, name)


def _read_cifar_batch(path: Path) -> TensorPair:
    with path.open("rb") as f:
        batch = _NumpyOnlyUnpickler(f, encoding="bytes").load()
    images = torch.as_tensor(batch[b"data"], dtype=torch.uint8).reshape(-1, 3, 32, 32)
    return images, torch.as_tensor(batch[b"labels"], dtype=torch.int64)


def _read_cifar(folder: Path) -> tuple[TensorPair, TensorPair]:
    batches = [_read_cifar_batch(folder / f"data_batch_{i}") for i in range(1, 6)]
    train = (torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches]))
    return train, _read_cifar_batch(folder / "test_batch")


def _normalise(pair: TensorPair, mean: tuple[float, ...], std: tuple[float, ...]) -> TensorPair:
    x, y = pair
    shape = (1, len(mean), 1, 1)
    mean_t = torch.tensor(mean).reshape(shape)
    std_t = torch.tensor(std).reshape(shape)
    return (x.float() / 255.0 - mean_t) / std_t, y


# --- files: .npz, .pt, .csv ------------------------------------------------------------

_NPY_DTYPES = {
    "f4": torch.float32, "f8": torch.float64, "f2": torch.float16,
    "i8": torch.int64, "i4": torch.int32, "i2": torch.int16, "i1": torch.int8,
    "u1": torch.uint8, "b1": torch.bool,
}  # fmt: skip


def _file_dataset(path: Path, target: str | None) -> tuple[TensorPair, DataInfo]:
    if not path.is_file():
        raise DatasetUnavailable(f"data file {path} does not exist")
    readers = {".npz": _read_npz, ".pt": _read_pt}
    if path.suffix == ".csv":
        x, y = _read_csv(path, target)
    elif path.suffix in readers:
        x, y = readers[path.suffix](path)
    else:
        raise DatasetUnavailable(f"cannot read {path}: expected a .npz, .pt or .csv file")
    return (x, y), _file_info(path, x, y)


def _field_dataset(path: Path, fields: tuple[str, ...]) -> tuple[Tensors, DataInfo]:
    """The arrays `fields` of a .npz (or tensors of a .pt dict), in that order."""
    if not path.is_file():
        raise DatasetUnavailable(f"data file {path} does not exist")
    if path.suffix == ".npz":
        with zipfile.ZipFile(path) as archive:
            held = [n.removesuffix(".npy") for n in archive.namelist()]
            arrays = {f: read_npy(archive.read(f"{f}.npy")) for f in fields if f in held}
    elif path.suffix == ".pt":
        payload = _pt_tensors(path)
        held = list(payload)
        arrays = {f: payload[f] for f in fields if f in held}
    else:
        raise DatasetUnavailable(f"cannot read fields from {path}: expected a .npz or .pt file")
    missing = [f for f in fields if f not in arrays]
    if missing:
        raise DatasetUnavailable(f"{path} has no array `{missing[0]}`: it holds {held}")
    tensors = tuple(_as_features(arrays[f]) for f in fields)
    counts = {len(t) for t in tensors}
    if len(counts) > 1:
        raise DatasetUnavailable(f"the arrays {list(fields)} of {path} differ in length")
    info = DataInfo(path.name, tuple(tensors[0].shape[1:]), (), None, "fields")
    return tensors, info


def _file_info(path: Path, x: torch.Tensor, y: torch.Tensor) -> DataInfo:
    if y.is_floating_point():
        return DataInfo(path.name, tuple(x.shape[1:]), tuple(y.shape[1:]), None, "regression")
    num_classes = int(y.max()) + 1 if y.numel() else 0
    return DataInfo(
        path.name, tuple(x.shape[1:]), tuple(y.shape[1:]), num_classes, "classification"
    )


def read_npy(data: bytes) -> torch.Tensor:
    """One .npy array, parsed with the standard library (format version 1, 2 or 3)."""
    if data[:6] != b"\x93NUMPY":
        raise DatasetUnavailable("not a .npy array")
    header_len_size = 2 if data[6] == 1 else 4
    (header_len,) = struct.unpack(
        "<H" if header_len_size == 2 else "<I", data[8 : 8 + header_len_size]
    )
    start = 8 + header_len_size
    header = ast.literal_eval(data[start : start + header_len].decode("latin1"))
    descr, shape = header["descr"], tuple(header["shape"])
    if descr[0] == ">" or descr[1:] not in _NPY_DTYPES or header["fortran_order"]:
        raise DatasetUnavailable(
            f"unsupported array type `{descr}`: save plain numeric C-order arrays"
        )
    body = bytearray(data[start + header_len :])
    if not body:
        return torch.empty(shape, dtype=_NPY_DTYPES[descr[1:]])
    return torch.frombuffer(body, dtype=_NPY_DTYPES[descr[1:]]).reshape(shape)


def _read_npz(path: Path) -> TensorPair:
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        if not {"x.npy", "y.npy"} <= names:
            raise DatasetUnavailable(f"{path} must hold arrays named `x` and `y`")
        x = read_npy(archive.read("x.npy"))
        y = read_npy(archive.read("y.npy"))
    return _as_features(x), _as_targets(y)


def _read_pt(path: Path) -> TensorPair:
    payload = _pt_tensors(path)
    if not {"x", "y"} <= payload.keys():
        raise DatasetUnavailable(f"{path} must hold `(x, y)` or a dict with tensors `x` and `y`")
    return _as_features(payload["x"]), _as_targets(payload["y"])


def _pt_tensors(path: Path) -> dict[str, torch.Tensor]:
    """A torch.save file's tensors by name: a dict's keys, or `x` and `y` of a saved `(x, y)`."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(payload, tuple | list) and len(payload) == 2:
        payload = {"x": payload[0], "y": payload[1]}
    if not isinstance(payload, dict) or not all(
        isinstance(t, torch.Tensor) for t in payload.values()
    ):
        raise DatasetUnavailable(f"{path} must hold `(x, y)` or a dict of tensors")
    return {str(k): v for k, v in payload.items()}


def _as_features(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.is_floating_point() else x.long()


def _as_targets(y: torch.Tensor) -> torch.Tensor:
    return y.float() if y.is_floating_point() else y.long()


def _read_csv(path: Path, target: str | None) -> TensorPair:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    columns = list(rows[0].keys()) if rows else []
    if target is None or target not in columns:
        raise DatasetUnavailable(
            f"{path}: pass `target=` naming the label column, one of {columns}"
        )
    features = [c for c in columns if c != target]
    x = torch.tensor([[float(row[c]) for c in features] for row in rows], dtype=torch.float32)
    return x, _csv_targets([row[target] for row in rows])


def _csv_targets(values: list[str]) -> torch.Tensor:
    """Integer labels stay classes, other numbers are regression targets, words become classes."""
    try:
        return torch.tensor([int(v) for v in values], dtype=torch.int64)
    except ValueError:
        pass
    try:
        return torch.tensor([float(v) for v in values], dtype=torch.float32)
    except ValueError:
        names = sorted(set(values))
        return torch.tensor([names.index(v) for v in values], dtype=torch.int64)


# --- sequence tasks ----------------------------------------------------------------------

_SEQUENCE_TASKS = ("reverse", "sort", "copy")


def _sequence_task(
    name: str, *, vocab: int = 16, length: int = 12, size: int = 4096, seed: int = 0
) -> tuple[TensorPair, DataInfo]:
    """`size` random token sequences [length] over 0..vocab-1 and their reversal/sort/copy."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab, (size, length), generator=generator)
    if name == "reverse":
        y = x.flip(1)
    elif name == "sort":
        y = x.sort(dim=1).values
    else:
        y = x.clone()
    return (x, y), DataInfo(name, (length,), (length,), vocab, "sequence")


# --- synthetic data ----------------------------------------------------------------------


def _synthetic_dataset(
    *,
    sample_shape: tuple[int, ...] = (784,),
    num_classes: int = 10,
    size: int = 2048,
    seed: int = 0,
) -> tuple[TensorPair, DataInfo]:
    """Gaussian inputs labelled by a fixed random linear map, so there is a rule to learn."""
    generator = torch.Generator().manual_seed(seed)
    shape = tuple(sample_shape)
    x = torch.randn((size, *shape), generator=generator)
    weights = torch.randn(x[0].numel(), num_classes, generator=generator)
    y = (x.flatten(1) @ weights).argmax(dim=1)
    info = DataInfo("synthetic", shape, (), num_classes, "classification", synthetic=True)
    return (x, y), info
