"""`check-scopes`: every name in a model means something, every layer is used.

Runs after `resolve-nml`, so what is left unresolved is a mistake:

    nml.ref @hiden                      TL0301 undefined name `hiden` (did you mean `hidden`?)
    nml.call "self.fc3"(%x)             TL0303 `Classifier` has no layer `fc3`
    nml.call "relux"(%x)                TL0305 unknown function `relux` (did you mean `relu`?)
    nml.layer @fc3 = ... (never used)   TL0304 warning: layer `fc3` is never used

Local variables are SSA values by now, so a `nml.ref` inside a model must name
one of its configs or layers, or a top-level symbol of the module.

A top-level function of a `.tl` file (a loss or metric, `fn my_loss(out, y)`) sees
only its parameters and its `let`s: a `nml.ref` left in it is an undefined name,
and a call left unresolved an unknown function.

A train block's two names must be an instance and a dataset:

    train.loop @layer on @data          TL0301 undefined model `layer`
    train.loop @net on @datadata        TL0301 undefined dataset `datadata`

A script's top-level statements (`train.main`) are checked the same way: a
`nml.ref` must name a model, instance, kernel or `<kernel>_launcher` (a dataset
only feeds a train block), and a function call one of those or a script builtin
(script_builtins.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.traits import SymbolOpInterface

from tensorloom.catalogue.layers.parameter import PARAMETER
from tensorloom.diagnostics.core import Diagnostic, Label, did_you_mean
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects.nml import (
    ApplyAtOp,
    ApplyOp,
    CallOp,
    ForOp,
    FuncOp,
    GetAttrOp,
    InstanceOp,
    LayerOp,
    ModelOp,
    RefOp,
)
from tensorloom.dialects.train import DatasetOp, LoopOp, MainOp
from tensorloom.passes.support.model_env import (
    MODULE_ATTRIBUTES,
    configs_of,
    layers_of,
    methods_of,
)
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.resolve_builtins import BUILTINS, MISSING, builtin_name, constant_of
from tensorloom.passes.support.script_builtins import (
    SCRIPT_BUILTINS,
    TORCH_CALLABLE,
    constructor_problem,
    is_script_callable,
)

OPERATOR_CALLS = frozenset(["==", "!=", "<", "<=", ">", ">=", "and", "or", "not", "%", "//", "+"])
"""Operators irgen writes as calls (they have no op of their own)."""


def top_level_symbols(module: ModuleOp) -> set[str]:
    """Names a model may refer to outside itself: models, instances, datasets, kernels."""
    names: set[str] = set()
    for op in module.body.block.ops:
        trait = op.get_trait(SymbolOpInterface)
        if trait is not None and (sym := trait.get_sym_attr_name(op)) is not None:
            names.add(sym.data)
    for op in module.walk():
        if isinstance(op, ModelOp):
            names.add(op.sym_name.data)
    return names


def _help(guess: str | None, otherwise: str | None = None) -> str | None:
    return f"did you mean `{guess}`?" if guess else otherwise


@dataclass
class ModelScope:
    """What names mean inside one model."""

    model: ModelOp
    outside: set[str]
    script_values: set[str] = field(default_factory=set[str])  # instances and datasets
    datasets: set[str] = field(default_factory=set[str])
    models: set[str] = field(default_factory=set[str])
    layers: dict[str, LayerOp] = field(default_factory=dict[str, LayerOp])
    methods: dict[str, FuncOp] = field(default_factory=dict[str, FuncOp])
    local: set[str] = field(default_factory=set[str])
    carried: set[str] = field(default_factory=set[str])  # `carry h = net.h0`: used there

    @property
    def name(self) -> str:
        return self.model.sym_name.data

    def check(self) -> None:
        self.layers = layers_of(self.model)
        self.methods = methods_of(self.model)
        self.local = {*configs_of(self.model), *self.layers, *MODULE_ATTRIBUTES}
        if "forward" not in self.methods:
            self._no_forward()
        for op in self.model.walk():
            if isinstance(op, RefOp):
                self._ref(op)
            elif isinstance(op, CallOp):
                self._call(op)
        self._unused_layers()

    def _no_forward(self) -> None:
        """PyTorch raises NotImplementedError on the first call of a module without one."""
        guess = did_you_mean("forward", set(self.methods))
        fix = f"rename `{guess}` to `forward`" if guess else "add `fn forward(self, x): ...`"
        _error(self.model, "TL0332", f"model `{self.name}` has no `forward` method", fix)

    def _ref(self, op: RefOp) -> None:
        name = op.symbol.root_reference.data
        if name in self.script_values and name not in self.local:
            # An instance or dataset is the script's, not a value a method can compute
            # with (fuzz-findings/07: it reached the lowering untyped).
            what = "dataset" if name in self.datasets else "model instance"
            help_text = "give `forward` a parameter for it, and pass it in"
            _error(
                op,
                "TL0301",
                f"`{name}` is a {what} of the script; a model cannot use it",
                help_text,
            )
            return
        if name in self.models and name not in self.local:
            # fuzz input 49061 (seed 15): `DigitsCNN |> self.conv1` reached the printer
            _error(
                op,
                "TL0301",
                f"`{name}` is a model, not a value a method can compute with",
                f"make it a layer (`layer block = {name}()`) and call `self.block(x)`",
            )
            return
        if name in self.layers and self._layer_as_value(op, name):
            return
        if name in self.local or name in self.outside or _dtype_of_reported_call(op):
            return
        inside = op.bound_inside
        if inside is not None:
            where = "the `for` loop" if inside.data == "loop" else "some branches of the `if`"
            help_text = (
                f"bind `{name}` before the loop, so that it exists when the loop runs no times"
                if inside.data == "loop"
                else f"bind `{name}` in every branch (with an `else`), or before the `if`"
            )
            _error(op, "TL0301", f"`{name}` is bound only inside {where}", help_text)
            return
        guess = did_you_mean(name, self.local)
        _error(op, "TL0301", f"undefined name `{name}`", _help(guess))

    def _layer_as_value(self, op: RefOp, name: str) -> bool:
        """`self.a(a)`: a layer given where a tensor goes (a fuzz finding: PyTorch's linear()
        refused the module). Its tensors (`a.weight`) and a `Parameter` are values."""
        layer = self.layers[name]
        if layer.kind.data == PARAMETER or name in self.local - set(self.layers):
            return False
        if all(isinstance(use.operation, GetAttrOp) for use in op.result.uses):
            return False
        _error(
            op,
            "TL0301",
            f"`{name}` is a layer, not a value a method can compute with",
            f"apply it, as in `self.{name}(x)`; its tensors are `self.{name}.weight`, ...",
        )
        return True

    def _call(self, op: CallOp) -> None:
        callee = op.callee.data
        layers, methods = self.layers, self.methods
        if callee.startswith("self.") and op.method is None:
            name = callee.removeprefix("self.")
            if name not in methods:
                self._missing_layer(op, name, [*layers, *methods])
            return
        if builtin_name(callee) in BUILTINS or callee in OPERATOR_CALLS:
            return  # a builtin called wrongly: `resolve-nml` said why
        if op.method is not None:
            self._unknown_method(op, builtin_name(callee))
            return
        if callee not in methods and callee not in self.outside:
            self._unknown_function(op, callee, [*layers, *BUILTINS])

    def _missing_layer(self, op: CallOp, name: str, known: list[str]) -> None:
        declare = f"declare it with `layer {name} = ...`"
        message = f"`{self.name}` has no layer `{name}`"
        _error(op, "TL0303", message, _help(did_you_mean(name, known), declare))

    def _unknown_method(self, op: CallOp, name: str) -> None:
        guess = did_you_mean(name, BUILTINS)
        _error(op, "TL0305", f"unknown tensor method `{name}`", _help(guess))

    def _unknown_function(self, op: CallOp, name: str, known: list[str]) -> None:
        guess = did_you_mean(builtin_name(name), known)
        _error(op, "TL0305", f"unknown function `{name}`", _help(guess))

    def _unused_layers(self) -> None:
        used = {
            o.layer.root_reference.data
            if isinstance(o, ApplyOp | ApplyAtOp)
            else o.symbol.root_reference.data
            for o in self.model.walk()
            if isinstance(o, ApplyOp | ApplyAtOp | RefOp)
        }
        used |= {
            o.layers.root_reference.data
            for o in self.model.walk()
            if isinstance(o, ForOp) and o.layers is not None
        }
        used |= {o.attr_name.data for o in self.model.walk() if isinstance(o, GetAttrOp)}
        used |= self.carried
        if not self.methods:
            return
        for name, layer in self.layers.items():
            if name not in used:
                self._unused(name, layer)

    def _unused(self, name: str, layer: Operation) -> None:
        span = span_at(layer)
        message = f"layer `{name}` is declared but never used"
        help_text = f"remove it, or apply it in `forward` (`self.{name}(x)`)"
        report(Diagnostic.warning("TL0304", message, Label(span), help=help_text))


@dataclass
class ScriptScope:
    """What names mean in a script's top-level statements (`train.main`)."""

    main: MainOp
    outside: set[str]
    datasets: set[str]

    def check(self) -> None:
        launchers = {f"{name}_launcher" for name in self.outside}
        known = (self.outside | launchers) - self.datasets
        earlier: set[str] = set()
        for op in self.main.body.block.ops:
            if isinstance(op, LoopOp):
                continue
            self._op(op, known, earlier)
            earlier |= {r.name_hint for r in op.results if r.name_hint is not None}

    def _op(self, op: Operation, known: set[str], earlier: set[str]) -> None:
        if isinstance(op, RefOp):
            self._ref(op, known, earlier)
        elif isinstance(op, CallOp) and op.method is None:
            callee = op.callee.data
            if builtin_name(callee) in BUILTINS:
                return  # a model builtin (`relu(x)`) called wrongly: `resolve-nml` said why
            if callee in known:
                return
            if is_script_callable(callee):
                self._constructor_args(op, callee)
                return
            if callee.startswith("torch."):
                listed = {f"torch.{n}" for n in TORCH_CALLABLE}
                guess = did_you_mean(callee, listed) if callee.count(".") == 1 else None
                message = f"`{callee}` is not one of the `torch` functions a script may call"
                fix = "the list is in docs/grammar.md (tensor maths and constructors only)"
                _error(op, "TL0305", message, _help(guess, fix))
                return
            guess = did_you_mean(callee, known | SCRIPT_BUILTINS | set(BUILTINS))
            _error(op, "TL0305", f"unknown function `{callee}`", _help(guess))

    def _constructor_args(self, op: CallOp, callee: str) -> None:
        """pytorch_false_negatives/gen-551, -13021, -6976: `zeros(2, (2, 2))`, `zeros(1e3, 4)`,
        `arange(-0.5)` passed the check and failed when the script ran."""
        positional = [
            constant_of(arg)
            for arg, name in zip(op.args, op.arg_names, strict=True)
            if not name.data
        ]
        problem = constructor_problem(callee, [None if v is MISSING else v for v in positional])
        if problem is not None:
            _error(op, "TL0308", problem, None)

    def _ref(self, op: RefOp, known: set[str], earlier: set[str]) -> None:
        name = op.symbol.root_reference.data
        if name in self.datasets:
            help_text = f"train on it with `train <model> on {name}:`"
            _error(op, "TL0301", f"dataset `{name}` can only be used by a train block", help_text)
        elif name not in known:
            guess = did_you_mean(name, known | earlier | SCRIPT_BUILTINS)
            _error(
                op,
                "TL0301",
                f"undefined name `{name}`",
                _help(guess, f"bind it first: `let {name} = ...`"),
            )


@dataclass
class FunctionScope:
    """What names mean in a top-level function: its parameters and locals, nothing else."""

    func: FuncOp

    def check(self) -> None:
        name = self.func.sym_name.data
        local = {*self.func.names}
        for op in self.func.walk():
            local |= {r.name_hint for r in op.results if r.name_hint is not None}
        for op in self.func.walk():
            if isinstance(op, RefOp):
                ref = op.symbol.root_reference.data
                guess = did_you_mean(ref, local)
                _error(op, "TL0301", f"undefined name `{ref}` in `{name}`", _help(guess))
            elif isinstance(op, CallOp) and builtin_name(op.callee.data) not in BUILTINS:
                callee = builtin_name(op.callee.data)
                what = "tensor method" if op.method is not None else "function"
                guess = did_you_mean(callee, BUILTINS)
                _error(op, "TL0305", f"unknown {what} `{callee}`", _help(guess))


def top_level_functions(module: ModuleOp) -> dict[str, FuncOp]:
    """A `.tl` file's top-level functions (losses, metrics), by name."""
    return {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, FuncOp)}


def _error(op: Operation, code: str, message: str, help_text: str | None) -> None:
    span = span_at(op)
    report(Diagnostic.error(code, message, Label(span), help=help_text))


def _datasets(module: ModuleOp) -> set[str]:
    return {o.sym_name.data for o in module.body.block.ops if isinstance(o, DatasetOp)}


def _learned_starts(module: ModuleOp) -> dict[str, set[str]]:
    """The `Parameter`s train blocks start carried values from (`carry h = net.h0`), by
    model class: used there, though no forward reads them."""
    classes = {
        o.sym_name.data: o.model.root_reference.data
        for o in module.body.block.ops
        if isinstance(o, InstanceOp)
    }
    starts: dict[str, set[str]] = {}
    for loop in [o for o in module.walk() if isinstance(o, LoopOp)]:
        for carry in loop.carries():
            init = carry.init
            elements = init.data if isinstance(init, ArrayAttr) else (init,)
            for element in elements:
                if isinstance(element, StringAttr) and "." in element.data:
                    instance, _, name = element.data.partition(".")
                    if instance in classes:
                        starts.setdefault(classes[instance], set()).add(name)
    return starts


@dataclass(frozen=True)
class CheckScopesPass(TLPass):
    name = "check-scopes"
    requires = ("resolve-nml",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outside = top_level_symbols(op)
        datasets = _datasets(op)
        values = {o.sym_name.data for o in op.body.block.ops if isinstance(o, InstanceOp)}
        models = [o for o in op.walk() if isinstance(o, ModelOp)]
        names = {m.sym_name.data for m in models}
        starts = _learned_starts(op)
        for model in models:
            scope = ModelScope(model, outside, values | datasets, datasets, names)
            scope.carried = starts.get(model.sym_name.data, set())
            scope.check()
        for func in top_level_functions(op).values():
            FunctionScope(func).check()
        for main in [o for o in op.body.block.ops if isinstance(o, MainOp)]:
            ScriptScope(main, outside, _datasets(op)).check()
        for loop in [o for o in op.walk() if isinstance(o, LoopOp)]:
            TrainNames(loop, op).check()


@dataclass
class TrainNames:
    """A train block's model must be an instance, its data a dataset (else lowering has none)."""

    loop: LoopOp
    module: ModuleOp

    def check(self) -> None:
        instances = {
            o.sym_name.data for o in self.module.body.block.ops if isinstance(o, InstanceOp)
        }
        models = {o.sym_name.data for o in self.module.walk() if isinstance(o, ModelOp)}
        datasets = _datasets(self.module)
        model = self.loop.model.root_reference.data
        if model != "?" and model not in instances:
            self._model(model, instances, models, datasets)
        data = self.loop.data.root_reference.data
        if data != "?" and data not in datasets:
            self._data(data, datasets, instances)

    def _model(self, name: str, instances: set[str], models: set[str], datasets: set[str]) -> None:
        if name in models:
            message, hint = f"`{name}` is a model, not an instance", f"let net = {name}()"
            self._error(self.loop.model_loc, message, f"create one first: `{hint}`")
        elif name in datasets:
            message = f"`{name}` is a dataset; a train block trains a model instance"
            self._error(self.loop.model_loc, message, "write `train <model> on <dataset>:`")
        else:
            guess = did_you_mean(name, instances)
            fix = f"bind it first: `let {name} = <Model>()`"
            self._error(self.loop.model_loc, f"undefined model `{name}`", _help(guess, fix))

    def _data(self, name: str, datasets: set[str], instances: set[str]) -> None:
        if name in instances:
            message = f"`{name}` is a model instance; a train block needs a dataset after `on`"
            self._error(self.loop.data_loc, message, "bind one: `let data = load_dataset(...)`")
            return
        guess = did_you_mean(name, datasets)
        fix = f"bind it first: `let {name} = load_dataset(...)`"
        self._error(self.loop.data_loc, f"undefined dataset `{name}`", _help(guess, fix))

    def _error(self, loc: object, message: str, help_text: str | None) -> None:
        span = span_of(loc) if loc is not None else None  # type: ignore[arg-type]
        span = span or span_at(self.loop)
        report(Diagnostic.error("TL0301", message, Label(span), help=help_text))


def _dtype_of_reported_call(op: RefOp) -> bool:
    """`torch` in `x.to(torch.float64)`: a dtype of a builtin call resolve-nml reported."""
    if op.symbol.root_reference.data != "torch" or not op.result.uses:
        return False
    attrs = [use.operation for use in op.result.uses]
    return all(
        isinstance(a, GetAttrOp)
        and all(
            isinstance(u.operation, CallOp) and builtin_name(u.operation.callee.data) in BUILTINS
            for u in a.result.uses
        )
        for a in attrs
    )
