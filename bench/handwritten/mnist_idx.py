"""MNIST in its IDX file format: read the real files, or write fixed synthetic ones.

The GPU machine has no network, so the MLP benchmark writes synthetic images
and labels in the real IDX format (`train-images-idx3-ubyte` and friends) to a
data root, and both the hand-written loop and TensorLoom's emitted script read
the same files. The labels are a fixed function of the pixels (the argmax of a
fixed random projection), so a model can learn them and the loss falls.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt

TRAIN_IMAGES = "train-images-idx3-ubyte"
TRAIN_LABELS = "train-labels-idx1-ubyte"
TEST_IMAGES = "t10k-images-idx3-ubyte"
TEST_LABELS = "t10k-labels-idx1-ubyte"

Arrays = tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]


def find(root: Path, name: str) -> Path | None:
    """`root/name`, `root/name.gz` or the same under `root/MNIST/raw`, whichever exists."""
    for folder in (root, root / "MNIST" / "raw", root / "mnist"):
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    return None


def read_idx(path: Path) -> npt.NDArray[np.uint8]:
    """An IDX file's array: magic (0, 0, dtype 0x08, ndim), ndim big-endian sizes, data."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def write_idx(path: Path, array: npt.NDArray[np.uint8]) -> None:
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(header + array.tobytes())


def synthetic(count: int, seed: int) -> Arrays:
    """`count` 28x28 uint8 images and their learnable labels 0-9."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(count, 28, 28), dtype=np.uint8)
    projection = np.random.default_rng(1234).standard_normal((784, 10))
    centred = images.reshape(count, 784).astype(np.float32) / 255.0 - 0.5
    labels = np.argmax(centred @ projection, axis=1).astype(np.uint8)
    return images, labels


def write_synthetic(root: Path, train: int = 60_000, test: int = 10_000) -> None:
    """Write the four MNIST files, synthetic, under `root` (made if missing)."""
    root.mkdir(parents=True, exist_ok=True)
    images, labels = synthetic(train, seed=0)
    write_idx(root / TRAIN_IMAGES, images)
    write_idx(root / TRAIN_LABELS, labels)
    images, labels = synthetic(test, seed=1)
    write_idx(root / TEST_IMAGES, images)
    write_idx(root / TEST_LABELS, labels)


def load_train(root: Path | None, count: int) -> tuple[*Arrays, str]:
    """The training images and labels from `root` if its files exist, else synthetic ones.

    Returns the images, the labels, and where they came from ("mnist-idx" or "synthetic").
    """
    if root is not None:
        images_path, labels_path = find(root, TRAIN_IMAGES), find(root, TRAIN_LABELS)
        if images_path is not None and labels_path is not None:
            return read_idx(images_path)[:count], read_idx(labels_path)[:count], "mnist-idx"
    images, labels = synthetic(count, seed=0)
    return images, labels, "synthetic"
