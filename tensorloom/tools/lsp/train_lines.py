"""Hover on the lines a train block and a weights map declare, and the data's named fields.

    step lm_loss with SGD(head, lr=1.0)     `step`: the objective, its optimizers, its epochs
    group head = params(net.decoder)        `group`, `head` (here or in an optimizer): the group
    carry h = net.h0                        `carry`, `h`: the carried value's type and start
    target = label                          `label`: the field of the data, its shape
    weights net from "w" using hf           `hf`: the `@weights` map, its model and rules

`step`, `group` and `carry` are words only at a train-block line's start (the parser's
`check_word`): elsewhere `step` is the learning-rate schedule, which hover.py's catalogue
lookup gives.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tensorloom.frontend import ast
from tensorloom.tools.lsp import navigate

if TYPE_CHECKING:
    from tensorloom.catalogue.datasets import DataField
    from tensorloom.source import Span
    from tensorloom.tools.lsp.document import Analysis

MAP_NAME = r"(?:@weights|\busing)\s+{}\b"


def hover_text(analysis: Analysis, name: str, span: Span) -> str | None:
    """What the word `name` at `span` declares or names in a train block or a weights line."""
    root = analysis.root
    if root is None:
        return None
    chain = navigate.enclosing(root, span.line, span.col)
    train = next((n for n in reversed(chain) if isinstance(n, ast.TrainDecl)), None)
    text = _in_train(analysis, train, name, span) if train is not None else None
    return text if text is not None else _weights_map(analysis, name, span)


def _in_train(analysis: Analysis, train: ast.TrainDecl, name: str, span: Span) -> str | None:
    for step in train.steps:
        if step.span.start() == span.start():
            return _step(analysis, step)
    for group in train.groups:
        if group.span.start() == span.start() or name == group.name:
            return _group(analysis, group)
    for carry in train.carries:
        if carry.span.start() == span.start() or name == carry.name:
            return _carry(analysis, carry)
    target = next((s for s in train.settings if s.key == "target"), None)
    if target is not None and target.value.span.start() == span.start():
        return _field(analysis, train, name)
    return None


def _step(analysis: Analysis, step: ast.TrainStep) -> str:
    from tensorloom.tools.lsp.hover import code, source_text

    optimizers = ", ".join(f"`{source_text(analysis, o.span)}`" for o in step.optimizers)
    text = (f"{code(analysis.line(step.span.line).strip())}\n\na step of each batch: "
            f"`{step.objective}`'s value, one backward, then a step of {optimizers}")  # fmt: skip
    if step.first_epoch is not None:
        text += f"; from epoch {step.first_epoch}"
    if step.last_epoch is not None:
        text += f"; until epoch {step.last_epoch}"
    return text


def _group(analysis: Analysis, group: ast.TrainGroup) -> str:
    from tensorloom.tools.lsp.hover import code, source_text

    return (
        f"{code(f'group {group.name} = {source_text(analysis, group.value.span)}')}\n\n"
        "parameter group: parameters a `step` line's optimizer takes in place of a model"
        f"\n\ndeclared at {group.name_span}"
    )


def _carry(analysis: Analysis, carry: ast.TrainCarry) -> str:
    from tensorloom.tools.check import carried_rows
    from tensorloom.tools.lsp.hover import code, source_text

    start = source_text(analysis, carry.init.span) if carry.init is not None else "?"
    text = code(f"carry {carry.name} = {start}")
    rows = [r for r in carried_rows(analysis.result) if r[0] == carry.name]
    kept = f"`{rows[0][1]}`, " if rows else ""
    return (f"{text}\n\ncarried value: {kept}the objective takes it after the batch and "
            f"returns it after its loss; `{start}` again at each epoch's start")  # fmt: skip


def _field(analysis: Analysis, train: ast.TrainDecl, name: str) -> str | None:
    data = train.data.id if isinstance(train.data, ast.Name) else ""
    field = next((f for f in data_fields(analysis, data) if f.name == name), None)
    if field is None:
        return None
    from tensorloom.tools.lsp.hover import code

    return f"{code(f'target = {name}')}\n\nthe loss's target: {field_detail(field)} of `{data}`"


def _weights_map(analysis: Analysis, name: str, span: Span) -> str | None:
    """A `@weights NAME for Model:` map, where it is declared or a `using NAME` names it."""
    from tensorloom.tools.lsp.hover import code

    if not re.search(MAP_NAME.format(re.escape(name)), analysis.line(span.line)):
        return None
    found = next((m for m in navigate.weights_maps(analysis) if m.name == name), None)
    if found is None:
        return None
    rules = f"{len(found.rules)} rules" + (f", {len(found.configs)} config lines"
                                           if found.configs else "")  # fmt: skip
    return (f"{code(f'@weights {found.name} for {found.model}')}\n\nweights map of "
            f"`{found.model}`: {rules}\n\ndeclared at {found.name_span}")  # fmt: skip


def data_fields(analysis: Analysis, name: str) -> list[DataField]:
    """The named fields of the dataset `let NAME = load_dataset(...)`, as `tlc check` read
    them from its files (none for data of `x` and `y`)."""
    from tensorloom.catalogue.data_files import DataCheck
    from tensorloom.dialects.train import DatasetOp
    from tensorloom.passes.support.dataset_files import dataset_check

    module = analysis.result.module
    for op in [] if module is None else module.walk():
        if isinstance(op, DatasetOp) and op.sym_name.data == name:
            checked = dataset_check(op)
            fields = checked.info.fields if isinstance(checked, DataCheck) else None
            return list(fields or [])
    return []


def field_detail(field: DataField) -> str:
    """`field of the data: [B, 1, 8, 8] float32`."""
    from tensorloom.catalogue.shapes import format_shape

    kind = "float32" if field.dtype == "f32" else "int64"
    shape = "[*]" if field.shape is None else format_shape(("B", *field.shape))
    return f"field of the data: {shape} {kind}"
