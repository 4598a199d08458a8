"""The torch dialect: runtime modules pasted as ops; built py.defs name their arguments."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from tensorloom.backends.python_printer import print_python
from tensorloom.dialects import py
from tensorloom.dialects import torch as t


def test_runtime_op_pastes_what_the_script_reads() -> None:
    """`torch.runtime` pastes the helpers the rest of the file names, with their imports."""
    ops = [py.ImportOp("torch"), t.RawOp("STATE = strip_prefixes({'module.w': 1})"), t.RuntimeOp()]
    module = ModuleOp([t.ScriptOp(ops, "train.tl")])
    module.verify()
    text = print_python(module)
    assert "def strip_prefixes" in text and "def save_checkpoint" not in text
    import_lines = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert len(import_lines) == len(set(import_lines))
    namespace: dict[str, Any] = {}
    exec(compile(text.replace("STATE = ", "def later():\n    return "), "<printed>", "exec"),
         namespace)  # fmt: skip
    assert namespace["later"]() == {"w": 1}


def test_runtime_op_roots_paste_unread_helpers() -> None:
    text = print_python(ModuleOp([t.ScriptOp([t.RuntimeOp(["barrier"])])]))
    assert "def barrier" in text and "import torch.distributed as dist" in text


def test_built_def_names_its_block_arguments() -> None:
    none = py.ConstantOp(py.NoneAttr())
    method = py.DefOp("forward", ["self", "x", ("mask", "kw")], defaults={"mask": none.result})
    assert [a.name_hint for a in method.body.block.args] == ["self", "x", "mask"]
    assert method.params == [("self", ""), ("x", ""), ("mask", "kw")]
    assert method.default_of() == {"mask": none.result}
