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


def _resolve_nml() -> type[ModulePass]:
    from tensorloom.passes.resolve_nml import ResolveNmlPass

    return ResolveNmlPass


def _shape_inference() -> type[ModulePass]:
    from tensorloom.passes.shape_inference import ShapeInferencePass

    return ShapeInferencePass


def _check_scopes() -> type[ModulePass]:
    from tensorloom.passes.check_scopes import CheckScopesPass

    return CheckScopesPass


def _check_train() -> type[ModulePass]:
    from tensorloom.passes.check_train import CheckTrainPass

    return CheckTrainPass


def _check_kernels() -> type[ModulePass]:
    from tensorloom.passes.check_kernels import CheckKernelsPass

    return CheckKernelsPass


def _synthesize_launchers() -> type[ModulePass]:
    from tensorloom.passes.synthesize_launchers import SynthesizeLaunchersPass

    return SynthesizeLaunchersPass


def _convert_nml_to_torch() -> type[ModulePass]:
    from tensorloom.passes.convert_nml_to_torch import ConvertNmlToTorchPass

    return ConvertNmlToTorchPass


def _convert_kernel_to_triton() -> type[ModulePass]:
    from tensorloom.passes.convert_kernel_to_triton import ConvertKernelToTritonPass

    return ConvertKernelToTritonPass


def get_all_passes() -> dict[str, PassFactory]:
    """Every registered pass: name -> a function that imports and returns its class."""
    return {
        "desugar-pipes": _desugar_pipes,
        "resolve-nml": _resolve_nml,
        "shape-inference": _shape_inference,
        "check-scopes": _check_scopes,
        "check-train": _check_train,
        "check-kernels": _check_kernels,
        "synthesize-launchers": _synthesize_launchers,
        "convert-nml-to-torch": _convert_nml_to_torch,
        "convert-kernel-to-triton": _convert_kernel_to_triton,
    }
