"""The Python that emitted training scripts carry, kept here as real, tested modules.

    pasted = paste(["load_digits", "DeviceLoader"])
    pasted.imports   # [("torch", "", ""), ...]: what the pasted code imports
    pasted.text      # `load_digits`, `DeviceLoader` and what they reach, nothing else

Each module (`data`, `tokens`, `loader`, `checkpoint`, `pretrained`, `metrics`, `distributed`,
`amp`, `compiling`, `activations`, `graphs`, `attention`, `sourcemap`, `recipe`, `serve`,
`trainer`, `sharded`, `steps`, `samples`) imports the standard library and torch at its top,
and no two define the same top-level name. A module may import another runtime module's names
(`trainer` builds on `checkpoint` and `recipe`): a pasted script holds those definitions
themselves, so `paste` drops such imports. `paste` is the one way a script gets runtime
code: a function-level dependency analysis (`ast`) finds each top-level definition's
references, and the script receives the definitions its own code reaches, in their modules'
order, with the imports those need. The script must start with
`from __future__ import annotations`, as every module does.

This package itself never imports torch: the compiler reads these files as text.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

RUNTIME_DIR = Path(__file__).resolve().parent
# The order definitions appear in a script.
MODULES = (
    "distributed", "amp", "compiling", "activations", "data", "tokens", "loader", "checkpoint",
    "pretrained", "metrics", "graphs", "attention", "sourcemap", "recipe", "serve", "trainer",
    "sharded", "steps", "samples",
)  # fmt: skip

Import = tuple[str, str, str]
"""(module, alias, name): `import module as alias` or `from module import name`."""


@dataclass(frozen=True, slots=True)
class Definition:
    """One top-level statement of a runtime module: what it binds, what it reads."""

    module: str
    binds: frozenset[str]
    reads: frozenset[str]
    text: str  # its source, decorators and the comment lines directly above included


@dataclass(frozen=True, slots=True)
class Pasted:
    """The runtime code a script reaches: its imports, and its text under module banners."""

    imports: list[Import]
    text: str
    definitions: list[Definition]


def module_text(name: str) -> str:
    """The source text of one runtime module."""
    if name not in MODULES:
        raise KeyError(f"no runtime module `{name}`; there are {', '.join(MODULES)}")
    return (RUNTIME_DIR / f"{name}.py").read_text(encoding="utf-8")


@functools.cache
def definitions() -> tuple[Definition, ...]:
    """Every module's top-level definitions, in `MODULES` order."""
    return tuple(d for name in MODULES for d in _module_definitions(name))


@functools.cache
def _imports() -> dict[str, Import]:
    """Each name a runtime module imports, and the import that binds it."""
    bound: dict[str, Import] = {}
    for name in MODULES:
        for node in ast.parse(module_text(name)).body:
            for alias in _import_aliases(node):
                bound.setdefault(alias[0], alias[1])
    return bound


def top_level_names() -> frozenset[str]:
    """Every name a pasted runtime may bind at a script's top level."""
    return frozenset(n for d in definitions() for n in d.binds) | frozenset(_imports())


def module_summary(name: str) -> str:
    """The first line of a runtime module's docstring."""
    docstring = ast.get_docstring(ast.parse(module_text(name))) or ""
    return docstring.splitlines()[0] if docstring else ""


def reachable(roots: Iterable[str]) -> list[Definition]:
    """The definitions `roots` reach through their references, in `MODULES` order."""
    owner = {name: d for d in definitions() for name in d.binds}
    chosen: set[Definition] = set()
    pending = [owner[n] for n in roots if n in owner]
    while pending:
        definition = pending.pop()
        if definition in chosen:
            continue
        chosen.add(definition)
        pending += [owner[n] for n in definition.reads if n in owner]
    return [d for d in definitions() if d in chosen]


# Modules whose definitions are parts of a model (the attention module a `MultiHeadAttention`
# layer builds): a program file keeps them beside its model classes, not in its runtime module.
MODEL_MODULES = ("attention",)


def paste(roots: Iterable[str]) -> Pasted:
    """The runtime code that `roots` (names a script reads) reach; see the module docstring."""
    return paste_definitions(reachable(roots))


def paste_definitions(chosen: list[Definition]) -> Pasted:
    """`chosen` (in `MODULES` order) as text under module banners, with the imports it reads."""
    bound = _imports()
    read = {n for d in chosen for n in d.reads}
    imports = sorted({bound[n] for n in read if n in bound})
    chunks: list[str] = []
    for module in MODULES:
        texts = [d.text for d in chosen if d.module == module]
        if texts:
            banner = f"# ---- runtime/{module}.py: {module_summary(module)}".rstrip(": ")
            chunks.append(banner + "\n" + "\n\n\n".join(texts))
    return Pasted(imports, "\n\n\n".join(chunks), chosen)


def names_read(source: str) -> frozenset[str]:
    """Every name `source` mentions (loads, annotations, decorators), less those it defines at
    its top level: a script's own `Trainer` (a `step` lines block's) is not the runtime's."""
    tree = ast.parse(source)
    read = frozenset(n.id for n in ast.walk(tree)
                     if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store))  # fmt: skip
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    return read - defined


# ------------------------------------------------------------------------ parsing


def _module_definitions(name: str) -> list[Definition]:
    text = module_text(name)
    lines = text.splitlines(keepends=True)
    found: list[Definition] = []
    for node in ast.parse(text).body:
        if _is_docstring(node) or isinstance(node, ast.Import | ast.ImportFrom):
            continue
        first = _first_line(node) - 1
        first -= len(_leading_comments(lines, first))
        source = "".join(lines[first : node.end_lineno]).rstrip()
        found.append(Definition(name, _binds(node), _reads(node), source))
    return found


def _reads(node: ast.stmt) -> frozenset[str]:
    """The names a definition reads from the module: every name it loads, less the locals of
    its functions (their parameters and the names they assign). A parameter `resume` of one
    function does not make it need the function `resume`."""
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
    loaded = {n.id for n in names if isinstance(n.ctx, ast.Load)}
    local: set[str] = set()
    for function in ast.walk(node):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        arguments = function.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        local |= {a.arg for a in every}
        stored = (n for n in ast.walk(function) if isinstance(n, ast.Name))
        local |= {n.id for n in stored if isinstance(n.ctx, ast.Store)}
    return frozenset(loaded - local)


def _binds(node: ast.stmt) -> frozenset[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return frozenset([node.name])
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return frozenset(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    names: set[str] = set()  # a `try:` import with its fallback
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            names.add(inner.id)
        names |= {a[0] for a in _import_aliases(inner)}
    return frozenset(names)


RUNTIME_PACKAGE = "tensorloom.backends.runtime"


def _import_aliases(node: ast.AST) -> list[tuple[str, Import]]:
    """(bound name, import) for each name an import statement binds; none for an import of
    another runtime module, whose definitions are pasted instead."""
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(RUNTIME_PACKAGE):
        return []
    if isinstance(node, ast.ImportFrom) and node.module != "__future__":
        return [(a.asname or a.name, (node.module or "", "", a.name)) for a in node.names]
    if isinstance(node, ast.Import):
        return [
            (a.asname or a.name.split(".")[0], (a.name, a.asname or "", "")) for a in node.names
        ]
    return []


def _first_line(node: ast.stmt) -> int:
    """A statement's first line, counting its decorators."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _leading_comments(lines: list[str], index: int) -> list[str]:
    """The comment lines directly above line `index` (0-based), which belong to it."""
    comments: list[str] = []
    while index > 0 and lines[index - 1].lstrip().startswith("#"):
        index -= 1
        comments.append(lines[index])
    return comments
