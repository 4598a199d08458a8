"""A `train.dataset` op's data as its files state it, read once per file (issue 15).

    checked = dataset_check(op)     # DataCheck, or DatasetError (an option without a value too)
    checked.info                    # DatasetInfo with the file's shapes, targets and classes
    checked.origin                  # "the header of `train.npz`: x [1000, 64] float32, ..."
    checked.problems                # TL0708 (absent: a warning), TL0709, TL0710

Shape inference, check-train and `tlc check`'s report all read a dataset through
here, so they see one set of shapes; check-train reports the problems. A relative
path is looked up in the working directory, then beside the program.
"""

from __future__ import annotations

from pathlib import Path

from tensorloom.catalogue.data_files import DataCheck, check_data
from tensorloom.catalogue.datasets import DatasetError, is_folder_source, lookup_dataset
from tensorloom.catalogue.pair_folders import check_folder
from tensorloom.diagnostics.ir import span_of
from tensorloom.dialects import train
from tensorloom.passes.support.model_env import EvalError, NoValue, evaluate_kwargs, name_help


def dataset_check(op: train.DatasetOp) -> DataCheck | DatasetError:
    options = evaluate_kwargs(op.options.data, {})
    if isinstance(options, NoValue):
        return _no_value(options)
    source = op.source.data if op.source is not None else None
    info = lookup_dataset(source, options)  # type: ignore[arg-type]
    if isinstance(info, DatasetError):
        return info
    span = span_of(op)
    base = Path(span.file).parent if span is not None and span.file else None
    if is_folder_source(info.name):
        return check_folder(info, base)
    return check_data(info, base)


def _no_value(option: NoValue) -> DatasetError:
    """TL0703: an option whose expression has no value, or that is a call."""
    key, value = option.key, option.why
    why = value.message if isinstance(value, EvalError) else f"a call of `{value.name}`"
    help_text = name_help(value) if isinstance(value, EvalError) else None
    return DatasetError("TL0703", f"option `{key}` has no value: {why}", key, help_text)
