"""torchvision for the tests that compare with its real models (ResNet-50, ViT-B/16).

The torchvision the tests pin (0.28.0, installed with `--no-deps` beside CPU torch 2.13.0)
is a CUDA build: its C extension does not load here, and `import torchvision` fails in
`torchvision._meta_registrations`, which registers fake kernels for the extension's ops
(`torchvision::nms`, ...) that torch cannot find. The models need none of those ops, so an
empty module stands in for `_meta_registrations` before the import; the models then build
and run on CPU. A test module calls `import_torchvision()` at the top: without torchvision
installed the module is skipped.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest


def import_torchvision() -> Any:
    """torchvision, imported with the shim above; skips the calling test module without it."""
    sys.modules.setdefault(
        "torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations")
    )
    return pytest.importorskip("torchvision")
