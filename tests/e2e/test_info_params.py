"""`tlc info`'s parameter counts equal PyTorch's for the emitted models, exactly.

For every example program (examples/, bench/programs/, and the programs in
info_programs/ that cover every catalogue layer and nesting) the file is
compiled to Python, each model is built as its instance builds it (overrides
applied), and `sum(p.numel() for p in model.parameters())` is compared with
`params` of its `tlc info --json` entry. A hypothesis sweep does the same for
random configurations of single layers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorloom.analysis.report import InfoRequest, info_json
from tensorloom.dialects.nml import InstanceOp
from tensorloom.passes.support.model_env import evaluate_kwargs
from tensorloom.pipeline import compile_file, python_source

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(
    [
        *ROOT.glob("examples/*.tl"),
        *ROOT.glob("examples/*.nml"),
        *ROOT.glob("bench/programs/*.tl"),
        *(ROOT / "tests/e2e/info_programs").glob("*.tl"),
        *(ROOT / "tests/e2e/info_programs").glob("*.nml"),
    ]
)


def emitted(path: Path) -> tuple[ModuleType, dict[str, tuple[str, dict[str, Any]]]]:
    """The emitted Python module, and each instance's model and overrides."""
    result = compile_file(path, until="torch")
    assert result.ok and result.module is not None, [d.message for d in result.sink]
    module = ModuleType(f"emitted_{path.stem}")
    text = python_source(result.module)
    sys.modules[module.__name__] = module  # the emitted script's dataclasses look it up
    exec(compile(text, f"<emitted {path.name}>", "exec"), module.__dict__)
    instances: dict[str, tuple[str, dict[str, Any]]] = {}
    for op in result.module.walk():
        if isinstance(op, InstanceOp):
            overrides = evaluate_kwargs(op.overrides.data, {})
            assert isinstance(overrides, dict)
            instances[op.sym_name.data] = (op.model.root_reference.data, overrides)
    return module, instances


def torch_params(module: ModuleType, model: str, overrides: dict[str, Any]) -> int:
    built = getattr(module, model)(**overrides)
    assert isinstance(built, torch.nn.Module)
    return sum(p.numel() for p in built.parameters())


def check_program(path: Path) -> int:
    """Compare every model entry; the number of entries compared."""
    info = info_json(path, InfoRequest(batch_size=2))
    assert info["ok"], info["diagnostics"]
    module, instances = emitted(path)
    for entry in info["models"]:  # a model alone: profiled as its first use configures it
        model, overrides = instances.get(entry["name"], (entry["model"], entry["config"]))
        assert entry["params"] == torch_params(module, model, overrides), entry["name"]
    return len(info["models"])


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_params_equal_pytorch(path: Path) -> None:
    if path.name == "vector_add.tl" or "kernels" in path.parts:
        pytest.skip("a kernel program declares no model")
    assert check_program(path) >= 1


def test_resnet18_has_torchvisions_parameter_count() -> None:
    """11,689,512: `sum(p.numel() for p in torchvision.models.resnet18().parameters())`;
    the emitted model has as many (`check_program` builds it and counts)."""
    path = ROOT / "tests/e2e/info_programs/resnet18.nml"
    info = info_json(path, InfoRequest(batch_size=2))
    resnet = next(m for m in info["models"] if m["name"] == "ResNet18")
    assert resnet["params"] == 11_689_512
    module, _ = emitted(path)
    assert torch_params(module, "ResNet18", {}) == 11_689_512
    out = module.ResNet18().eval()(torch.randn(1, 3, 224, 224))
    assert out.shape == (1, 1000)


def test_every_catalogue_layer_is_covered() -> None:
    from tensorloom.catalogue.layers import LAYERS

    text = "".join(p.read_text() for p in (ROOT / "tests/e2e/info_programs").iterdir())
    missing = [name for name in LAYERS if f"{name}(" not in text]
    assert missing == []


def test_instance_overrides_are_counted(tmp_path: Path) -> None:
    """`Block(width=8, hidden=24)` counts with 8 and 24, not the defaults."""
    info = info_json(ROOT / "tests/e2e/info_programs/imported.tl", InfoRequest())
    small = next(m for m in info["models"] if m["name"] == "small")
    assert small["params"] == (8 * 24 + 24) + (24 * 8 + 8) + 2 * 8


# --- a randomized sweep of single layers ---------------------------------------------------

Layer = tuple[str, str]  # (constructor source in TensorLoom, input annotation)


@st.composite
def layers(draw: st.DrawFn) -> Layer:
    n = st.integers(1, 6).map(lambda k: 2 * k)
    kind = draw(st.sampled_from(["Linear", "Conv2d", "LSTM", "GRU", "MHA", "Norm", "Embed"]))
    b = draw(st.booleans())
    bias = "true" if b else "false"
    if kind == "Linear":
        i, o = draw(n), draw(n)
        return f"Linear({i}, {o}, bias={bias})", f"[B, {i}]"
    if kind == "Conv2d":
        g = draw(st.sampled_from([1, 2]))
        i, o, k = g * draw(n), g * draw(n), draw(st.integers(1, 3))
        return f"Conv2d({i}, {o}, {k}, groups={g}, bias={bias})", f"[B, {i}, 8, 8]"
    if kind in ("LSTM", "GRU"):
        i, h, layers_ = draw(n), draw(n), draw(st.integers(1, 3))
        bi = "true" if draw(st.booleans()) else "false"
        return f"{kind}({i}, {h}, num_layers={layers_}, bias={bias}, bidirectional={bi})", (
            f"[B, 5, {i}]"
        )
    if kind == "MHA":
        heads = draw(st.sampled_from([1, 2]))
        d = heads * draw(n)
        kv = "true" if draw(st.booleans()) else "false"
        return f"MultiHeadAttention({d}, {heads}, bias={bias}, add_bias_kv={kv})", f"[B, 5, {d}]"
    if kind == "Norm":
        c = draw(n)
        norm = draw(st.sampled_from(["LayerNorm", "BatchNorm1d", "GroupNorm"]))
        affine = "elementwise_affine" if norm == "LayerNorm" else "affine"
        args = f"2, {c}" if norm == "GroupNorm" else f"{c}"
        return f"{norm}({args}, {affine}={bias})", f"[B, {c}]" if norm != "LayerNorm" else (
            f"[B, 3, {c}]"
        )
    return f"Embedding({draw(n) * 10}, {draw(n)})", "[B, 4]"


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layer=layers())
def test_random_layers_equal_pytorch(tmp_path: Path, layer: Layer) -> None:
    ctor, shape = layer
    path = tmp_path / "sweep.nml"
    source = f"@model Sweep:\n    @layers:\n        l = {ctor}\n\n    @forward(x: Tensor{shape}):\n"
    path.write_text(source + "        return l(x)\n")
    assert check_program(path) == 1
