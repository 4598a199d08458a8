"""The runtime modules can be pasted together: no shared names, one valid block."""

from __future__ import annotations

import ast

from tensorloom.backends.runtime import MODULES, inline_source, module_text, split_module


def _defined_names(body: str) -> list[str]:
    names: list[str] = []
    for node in ast.parse(body).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def test_no_two_modules_define_the_same_name() -> None:
    owner: dict[str, str] = {}
    for module in MODULES:
        for name in _defined_names(split_module(module_text(module))[2]):
            assert name not in owner, f"`{name}` is defined in {owner.get(name)} and {module}"
            owner[name] = module


def test_inlined_block_defines_every_module_name() -> None:
    namespace: dict[str, object] = {}
    exec(
        compile("from __future__ import annotations\n" + inline_source(MODULES), "inl", "exec"),
        namespace,
    )
    for module in MODULES:
        for name in _defined_names(split_module(module_text(module))[2]):
            assert name in namespace
    # Decorators travel with their classes: a dataclass still takes its fields.
    plan = namespace["PrecisionPlan"](None, False)  # type: ignore[operator]
    assert plan.use_scaler is False  # type: ignore[attr-defined]
