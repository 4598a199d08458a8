"""torchvision for the tests that compare with its real models (ResNet-50, ViT-B/16).

The torchvision the tests pin (0.28.0, installed with `--no-deps` beside CPU torch 2.13.0)
is a CUDA build: its C extension does not load here, and `import torchvision` fails in
`torchvision._meta_registrations`, which registers fake kernels for the extension's ops
(`torchvision::nms`, ...) that torch cannot find. The models need none of those ops, so an
empty module stands in for `_meta_registrations` before the import; the models then build
and run on CPU.

transformers imports torchvision itself wherever it is installed (its image processors), and
without the shim `from transformers import BertModel` fails too: tests/conftest.py installs
the shim for every test session. A test module that uses torchvision calls
`import_torchvision()`: without torchvision installed the test is skipped.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

import pytest

SHIMMED = "torchvision._meta_registrations"


def install_shim() -> None:
    """The empty `_meta_registrations`, where torchvision is installed and not yet imported."""
    if SHIMMED not in sys.modules and importlib.util.find_spec("torchvision") is not None:
        sys.modules[SHIMMED] = types.ModuleType(SHIMMED)


def import_torchvision() -> Any:
    """torchvision, imported with the shim above; skips the calling test without it."""
    install_shim()
    return pytest.importorskip("torchvision")
