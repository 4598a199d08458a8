"""The script's parameter groups and what each optimizer steps, as `py` ops.

    group hidden = params(net.blocks, ndim=2)
        -> groups["hidden"] = parameter_group(net, "blocks", ndim=2)
    group rest = params(net) - hidden
        -> groups["rest"] = parameter_group(net) - groups["hidden"]
    AdamW(rest, gains(weight_decay=0.0))
        -> [{"params": groups["rest"]}, {"params": groups["gains"], "weight_decay": 0.0}]

Shared by the scripts of `step` lines (train_steps.py) and of a one-model block's
`optimizer = (Muon(hidden), AdamW(rest))` (train_build.py). The runtime's `parameter_group`
(runtime/steps.py) selects by the rules check-train resolved the groups with
(passes/support/param_groups.py); `models` maps each instance to its name in the script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, SSAValue

from tensorloom.dialects import py
from tensorloom.dialects.nml import CallAttr, ExprAttr
from tensorloom.passes.support.model_env import evaluate
from tensorloom.passes.support.param_groups import SELECT, ParamArg, selection_groups, split_path
from tensorloom.passes.support.py_builder import PyBuilder


@dataclass(frozen=True, slots=True)
class GroupEmitter:
    groups: dict[str, Attribute]  # `group NAME = selection`, in the block's order
    models: dict[str, str]  # instance -> its variable in the script (`net` -> `model`)

    def _free(self, name: str) -> str:
        """`name`, or `name_` where a model's variable has it (a model called `groups`)."""
        while name in self.models.values():
            name += "_"
        return name

    @property
    def table(self) -> str:
        """The script's dict of groups: `groups`."""
        return self._free("groups")

    def spelled(self, selection: Attribute) -> str:
        """An optimizer's argument as the block writes it, for the comment above it."""
        return selection.data if isinstance(selection, StringAttr) else "a selection"

    def emit_groups(self, b: PyBuilder) -> None:
        """`groups["hidden"] = parameter_group(...)`: each `group` line, after the groups it
        names, selecting what `tlc check` resolved."""
        if not self.groups:
            return
        b.comment("the parameter groups: each `group` line, as `tlc check` resolved it")
        empty = b.value({})
        b.assign(self.table, empty, annotation=b.generic("dict", "str", "ParamGroup"))
        done: list[str] = []
        for name in self.groups:
            self._group(b, name, done)

    def _group(self, b: PyBuilder, name: str, done: list[str]) -> None:
        if name in done:
            return
        done.append(name)
        for needed in selection_groups(self.groups[name], self.groups):
            self._group(b, needed, done)
        target = b.subscript(b.name(self.table), b.const(name))
        b.assign(target, self.selection(b, self.groups[name]))

    def parameters(self, b: PyBuilder, args: Sequence[ParamArg]) -> SSAValue:
        """`D.parameters()`, `list(G.parameters()) + list(E.parameters())` for several
        models, a group's `ParamGroup` (`a + b` of several), or torch's param groups where an
        argument has options:
        `[{"params": groups["rest"]}, {"params": groups["gains"], "weight_decay": 0.0}]`."""
        if all(self._is_model(a.selection) and not a.options for a in args):
            names = [self.models[a.selection.data] for a in args]  # type: ignore[attr-defined]
            if len(names) == 1:
                return b.method(b.name(names[0]), "parameters")
            lists = [b.call("list", b.method(b.name(m), "parameters")) for m in names]
            return self._named(b, _joined(b, lists))
        if not any(a.options for a in args):
            if len(args) == 1:
                return self.selection(b, args[0].selection)
            return self._named(b, _joined(b, [self._group_of(b, a.selection) for a in args]))
        entries: list[SSAValue] = []
        for arg in args:
            pairs = [(b.const("params"), self.selection(b, arg.selection))]
            pairs += [(b.const(k), b.value(v)) for k, v in arg.options]  # type: ignore[arg-type]
            entries.append(b.add(py.DictOp(pairs)))
        listed = self._free("param_groups")
        b.assign(listed, b.add(py.ListOp(entries)), comment="torch's per-group options")
        return b.name(listed)

    def _named(self, b: PyBuilder, value: SSAValue) -> SSAValue:
        """`params = a + b`: several arguments' parameters, named before the optimizer."""
        name = self._free("params")
        b.assign(name, value)
        return b.name(name)

    def _group_of(self, b: PyBuilder, selection: Attribute) -> SSAValue:
        """A selection as a `ParamGroup`, a whole model's too (`parameter_group(G)`)."""
        if self._is_model(selection):
            return b.call("parameter_group", b.name(self.models[selection.data]))  # type: ignore[attr-defined]
        return self.selection(b, selection)

    def _is_model(self, selection: Attribute) -> bool:
        return isinstance(selection, StringAttr) and selection.data in self.models

    def selection(self, b: PyBuilder, selection: Attribute) -> SSAValue:
        """A selection as a `ParamGroup` expression: `groups["hidden"]`,
        `parameter_group(net)`, `parameter_group(net, "blocks", ndim=2)`, `a - b`."""
        match selection:
            case StringAttr(data=name) if name in self.groups:
                return b.subscript(b.name(self.table), b.const(name))
            case StringAttr(data=path):
                return self._select(b, path, {})
            case CallAttr() if selection.callee.data == SELECT:
                options = {k: _plain(v) for k, v in selection.kwargs.data.items()}
                paths = [a.data for a in selection.args.data if isinstance(a, StringAttr)]
                parts = [self._select(b, p, options) for p in paths]
                result = parts[0]
                for part in parts[1:]:
                    result = b.binop("+", result, part)
                return result
            case ExprAttr():
                left, right = (self.selection(b, a) for a in selection.operands.data)
                return b.binop(selection.op.data, left, right)
            case _:
                raise AssertionError("check-train reports a selection it cannot resolve")

    def _select(self, b: PyBuilder, path: str, options: dict[str, object]) -> SSAValue:
        model, rest = split_path(path)
        args = [b.name(self.models.get(model, model))] + ([b.const(rest)] if rest else [])
        kwargs = {k: b.value(v) for k, v in options.items() if v is not None}  # type: ignore[arg-type]
        return b.call("parameter_group", *args, **kwargs)


def _joined(b: PyBuilder, parts: Sequence[SSAValue]) -> SSAValue:
    """`a + b + c`: the parameters of several arguments, one list."""
    result = parts[0]
    for part in parts[1:]:
        result = b.binop("+", result, part)
    return result


def _plain(attr: Attribute) -> object:
    value = evaluate(attr, {})
    return tuple(value) if isinstance(value, list) else value
