"""Parameter groups: which of a train block's parameters each optimizer of a step updates.

    group hidden = params(net.blocks, ndim=2)       the 2-D weights under `net.blocks`
    group gains = params(net, ndim=1)               every vector: biases, norm gains
    group rest = params(net) - hidden - gains       the complement
    step ce with Muon(hidden, lr=0.02), AdamW(rest, gains(weight_decay=0.0), lr=3e-3)

A selection is a model (`net`: all its parameters), a layer path of one (`net.blocks`,
`net.blocks[0:2]`, `net.head.weight`), a group's name, `params(PATH, ..., match="*.bias",
ndim=2)` (the parameters under any of the paths, whose name in the model matches the glob(s)
and that have `ndim` dimensions), or `a + b` / `a - b` of selections. An optimizer's
positional arguments are selections; `gains(weight_decay=0.0)` gives one of them torch's
per-group options. `Resolver` resolves them against the specialised models' state dicts
(support/state_dict.py), so check-train finds a parameter in two optimizers, an empty group
and Muon on a vector before anything runs; the emitted script's `parameter_group`
(runtime/groups.py) selects the same parameters at run time.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute

from tensorloom.diagnostics.core import did_you_mean
from tensorloom.dialects.nml import CallAttr, ExprAttr
from tensorloom.dialects.train import named
from tensorloom.passes.support.model_env import CallValue, EvalError, evaluate
from tensorloom.passes.support.state_dict import ModelTree

Param = tuple[str, str]
"""A parameter of the block: (model, its name in the model's state dict)."""

SELECT = "params"
"""The selection function: `params(net.blocks, ndim=2)`."""
SELECT_KEYWORDS = ("match", "ndim")


@dataclass(frozen=True, slots=True)
class GroupProblem(Exception):
    """A selection that cannot be resolved: its code, message and help."""

    code: str
    message: str
    help: str | None = None


@dataclass(frozen=True, slots=True)
class ParamArg:
    """One positional argument of a step's optimizer: what it selects and, for
    `gains(weight_decay=0.0)`, torch's per-group options."""

    selection: Attribute
    options: tuple[tuple[str, object], ...] = ()


def param_arg(attr: Attribute) -> ParamArg:
    """`hidden`, `params(...)`, `a - b`, or `gains(weight_decay=0.0)`: a group or model
    called with keyword options only (`Adam(D)` reads `D` as such a call, with none)."""
    if isinstance(attr, CallAttr) and not attr.args.data and attr.callee.data != SELECT:
        options = tuple((k, _plain(v)) for k, v in attr.kwargs.data.items())
        return ParamArg(StringAttr(attr.callee.data), options)
    return ParamArg(named(attr))


def _plain(attr: Attribute) -> object:
    value = evaluate(attr, {})
    if isinstance(value, EvalError | CallValue):
        return None
    return tuple(value) if isinstance(value, list) else value


def split_path(path: str) -> tuple[str, str]:
    """`net.blocks[0:2]` as (`net`, `blocks[0:2]`); `net` as (`net`, ``)."""
    match = re.match(r"[^.\[]+", path)
    root = match.group(0) if match else path
    return root, path[len(root) :].lstrip(".")


def selection_models(
    attr: Attribute, groups: Mapping[str, Attribute], seen: frozenset[str] = frozenset()
) -> list[str]:
    """The models a selection draws from, without resolving it (a group's, recursively)."""
    match attr:
        case StringAttr(data=name) if name in groups and name not in seen:
            return selection_models(groups[name], groups, seen | {name})
        case StringAttr(data=path):
            return [split_path(path)[0]]
        case CallAttr() if attr.callee.data == SELECT:
            return _unique(m for a in attr.args.data for m in selection_models(a, groups, seen))
        case ExprAttr() if attr.op.data in ("+", "-"):
            operands = attr.operands.data
            return _unique(m for a in operands for m in selection_models(a, groups, seen))
        case _:
            return []


def selection_groups(attr: Attribute, groups: Mapping[str, Attribute]) -> list[str]:
    """The groups a selection names directly (`params(net) - hidden`: `hidden`)."""
    match attr:
        case StringAttr(data=name) if name in groups:
            return [name]
        case ExprAttr() if attr.op.data in ("+", "-"):
            return _unique(g for a in attr.operands.data for g in selection_groups(a, groups))
        case _:
            return []


def _unique(names: object) -> list[str]:
    return list(dict.fromkeys(names))  # type: ignore[arg-type]


@dataclass(slots=True)
class Resolver:
    """Resolves selections to parameters, in each model's registration order. `trees` holds
    the models whose parameters are known (a model whose layers do not evaluate is left
    out: its selections resolve to None, and resolve-nml reported why)."""

    models: Sequence[str]
    trees: Mapping[str, ModelTree]
    groups: Mapping[str, Attribute]
    resolved: dict[str, list[Param] | None] = field(default_factory=dict[str, "list[Param] | None"])
    resolving: list[str] = field(default_factory=list[str])

    def group(self, name: str) -> list[Param] | None:
        """The parameters of `group NAME = ...` (GroupProblem for one that names itself)."""
        if name in self.resolved:
            return self.resolved[name]
        if name in self.resolving:
            cycle = " -> ".join(f"`{n}`" for n in [*self.resolving, name])
            raise GroupProblem("TL0455", f"the group `{name}` is defined through itself: {cycle}",
                               "define each group from models and earlier groups")  # fmt: skip
        self.resolving.append(name)
        try:
            self.resolved[name] = self.select(self.groups[name])
        finally:
            self.resolving.pop()
        return self.resolved[name]

    def select(self, attr: Attribute) -> list[Param] | None:
        match attr:
            case StringAttr(data=name) if name in self.groups:
                return self.group(name)
            case StringAttr(data=path):
                return self._path(path, None, None)
            case CallAttr() if attr.callee.data == SELECT:
                return self._params(attr)
            case ExprAttr() if attr.op.data in ("+", "-"):
                left, right = (self.select(a) for a in attr.operands.data)
                return _combine(attr.op.data, left, right)
            case _:
                raise GroupProblem(
                    "TL0455",
                    "a parameter selection is a model, a layer path, a group, `params(...)`, "
                    "or `a + b` / `a - b` of them",
                    "write `params(net.blocks, ndim=2)`, or name a `group`",
                )

    def _params(self, call: CallAttr) -> list[Param] | None:
        """`params(PATH, ..., match="*.bias", ndim=2)`: the union over the paths."""
        options = {k: evaluate(v, {}) for k, v in call.kwargs.data.items()}
        for key in options:
            if key not in SELECT_KEYWORDS:
                guess = did_you_mean(key, list(SELECT_KEYWORDS))
                raise GroupProblem("TL0455", f"`params` takes no keyword `{key}`",
                                   f"did you mean `{guess}`?" if guess else
                                   "its keywords: `match` (a name glob), `ndim`")  # fmt: skip
        ndim, globs = _ndim(options.get("ndim")), _globs(options.get("match"))
        if not call.args.data:
            raise GroupProblem("TL0455", "`params` needs the model or layers to select from",
                               "write `params(net)` or `params(net.blocks, ndim=2)`")  # fmt: skip
        selected: list[Param] | None = []
        for arg in call.args.data:
            if not isinstance(arg, StringAttr) or arg.data in self.groups:
                raise GroupProblem("TL0455", "`params` selects from a model or its layers",
                                   "write a layer path such as `net.blocks`")  # fmt: skip
            selected = _combine("+", selected, self._path(arg.data, globs, ndim))
        return selected

    def _path(
        self, path: str, globs: tuple[str, ...] | None, ndim: int | None
    ) -> list[Param] | None:
        model, rest = split_path(path)
        if model not in self.models:
            guess = did_you_mean(model, [*self.models, *self.groups])
            listed = ", ".join(f"`{m}`" for m in [*self.models, *self.groups])
            message = f"`{model}` is not a model or a group of this train block"
            help_text = f"did you mean `{guess}`?" if guess else f"it has {listed}"
            raise GroupProblem("TL0450", message, help_text)
        tree = self.trees.get(model)
        if tree is None:
            return None
        params = tree.parameters()
        names = [n for n in params if _under(n, rest, tree)]
        if rest and not names:
            raise _unknown_path(model, rest, tree)
        if globs is not None:
            names = [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in globs)]
        if ndim is not None:
            names = [n for n in names if len(params[n]) == ndim]
        return [(model, n) for n in names]


def _under(name: str, path: str, tree: ModelTree) -> bool:
    """Whether parameter `name` lies under the layer path (`h[0:2]` as `h.0`, `h.1`)."""
    if not path:
        return True
    return any(name == p or name.startswith(p + ".") for p in tree.layer_names(path))


def _unknown_path(model: str, path: str, tree: ModelTree) -> GroupProblem:
    layers = list(dict.fromkeys(k.split(".")[0] for k in tree.parameters()))
    guess = did_you_mean(path.split(".")[0].split("[")[0], layers)
    listed = ", ".join(f"`{n}`" for n in layers)
    message = f"`{model}.{path}` is not a layer or parameter of `{model}`"
    help_text = f"did you mean `{model}.{guess}`?" if guess else f"its layers: {listed}"
    return GroupProblem("TL0450", message, help_text)


def _ndim(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GroupProblem("TL0455", "`ndim` is a number of dimensions, as in `ndim=2`")
    return value


def _globs(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):  # type: ignore[union-attr]
        return tuple(value)  # type: ignore[arg-type]
    raise GroupProblem("TL0455", '`match` is a name glob such as `"*.bias"`, or a list of them')


def _combine(op: str, left: list[Param] | None, right: list[Param] | None) -> list[Param] | None:
    """`a + b` (the union, in order) and `a - b`; None where either side is unknown."""
    if left is None or right is None:
        return None
    if op == "-":
        dropped = set(right)
        return [p for p in left if p not in dropped]
    return list(dict.fromkeys([*left, *right]))


def encode(selection: Attribute) -> object:
    """A selection as plain data, for `train.config` (which holds no calls): a path
    `"net.blocks"`, `{"params": [...], "match": ..., "ndim": ...}`, `{"op": "-", "of": [a, b]}`."""
    match selection:
        case StringAttr(data=path):
            return path
        case CallAttr() if selection.callee.data == SELECT:
            paths = [a.data for a in selection.args.data if isinstance(a, StringAttr)]
            options = {k: _plain(v) for k, v in selection.kwargs.data.items()}
            return {"params": paths, "match": options.get("match"), "ndim": options.get("ndim")}
        case ExprAttr():
            return {"op": selection.op.data, "of": [encode(a) for a in selection.operands.data]}
        case _:
            return str(selection)


def decode(data: object) -> Attribute:
    """`encode`'s inverse."""
    if isinstance(data, str):
        return StringAttr(data)
    assert isinstance(data, dict), data
    if "op" in data:
        return ExprAttr.get(str(data["op"]), [decode(d) for d in data["of"]])  # type: ignore[union-attr]
    kwargs = {k: _attr(data[k]) for k in SELECT_KEYWORDS if data.get(k) is not None}
    return CallAttr.get(SELECT, [StringAttr(str(p)) for p in data["params"]], kwargs)  # type: ignore[union-attr]


def _attr(value: object) -> Attribute:
    from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, list | tuple):
        return ArrayAttr([StringAttr(str(v)) for v in value])  # type: ignore[union-attr]
    return StringAttr(str(value))


def describe(params: Sequence[Param], limit: int = 3) -> str:
    """`` `net.head.bias`, `net.ln.weight` and 3 more ``."""
    named = [f"`{m}.{n}`" for m, n in params[:limit]]
    more = len(params) - limit
    if more > 0:
        return ", ".join(named) + f" and {more} more"
    return " and ".join(named) if len(named) <= 2 else ", ".join(named[:-1]) + " and " + named[-1]
