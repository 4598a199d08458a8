"""The rules a train-block key's record names: how its value is checked, and how it reaches
its `train.config` fields.

    TrainKey("early_stopping", ..., check=patience, reach=early_stopping_fields)

    early_stopping = patience(3)    check:  TL0402-TL0405 if it is not `patience(N, ...)`
                                    reach:  early_stopping = {patience = 3, metric = "val_loss",
                                                              min_delta = 0.0}

A `Check` gets the key and its value (evaluated: numbers, strings, lists, `CallValue`s) and
returns what is wrong with it (a `Problem`: check-train reports it at the value) or None. A
`Reach` gets the key's record, the block (`TrainBlock`: its values, the file's `fn` names and
its optimizers' parameter groups, which train-config reads off the IR) and the fields as
filled so far (every default), and writes the key's own. A plain key's record names neither:
its check is built from its `Arg` (`plain_check`), and its value is written as it is
(`write_plain`). check-train and train-config call whatever the record names, so a new key
with a structured value writes its rule here or beside its record, and no pass keeps a table
of kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tensorloom.catalogue.args import INT64_MAX, Arg, past_int64
from tensorloom.catalogue.layers.base import CallValue, Evaluated
from tensorloom.catalogue.losses import TRAIN_LOSSES
from tensorloom.catalogue.optimizers import OPTIMIZERS as OPTIMIZER_SPECS
from tensorloom.catalogue.schedules import LENGTH_TWINS
from tensorloom.catalogue.schedules import SCHEDULES as SCHEDULE_SPECS
from tensorloom.diagnostics.core import did_you_mean

if TYPE_CHECKING:
    from tensorloom.catalogue.train_keys import TrainKey


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong with one setting's value; reported at the value."""

    code: str
    message: str
    help: str | None = None


Check = Callable[[str, Evaluated], "Problem | None"]


@dataclass(frozen=True, slots=True)
class TrainBlock:
    """A train block as the reach rules read it: its settings as Python values (older key
    names under their newer ones), its list values element by element (a list may hold calls,
    `[accuracy, top_k(5)]`, which a value cannot), the file's top-level `fn` names, and, for a
    key whose value selects parameters (`optimizer = (Muon(hidden), AdamW(rest))`), each
    call's name, selections and keywords, which only the IR can read (None: none)."""

    values: Mapping[str, Evaluated]
    lists: Mapping[str, list[Evaluated]]
    functions: Collection[str]
    parameter_groups: Callable[[str], list[dict[str, object]] | None]


Reach = Callable[["TrainKey", TrainBlock, dict[str, object]], None]


# --- plain values: a record's `Arg` ----------------------------------------------------------


def _is_int(v: Evaluated) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Evaluated) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def wrong_type(key: str, what: str, value: Evaluated) -> Problem:
    return Problem("TL0402", f"`{key}` must be {what}, got {show(value)}")


def show(value: Evaluated) -> str:
    """A value as a message quotes it: `Adam(...)`, `true`, `"fp16"`, `3`."""
    if isinstance(value, CallValue):
        return f"`{value.name}`" + ("(...)" if value.args or value.kwargs else "")
    if isinstance(value, bool):
        return f"`{'true' if value else 'false'}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value}`"


def int_at_least(low: int) -> Check:
    def check(key: str, value: Evaluated) -> Problem | None:
        if not _is_int(value):
            return wrong_type(key, "an integer", value)
        if value < low:  # type: ignore[operator]
            return Problem("TL0403", f"`{key}` must be at least {low}, got {value}")
        if value > INT64_MAX:  # type: ignore[operator]
            return Problem("TL0403", f"`{key}` {past_int64(value)}")  # type: ignore[arg-type]
        return None

    return check


def number_in(low: float, high: float | None, *, open_low: bool = True) -> Check:
    def check(key: str, value: Evaluated) -> Problem | None:
        if not _is_number(value):
            return wrong_type(key, "a number", value)
        try:
            number = float(value)  # type: ignore[arg-type]
        except OverflowError:  # an integer past 1e308
            return Problem("TL0403", f"`{key}` is too large for a float (past 1.8e308)")
        too_low = number <= low if open_low else number < low
        if too_low or (high is not None and number >= high):
            return Problem(
                "TL0403", f"`{key}` must be {_interval(low, high, open_low)}, got {value}"
            )
        return None

    return check


def _interval(low: float, high: float | None, open_low: bool) -> str:
    if high is not None:
        return f"in {'(' if open_low else '['}{low:g}, {high:g})"
    return f"greater than {low:g}" if open_low else f"at least {low:g}"


def boolean(key: str, value: Evaluated) -> Problem | None:
    return None if isinstance(value, bool) else wrong_type(key, "`true` or `false`", value)


def one_of(*choices: str | bool) -> Check:
    def check(key: str, value: Evaluated) -> Problem | None:
        if value in choices and (isinstance(value, bool) or not isinstance(value, int)):
            return None
        names = [c for c in choices if isinstance(c, str)]
        guess = did_you_mean(value, names) if isinstance(value, str) else None
        listed = ", ".join(_choice(c) for c in choices)
        help_text = f"did you mean `{guess}`?" if guess else f"use one of {listed}"
        got = _choice(value) if isinstance(value, str) else show(value)
        return Problem("TL0407", f"`{key}` must be one of {listed}, got {got}", help_text)

    return check


def _choice(value: str | bool) -> str:
    """A choice as the user would write it: `fp16` bare, `"max-autotune"` quoted."""
    if isinstance(value, str) and value.isidentifier():
        return f"`{value}`"
    return show(value)


def range_check(arg: Arg) -> Check | None:
    """An argument's type and range as a check; None for one without either."""
    if arg.choices:
        return one_of(*arg.choices)
    if arg.type == "int" and arg.low is not None:
        return int_at_least(int(arg.low) + (1 if arg.open_low else 0))
    if arg.type == "float" and (arg.low is not None or arg.high is not None):
        low = float("-inf") if arg.low is None else arg.low
        return number_in(low, arg.high, open_low=arg.open_low)
    return None


def plain_check(key: TrainKey) -> Check:
    """A plain key's check: its `Arg`'s type, range and choices (`true`, `false` too for a
    switch; `false` turns an `off` key off)."""
    assert key.value is not None, f"{key.name}: a key without an `Arg` names its `check`"
    if key.switch or key.value.choices:
        return one_of(*key.choices)
    if key.value.type == "bool":
        return boolean
    check = range_check(key.value)
    assert check is not None, key.name
    return _or_off(check) if key.off else check


def _or_off(check: Check) -> Check:
    """`grad_clip = false`: the key is off."""

    def off_or_checked(key: str, value: Evaluated) -> Problem | None:
        return None if value is None or value is False else check(key, value)

    return off_or_checked


def plain_value(key: TrainKey, value: Evaluated | None) -> object | None:
    """The value itself, when it is of the field's type and in the record's range; else None
    (the field keeps its default)."""
    kind = key.fields[0].kind
    if kind == "bool":
        return value if isinstance(value, bool) else None
    if kind == "str":
        return value if isinstance(value, str) else None
    number = _int(value) if kind == "int" else _number(value)
    admitted = number is not None and (key.value is None or key.value.admits(number))
    return number if admitted else None


def write_plain(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """A plain key's reach: its value, as it is, into its field."""
    value = plain_value(key, block.values.get(key.name))
    if value is not None:
        fields[key.name] = value


def _number(value: Evaluated | None) -> float | None:
    usable = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if usable else None  # type: ignore[arg-type]


def _int(value: Evaluated | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- optimizers, losses, schedules: a catalogue name and its keywords ------------------------

OPTIMIZERS: dict[str, tuple[str, ...]] = {n: s.keywords for n, s in OPTIMIZER_SPECS.items()}
"""Optimizer names (torch.optim classes) and the keyword arguments each accepts."""

LOSSES: dict[str, tuple[str, ...]] = {n: r.keywords for n, r in TRAIN_LOSSES.items()}
"""Loss names (torch.nn `<Name>Loss`) and their keyword arguments."""

SCHEDULES: dict[str, tuple[str, ...]] = {n: s.keywords for n, s in SCHEDULE_SPECS.items()}
"""`lr_schedule` names and their keyword arguments (see docs/train-block.md)."""

_RANGES: dict[str, Check] = {
    arg.name: check
    for arg in (
        *(a for s in OPTIMIZER_SPECS.values() for a in s.args),
        *(a for r in TRAIN_LOSSES.values() for a in r.args),
        *(a for s in SCHEDULE_SPECS.values() for a in s.args),
    )
    if (check := range_check(arg)) is not None
}
"""Each catalogue argument's type and range as a check, by argument name."""


def as_call(value: Evaluated | None) -> CallValue | None:
    """`Adam(lr=0.1)`, `Adam` or `"Adam"` as a call."""
    if isinstance(value, CallValue):
        return value
    return CallValue(value) if isinstance(value, str) else None


def named(what: str, table: Mapping[str, Sequence[str]], unknown_code: str) -> Check:
    """A catalogue name, maybe called with its keywords: `AdamW(lr=3e-4)`, `CrossEntropy`."""

    def check(key: str, value: Evaluated) -> Problem | None:
        call = as_call(value)
        if call is None:
            return wrong_type(key, f"{what} name", value)
        if call.name not in table:
            guess = did_you_mean(call.name, table)
            listed = ", ".join(f"`{n}`" for n in table)
            help_text = f"did you mean `{guess}`?" if guess else f"known: {listed}"
            return Problem(unknown_code, f"unknown {what} `{call.name}`", help_text)
        return _arguments(call, table[call.name]) or _one_length(call)

    return check


def _one_length(call: CallValue) -> Problem | None:
    """A length given in steps and in epochs at once is ambiguous."""
    names = {key for key, _ in call.kwargs}
    for steps, epochs in LENGTH_TWINS:
        if steps in names and epochs in names:
            return Problem(
                "TL0405", f"`{call.name}` takes `{steps}` or `{epochs}`, not both",
                f"keep one: `{steps}` counts optimizer steps, `{epochs}` epochs",
            )  # fmt: skip
    return None


def _arguments(call: CallValue, accepted: Sequence[str]) -> Problem | None:
    if len(call.args) > (1 if accepted[:1] == ("lr",) else 0):
        return Problem(
            "TL0405",
            f"`{call.name}` takes keyword arguments only",
            f"write `{call.name}({accepted[0]}=...)`" if accepted else None,
        )
    for key, value in _named_arguments(call):
        if key not in accepted:
            guess = did_you_mean(key, accepted)
            listed = ", ".join(f"`{a}`" for a in accepted) or "none"
            help_text = f"did you mean `{guess}`?" if guess else f"it accepts {listed}"
            return Problem("TL0405", f"`{call.name}` has no argument `{key}`", help_text)
        check = _RANGES.get(key)
        problem = check(key, value) if check is not None else None
        if problem is not None:
            return problem
    return None


def _named_arguments(call: CallValue) -> list[tuple[str, Evaluated]]:
    """A call's keywords, a positional first argument as `lr` (`Adam(1e-3)`)."""
    return list(call.kwargs) + ([("lr", call.args[0])] if call.args else [])


def _kwargs(call: CallValue) -> dict[str, object]:
    return {key: value for key, value in _named_arguments(call) if not isinstance(value, CallValue)}


check_optimizer = named("optimizer", OPTIMIZERS, "TL0404")
check_loss = named("loss", LOSSES, "TL0406")
check_schedule = named("lr schedule", SCHEDULES, "TL0407")


def optimizer_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """`AdamW(lr=3e-4)`: the class and its keywords, `lr` defaulted; or a set of them over
    parameter groups: `optimizer = (Muon(hidden, lr=0.02), AdamW(rest, lr=3e-3))` names them
    all (`Muon+AdamW`), and `lr` is the first one's (what a schedule's `min_lr` is read
    against)."""
    call = as_call(block.values.get(key.name)) or CallValue(str(fields[key.name]))
    args = _kwargs(call)
    args.setdefault("lr", _default_lr(call.name))
    fields[key.name], fields["optimizer_args"] = call.name, args
    entries = block.parameter_groups(key.name)
    if not entries:
        return
    for entry in entries:
        entry["kwargs"].setdefault("lr", _default_lr(str(entry["name"])))  # type: ignore[union-attr]
    fields["optimizer_set"] = entries
    fields[key.name] = "+".join(str(e["name"]) for e in entries)
    fields["optimizer_args"] = {"lr": entries[0]["kwargs"]["lr"]}  # type: ignore[index]


def _default_lr(name: str) -> float:
    spec = OPTIMIZER_SPECS.get(name)
    return spec.default_lr if spec is not None else 0.001


def loss_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """`CrossEntropy(label_smoothing=0.1)`: the loss and its keywords; a `fn` of the file by
    its name (`loss_fn`)."""
    call = as_call(block.values.get(key.name))
    if call is None:
        return
    fields[key.name] = call.name
    if call.name in block.functions and not call.args and not call.kwargs:
        fields["loss_fn"] = True
    else:
        fields["loss_args"] = _kwargs(call)


def schedule_of(value: Evaluated | None) -> tuple[str, dict[str, object]] | None:
    """`cosine(warmup_steps=200)` as its name and arguments, the catalogue's defaults filled in
    (a step's optimizer's own `lr_schedule` too)."""
    call = as_call(value)
    if call is None:
        return None
    args = _kwargs(call)
    spec = SCHEDULE_SPECS.get(call.name)
    twins = {a: b for pair in LENGTH_TWINS for a, b in (pair, pair[::-1])}
    for name, default in spec.defaults if spec is not None else ():
        if name not in args and twins.get(name) not in args:
            args[name] = default
    return call.name, args


def schedule_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    schedule = schedule_of(block.values.get(key.name))
    if schedule is not None:
        fields[key.name], fields[f"{key.name}_args"] = schedule


# --- the other structured keys ---------------------------------------------------------------


def epochs_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """The value as it is; without one, and with `max_steps`, as many as `max_steps` takes."""
    write_plain(key, block, fields)
    if key.name not in block.values and "max_steps" in block.values:
        fields[key.name] = None


def batch_size_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """The value as it is, and whether the block set it (`batch_size_set`)."""
    write_plain(key, block, fields)
    fields["batch_size_set"] = key.name in block.values


def distributed_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """`true` is `ddp`."""
    strategy = block.values.get(key.name)
    fields[key.name] = (
        "ddp" if strategy is True else strategy if strategy in ("ddp", "fsdp") else None
    )


def compile_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """`false` is `off`; `true` or a mode is `on` (with that mode); unset is `auto`, compiled
    when the run repays it."""
    value = block.values.get(key.name)
    if value is None:
        return
    if value is False:
        fields[key.name] = "off"
    elif value is True or isinstance(value, str):
        fields[key.name] = "on"
        if isinstance(value, str) and key.value is not None and value in key.value.choices:
            fields["compile_mode"] = value


def metric_name(key: str, value: Evaluated) -> Problem | None:
    """`keep_best = val_loss`: a validation metric's name."""
    if isinstance(value, str) and value.isidentifier():
        return None  # which metrics validation reports is checked against the block
    return wrong_type(key, "a validation metric such as `val_loss`", value)


def patience(key: str, value: Evaluated) -> Problem | None:
    """`early_stopping = patience(3, metric=val_loss, min_delta=0.0)`."""
    call = as_call(value)
    usage = "write `early_stopping = patience(3, metric=val_loss)`"
    if call is None or call.name != "patience":
        return Problem("TL0402", f"`{key}` must be `patience(N, metric=...)`", usage)
    if len(call.args) != 1:
        return Problem("TL0405", "`patience` takes one positional argument, the patience", usage)
    problem = int_at_least(1)("patience", call.args[0])
    for name, arg in call.kwargs:
        if problem is not None:
            break
        if name == "metric":
            problem = metric_name("metric", arg)
        elif name == "min_delta":
            problem = number_in(0.0, None, open_low=False)("min_delta", arg)
        else:
            guess = did_you_mean(name, ("metric", "min_delta"))
            help_text = f"did you mean `{guess}`?" if guess else "it accepts `metric`, `min_delta`"
            problem = Problem("TL0405", f"`patience` has no argument `{name}`", help_text)
    return problem


EARLY_STOPPING_DEFAULTS: dict[str, object] = {"metric": "val_loss", "min_delta": 0.0}
"""`early_stopping = patience(N)`'s other arguments, when not given."""


def early_stopping_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """`patience(3)`: patience, metric and min_delta, defaults filled in."""
    value = block.values.get(key.name)
    if not isinstance(value, CallValue) or not value.args:
        fields[key.name] = None
        return
    options = {**EARLY_STOPPING_DEFAULTS, **dict(value.kwargs)}
    delta = _number(options["min_delta"])  # type: ignore[arg-type]
    fields[key.name] = {"patience": value.args[0], "metric": str(options["metric"]),
                        "min_delta": delta if delta is not None else 0.0}  # fmt: skip


def freeze_list(key: str, value: Evaluated) -> Problem | None:
    """`freeze = [wte, wpe, h[0:6]]`: layer paths (check-weights finds them in the model)."""
    usage = "write `freeze = [wte, h[0:6]]`: layers of the model"
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        return Problem("TL0402", f"`{key}` must be a list of the model's layers", usage)
    return None


def freeze_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    value = block.values.get(key.name)
    if isinstance(value, list | tuple):
        fields[key.name] = [str(v) for v in value]


_LORA_ARGS = ("rank", "alpha", "dropout", "targets")

LORA_DEFAULTS: dict[str, object] = {"alpha": None, "dropout": 0.0}
"""`lora = LoRA(rank=r, targets=[...])`'s other arguments, when not given (alpha: the rank,
a scale of 1, as peft's `lora_alpha` defaults to 8 for its default rank 8)."""


def lora_adapters(key: str, value: Evaluated) -> Problem | None:
    """`lora = LoRA(rank=8, alpha=16, dropout=0.05, targets=[c_attn, c_fc])`."""
    call = as_call(value)
    usage = "write `lora = LoRA(rank=8, targets=[c_attn])`"
    if call is None or call.name != "LoRA" or call.args:
        return Problem("TL0402", f"`{key}` must be `LoRA(rank=..., targets=[...])`", usage)
    given = dict(call.kwargs)
    for name in given:
        if name not in _LORA_ARGS:
            guess = did_you_mean(name, _LORA_ARGS)
            help_text = (
                f"did you mean `{guess}`?"
                if guess
                else "it accepts " + ", ".join(f"`{a}`" for a in _LORA_ARGS)
            )
            return Problem("TL0405", f"`LoRA` has no argument `{name}`", help_text)
    missing = [a for a in ("rank", "targets") if a not in given]
    if missing:
        return Problem("TL0405", f"`LoRA` needs `{missing[0]}`", usage)
    targets = given["targets"]
    if (
        not isinstance(targets, list | tuple)
        or not targets
        or not all(isinstance(t, str) for t in targets)
    ):
        return Problem("TL0402", "`targets` must be a list of Linear layers: `[c_attn, c_fc]`")
    problem = int_at_least(1)("rank", given["rank"])
    if problem is None and "alpha" in given:
        problem = number_in(0.0, None)("alpha", given["alpha"])
    if problem is None and "dropout" in given:
        problem = number_in(0.0, 1.0, open_low=False)("dropout", given["dropout"])
    return problem


def lora_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """`LoRA(rank=8, targets=[c_attn])`: rank, alpha (the rank when not given), dropout,
    targets."""
    value = block.values.get(key.name)
    if not isinstance(value, CallValue) or value.name != "LoRA":
        fields[key.name] = None
        return
    options = {**LORA_DEFAULTS, **dict(value.kwargs)}
    rank = options["rank"]
    alpha = options["alpha"] if options["alpha"] is not None else rank
    fields[key.name] = {"rank": rank, "alpha": float(alpha), "dropout": float(options["dropout"]),  # type: ignore[arg-type]
                        "targets": [str(t) for t in options["targets"]]}  # type: ignore[union-attr]  # fmt: skip


def a_function_name(key: str, value: Evaluated) -> Problem | None:
    """`objective = d_loss`: the name of a `fn` (check-train finds it in the file)."""
    return None if as_call(value) is not None else wrong_type(key, "the name of a `fn`", value)


def a_field_name(key: str, value: Evaluated) -> Problem | None:
    """`target = label`: the name of a field of the data (check-train finds it)."""
    return None if as_call(value) is not None else wrong_type(key, "the name of a field", value)


def checked_by_the_block(key: str, value: Evaluated) -> Problem | None:
    """A value check-train checks against the rest of the block (`metrics`: each metric
    against the data and the file's functions), not on its own."""
    return None


# --- metrics ---------------------------------------------------------------------------------

BUILTIN_METRICS = ("accuracy", "top_k", "perplexity")


@dataclass(frozen=True, slots=True)
class Metric:
    """One entry of `metrics = [...]`: `accuracy`, `top_k(5)` or a function's name."""

    kind: str  # "accuracy", "top_k", "perplexity" (exp of `val_loss`) or "function"
    name: str  # the key in the record: `val_<name>`
    k: int = 1

    @property
    def key(self) -> str:
        return f"val_{self.name}"


@dataclass(frozen=True, slots=True)
class MetricProblem:
    message: str
    help: str | None = None


def metric_of(value: object, functions: Collection[str]) -> Metric | MetricProblem:
    """One entry of `metrics = [...]` as its metric, or what is wrong with it."""
    call = value if isinstance(value, CallValue) else None
    name = call.name if call is not None else value
    if not isinstance(name, str):
        return MetricProblem(
            "a metric is `accuracy`, `top_k(k)`, `perplexity` or the name of a `fn`"
        )
    if name == "accuracy" and (call is None or not call.args):
        return Metric("accuracy", "accuracy")
    if name == "perplexity" and (call is None or not call.args):
        return Metric("perplexity", "perplexity")
    if name == "top_k":
        k = call.args[0] if call is not None and len(call.args) == 1 else None
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            return MetricProblem("`top_k` takes one positive integer, as in `top_k(5)`")
        return Metric("top_k", f"top{k}_accuracy", k)
    if name in functions and call is None:
        return Metric("function", name)
    guess = did_you_mean(name, [*BUILTIN_METRICS, *functions])
    listed = "`accuracy`, `top_k(k)`, `perplexity` or a `fn` of this file"
    return MetricProblem(
        f"unknown metric `{name}`", f"did you mean `{guess}`?" if guess else f"use {listed}"
    )


def metrics_fields(key: TrainKey, block: TrainBlock, fields: dict[str, object]) -> None:
    """`[accuracy, top_k(5), my_metric]`: kind, name and k of each (none for a list with a
    bad entry, which check-train reported)."""
    metrics = [metric_of(v, block.functions) for v in block.lists.get(key.name, [])]
    fields[key.name] = [
        {"kind": m.kind, "name": m.name, "k": m.k} for m in metrics if isinstance(m, Metric)
    ] if all(isinstance(m, Metric) for m in metrics) else []  # fmt: skip
