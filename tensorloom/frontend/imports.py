"""The import graph: which .nml files a program pulls in, and what aliases name.

    // train_transformer.tl
    import transformer.nml as CustomTransformer    // transformer.nml next to this file

`load_program` follows imports from the root file, each path relative to the
directory of the file that imports it (never the working directory), parses
every file once, and orders the files with the standard library's `graphlib`
(networkx costs 150-200 ms to import, most of a cold check's budget). An import
cycle is TL0611 and prints the cycle; a missing file is TL0610 at the path.

An alias names one model of the imported file: its only model; else the model
whose name is the alias; else the one named like the file (`resnet.nml` ->
`ResNet`, compared ignoring case and underscores). Anything else is ambiguous
(TL0613). Without an alias, every model of the file is visible by its own name.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tensorloom.diagnostics import Diagnostic, Label
from tensorloom.diagnostics.ir import report
from tensorloom.frontend import ast

Parse = Callable[[Path], "ast.Module | None"]


@dataclass
class SourceUnit:
    """One parsed file and the aliases its imports bind (alias -> model name)."""

    path: str
    module: ast.Module
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass
class Program:
    """The root file and everything it imports, dependencies before dependents."""

    root: SourceUnit
    imported: list[SourceUnit] = field(default_factory=list)

    def units(self) -> list[SourceUnit]:
        return [*self.imported, self.root]


def _key(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def import_path(importer: str, relative: str) -> str:
    """Where `import relative` in the file `importer` points: next to the importer."""
    return os.path.normpath(os.path.join(os.path.dirname(importer), relative))


ALLOW_OUTSIDE = "TENSORLOOM_ALLOW_OUTSIDE_IMPORTS"
"""Set to 1 to let imports leave the root file's folder (absolute paths, `../`, links out)."""


def _inside(path: str, folder: str) -> bool:
    real = os.path.realpath(path)
    return os.path.commonpath([real, folder]) == folder


class _Loader:
    def __init__(self, root: ast.Module, parse: Parse):
        self.parse = parse
        self.folder = os.path.realpath(os.path.dirname(os.path.abspath(root.path)))
        """Imports resolve inside this tree (links followed) unless ALLOW_OUTSIDE is set."""
        self.units: dict[str, SourceUnit] = {_key(root.path): SourceUnit(root.path, root)}
        self.imports: dict[str, dict[str, ast.ImportDecl]] = {_key(root.path): {}}
        """importer -> {imported file: the import that names it}"""

    def load(self, root_key: str) -> None:
        pending, done = [root_key], set[str]()
        while pending:
            key = pending.pop(0)
            if key in done:
                continue
            done.add(key)
            unit = self.units[key]
            for decl in unit.module.imports():
                target = self._follow(unit, decl)
                if target is not None and target not in done:
                    pending.append(target)

    def _follow(self, unit: SourceUnit, decl: ast.ImportDecl) -> str | None:
        path = import_path(unit.path, decl.path)
        key = _key(path)
        if key not in self.units and not self._read(path, decl, unit):
            return None
        self.imports.setdefault(_key(unit.path), {}).setdefault(key, decl)
        self.imports.setdefault(key, {})
        return key

    def _read(self, path: str, decl: ast.ImportDecl, unit: SourceUnit) -> bool:
        if not path.endswith(".nml"):
            report(_not_nml(path, decl))
            return False
        if not os.environ.get(ALLOW_OUTSIDE) and not _inside(path, self.folder):
            report(_outside(decl, self.folder))
            return False
        if not os.path.isfile(path):
            report(_missing(path, decl, unit))
            return False
        if not os.path.realpath(path).endswith(".nml"):  # a link named `x.nml` to another file
            report(_not_nml(os.path.realpath(path), decl))
            return False
        module = self.parse(Path(path))
        if module is None:
            return False
        self.units[_key(path)] = SourceUnit(path, module)
        return True


def load_program(root: ast.Module, parse: Parse) -> Program:
    """Follow the root's imports; report missing files and cycles; bind aliases."""
    if not root.imports():
        return Program(SourceUnit(root.path, root))
    loader = _Loader(root, parse)
    root_key = _key(root.path)
    loader.load(root_key)
    order = _dependency_order(loader.imports, loader.units)
    imported = [loader.units[k] for k in order if k != root_key]
    for unit in loader.units.values():
        _bind_aliases(unit, loader.units)
    return Program(loader.units[root_key], imported)


def _dependency_order(
    imports: dict[str, dict[str, ast.ImportDecl]], units: dict[str, SourceUnit]
) -> list[str]:
    """Imported files before their importers; a cycle is reported, then discovery order."""
    try:
        return list(TopologicalSorter(imports).static_order())
    except CycleError as cycle:
        _report_cycle(cycle.args[1], imports, units)
        return list(reversed(units))


def _report_cycle(
    nodes: list[str], imports: dict[str, dict[str, ast.ImportDecl]], units: dict[str, SourceUnit]
) -> None:
    # graphlib lists each file before the file that imports it: reverse to follow the imports,
    # and start at the file found first, so the message does not depend on set order.
    ring = list(reversed(nodes[1:]))
    found = list(units)
    start = min(range(len(ring)), key=lambda i: found.index(ring[i]))
    ring = ring[start:] + ring[:start]
    decl = imports[ring[0]][ring[1 % len(ring)]]
    chain = [units[k].path for k in [*ring, ring[0]]]
    report(
        Diagnostic.error(
            "TL0611",
            "import cycle: " + " -> ".join(f"`{p}`" for p in chain),
            Label(decl.path_span, "this import starts the cycle"),
            help="move the shared models into a file that none of these imports",
        )
    )


def _missing(path: str, decl: ast.ImportDecl, unit: SourceUnit) -> Diagnostic:
    folder = os.path.dirname(unit.path) or "."
    return Diagnostic.error(
        "TL0610",
        f"cannot find `{decl.path}`",
        Label(decl.path_span, f"no file `{path}`"),
        help=f"imports are relative to the importing file's folder, `{folder}`",
    )


def _outside(decl: ast.ImportDecl, folder: str) -> Diagnostic:
    return Diagnostic.error(
        "TL0616",
        f"`{decl.path}` is outside the program's folder",
        Label(decl.path_span, f"imports stay inside `{folder}`"),
        help=f"copy the file into that folder, or set {ALLOW_OUTSIDE}=1 to allow it",
    )


def _not_nml(path: str, decl: ast.ImportDecl) -> Diagnostic:
    return Diagnostic.error(
        "TL0612",
        f"`{path}` is not an .nml file",
        decl.path_span,
        help="only .nml model files can be imported; move the model into one",
    )


def _bind_aliases(unit: SourceUnit, units: dict[str, SourceUnit]) -> None:
    for decl in unit.module.imports():
        target = units.get(_key(import_path(unit.path, decl.path)))
        if decl.alias is None or target is None:
            continue
        model = _aliased_model(decl, target)
        if model is not None:
            unit.aliases[decl.alias] = model


def _simple(name: str) -> str:
    return name.replace("_", "").lower()


def _aliased_model(decl: ast.ImportDecl, target: SourceUnit) -> str | None:
    names = [m.name for m in target.module.models()]
    alias = decl.alias or ""
    if len(names) == 1:
        return names[0]
    stem = _simple(Path(target.path).stem)
    for candidate in (alias, stem):
        matches = [n for n in names if _simple(n) == _simple(candidate)]
        if len(matches) == 1:
            return matches[0]
    report(_ambiguous_alias(decl, target, names))
    return None


def _ambiguous_alias(decl: ast.ImportDecl, target: SourceUnit, names: list[str]) -> Diagnostic:
    span = decl.alias_span or decl.path_span
    if not names:
        return Diagnostic.error(
            "TL0614", f"`{target.path}` defines no model to import as `{decl.alias}`", span
        )
    listed = ", ".join(f"`{n}`" for n in names)
    return Diagnostic.error(
        "TL0613",
        f"`{decl.alias}` could name any of {listed} in `{target.path}`",
        Label(span, "ambiguous alias"),
        help=f"name the alias after one of the models, or import without `as` and use {listed}",
    )
