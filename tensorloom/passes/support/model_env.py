"""A model's config environment, and attribute expressions evaluated under it.

The check passes need the value of `Linear(d_model, 4 * d_model)` for a given
instantiation. The config defaults come first, in order (a default may use an
earlier entry), then the instance's overrides:

    nml.model @Block {
      nml.config @d_model = 512 : i64
      nml.config @d_ff = #nml.expr<"*", [4 : i64, #nml.cfg<"d_model">]>
    }
    nml.instance @net = @Block {d_model = 256 : i64}

    model_env(block, {"d_model": 256})   # {"d_model": 256, "d_ff": 1024}

Also here: the small symbol lookups every check pass shares (a module's models,
a model's configs, layers and forward).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.traits import SymbolOpInterface, SymbolTable

from tensorloom.catalogue.args import fits_int64
from tensorloom.catalogue.layers import BoundLayer, lookup
from tensorloom.catalogue.layers.base import Value
from tensorloom.dialects.nml import (
    CallAttr,
    CfgAttr,
    ConfigOp,
    ExprAttr,
    FuncOp,
    InstanceOp,
    LayerOp,
    ModelOp,
    NoneValueAttr,
)

Env = dict[str, Value]


@dataclass(frozen=True, slots=True)
class EvalError:
    """Why an attribute expression has no value: an unknown config, bad arithmetic."""

    message: str
    config: str | None = None  # the unknown config name, when that is the reason


def override_value(attr: Attribute) -> Value | None:
    """An instance override's value, as the script writes it (`d_model = 8 * 64` is 512:
    a long chain written out would pass Python's nesting limit), a list as a tuple; None
    where the script writes the attribute itself: a call (a layer given as a config) or
    `None`. resolve-nml reports an override that has no value."""
    value = evaluate(attr, {})
    if isinstance(value, EvalError | CallValue):
        return None
    return _as_tuples(value)


def _as_tuples(value: Value) -> Value:
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list | tuple) else value


def name_help(error: EvalError) -> str | None:
    """The `help:` for an expression of a `.tl` file that failed on a bare name (the
    parser reads `epochs = w` or `d = y + 16` with `w`, `y` as text)."""
    if "got `'" not in error.message:
        return None
    return "a name in a `.tl` expression is read as text: write the number itself"


@dataclass(frozen=True, slots=True)
class CallValue:
    """`Adam(lr=0.001)` or a bare name such as `CrossEntropy` as a setting's value."""

    name: str
    args: tuple[Value | CallValue, ...] = ()
    kwargs: tuple[tuple[str, Value | CallValue], ...] = ()


Evaluated = Value | CallValue


def evaluate(attr: Attribute, env: Mapping[str, Value]) -> Evaluated | EvalError:
    """The Python value of an attribute expression under a config environment."""
    literal = _literal(attr)
    if literal is not _NOT_LITERAL:
        return literal  # type: ignore[return-value]
    if isinstance(attr, CfgAttr):
        name = attr.param.data
        if name not in env:
            return EvalError(f"unknown config `{name}`", name)
        return env[name]
    if isinstance(attr, ArrayAttr):
        return _evaluate_list(attr, env)
    if isinstance(attr, ExprAttr):
        return _evaluate_expr(attr, env)
    if isinstance(attr, CallAttr):
        return _evaluate_call(attr, env)
    return EvalError(f"cannot evaluate `{attr}`")


_NOT_LITERAL = object()


def _literal(attr: Attribute) -> object:
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        is_bool = isinstance(attr.type, IntegerType) and attr.type.width.data == 1
        return bool(value) if is_bool else value
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, NoneValueAttr):
        return None
    return _NOT_LITERAL


def _evaluate_list(attr: ArrayAttr, env: Mapping[str, Value]) -> Evaluated | EvalError:
    items: list[Value] = []
    for element in attr.data:
        value = evaluate(element, env)
        if isinstance(value, EvalError):
            return value
        if isinstance(value, CallValue):
            return EvalError("a list cannot hold a call")
        items.append(value)
    return items


CONFIG_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
}
"""Functions of one number a config expression may call (`std=0.02 / sqrt(2 * n_layer)`),
emitted as Python's `math.sqrt`, `math.exp` and `math.log`."""


def _evaluate_call(attr: CallAttr, env: Mapping[str, Value]) -> Evaluated | EvalError:
    if attr.callee.data in CONFIG_FUNCTIONS and not attr.kwargs.data:
        return _evaluate_math(attr, env)
    args: list[Evaluated] = []
    for element in attr.args.data:
        value = evaluate(element, env)
        if isinstance(value, EvalError):
            return value
        args.append(value)
    kwargs: list[tuple[str, Evaluated]] = []
    for key, element in attr.kwargs.data.items():
        value = evaluate(element, env)
        if isinstance(value, EvalError):
            return value
        kwargs.append((key, value))
    return CallValue(attr.callee.data, tuple(args), tuple(kwargs))


def _evaluate_math(attr: CallAttr, env: Mapping[str, Value]) -> float | EvalError:
    name = attr.callee.data
    if len(attr.args.data) != 1:
        return EvalError(f"`{name}` takes one number, got {len(attr.args.data)} arguments")
    value = evaluate(attr.args.data[0], env)
    if isinstance(value, EvalError):
        return value
    if not isinstance(value, int | float) or isinstance(value, bool):
        return EvalError(f"`{name}` needs a number, got {_describe(value)}")
    try:
        return CONFIG_FUNCTIONS[name](value)
    except (ValueError, OverflowError):
        return EvalError(f"`{name}({value})` has no value")


def _describe(value: Evaluated) -> str:
    if isinstance(value, CallValue):
        return f"a call of `{value.name}`"
    return f"`{value!r}`"


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


def _evaluate_expr(attr: ExprAttr, env: Mapping[str, Value]) -> Evaluated | EvalError:
    operands: list[int | float] = []
    for element in attr.operands.data:
        value = evaluate(element, env)
        if isinstance(value, EvalError):
            return value
        if not isinstance(value, int | float) or isinstance(value, bool):
            return EvalError(f"`{attr.op.data}` needs numbers, got {_describe(value)}")
        operands.append(value)
    if attr.op.data == "neg":
        return -operands[0]
    try:
        return _ARITHMETIC[attr.op.data](operands[0], operands[1])
    except ZeroDivisionError:
        return EvalError("division by zero in a config expression")


# --- symbols -------------------------------------------------------------------------------


# Symbols are found through xDSL's `SymbolTable` trait (the module, each `nml.model`)
# and `SymbolOpInterface` (every op with a `sym_name`), as MLIR does: `lookup_symbol`
# for one name (xDSL's `SymbolTable.lookup_symbol`); `symbols` for a table's whole
# index, built once where a pass looks up many names in one table (MLIR's
# `SymbolTable` class).

SymbolOp = TypeVar("SymbolOp", bound=Operation)


def lookup_symbol(
    table: Operation, name: str | StringAttr | SymbolRefAttr, kind: type[SymbolOp]
) -> SymbolOp | None:
    """The symbol `name` of the nearest symbol table around `table`, if it is a `kind`."""
    found = SymbolTable.lookup_symbol(table, name)
    return found if isinstance(found, kind) else None


def symbols(table: Operation, kind: type[SymbolOp]) -> dict[str, SymbolOp]:
    """Every symbol of type `kind` that the symbol table `table` defines, by name."""
    assert table.has_trait(SymbolTable), f"{table.name} is not a symbol table"
    found: dict[str, SymbolOp] = {}
    for op in table.regions[0].block.ops:
        if not isinstance(op, kind):
            continue
        trait = op.get_trait(SymbolOpInterface)
        name = trait.get_sym_attr_name(op) if trait is not None else None
        if name is not None:
            found[name.data] = op
    return found


def models_of(module: ModuleOp) -> dict[str, ModelOp]:
    """Every model in the module (imported ones included), by name."""
    return symbols(module, ModelOp)


def configs_of(model: ModelOp) -> dict[str, ConfigOp]:
    return symbols(model, ConfigOp)


def layers_of(model: ModelOp) -> dict[str, LayerOp]:
    return symbols(model, LayerOp)


def methods_of(model: ModelOp) -> dict[str, FuncOp]:
    return symbols(model, FuncOp)


def forward_of(model: ModelOp) -> FuncOp | None:
    return lookup_symbol(model, "forward", FuncOp)


def enclosing_model(op: Operation) -> ModelOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModelOp):
        parent = parent.parent_op()
    return parent


def model_env(model: ModelOp, overrides: Mapping[str, Value] | None = None) -> Env:
    """The config values of one instantiation: defaults in order, then overrides.

    A default that cannot be evaluated is left out; `resolve-nml` reports it.
    """
    env: Env = {}
    given = dict(overrides or {})
    for name, config in configs_of(model).items():
        if name in given:
            env[name] = given[name]
            continue
        value = evaluate(config.value, env)
        if not isinstance(value, EvalError | CallValue):
            env[name] = value
    return env


@dataclass(frozen=True, slots=True)
class NoValue:
    """The first keyword `evaluate_kwargs` found without a plain value, and why: its
    expression failed, or it is a call. A caller that reports it words the diagnostic
    (`dataset_check`'s TL0703)."""

    key: str
    why: EvalError | CallValue


def evaluate_kwargs(
    kwargs: Mapping[str, Attribute], env: Mapping[str, Value]
) -> dict[str, Value] | NoValue:
    """Plain values for a dictionary of attribute expressions (overrides, options)."""
    values: dict[str, Value] = {}
    for key, attr in kwargs.items():
        value = evaluate(attr, env)
        if isinstance(value, EvalError | CallValue):
            return NoValue(key, value)
        values[key] = value
    return values


# --- layers ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArgFailure:
    """A layer argument that has no value; `position`/`keyword` say which one."""

    error: EvalError
    position: int | None = None
    keyword: str | None = None


def layer_arguments(
    layer: LayerOp, env: Mapping[str, Value]
) -> tuple[list[Value], dict[str, Value]] | ArgFailure:
    """A layer's constructor arguments as plain values under `env`."""
    args: list[Value] = []
    for position, attr in enumerate(layer.args.data):
        value = evaluate(attr, env)
        container = layer.kind.data == "Sequential"  # its arguments are layer constructors
        if isinstance(value, EvalError) or (isinstance(value, CallValue) and not container):
            return ArgFailure(_as_error(value), position=position)
        args.append(value)  # type: ignore[arg-type]
    kwargs: dict[str, Value] = {}
    for keyword, attr in layer.kwargs.data.items():
        value = evaluate(attr, env)
        if isinstance(value, EvalError | CallValue):
            return ArgFailure(_as_error(value), keyword=keyword)
        kwargs[keyword] = value
    return args, kwargs


def _as_error(value: EvalError | CallValue) -> EvalError:
    if isinstance(value, EvalError):
        return value
    return EvalError(f"a layer argument cannot be a call of `{value.name}`")


def bind_layer(layer: LayerOp, env: Mapping[str, Value]) -> BoundLayer | None:
    """The catalogue binding of a layer under `env`; None if it has errors
    (`resolve-nml` reports them) or is not a catalogue layer."""
    spec = lookup(layer.kind.data)
    values = layer_arguments(layer, env)
    if spec is None or isinstance(values, ArgFailure):
        return None
    bound = spec.bind(*values)
    if isinstance(bound, list) or spec.validate(bound):
        return None
    return bound


def nested_overrides(
    layer: LayerOp, nested: ModelOp, env: Mapping[str, Value]
) -> dict[str, Value] | ArgFailure:
    """The config overrides a layer that is a model passes to it; positional
    arguments fill the nested model's configs in order."""
    values = layer_arguments(layer, env)
    if isinstance(values, ArgFailure):
        return values
    args, kwargs = values
    names = list(configs_of(nested))
    if len(args) > len(names):
        message = (
            f"`{nested.sym_name.data}` has {len(names)} config entries, got {len(args)} arguments"
        )
        return ArgFailure(EvalError(message), position=len(names))
    return dict(zip(names, args, strict=False)) | kwargs


def layer_count(layer: LayerOp, env: Mapping[str, Value]) -> int | None:
    """How many copies a layer list holds under `env` (None for a plain layer)."""
    if layer.count is None:
        return None
    value = evaluate(layer.count, env)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


MAX_NESTING = 32


def declared_params(
    model: ModelOp,
    env: Mapping[str, Value],
    models: Mapping[str, ModelOp],
    path: tuple[str, ...] = (),
    memo: dict[tuple[object, ...], int] | None = None,
) -> int:
    """Every parameter of the model as PyTorch counts it: each declared layer once
    (a weight used twice, as a tied head, is one parameter), a layer list's copies each.

    `path` is the chain of models being counted: a model inside itself (TL0307, from
    resolve-nml) counts nothing the second time. `memo` holds each (model, config) counted
    once, so two copies of a block that holds two copies of a block... is not a walk of
    2^depth nested models."""
    memo = {} if memo is None else memo
    config = env_key(env)
    key = None if config is None else (model.sym_name.data, config)
    if key is not None and key in memo:
        return memo[key]
    path = (*path, model.sym_name.data)
    count = sum(layer_params(layer, env, models, path, memo) for layer in layers_of(model).values())
    if key is not None:
        memo[key] = count
    return count


def layer_params(
    layer: LayerOp,
    env: Mapping[str, Value],
    models: Mapping[str, ModelOp],
    path: tuple[str, ...] = (),
    memo: dict[tuple[object, ...], int] | None = None,
) -> int:
    """A catalogue layer's parameters, or a nested model's under the config it is given."""
    copies = layer_count(layer, env)
    copies = 1 if copies is None else max(copies, 0)
    nested = models.get(layer.kind.data)
    if nested is None or lookup(layer.kind.data) is not None or len(path) > MAX_NESTING:
        bound = bind_layer(layer, env)
        return copies * bound.spec.param_count(bound) if bound is not None else 0
    if layer.kind.data in path:
        return 0
    overrides = nested_overrides(layer, nested, env)
    inner = model_env(nested, overrides if isinstance(overrides, dict) else {})
    return copies * declared_params(nested, inner, models, path, memo)


def env_key(env: Mapping[str, Value]) -> tuple[tuple[str, Value], ...] | None:
    """A config environment as a dictionary key; None when a value is unhashable (a list)."""
    key = tuple(sorted(env.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


# --- an instance's configuration, as `instantiate` folds it -----------------------------------

INSTANCE_CONFIG = "config"
"""On an `nml.instance`: its configuration folded to literals (the `instantiate` pass)."""


def config_attr(env: Mapping[str, Value]) -> DictionaryAttr | None:
    """`env` as literal attributes; None if a value cannot be one (an int past 64 bits)."""
    entries: dict[str, Attribute] = {}
    for name, value in env.items():
        attr = _value_attr(value)
        if attr is None:
            return None
        entries[name] = attr
    return DictionaryAttr(entries)


def _value_attr(value: Value) -> Attribute | None:
    if isinstance(value, bool):
        return IntegerAttr(int(value), IntegerType(1))
    if isinstance(value, int):
        return IntegerAttr(value, i64) if fits_int64(value) else None
    if isinstance(value, float):
        return FloatAttr(value, Float64Type())
    if isinstance(value, str):
        return StringAttr(value)
    if value is None:
        return NoneValueAttr()
    items = [_value_attr(v) for v in value]
    if any(item is None for item in items):
        return None
    return ArrayAttr(items)  # type: ignore[arg-type]


def instance_env(op: InstanceOp, model: ModelOp) -> Env:
    """The configuration of an instance: what `instantiate` folded, else evaluated here."""
    folded = op.attributes.get(INSTANCE_CONFIG)
    if isinstance(folded, DictionaryAttr):
        env = evaluate_kwargs(folded.data, {})
        if isinstance(env, dict):
            return env
    overrides = evaluate_kwargs(op.overrides.data, {})
    return model_env(model, overrides if isinstance(overrides, dict) else {})


# --- specialised copies (`instantiate{specialize=true}`) -------------------------------------

SPECIALIZED = "specialized"
"""On an `nml.layer` whose kind is a model: the copy of that model specialised for it."""
SPECIALIZES = "specializes"
"""On a specialised copy of a model: the model it copies (`@ResBlock`)."""
SPECIALIZED_MODULE = "tl.specialized"
"""On the module: every instance and nested layer has its own copy of its model."""


def nested_model(layer: LayerOp, models: Mapping[str, ModelOp]) -> ModelOp | None:
    """The model a layer applies: its specialised copy if it has one, else its kind's."""
    specialized = layer.attributes.get(SPECIALIZED)
    if isinstance(specialized, SymbolRefAttr):
        found = models.get(specialized.root_reference.data)
        if found is not None:
            return found
    return models.get(layer.kind.data)


def copy_env(model: ModelOp) -> Env:
    """A specialised copy's configuration (`config`, which `instantiate` wrote on it), else
    the model's defaults: the config its types were inferred under."""
    folded = model.attributes.get(INSTANCE_CONFIG)
    if isinstance(folded, DictionaryAttr):
        env = evaluate_kwargs(folded.data, {})
        if isinstance(env, dict):
            return env
    return model_env(model)


def specialized_module(module: Operation | None) -> bool:
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    return module is not None and SPECIALIZED_MODULE in module.attributes


def is_specialized_copy(model: ModelOp) -> bool:
    return SPECIALIZES in model.attributes


def model_kind(model: ModelOp) -> str:
    """The model a (maybe specialised) model is: `ResBlock` for `@"ResNet.block1"`."""
    kind = model.attributes.get(SPECIALIZES)
    return kind.data if isinstance(kind, StringAttr) else model.sym_name.data
