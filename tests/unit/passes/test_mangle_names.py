"""`mangle-names`: a model named like something the script defines still gives a working script.

fuzz-findings/manual/model_named_torch_accepted.tl: a model named `torch`, `F`,
`nn` or `Trainer` (14 of 19 such names) passed the check and broke the script.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tensorloom.passes.mangle_names import new_names, reserved_names
from tensorloom.pipeline import compile_text, python_source

PROGRAM = """\
model {name}:
    layer fc = Linear(4, 2)
    fn forward(self, x: Tensor[B, 4]) -> Tensor:
        return x |> self.fc

model Outer:
    layer inner = {name}()
    fn forward(self, x: Tensor[B, 4]) -> Tensor:
        return self.inner(x)

let net = {name}()
let data = load_dataset()
train net on data:
    epochs = 1
"""
NAMES = ["torch", "F", "nn", "dist", "Trainer", "main", "train", "EPOCHS", "print",
         "DeviceLoader", "parse_args", "list"]  # fmt: skip


def _load(script: str) -> ModuleType:
    module = ModuleType("emitted_mangle")
    sys.modules[module.__name__] = module
    try:
        exec(compile(script, "<emitted>", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


def _script(name: str) -> str:
    result = compile_text(PROGRAM.format(name=name), "m.tl")
    assert result.ok, [d.message for d in result.sink]
    assert result.module is not None
    return python_source(result.module, "m.tl")


@pytest.mark.parametrize("name", NAMES)
def test_reserved_model_name_gets_a_new_class(name: str) -> None:
    module = _load(_script(name))
    assert module.torch is torch and module.nn is torch.nn
    cls = getattr(module, f"{name}Model")
    assert issubclass(cls, torch.nn.Module)
    outer = module.Outer()
    assert isinstance(outer.inner, cls)
    x = torch.randn(3, 4)
    assert torch.equal(outer(x), outer.inner.fc(x))


@pytest.mark.parametrize("name", ["torch", "Trainer"])
def test_script_with_reserved_model_name_trains(name: str, tmp_path: Path) -> None:
    module = _load(_script(name))
    folder = str(tmp_path / "checkpoints")
    arguments = ["--epochs", "1", "--max-steps", "1", "--device", "cpu", "--checkpoint-dir", folder]
    assert module.main(arguments) == 0


def test_free_names_are_kept_and_new_names_are_unique() -> None:
    assert new_names(["Classifier", "ResNet"]) == {}
    assert new_names(["torch", "torchModel"]) == {"torch": "torchModel2"}
    assert new_names(["vector_add_launcher"], ["vector_add"]) == {
        "vector_add_launcher": "vector_add_launcherModel"
    }
    assert {"torch", "Trainer", "EPOCHS", "class", "print"} <= reserved_names()
