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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal, TypeVar

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
from tensorloom.catalogue.layers.base import CallValue, Evaluated, Value
from tensorloom.dialects.module_facts import SPECIALIZED_MODULE
from tensorloom.dialects.nml import (
    CallAttr,
    CallOp,
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
    hint: str | None = None  # a `help:` line, where a fix is obvious
    too_large: bool = False  # a number past a float's range or MAX_POWER_BITS (TL0403)
    keyword: str | None = None  # the call's keyword whose value it is (`lr` in `Adam(lr=...)`)


def override_value(attr: Attribute) -> Value | None:
    """An instance override's value, as the script writes it (`d_model = 8 * 64` is 512:
    a long chain written out would pass Python's nesting limit), a list as a tuple; None
    where the script writes the attribute itself: a call (a layer given as a config) or
    `None`. resolve-nml reports an override that has no value."""
    value = evaluate_config(attr, {})
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


def evaluate(attr: Attribute, env: Mapping[str, Value]) -> Evaluated | EvalError:
    """The Python value of an attribute expression under a config environment, `/` as
    Python's (a train setting's `lr = 1 / 1000` is 0.001)."""
    return _Evaluator(env, "true").value(attr)


def evaluate_config(attr: Attribute, env: Mapping[str, Value]) -> Evaluated | EvalError:
    """As `evaluate`, for a model's configs and layer arguments: `/` of two integers is
    exact (`dim / n_heads` is 128) or an error ("4096 is not a multiple of 30"), except
    inside `ceil`/`floor`/`round`, which round the exact quotient."""
    return _Evaluator(env, "exact").value(attr)


Division = Literal["true", "exact", "rational"]

CONFIG_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "ceil": math.ceil,
    "floor": math.floor,
}
"""Functions of one number a config expression may call (`std=0.02 / sqrt(2 * n_layer)`,
`hidden = multiple_of * ceil(8 * dim / 3 / multiple_of)`), emitted as Python's `math.<name>`."""
ROUNDING_FUNCTIONS = frozenset({"ceil", "floor", "round"})
"""Functions whose argument is evaluated exactly: an inexact `/` inside them is a fraction."""
BUILTIN_CONFIG_FUNCTIONS: dict[str, Callable[..., object]] = {
    "round": round,
    "min": min,
    "max": max,
}
"""Python builtins a config expression may call, emitted as themselves."""


@dataclass(frozen=True, slots=True)
class _Evaluator:
    env: Mapping[str, Value]
    division: Division

    def value(self, attr: Attribute) -> Evaluated | EvalError:
        literal = _literal(attr)
        if literal is not _NOT_LITERAL:
            return literal  # type: ignore[return-value]
        if isinstance(attr, CfgAttr):
            name = attr.param.data
            if name not in self.env:
                return EvalError(f"unknown config `{name}`", name)
            return self.env[name]
        if isinstance(attr, ArrayAttr):
            return self.list(attr)
        if isinstance(attr, ExprAttr):
            return self.expr(attr)
        if isinstance(attr, CallAttr):
            return self.call(attr)
        return EvalError(f"cannot evaluate `{attr}`")

    def list(self, attr: ArrayAttr) -> Evaluated | EvalError:
        items: list[Value] = []
        for element in attr.data:
            value = self.value(element)
            if isinstance(value, EvalError):
                return value
            if isinstance(value, CallValue):
                return EvalError("a list cannot hold a call")
            items.append(value)
        return items

    def call(self, attr: CallAttr) -> Evaluated | EvalError:
        name = attr.callee.data
        if name == "len" and len(attr.args.data) == 1 and not attr.kwargs.data:
            items = self.value(attr.args.data[0])  # a per-position list's count
            if isinstance(items, EvalError):
                return items
            if isinstance(items, list | tuple):
                return len(items)
            return EvalError(f"a layer list runs over a list, got {_describe(items)}")
        if not attr.kwargs.data and (name in CONFIG_FUNCTIONS or name in BUILTIN_CONFIG_FUNCTIONS):
            return self.math(attr)
        args: list[Evaluated] = []
        for element in attr.args.data:
            value = self.value(element)
            if isinstance(value, EvalError):
                return value
            args.append(value)
        kwargs: list[tuple[str, Evaluated]] = []
        for key, element in attr.kwargs.data.items():
            value = self.value(element)
            if isinstance(value, EvalError):
                return value if value.keyword else replace(value, keyword=key)
            kwargs.append((key, value))
        return CallValue(name, tuple(args), tuple(kwargs))

    def math(self, attr: CallAttr) -> Value | EvalError:
        name = attr.callee.data
        arity = len(attr.args.data)
        if (arity != 1 and name not in ("min", "max")) or arity == 0:
            return EvalError(f"`{name}` takes one number, got {arity} arguments")
        inner = self
        if name in ROUNDING_FUNCTIONS and self.division == "exact":
            inner = _Evaluator(self.env, "rational")
        numbers: list[int | float | Fraction] = []
        for element in attr.args.data:
            value = inner.value(element)
            if isinstance(value, EvalError):
                return value
            if not _is_number(value):
                return EvalError(f"`{name}` needs a number, got {_describe(value)}")
            numbers.append(value)  # type: ignore[arg-type]
        function = CONFIG_FUNCTIONS.get(name) or BUILTIN_CONFIG_FUNCTIONS[name]
        try:
            return function(*numbers)  # type: ignore[return-value]
        except OverflowError:
            return TOO_LARGE_FLOAT
        except ValueError:
            shown = ", ".join(str(n) for n in numbers)
            return EvalError(f"`{name}({shown})` has no value")

    def expr(self, attr: ExprAttr) -> Evaluated | EvalError:
        if attr.op.data in _LOGIC:
            return self.logic(attr)
        operands: list[int | float | Fraction] = []
        for element in attr.operands.data:
            value = self.value(element)
            if isinstance(value, EvalError):
                return value
            if not _is_number(value):
                return EvalError(f"`{attr.op.data}` needs numbers, got {_describe(value)}")
            operands.append(value)  # type: ignore[arg-type]
        if attr.op.data == "neg":
            return -operands[0]  # type: ignore[return-value]
        a, b = operands
        if attr.op.data == "/" and self.division != "true" and _is_int(a) and _is_int(b):
            return self.divide(a, b, attr)  # type: ignore[arg-type]
        if attr.op.data == "**" and _too_large_power(a, b):
            return TOO_LARGE_INT
        try:
            result = _ARITHMETIC[attr.op.data](a, b)  # type: ignore[arg-type]
        except ZeroDivisionError:
            return EvalError("division by zero in a config expression")
        except OverflowError:
            return TOO_LARGE_FLOAT
        return _integral(result)  # type: ignore[return-value]

    def logic(self, attr: ExprAttr) -> Evaluated | EvalError:
        """`a if cond else b` (only the side taken is evaluated), comparisons, `and`,
        `or`, `not`: `stride=2 if i == 0 else 1` in a layer list."""
        op, operands = attr.op.data, attr.operands.data
        first = self.value(operands[0])
        if isinstance(first, EvalError):
            return first
        if op == "if":
            if not isinstance(first, bool):
                return EvalError(f"a condition must be `true` or `false`, got {_describe(first)}")
            return self.value(operands[1] if first else operands[2])
        if op == "not":
            return (
                EvalError(f"`not` needs a boolean, got {_describe(first)}")
                if not isinstance(first, bool)
                else not first
            )
        second = self.value(operands[1])
        if isinstance(second, EvalError):
            return second
        if op == "[]":
            return _element(first, second)
        if op in ("and", "or"):
            if not isinstance(first, bool) or not isinstance(second, bool):
                return EvalError(f"`{op}` needs booleans")
            return (first and second) if op == "and" else (first or second)
        try:
            return bool(_COMPARE[op](first, second))
        except TypeError:
            return EvalError(f"cannot compare {_describe(first)} with {_describe(second)}")

    def divide(self, a: int | Fraction, b: int | Fraction, attr: ExprAttr) -> Value | EvalError:
        if b == 0:
            return EvalError("division by zero in a config expression")
        quotient = Fraction(a) / Fraction(b)
        if quotient.denominator == 1:
            return int(quotient)
        if self.division == "rational":
            return quotient  # type: ignore[return-value]
        x, y = (_source(o) for o in attr.operands.data)
        return EvalError(
            f"{a} is not a multiple of {b}",
            hint=f"write `floordiv({_bare(x)}, {_bare(y)})` to round down, "
            f"`ceil({x} / {y})` to round up, or `1.0 * {x} / {y}` for a fraction",
        )


MAX_POWER_BITS = 1_000_000
"""An integer power past this many bits is not computed (`2 ** 10 ** 10` would take hours)."""
TOO_LARGE_FLOAT = EvalError("too large for a float (past 1.8e308)", too_large=True)
TOO_LARGE_INT = EvalError(f"too large: a power past {MAX_POWER_BITS:,} bits", too_large=True)


def _too_large_power(base: object, exponent: object) -> bool:
    if not isinstance(base, int) or not isinstance(exponent, int) or exponent <= 1:
        return False
    return abs(base) > 1 and exponent * abs(base).bit_length() > MAX_POWER_BITS


def floor_exact_divisions(
    attr: Attribute, env: Mapping[str, Value], rounded: bool = False
) -> Attribute:
    """`attr` with each `/` of two integers outside `ceil`/`floor`/`round` as `//`.

    The checks made each such division exact (`dim / n_heads`), so Python's `//` gives
    its value as an `int` where `/` would give a float (`nn.Linear(64, 16.0)` fails);
    inside a rounding function `/` stays (`math.ceil(8 * dim / 3)`)."""
    if isinstance(attr, ArrayAttr):
        return ArrayAttr([floor_exact_divisions(a, env, rounded) for a in attr.data])
    if isinstance(attr, CallAttr):
        inner = rounded or attr.callee.data in ROUNDING_FUNCTIONS
        args = [floor_exact_divisions(a, env, inner) for a in attr.args.data]
        kwargs = {k: floor_exact_divisions(v, env, inner) for k, v in attr.kwargs.data.items()}
        return CallAttr.get(attr.callee.data, args, kwargs)
    if not isinstance(attr, ExprAttr):
        return attr
    operands = [floor_exact_divisions(a, env, rounded) for a in attr.operands.data]
    op = attr.op.data
    if op == "/" and not rounded and all(_is_int(evaluate_config(a, env)) for a in operands):
        op = "//"
    return ExprAttr.get(op, operands)


def _bare(source: str) -> str:
    """`(a * b)` as `a * b`, where it stands alone (a function's argument)."""
    return source[1:-1] if source.startswith("(") and source.endswith(")") else source


def _source(attr: Attribute) -> str:
    """An operand as the source wrote it, near enough for a `help:` line."""
    if isinstance(attr, CfgAttr):
        return attr.param.data
    if isinstance(attr, IntegerAttr | FloatAttr):
        return str(attr.value.data)
    if isinstance(attr, ExprAttr) and attr.op.data != "neg":
        left, right = (_source(o) for o in attr.operands.data)
        return f"({left} {attr.op.data} {right})"
    return "..."


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | Fraction) and not isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int | Fraction) and not isinstance(value, bool)


def _integral(value: object) -> object:
    """A fraction that came out whole is an integer again (`ceil` gives one anyway)."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value


_LOGIC = frozenset({"if", "not", "and", "or", "==", "!=", "<", "<=", ">", ">=", "[]"})


def _element(items: Evaluated, index: Evaluated) -> Evaluated | EvalError:
    """`widths[i]`: an element of a list config, by an integer within its range."""
    if not isinstance(items, list | tuple):
        return EvalError(f"only a list can be indexed, got {_describe(items)}")
    if not isinstance(index, int) or isinstance(index, bool):
        return EvalError(f"a list index must be an integer, got {_describe(index)}")
    if not -len(items) <= index < len(items):
        return EvalError(f"index {index} is out of range for a list of {len(items)}")
    return items[index]


_COMPARE: dict[str, Callable[[Any, Any], object]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

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


def called_method(model: ModelOp, op: CallOp) -> FuncOp | None:
    """The method of `model` that `self.helper(...)` calls: the call site's own copy
    (`specialized`, which `instantiate` gave it) if it has one, else the method so named."""
    if op.specialized is not None:
        return lookup_symbol(model, op.specialized.root_reference.data, FuncOp)
    return lookup_symbol(model, op.callee.data.removeprefix("self."), FuncOp)


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
        value = evaluate_config(config.value, env)
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
        value = evaluate_config(attr, env)
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


def layer_built(layer: LayerOp, env: Mapping[str, Value]) -> bool:
    """Whether a conditional layer (`if downsample:` in `@layers`) is built under `env`;
    every other layer is. A condition with no value counts as built (resolve-nml reports
    it)."""
    if layer.when is None:
        return True
    return evaluate_config(layer.when, env) is not False


def element_env(layer: LayerOp, env: Mapping[str, Value], position: int) -> Mapping[str, Value]:
    """The configuration one position of a per-position list sees: its loop variable bound
    to the position (`for i in range(n)`) or to that element (`for w in widths`)."""
    if layer.var is None:
        return env
    value: Value = position
    if layer.items is not None:
        items = evaluate_config(layer.items, env)
        if not isinstance(items, list | tuple) or not -len(items) <= position < len(items):
            return env
        value = items[position]
    return {**env, layer.var.data: value}


def element_envs(layer: LayerOp, env: Mapping[str, Value]) -> list[Mapping[str, Value]]:
    """Each position's configuration (`element_env`); one for a plain layer or a list of
    copies, none for a list of no positions."""
    count = layer_count(layer, env)
    if layer.var is None:
        return [env] if count is None or count > 0 else []
    if count is None or count > MAX_POSITIONS:  # no count (resolve-nml reports it), or TL0209
        return []
    return [element_env(layer, env, k) for k in range(max(count, 0))]


def layer_arguments(
    layer: LayerOp, env: Mapping[str, Value]
) -> tuple[list[Value], dict[str, Value]] | ArgFailure:
    """A layer's constructor arguments as plain values under `env` (a per-position list's
    first position, unless `env` binds its loop variable: `element_env`)."""
    if layer.var is not None and layer.var.data not in env:
        env = element_env(layer, env, 0)
    args: list[Value] = []
    for position, attr in enumerate(layer.args.data):
        value = evaluate_config(attr, env)
        container = layer.kind.data == "Sequential"  # its arguments are layer constructors
        if isinstance(value, EvalError) or (isinstance(value, CallValue) and not container):
            return ArgFailure(_as_error(value), position=position)
        args.append(value)  # type: ignore[arg-type]
    kwargs: dict[str, Value] = {}
    for keyword, attr in layer.kwargs.data.items():
        value = evaluate_config(attr, env)
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
    value = evaluate_config(layer.count, env)
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
    if not layer_built(layer, env):
        return 0
    if layer.var is not None:  # per position: each element counted under its own values
        return sum(_element_params(layer, e, models, path, memo) for e in element_envs(layer, env))
    copies = layer_count(layer, env)
    copies = 1 if copies is None else max(copies, 0)
    return copies * _element_params(layer, env, models, path, memo)


MAX_POSITIONS = 10_000
"""The most positions a per-position list is evaluated at (shape inference's
MAX_LIST_COPIES: TL0209 past it)."""


def _element_params(
    layer: LayerOp,
    env: Mapping[str, Value],
    models: Mapping[str, ModelOp],
    path: tuple[str, ...],
    memo: dict[tuple[object, ...], int] | None,
) -> int:
    """One element's parameters: a catalogue layer's, or a nested model's under its config."""
    nested = models.get(layer.kind.data)
    if nested is None or lookup(layer.kind.data) is not None or len(path) > MAX_NESTING:
        bound = bind_layer(layer, env)
        return bound.spec.param_count(bound) if bound is not None else 0
    if layer.kind.data in path:
        return 0
    overrides = nested_overrides(layer, nested, env)
    inner = model_env(nested, overrides if isinstance(overrides, dict) else {})
    return declared_params(nested, inner, models, path, memo)


def env_key(env: Mapping[str, Value]) -> tuple[tuple[str, Value], ...] | None:
    """A config environment as a dictionary key; None when a value is unhashable (a list)."""
    key = tuple(sorted(env.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


MODULE_ATTRIBUTES = ("training",)
"""Attributes every model has as an `nn.Module`: `self.training` (True while training)."""


# --- an instance's configuration, as `instantiate` folds it -----------------------------------


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
    folded = op.config
    if folded is not None:
        env = evaluate_kwargs(folded.data, {})
        if isinstance(env, dict):
            return env
    overrides = evaluate_kwargs(op.overrides.data, {})
    return model_env(model, overrides if isinstance(overrides, dict) else {})


def folded_env(model: ModelOp) -> Env:
    """A model's configuration: what `instantiate` folded on a specialised copy, else
    its defaults."""
    return copy_env(model)


# --- specialised copies (`instantiate`): dialects/module_facts.py, nml ops --


def layer_kind(layer: LayerOp) -> str:
    """A layer's kind as a report shows it: `Sequential` for one that holds models (its
    kind is the hidden model's name, frontend/sequential.py)."""
    kind = layer.kind.data
    return "Sequential" if kind.endswith(":Sequential") else kind


def layer_label(layer: LayerOp) -> str:
    """A layer's name in a message: `layer1.0` for the first element of a `Sequential`
    that holds models (its hidden model's layer `0`, frontend/sequential.py)."""
    name = layer.sym_name.data
    model = layer.parent_op()
    if not isinstance(model, ModelOp) or model.sequential is None:
        return name
    hidden = (model.specializes or model.sym_name).data
    holder = model.sequential.data
    field = hidden.removeprefix(f"{holder}.").removesuffix(":Sequential")
    return f"{field}.{name}"


def nested_model(
    layer: LayerOp, models: Mapping[str, ModelOp], position: int | None = None
) -> ModelOp | None:
    """The model a layer applies: its specialised copy if it has one (a per-position
    list's at `position`), else its kind's;
    None for the model that holds the `Sequential` the layer is an element of (a model
    inside itself: TL0307 from resolve-nml)."""
    holder = layer.parent_op()
    sequential = holder.sequential if isinstance(holder, ModelOp) else None
    if sequential is not None and sequential.data == layer.kind.data:
        return None
    copies = layer.positions
    if position is not None and copies is not None and 0 <= position < len(copies.data):
        found = models.get(copies.data[position].root_reference.data)
        if found is not None:
            return found  # a per-position list's element: the copy for its arguments
    specialized = layer.specialized
    if specialized is not None:
        found = models.get(specialized.root_reference.data)
        if found is not None:
            return found
    return models.get(layer.kind.data)


def copy_env(model: ModelOp) -> Env:
    """A specialised copy's configuration (`config`, which `instantiate` wrote on it), else
    the model's defaults: the config its types were inferred under."""
    folded = model.config
    if folded is not None:
        env = evaluate_kwargs(folded.data, {})
        if isinstance(env, dict):
            return env
    return model_env(model)


def specialized_module(module: Operation | None) -> bool:
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    return module is not None and SPECIALIZED_MODULE in module.attributes


def is_specialized_copy(model: ModelOp) -> bool:
    return model.specializes is not None


def model_kind(model: ModelOp) -> str:
    """The model a (maybe specialised) model is: `ResBlock` for `@"ResNet.block1"`;
    `Sequential` for the model a `Sequential(Block(d), ...)` became (frontend/sequential.py)."""
    if model.sequential is not None:
        return "Sequential"
    kind = model.specializes
    return kind.data if kind is not None else model.sym_name.data


def mentions_config(attr: Attribute) -> bool:
    """Whether an argument's value reads a config (`causal`, `dim * 4`)."""
    if isinstance(attr, CfgAttr):
        return True
    children: Sequence[Attribute] = ()
    if isinstance(attr, ExprAttr):
        children = attr.operands.data
    elif isinstance(attr, ArrayAttr):
        children = attr.data
    elif isinstance(attr, CallAttr):
        children = [*attr.args.data, *attr.kwargs.data.values()]
    return any(mentions_config(c) for c in children)
