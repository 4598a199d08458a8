"""The torch dialect's helpers: runtime modules pasted as ops, built ops verifying."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from tensorloom.backends.python_printer import print_python
from tensorloom.dialects import torch as t


def test_runtime_ops_paste_a_working_module() -> None:
    """The pasted checkpoint helpers run: strip the prefixes a compiled DDP model adds."""
    module = ModuleOp([t.ScriptOp(t.runtime_ops("checkpoint"), "train.tl")])
    module.verify()
    namespace: dict[str, Any] = {}
    exec(compile(print_python(module), "<printed>", "exec"), namespace)
    stripped = namespace["strip_prefixes"]({"_orig_mod.module.fc.weight": 1})
    assert stripped == {"fc.weight": 1}


def test_runtime_imports_merge_with_the_script_s_own() -> None:
    ops = [t.ImportOp("torch"), *t.runtime_ops("checkpoint"), *t.runtime_ops("metrics")]
    text = print_python(ModuleOp([t.ScriptOp(ops)]))
    import_lines = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert len(import_lines) == len(set(import_lines))
    assert import_lines.count("import torch") == 1


def test_built_method_names_its_block_arguments() -> None:
    method = t.MethodOp("forward", ["x", "mask"], ["", "None"])
    assert [a.name_hint for a in method.body.block.args] == ["x", "mask"]
    assert method.params == [("x", ""), ("mask", "None")]
