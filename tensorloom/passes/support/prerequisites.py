"""What a pass needs run before it, declared on the pass and judged from the IR it is given.

    @dataclass(frozen=True)
    class ShapeInferencePass(TLPass):
        name = "shape-inference"
        requires = ("instantiate",)          # the passes whose output it reads

    @dataclass(frozen=True)
    class InstantiatePass(TLPass):
        @classmethod
        def pending(cls, module: ModuleOp) -> bool:   # is its work still to do on `module`?
            return any(... an `nml.instance` without its `config` ...)

`unmet(ShapeInferencePass.requires, earlier, module, registry)` names the passes
that shape-inference needs and that have not run: neither earlier in the pipeline
(`earlier`) nor, as the IR shows, before it was printed (`pending`: the pass's
work is still to do on the module), with, for each of those, the passes it needs
in turn. A pass that the module holds nothing for (`applies_to`: the kernel passes
on a module without kernels) is never needed. A pass that only checks
(`check-scopes`, `check-train`) is never pending: whether it ran cannot be read off
the IR, and the IR after it is the IR before it. So IR that tl-opt printed after
`-p desugar-pipes,resolve-nml` reads back with `-p instantiate,shape-inference`,
and so does hand-written IR that looks the same. tl-opt makes an unmet requirement
a usage error naming the passes to add; the driver (pipeline.py), whose stages list
every requirement earlier, an internal error.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class TLPass(ModulePass):
    """A TensorLoom pass: a ModulePass that says which passes it needs before it."""

    requires: ClassVar[tuple[str, ...]] = ()
    """The passes (by registered name) whose output this pass reads."""

    @classmethod
    def pending(cls, module: ModuleOp) -> bool:
        """Whether `module` still holds work for this pass (so a pass needing it cannot run)."""
        return False

    @classmethod
    def applies_to(cls, module: ModuleOp) -> bool:
        """Whether `module` holds anything for this pass at all: a module without kernels
        has nothing for the kernel passes, so a pass needing one of them does not need it."""
        return True


PassClasses = Mapping[str, Callable[[], type[ModulePass]]]


def requirements(pass_class: type[ModulePass]) -> tuple[str, ...]:
    """The passes `pass_class` declares it needs (none for a pass that is not a TLPass)."""
    return pass_class.requires if issubclass(pass_class, TLPass) else ()


def unmet(
    requires: Iterable[str], earlier: Collection[str], module: ModuleOp | None,
    registry: PassClasses,
) -> list[str]:  # fmt: skip
    """Of the passes `requires` names, those not run on `module`, with what they need in turn.

    `earlier`: the passes the pipeline runs before. A requirement in `earlier` is met
    without reading the IR (nor importing its pass); `module=None` counts every other
    one as unmet. A pass that is unmet will have to run, so its own requirements are
    judged the same way. Each pass comes after those it needs: the list is an order to
    run them in.
    """
    found: dict[str, bool] = {}

    def visit(required: str) -> None:
        if required in found or required in earlier:
            return
        found[required] = False  # a cycle in the declarations adds nothing
        pass_class = registry[required]()
        if module is not None and not _pending(pass_class, module):
            return
        for r in requirements(pass_class):
            visit(r)
        del found[required]
        found[required] = True  # after its own requirements: the order to run them in

    for required in requires:
        visit(required)
    return [r for r, is_unmet in found.items() if is_unmet]


def _pending(pass_class: type[ModulePass], module: ModuleOp) -> bool:
    if not issubclass(pass_class, TLPass):
        return False
    return pass_class.applies_to(module) and pass_class.pending(module)


def has_kernels(module: ModuleOp) -> bool:
    """Whether the module holds `kernel` ops (by dialect name: the dialect stays unimported)."""
    return any(op.dialect_name() == "kernel" for op in module.body.block.ops)
