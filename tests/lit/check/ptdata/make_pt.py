"""Write the torch.save files the tests in this folder check against (imports torch).

    python make_pt.py DIR

pairs.pt: {"image": [40, 1, 8, 8] float32, "text": [40, 4] int64, "label": [40] int64};
xy.pt: (x [40, 20] float32, y [40] int64 labels 0..11); uneven.pt: image [40, 64], text
[30, 4]; mixed.pt: a dict with a list of class names; code.pt: a dict whose value pickles
as a call of `os.getcwd`; triple.pt: a tuple of three tensors; cut.pt: pairs.pt cut short.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch


class Call:
    """Pickles as a call of `os.getcwd`: what a file that runs code on loading holds."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (os.getcwd, ())


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    image = torch.rand(40, 1, 8, 8)
    text = torch.arange(160).reshape(40, 4) % 19
    torch.save({"image": image, "text": text, "label": torch.arange(40) % 10}, folder / "pairs.pt")
    torch.save((torch.randn(40, 20), torch.arange(40) % 12), folder / "xy.pt")
    torch.save({"image": torch.rand(40, 64), "text": text[:30]}, folder / "uneven.pt")
    torch.save({"image": image, "classes": ["zero", "one"]}, folder / "mixed.pt")
    torch.save({"image": image, "hook": Call()}, folder / "code.pt")
    torch.save((image, text, text), folder / "triple.pt")
    data = (folder / "pairs.pt").read_bytes()
    (folder / "cut.pt").write_bytes(data[: len(data) // 2])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
