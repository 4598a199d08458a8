"""Test-session settings shared by every pytest test."""

from __future__ import annotations

import os
import tempfile

# Every test session gets its own compile cache (see tensorloom/tools/check_cache.py),
# so a test never replays output cached by an earlier run or another checkout.
os.environ.setdefault("TENSORLOOM_CACHE_DIR", tempfile.mkdtemp(prefix="tl-test-cache-"))
os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("NO_COLOR", "1")
