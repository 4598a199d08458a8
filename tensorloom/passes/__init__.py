"""TensorLoom passes, registered by name and imported only when used.

    get_all_passes()["desugar-pipes"]()  # -> DesugarPipesPass (imports the module)

Each entry is one line: the pass name, and a function importing its class.
The pipeline (tensorloom/pipeline.py) lists passes by these names; a name that
is not registered here yet is skipped there, so a stage can be declared before
all its passes exist.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

PassFactory = Callable[[], type[ModulePass]]


def _desugar_pipes() -> type[ModulePass]:
    from tensorloom.passes.desugar_pipes import DesugarPipesPass

    return DesugarPipesPass


def get_all_passes() -> dict[str, PassFactory]:
    """Every registered pass: name -> a function that imports and returns its class."""
    return {
        "desugar-pipes": _desugar_pipes,
    }
