"""lit configuration: FileCheck tests of tlc and tl-opt output."""

import os
import shutil
import tempfile
import sys

import lit.formats

config.name = "TensorLoom"  # noqa: F821
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".tl", ".nml", ".mlir", ".test"]  # noqa: F821
config.excludes = ["Inputs", "lit.cfg.py"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821

bindir = os.path.dirname(sys.executable)
for tool in ("tlc", "tl-opt"):
    path = shutil.which(tool, path=bindir) or shutil.which(tool) or tool
    config.substitutions.append((f"%{tool}", path))  # noqa: F821
config.substitutions.append(("%python", sys.executable))  # noqa: F821
config.substitutions.append(("%examples", os.path.join(os.path.dirname(__file__), "..", "..", "examples")))  # noqa: F821
filecheck = shutil.which("filecheck", path=bindir) or "filecheck"
config.substitutions.append(("filecheck", filecheck))  # noqa: F821
config.substitutions.append(("FileCheck", filecheck))  # noqa: F821
config.environment["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")  # noqa: F821
config.environment["NO_COLOR"] = "1"  # noqa: F821
config.environment["COLUMNS"] = "120"  # noqa: F821
config.environment["TRITON_INTERPRET"] = "1"  # noqa: F821
# A fresh compile cache per lit run, so no test replays another run's output.
config.environment["TENSORLOOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="tl-lit-cache-")  # noqa: F821
# A worktree's tests import that worktree's `tensorloom` (PYTHONPATH), not the installed one.
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]  # noqa: F821
