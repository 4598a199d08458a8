"""The runtime's dataset loaders, on small files written here in the real formats."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import pickle
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tensorloom.backends.runtime import data
from tensorloom.backends.runtime.data import (
    DatasetUnavailable,
    load_dataset,
    synthetic_data_warning,
)


def test_digits_shapes_counts_and_range() -> None:
    (x, y), (vx, vy), info = load_dataset("digits")
    assert x.shape == (1617, 1, 8, 8) and vx.shape == (180, 1, 8, 8)
    assert len(x) + len(vx) == 1797 and len(y) == 1617 and len(vy) == 180
    assert x.dtype == torch.float32 and y.dtype == torch.int64
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert set(y.tolist()) == set(range(10))
    assert (info.sample_shape, info.num_classes, info.task) == ((1, 8, 8), 10, "classification")


def test_digits_are_scikit_learns_read_without_importing_it() -> None:
    """The same tensors as from `sklearn.datasets.load_digits()`, and no sklearn import:
    that import is most of a second of a digits script's start-up."""
    code = (
        "import sys; from tensorloom.backends.runtime import data; x, y = data._digits(); "
        "print('sklearn' in sys.modules, tuple(x.shape), int(y.sum()))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.split() == ["False", "(1797,", "1,", "8,", "8)", "8070"]
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x, y = data._digits()
    assert torch.equal(x, torch.as_tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16)
    assert torch.equal(y, torch.as_tensor(bunch.target, dtype=torch.int64))


def test_digits_flatten_and_split_is_seeded() -> None:
    (x1, _), _, info = load_dataset("digits", flatten=True, split_seed=3)
    (x2, _), _, _ = load_dataset("digits", flatten=True, split_seed=3)
    (x3, _), _, _ = load_dataset("digits", flatten=True, split_seed=4)
    assert x1.shape == (1617, 64) and info.sample_shape == (64,)
    assert torch.equal(x1, x2) and not torch.equal(x1, x3)


def _write_idx(path: Path, array: np.ndarray, gz: bool) -> None:
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + array.astype(np.uint8).tobytes()
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(payload))
    else:
        path.write_bytes(payload)


def _write_mnist(folder: Path, gz: bool) -> tuple[np.ndarray, np.ndarray]:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (5, 28, 28))
    labels = np.array([3, 1, 4, 1, 5])
    for prefix in ("train", "t10k"):
        _write_idx(folder / f"{prefix}-images-idx3-ubyte", images, gz)
        _write_idx(folder / f"{prefix}-labels-idx1-ubyte", labels, gz)
    return images, labels


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("name", ["mnist", "fashion-mnist"])
def test_mnist_idx_files(tmp_path: Path, gz: bool, name: str) -> None:
    images, labels = _write_mnist(tmp_path / name, gz)
    (x, y), (vx, vy), info = load_dataset(name, data_root=tmp_path, download=False)
    assert x.shape == (5, 1, 28, 28) and vx.shape == (5, 1, 28, 28)
    assert y.tolist() == labels.tolist() and vy.tolist() == labels.tolist()
    mean, std = {"mnist": (0.1307, 0.3081), "fashion-mnist": (0.2860, 0.3530)}[name]
    expected = (torch.tensor(images, dtype=torch.float32) / 255.0 - mean) / std
    torch.testing.assert_close(x[:, 0], expected)
    assert info.sample_shape == (1, 28, 28)


def test_mnist_flatten_and_env_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_mnist(tmp_path / "mnist", gz=True)
    monkeypatch.setenv("TENSORLOOM_DATA", str(tmp_path))
    (x, _), _, info = load_dataset("mnist", flatten=True, download=False)
    assert x.shape == (5, 784) and info.sample_shape == (784,)


def _write_cifar(folder: Path) -> dict[str, np.ndarray]:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    written: dict[str, np.ndarray] = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        pixels = rng.integers(0, 256, (2, 3072)).astype(np.uint8)
        batch = {b"batch_label": name.encode(), b"labels": [7, 2], b"data": pixels}
        with (folder / name).open("wb") as f:
            pickle.dump(batch, f, protocol=2)
        written[name] = pixels
    return written


def test_cifar_python_batches(tmp_path: Path) -> None:
    written = _write_cifar(tmp_path / "cifar-10-batches-py")
    (x, y), (vx, vy), info = load_dataset("cifar10", data_root=tmp_path, download=False)
    assert x.shape == (10, 3, 32, 32) and vx.shape == (2, 3, 32, 32)
    assert y.tolist() == [7, 2] * 5 and vy.tolist() == [7, 2]
    raw = torch.tensor(written["test_batch"], dtype=torch.float32).reshape(2, 3, 32, 32)
    expected_red = (raw[:, 0] / 255.0 - 0.4914) / 0.2470
    torch.testing.assert_close(vx[:, 0], expected_red)
    assert info.sample_shape == (3, 32, 32)


def test_cifar_refuses_pickles_that_run_code(tmp_path: Path) -> None:
    _write_cifar(tmp_path / "cifar-10-batches-py")
    evil = {b"data": np.zeros((1, 3072), np.uint8), b"labels": [0], b"x": print}
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(pickle.dumps(evil))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        load_dataset("cifar10", data_root=tmp_path, download=False)


def test_missing_files_name_the_files_and_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailable) as caught:
        load_dataset("mnist", data_root=tmp_path, download=False)
    message = str(caught.value)
    assert str(tmp_path / "mnist") in message
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"):
        assert str(tmp_path / "mnist" / f"{stem}.gz") in message


def _mirror_downloads(
    mirror: Path, monkeypatch: pytest.MonkeyPatch, sha: str | None = None
) -> None:
    """Point mnist's downloads at a local mirror (file:// allowed), pinned to its true sha256."""
    rows = []
    for _, file, _ in data.DOWNLOADS["mnist"]:
        digest = sha or hashlib.sha256((mirror / file).read_bytes()).hexdigest()
        rows.append(((mirror / file).as_uri(), file, digest))
    monkeypatch.setitem(data.DOWNLOADS, "mnist", rows)
    monkeypatch.setattr(data, "DOWNLOAD_SCHEMES", ("https:", "file:"))
    monkeypatch.delenv("TENSORLOOM_NO_DOWNLOAD", raising=False)


def test_missing_files_are_downloaded_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "mirror"
    _write_mnist(mirror, gz=True)
    _mirror_downloads(mirror, monkeypatch)
    with pytest.raises(DatasetUnavailable, match="rerun with --download"):
        load_dataset("mnist", data_root=tmp_path / "root")
    assert not (tmp_path / "root").exists()
    (x, _), _, _ = load_dataset("mnist", data_root=tmp_path / "root", download=True)
    assert x.shape == (5, 1, 28, 28)
    assert (tmp_path / "root" / "mnist" / "t10k-labels-idx1-ubyte.gz").is_file()


def test_a_download_with_the_wrong_sha256_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mirror = tmp_path / "mirror"
    _write_mnist(mirror, gz=True)
    _mirror_downloads(mirror, monkeypatch, sha="0" * 64)
    with pytest.raises(DatasetUnavailable, match=r"train-images-idx3-ubyte\.gz") as failed:
        load_dataset("mnist", data_root=tmp_path / "root", download=True)
    assert "could not be downloaded" in str(failed.value)
    assert "--download" not in str(failed.value)  # it was given: rerunning with it won't help
    assert "expected " + "0" * 64 + ": not saved" in capsys.readouterr().err
    assert list((tmp_path / "root" / "mnist").iterdir()) == []


def test_download_verified_refuses_http_and_writes_atomically(tmp_path: Path) -> None:
    with pytest.raises(data.DownloadError, match="only HTTPS"):
        data.download_verified("http://example.org/x.gz", tmp_path / "x.gz", "0" * 64)
    body = b"payload" * 1000

    class Response(io.BytesIO):
        def __enter__(self) -> Response:
            return self

    def opener(url: str, timeout: float) -> Response:
        return Response(body)

    digest = hashlib.sha256(body).hexdigest()
    out = data.download_verified("https://example.org/x.gz", tmp_path / "x.gz", digest,
                                 opener=opener)  # fmt: skip
    assert out.read_bytes() == body
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.gz"]


def test_pinned_downloads_are_https_with_sha256() -> None:
    for name, rows in data.DOWNLOADS.items():
        for url, _, sha256 in rows:
            assert url.startswith("https://"), name
            assert len(sha256) == 64 and int(sha256, 16) >= 0


def test_npz_pt_and_csv_files(tmp_path: Path) -> None:
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    y = np.array([0, 1, 2, 0, 1, 2])
    np.savez(tmp_path / "d.npz", x=x, y=y)
    torch.save({"x": torch.tensor(x), "y": torch.tensor(y)}, tmp_path / "d.pt")
    with (tmp_path / "d.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["a", "b", "c", "d", "label"])
        writer.writerows([[*row, label] for row, label in zip(x.tolist(), y.tolist(), strict=True)])
    for name in ("d.npz", "d.pt", "d.csv"):
        train, val, info = load_dataset(tmp_path / name, target="label", val_fraction=0.5)
        xs = torch.cat([train[0], val[0]])
        ys = torch.cat([train[1], val[1]])
        order = xs[:, 0].argsort()
        assert torch.equal(xs[order], torch.tensor(x)), name
        assert ys[order].tolist() == y.tolist(), name
        assert (info.sample_shape, info.num_classes, info.task) == ((4,), 3, "classification")


def test_csv_needs_its_target_column(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("a,label\n1,0\n2,1\n")
    with pytest.raises(DatasetUnavailable, match="target="):
        load_dataset(tmp_path / "d.csv")


@pytest.mark.parametrize(
    ("task", "rule"),
    [
        ("reverse", lambda x: x.flip(1)),
        ("sort", lambda x: x.sort(dim=1).values),
        ("copy", lambda x: x),
    ],
)
def test_sequence_tasks_are_deterministic(task: str, rule: object) -> None:
    (x, y), (vx, _), info = load_dataset(task, vocab=16, length=12, size=400)
    (x2, y2), _, _ = load_dataset(task, vocab=16, length=12, size=400)
    assert x.shape == (360, 12) and vx.shape == (40, 12) and x.dtype == torch.int64
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert torch.equal(y, rule(x))  # type: ignore[operator]
    assert int(x.min()) >= 0 and int(x.max()) < 16
    assert (info.sample_shape, info.target_shape, info.num_classes) == ((12,), (12,), 16)


def test_synthetic_data_is_labelled_by_a_learnable_rule() -> None:
    (x, y), (vx, vy), info = load_dataset(sample_shape=(20,), num_classes=4, size=1000)
    assert x.shape == (900, 20) and vx.shape == (100, 20)
    assert info.synthetic and "synthetic" in (synthetic_data_warning(info) or "")
    # A least-squares linear fit on the training half recovers the rule on held-out data.
    onehot = torch.nn.functional.one_hot(y, 4).float()
    weights = torch.linalg.lstsq(x, onehot).solution
    accuracy = ((vx @ weights).argmax(1) == vy).float().mean().item()
    assert accuracy > 0.8
    assert set(y.tolist()) == {0, 1, 2, 3}
