"""Write the small data files the tests in this folder check against (standard library only).

    python make_data.py DIR

cls12.npz: x [60, 20] float32, y [60] int64 labels 0..11; reg.npz: x [40, 20] float32,
y [40, 1] float32; noxy.npz: an array `a` only; table.csv: columns f1, f2, f3, label
(ints 0..2), 30 rows; train.bin: 100 uint16 tokens; odd.bin: 3 bytes.
"""

from __future__ import annotations

import struct
import sys
import zipfile
from pathlib import Path


def npy(descr: str, shape: tuple[int, ...], data: bytes) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def npz(path: Path, arrays: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in arrays.items():
            archive.writestr(f"{name}.npy", data)


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    x = struct.pack("<1200f", *([0.5] * 1200))
    labels = struct.pack("<60q", *(i % 12 for i in range(60)))
    npz(folder / "cls12.npz", {"x": npy("<f4", (60, 20), x), "y": npy("<i8", (60,), labels)})
    floats = struct.pack("<40f", *([0.25] * 40))
    x40 = struct.pack("<800f", *([0.5] * 800))
    npz(folder / "reg.npz", {"x": npy("<f4", (40, 20), x40), "y": npy("<f4", (40, 1), floats)})
    npz(folder / "noxy.npz", {"a": npy("<f4", (3,), struct.pack("<3f", 1, 2, 3))})
    rows = ["f1,f2,f3,label"] + [f"{i},{i * 2},{i * 3},{i % 3}" for i in range(30)]
    (folder / "table.csv").write_text("\n".join(rows) + "\n")
    (folder / "train.bin").write_bytes(struct.pack("<100H", *range(100)))
    (folder / "val.bin").write_bytes(struct.pack("<100H", *range(100)))
    (folder / "odd.bin").write_bytes(b"abc")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
