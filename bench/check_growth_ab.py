"""The whole check in process on generated MLPs, for a tree given on the command line.

    python bench/check_growth_ab.py TREE [LAYERS ...]     # default 100 300 1000

Runs `check_file` (parse, irgen, every check pass) of TREE's compiler on
TREE's bench/check_speed.py generated MLP of each size and prints the CPU time of
one warm run. Run it with two trees one after the other (before and after a
change) to compare them under the same load; CPU time is less moved by the
machine's load than wall time.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    tree = Path(sys.argv[1]).resolve()
    sizes = [int(a) for a in sys.argv[2:]] or [100, 300, 1000]
    sys.path.insert(0, str(tree))
    sys.path.insert(0, str(tree / "bench"))
    import check_speed  # the tree's generator; it puts the tree first on sys.path

    from tensorloom.tools.check import check_file

    assert Path(check_file.__code__.co_filename).is_relative_to(tree), "another tree's compiler"

    with tempfile.TemporaryDirectory() as work:
        for layers in sizes:
            path = Path(work) / f"deep_{layers}.tl"
            path.write_text(check_speed.generated(layers))
            check_file(path)  # cold: imports, first-use formats
            start = time.process_time()
            check_file(path)
            ms = (time.process_time() - start) * 1000
            print(f"{tree.name} {layers} layers: {ms:.0f} ms CPU, {ms / layers:.2f} per layer")


if __name__ == "__main__":
    main()
