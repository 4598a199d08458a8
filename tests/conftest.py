"""Test-session settings shared by every pytest test."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

# Every test session gets its own compile cache (see tensorloom/tools/check_cache.py),
# so a test never replays output cached by an earlier run or another checkout.
os.environ.setdefault("TENSORLOOM_CACHE_DIR", tempfile.mkdtemp(prefix="tl-test-cache-"))
os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("NO_COLOR", "1")


def _install_torchvision_shim() -> None:
    """torchvision 0.28.0 (a CUDA build) imports on CPU only with a shim, and transformers
    imports it wherever it is installed: tests/e2e/_torchvision.py says why. Loaded by its
    path, so that a session started outside the repository's root finds it too."""
    path = Path(__file__).parent / "e2e" / "_torchvision.py"
    spec = importlib.util.spec_from_file_location("_tl_torchvision_shim", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.install_shim()


_install_torchvision_shim()


# On 2 gloo ranks torch sometimes aborts a finished run at interpreter exit: "terminate
# called without an active exception", a joinable C++ thread destroyed during teardown,
# after every output is written (bench/RESULTS.md, "The SIGABRT ...": reproduced in torch
# alone, about 1 exit in 5 after a full-state-dict gather). A test whose failure says exactly
# that (the tests that launch ranks show the rank's stderr) is run once more; any other
# failure fails as it is.
TEARDOWN_ABORT = "terminate called without an active exception"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=[TEARDOWN_ABORT]))
