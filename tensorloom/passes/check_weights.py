"""`check-weights`: a `weights` block against its file's header and the model's tensors; a
train block's `freeze` and `lora` against the model's layers.

    weights model from "gpt2":                                       TL0801 absent (warning)
        "transformer.{a}.{p}" -> "{a}.{p}"                            TL0806 shape differs
        "transformer.h.{i}.{m}.{l}.weight" -> "h.{i}.{m}.{l}.weight" transposed

1. Find the instance the block names (TL0803) and its model's state dict: every parameter
   and buffer with its shape under the instance's config (support/state_dict.py).
2. Read the source's header (catalogue/weight_files.py: a safetensors file, a Hugging Face
   folder, sharded or not, or a torch state dict), no tensor data: an absent source is a
   warning (the weights may live on the training machine), an unreadable one an error.
3. Apply the rules, in order, to every file name (the first that matches decides), as the
   emitted script's `load_pretrained` does, and report at the rule's line: a target the
   model lacks or that two tensors fill (TL0807), a shape that differs (TL0806, both names
   and both shapes), a dtype the load casts (TL0808, a warning); at the block's header: file
   tensors no rule covers (TL0805) and model tensors nothing fills (TL0804). A rule that
   cannot be applied (a `{x}` that is not a name or is repeated, a target naming a part the
   pattern lacks) is TL0809, and the block is not compared.
4. A train block's `freeze = [wte, h[0:6]]` names layers (or parameters) of its model, a
   slice within the list's length (TL0810); `lora = LoRA(targets=[c_attn])` names Linear
   layers, by their name or the end of their path (TL0811).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from tensorloom.catalogue.shapes import format_shape
from tensorloom.catalogue.weight_files import (
    TensorHeader,
    WeightFileError,
    WeightHeader,
    read_weight_header,
)
from tensorloom.diagnostics.core import Diagnostic, Label, did_you_mean
from tensorloom.diagnostics.ir import report, span_at, span_of
from tensorloom.dialects.nml import InstanceOp
from tensorloom.dialects.nml.types import CallAttr
from tensorloom.dialects.train import LoopOp, SetOp, WeightsOp
from tensorloom.passes.support.model_env import (
    lookup_symbol,
    model_env,
    models_of,
    override_value,
)
from tensorloom.passes.support.prerequisites import TLPass
from tensorloom.passes.support.state_dict import ModelTree, UnknownState, model_tree
from tensorloom.passes.support.weight_rules import map_names, rule_problem, unmatched_names
from tensorloom.source import Span

_MODEL_DTYPE = "F32"  # the emitted model's parameters: fp32, whatever the autocast


@dataclass(frozen=True)
class CheckWeightsPass(TLPass):
    name = "check-weights"
    requires = ("resolve-nml",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for found in op.walk():
            if isinstance(found, WeightsOp):
                _check(op, found)
            elif isinstance(found, LoopOp):
                _check_fine_tuning(op, found)


def _tree(module: ModuleOp, inst: InstanceOp) -> ModelTree | None:
    """The instance's layers and state dict under its config, or None where unknown."""
    model = models_of(module).get(inst.model.root_reference.data)
    if model is None:
        return None
    overrides = {k: override_value(v) for k, v in inst.overrides.data.items()}
    env = model_env(model, {k: v for k, v in overrides.items() if v is not None})
    try:
        return model_tree(model, env, models_of(module))
    except UnknownState:
        return None  # resolve-nml reported the layer whose arguments have no value


def _check_fine_tuning(module: ModuleOp, loop: LoopOp) -> None:
    settings = loop.settings()
    if "freeze" not in settings and "lora" not in settings:
        return
    if loop.steps():
        return  # with `step` lines `freeze` names whole models (check-train)
    inst = lookup_symbol(module, loop.model.root_reference.data, InstanceOp)
    tree = _tree(module, inst) if inst is not None else None
    if tree is None:
        return
    if "freeze" in settings:
        _check_freeze(settings["freeze"], tree)
    if "lora" in settings:
        _check_lora(settings["lora"], tree)


def _value_span(op: SetOp) -> Span:
    return (span_of(op.value_loc) if op.value_loc is not None else None) or span_at(op)


def _check_freeze(op: SetOp, tree: ModelTree) -> None:
    span = _value_span(op)
    if not isinstance(op.value, ArrayAttr):
        return  # check-train reported a value that is not a list
    for item in op.value.data:
        if not isinstance(item, StringAttr):
            continue
        problem = _freeze_problem(item.data, tree)
        if problem is not None:
            message, help_text = problem
            report(Diagnostic.error("TL0810", message, Label(span, ""), help=help_text))


def _freeze_problem(path: str, tree: ModelTree) -> tuple[str, str | None] | None:
    sliced = re.fullmatch(r"(.+)\[(\d*):(\d*)\]", path)
    if sliced is not None:
        base, high = sliced.group(1), sliced.group(3)
        if base not in tree.lists:
            return f"`{base}` is not a layer list of the model", _layers_help(base, tree)
        if high and int(high) > tree.lists[base]:
            count = tree.lists[base]
            return (f"`{path}` reaches past `{base}`'s {count} layers",
                    f"write `{base}[{sliced.group(2)}:{count}]`")  # fmt: skip
        return None
    if path in tree.kinds or path in tree.shapes or path in tree.lists:
        return None
    return f"`{path}` is not a layer of the model", _layers_help(path, tree)


def _layers_help(path: str, tree: ModelTree) -> str | None:
    names = [k for k in tree.kinds if "." not in k] + list(tree.lists)
    guess = did_you_mean(path, names)
    return (
        f"did you mean `{guess}`?"
        if guess
        else "its layers: " + ", ".join(f"`{n}`" for n in dict.fromkeys(names))
    )


def _check_lora(op: SetOp, tree: ModelTree) -> None:
    span = _value_span(op)
    call = op.value
    if not isinstance(call, CallAttr):
        return
    targets = call.kwargs.data.get("targets")
    if not isinstance(targets, ArrayAttr):
        return
    linears = tree.linear_paths()
    for target in targets.data:
        if not isinstance(target, StringAttr):
            continue
        name = target.data
        if not any(p == name or p.endswith("." + name) for p in linears):
            ends = sorted({p.rsplit(".", 1)[-1] for p in linears})
            guess = did_you_mean(name, ends)
            report(
                Diagnostic.error(
                    "TL0811",
                    f"no Linear layer of the model is named `{name}`",
                    Label(span, ""),
                    help=f"did you mean `{guess}`?"
                    if guess
                    else "its Linear layers: " + ", ".join(f"`{e}`" for e in ends),
                )
            )


def _check(module: ModuleOp, op: WeightsOp) -> None:
    header_span = span_at(op)
    written = span_of(op.instance_loc) if op.instance_loc is not None else None
    instance_span = written or header_span
    inst = lookup_symbol(module, op.instance.data, InstanceOp)
    if inst is None:
        report(
            Diagnostic.error(
                "TL0803",
                f"`{op.instance.data}` is not a model instance",
                Label(instance_span, "weights are for an instance declared with `let`"),
                help="declare it first: `let model = GPT(...)`",
            )
        )
        return
    tree = _tree(module, inst)
    if tree is None:
        return
    expected = tree.shapes
    if not _rules_valid(op, header_span):
        return
    header = _header(op, header_span)
    if header is not None:
        _compare(op, header, expected, header_span)


def _rules_valid(op: WeightsOp, header_span: Span) -> bool:
    """TL0809 for each rule whose pattern or target cannot be applied."""
    valid = True
    for index, (source, target, _) in enumerate(op.rules()):
        problem = rule_problem(source, target)
        if problem is not None:
            valid = False
            report(
                Diagnostic.error(
                    "TL0809",
                    f"this rule cannot be applied: {problem}",
                    Label(_rule_span(op, index, header_span), ""),
                )
            )
    return valid


def _source_span(op: WeightsOp, fallback: Span) -> Span:
    return (span_of(op.source_loc) if op.source_loc is not None else None) or fallback


def _header(op: WeightsOp, header_span: Span) -> WeightHeader | None:
    path = Path(op.source.data)
    if not path.is_absolute() and not path.exists() and header_span.file:
        path = Path(header_span.file).parent / path  # beside the program
    span = _source_span(op, header_span)
    if not path.exists():
        report(
            Diagnostic.warning(
                "TL0801",
                f"`{op.source.data}` is not there at check time: the names are not checked",
                Label(span, "no such file or folder"),
                help="if the weights live on the training machine, pass `--weights PATH` there",
            )
        )
        return None
    try:
        return read_weight_header(path)
    except WeightFileError as exc:
        report(Diagnostic.error("TL0802", f"cannot read the weights: {exc}", Label(span, "")))
        return None


def _rule_span(op: WeightsOp, index: int, fallback: Span) -> Span:
    locs = op.rule_locs.data if op.rule_locs is not None else ()
    found = span_of(locs[index]) if index < len(locs) else None
    return found or fallback


def _compare(
    op: WeightsOp, header: WeightHeader, expected: dict[str, tuple[int, ...]], span: Span
) -> None:
    rules = op.rules()
    names = list(header.tensors)
    filled: dict[str, str] = {}
    cast: set[int] = set()
    misshapen: dict[int, int] = {}  # rule index -> tensors of a shape that differs
    for name, (target, transposed, index) in map_names(names, rules).items():
        tensor, rule_span = header.tensors[name], _rule_span(op, index, span)
        if target not in expected:
            _no_target(name, target, expected, rule_span)
        elif target in filled:
            report(
                Diagnostic.error(
                    "TL0807",
                    f"`{filled[target]}` and `{name}` both fill `{target}`",
                    Label(rule_span, "this rule maps two of the file's tensors to one"),
                    help="make the patterns tell them apart, or `ignore` one",
                )
            )
        else:
            filled[target] = name
            if _shape_differs(tensor, expected[target], transposed):
                if index not in misshapen:
                    _shape(name, tensor, target, expected[target], transposed, rule_span)
                misshapen[index] = misshapen.get(index, 0) + 1
            if tensor.dtype != _MODEL_DTYPE and expected[target] and index not in cast:
                cast.add(index)
                report(
                    Diagnostic.warning(
                        "TL0808",
                        f"`{name}` is {tensor.dtype}: the load casts it to the model's float32",
                        Label(rule_span, f"{tensor.dtype} in the file"),
                    )
                )
    unmatched = unmatched_names(names, rules)
    if unmatched:
        first = unmatched[0]
        report(
            Diagnostic.error(
                "TL0805",
                f"no rule maps {_some(unmatched)} of `{op.source.data}`",
                Label(span, f"{len(unmatched)} of the file's tensors are not mapped"),
                help=f'map them, or ignore them: `ignore "{first}"`',
            )
        )
    missing = [k for k in expected if k not in filled]
    if missing:
        report(
            Diagnostic.error(
                "TL0804",
                f"nothing in `{op.source.data}` fills {_some(missing)}",
                Label(span, f"{len(missing)} of the model's tensors are not filled"),
                help="add a rule whose target names them",
            )
        )


def _no_target(name: str, target: str, expected: dict[str, tuple[int, ...]], span: Span) -> None:
    near = [k for k in expected if k.split(".")[-1] == target.split(".")[-1]][:1]
    report(
        Diagnostic.error(
            "TL0807",
            f"`{name}` maps to `{target}`, which the model does not have",
            Label(span, f"no `{target}` in the model"),
            help=f"the model has `{near[0]}`" if near else None,
        )
    )


def _shape_differs(tensor: TensorHeader, want: tuple[int, ...], transposed: bool) -> bool:
    return (tuple(reversed(tensor.shape)) if transposed else tensor.shape) != want


def _shape(
    name: str,
    tensor: TensorHeader,
    target: str,
    want: tuple[int, ...],
    transposed: bool,
    span: Span,
) -> None:
    got = tuple(reversed(tensor.shape)) if transposed else tensor.shape
    stored = format_shape(tensor.shape)
    as_loaded = f" ({format_shape(got)} transposed)" if transposed else ""
    swapped = not transposed and len(want) == 2 and tuple(reversed(got)) == want
    report(
        Diagnostic.error(
            "TL0806",
            f"`{name}` is {stored}{as_loaded}, the model's `{target}` is {format_shape(want)}",
            Label(span, "shapes differ"),
            help="the file stores it the other way round: end the rule with `transposed`"
            if swapped
            else None,
        )
    )


def _some(names: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")
