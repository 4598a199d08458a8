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


def _instantiate() -> type[ModulePass]:
    from tensorloom.passes.instantiate import InstantiatePass

    return InstantiatePass


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


def _train_config() -> type[ModulePass]:
    from tensorloom.passes.train_config import TrainConfigPass

    return TrainConfigPass


def _insert_amp() -> type[ModulePass]:
    from tensorloom.passes.insert_amp import InsertAmpPass

    return InsertAmpPass


def _insert_ddp() -> type[ModulePass]:
    from tensorloom.passes.insert_ddp import InsertDdpPass

    return InsertDdpPass


def _insert_compile() -> type[ModulePass]:
    from tensorloom.passes.insert_compile import InsertCompilePass

    return InsertCompilePass


def _activation_checkpointing() -> type[ModulePass]:
    from tensorloom.passes.activation_checkpointing import ActivationCheckpointingPass

    return ActivationCheckpointingPass


def _infer_synthetic_data() -> type[ModulePass]:
    from tensorloom.passes.infer_synthetic_data import InferSyntheticDataPass

    return InferSyntheticDataPass


def _convert_train_to_torch() -> type[ModulePass]:
    from tensorloom.passes.convert_train_to_torch import ConvertTrainToTorchPass

    return ConvertTrainToTorchPass


def _check_weights() -> type[ModulePass]:
    from tensorloom.passes.check_weights import CheckWeightsPass

    return CheckWeightsPass


def _merge_specializations() -> type[ModulePass]:
    from tensorloom.passes.merge_specializations import MergeSpecializationsPass

    return MergeSpecializationsPass


def _mangle_names() -> type[ModulePass]:
    from tensorloom.passes.mangle_names import MangleNamesPass

    return MangleNamesPass


def get_all_passes() -> dict[str, PassFactory]:
    """Every registered pass: name -> a function that imports and returns its class."""
    return {
        "desugar-pipes": _desugar_pipes,
        "resolve-nml": _resolve_nml,
        "instantiate": _instantiate,
        "shape-inference": _shape_inference,
        "check-scopes": _check_scopes,
        "check-train": _check_train,
        "check-weights": _check_weights,
        "train-config": _train_config,
        "insert-amp": _insert_amp,
        "insert-ddp": _insert_ddp,
        "insert-compile": _insert_compile,
        "activation-checkpointing": _activation_checkpointing,
        "infer-synthetic-data": _infer_synthetic_data,
        "check-kernels": _check_kernels,
        "synthesize-launchers": _synthesize_launchers,
        "merge-specializations": _merge_specializations,
        "mangle-names": _mangle_names,
        "convert-nml-to-torch": _convert_nml_to_torch,
        "convert-train-to-torch": _convert_train_to_torch,
        "convert-kernel-to-triton": _convert_kernel_to_triton,
    }
