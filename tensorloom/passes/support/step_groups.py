"""check-train's checks of a block's parameter groups and who updates each parameter.

    group hidden = params(net.blocks, ndim=2)
    group rest = params(net) - hidden
    step ce with Muon(hidden, lr=0.02), AdamW(rest, lr=3e-3)

Resolved against the specialised models (param_groups.py), in this order:
1. each `group` line: a name of its own (not a model's, not twice), a selection that resolves
   (TL0450 an unknown model or layer, TL0455 a malformed one) and selects something (TL0451);
2. each optimizer's arguments: the same, each argument at least one parameter; Muon's all
   2-D (TL0454); per-group options (`gains(weight_decay=0.0)`) that the optimizer takes;
3. every parameter in at most one optimizer (TL0452, naming it), and every parameter of a
   model some optimizer updates in one (warning TL0453: it gets gradients but never moves).
A model no optimizer touches at all is frozen (TL0435, check_train.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp, StringAttr

from tensorloom.diagnostics.core import Diagnostic, Label
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects import train
from tensorloom.dialects.nml import InstanceOp
from tensorloom.passes.support.model_env import instance_env, lookup_symbol, models_of
from tensorloom.passes.support.objectives import StepOptimizer
from tensorloom.passes.support.param_groups import (
    GroupProblem,
    Param,
    ParamArg,
    Resolver,
    describe,
)
from tensorloom.passes.support.state_dict import ModelTree, UnknownState, model_tree
from tensorloom.source import Span

MATRIX_ONLY = ("Muon",)
"""Optimizers that take 2-D parameters only (torch.optim.Muon orthogonalises a matrix)."""

Owner = tuple[str, StepOptimizer]
"""Where the optimizer that updates a parameter is (`step `ce``, `` `optimizer` ``), and it."""

OptionsCheck = Callable[[str, tuple[tuple[str, object], ...]], tuple[str, str, str | None] | None]
"""(optimizer, per-group options) -> (code, message, help) of what is wrong, or None."""


def model_trees(module: ModuleOp, names: Sequence[str]) -> dict[str, ModelTree]:
    """Each block model's layers and parameters, where its configuration evaluates."""
    trees: dict[str, ModelTree] = {}
    models = models_of(module)
    for name in names:
        inst = lookup_symbol(module, name, InstanceOp)
        if not isinstance(inst, InstanceOp):
            continue
        model = models.get(inst.model.root_reference.data)
        if model is None:
            continue
        try:
            trees[name] = model_tree(model, instance_env(inst, model), models)
        except UnknownState:
            continue  # resolve-nml reported the layer whose arguments have no value
    return trees


@dataclass
class GroupChecker:
    module: ModuleOp
    loop: train.LoopOp
    users: Sequence[tuple[str, Sequence[StepOptimizer]]]  # ("step `ce`", its optimizers)
    options_check: OptionsCheck
    owners: dict[Param, Owner] = field(default_factory=dict[Param, "Owner"])
    twice: dict[tuple[int, int], tuple[Owner, Owner, Span | None, list[Param]]] = field(
        default_factory=dict[tuple[int, int], "tuple[Owner, Owner, Span | None, list[Param]]"]
    )
    failed: bool = False  # a selection was reported: no warning about what it left out
    names_checked: bool = True  # the caller reported a bare name that is no model or group

    def check(self) -> None:
        models = self.loop.model_names()
        ops = self._group_ops(models)
        groups = {name: op.value for name, op in ops.items()}
        resolver = Resolver(models, model_trees(self.module, models), groups)
        for name, op in ops.items():
            self._group(resolver, name, op)
        for label, optimizers in self.users:
            for optimizer in optimizers:
                self._optimizer(resolver, label, optimizer)
        self._report_twice()
        if not self.failed:
            self._uncovered(resolver)

    def _group_ops(self, models: Sequence[str]) -> dict[str, train.GroupOp]:
        """The `group` lines by name, the first of each; one named as a model, or a second
        of a name, is reported and left out."""
        groups: dict[str, train.GroupOp] = {}
        for op in self.loop.body.block.ops:
            if not isinstance(op, train.GroupOp):
                continue
            name = op.group.root_reference.data
            if name in models:
                message = f"the group `{name}` has the name of a model of this train block"
                _error(span_at(op), "TL0455", message, "give the group a name of its own")
            elif name in groups:
                message = f"the group `{name}` is defined twice"
                _error(span_at(op), "TL0455", message, "keep one `group` line per name")
            else:
                groups[name] = op
        return groups

    def _group(self, resolver: Resolver, name: str, op: train.GroupOp) -> None:
        where = span_of(op.value_loc) if op.value_loc is not None else span_at(op)
        try:
            params = resolver.group(name)
        except GroupProblem as problem:
            _error(where, problem.code, problem.message, problem.help)
            resolver.resolved[name] = None  # reported once, here
            self.failed = True
            return
        if params == []:
            message = f"the group `{name}` selects no parameters"
            _error(where, "TL0451", message, "check its layer paths, `match` and `ndim`")

    def _optimizer(self, resolver: Resolver, label: str, optimizer: StepOptimizer) -> None:
        where = span_of(optimizer.loc) if optimizer.loc is not None else None
        for arg in optimizer.args:
            params = self._arg(resolver, optimizer, arg, where)
            if params is None:
                continue
            if optimizer.name in MATRIX_ONLY:
                self._matrices(resolver, optimizer, params, where)
            for param in params:
                self._own(param, label, optimizer, where)

    def _arg(
        self, resolver: Resolver, optimizer: StepOptimizer, arg: ParamArg, where: Span | None
    ) -> list[Param] | None:
        if arg.options:
            problem = self.options_check(optimizer.name, arg.options)
            if problem is not None:
                _error(where, *problem)
                self.failed = True
        if self.names_checked and _is_unknown_model(arg, resolver):
            return None  # check-train's TL0433: not a model of this block
        try:
            params = resolver.select(arg.selection)
        except GroupProblem as problem:
            _error(where, problem.code, problem.message, problem.help)
            self.failed = True
            return None
        if params == []:
            message = f"an argument of `{optimizer.name}` selects no parameters"
            _error(where, "TL0451", message, "check its layer paths, `match` and `ndim`")
        return params

    def _matrices(
        self, resolver: Resolver, optimizer: StepOptimizer, params: list[Param], where: Span | None
    ) -> None:
        for model, name in params:
            shape = resolver.trees[model].parameters()[name]
            if len(shape) != 2:
                dims = "x".join(map(str, shape))
                message = (
                    f"`{optimizer.name}` updates 2-D parameters only, but `{model}.{name}` "
                    f"has {len(shape)} dimension{'s' * (len(shape) != 1)} ([{dims}])"
                )
                help_text = "select the matrices (`params(..., ndim=2)`); give the rest to AdamW"
                _error(where, "TL0454", message, help_text)
                return

    def _own(self, param: Param, label: str, optimizer: StepOptimizer, where: Span | None) -> None:
        first = self.owners.get(param)
        if first is None:
            self.owners[param] = (label, optimizer)
            return
        if param[0] in first[1].whole_models() and param[0] in optimizer.whole_models():
            return  # TL0432: the whole model is in two optimizers
        key = (id(first[1]), id(optimizer))
        self.twice.setdefault(key, (first, (label, optimizer), where, []))[3].append(param)

    def _report_twice(self) -> None:
        """TL0452 once per pair of optimizers, naming the parameters they share."""
        for (first_label, first), (label, optimizer), where, params in self.twice.values():
            shared = describe(params)
            verb = "is" if len(params) == 1 else "are"
            if first is optimizer:
                message = f"{shared} {verb} selected twice by `{optimizer.name}`"
            else:
                message = (
                    f"{shared} {verb} updated by two optimizers: `{first.name}` of "
                    f"{first_label} and `{optimizer.name}` of {label}"
                )
            help_text = "give each parameter to one optimizer: subtract one group from the other"
            earlier = span_of(first.loc) if first.loc is not None else None
            secondary = [Label(earlier, "first here")] if earlier and earlier != where else []
            if where is not None:
                report(Diagnostic.error("TL0452", message, Label(where), secondary=secondary,
                                        help=help_text))  # fmt: skip

    def _uncovered(self, resolver: Resolver) -> None:
        """Warning TL0453 for a model some optimizer updates only part of."""
        touched = {model for model, _ in self.owners}
        locs = self.loop.model_locs.data if self.loop.model_locs is not None else []
        names = self.loop.model_names()
        for index, model in enumerate(names):
            tree = resolver.trees.get(model)
            if model not in touched or tree is None:
                continue
            left = [(model, n) for n in tree.parameters() if (model, n) not in self.owners]
            if not left:
                continue
            loc = locs[index] if index < len(locs) else self.loop.model_loc
            where = span_of(loc) if loc is not None else span_at(self.loop)
            count = len(left)
            verb = "are" if count != 1 else "is"
            message = (
                f"{count} parameter{'s' * (count != 1)} of `{model}` {verb} in no optimizer: "
                f"{describe(left)} (they get gradients but never change)"
            )
            help_text = "add them to an optimizer, e.g. a group `params(...) - ...` for the rest"
            if where is not None:
                report(Diagnostic.warning("TL0453", message, Label(where), help=help_text))


def _is_unknown_model(arg: ParamArg, resolver: Resolver) -> bool:
    """A bare name that is neither a model nor a group: check-train's TL0433 reports it."""
    selection = arg.selection
    if not isinstance(selection, StringAttr) or "." in selection.data or "[" in selection.data:
        return False
    return selection.data not in resolver.models and selection.data not in resolver.groups


def _error(where: Span | None, code: str, message: str, help_text: str | None) -> None:
    if where is not None:
        report(Diagnostic.error(code, message, Label(where), help=help_text))
