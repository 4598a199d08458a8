"""What a data file says about itself, read at check time without loading its samples.

    facts = read_facts(Path("train.npz"))
    facts.sample_shape   # (64,): x.npy's header shape without its first (sample) axis
    facts.targets        # "indices" (integer labels) or "floats" (regression targets)
    facts.num_classes    # the largest label + 1, from y's values (the labels only)

The formats are the runtime's (`tensorloom/backends/runtime/data.py`, `tokens.py`):

- `.npz`: a zip holding `x.npy` and `y.npy`. The samples' header (the documented .npy
  format: magic, version, a header dict with `descr`, `fortran_order`, `shape`) is read,
  never its data; the labels are read for their range, up to `MAX_LABEL_BYTES`.
- `.csv`: the header row names the columns (the features are every column but
  `target=`); the rows are counted and the target column read for its type and classes,
  streamed, up to `MAX_CSV_BYTES`.
- a token file (`load_dataset("tokens", path="train.bin", dtype=...)`): its size, which
  must be whole tokens and more than one window.

- `.pt` (`torch.save` of a dict of tensors, or of `(x, y)`): its pickle is read for the
  tensors' dtypes and shapes by a restricted unpickler (`torch_files.py`: no code from the
  file runs); of its storages only `y`'s, an integer tensor's, for its labels' range.
Nothing here imports numpy or torch. A problem is a `FileProblem` (the caller turns it
into a diagnostic); an absent file is `None` from `find_file`. The reading this shares with
a folder of pairs (finding the file, .npy headers, the cache) is `file_heads.py`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from zipfile import ZipFile

from tensorloom.catalogue.datasets import (
    CLASSIFICATION,
    LM_SOURCES,
    REGRESSION,
    SEQUENCE,
    UNKNOWN_TASK,
    DataField,
    DatasetInfo,
    is_file_source,
)
from tensorloom.catalogue.file_heads import (
    FLOAT_DESCRS,
    INTEGER_DESCRS,
    ArrayHeader,
    FileProblem,
    ReadCache,
    cannot_read,
    element_type,
    find_place,
    read_npy_header,
)

MAX_LABEL_BYTES = 64 * 1024 * 1024  # the labels array read for its range
MAX_CSV_BYTES = 64 * 1024 * 1024  # a larger .csv: header only, no row count or classes
INDICES = "indices"
FLOATS = "floats"

_STRUCT = {"i8": "q", "i4": "i", "i2": "h", "i1": "b", "u1": "B", "b1": "?"}
TOKEN_SIZES = {"uint16": 2, "uint32": 4}


@dataclass(frozen=True, slots=True)
class FileFacts:
    """A data file's samples and targets, as its headers (and labels) state them."""

    path: str
    what: str  # where the figures come from, for `tlc check`'s report
    count: int | None  # samples
    sample_shape: tuple[int, ...] | None
    sample_dtype: str | None  # "float32", "int64", ...
    targets: str | None  # INDICES or FLOATS
    target_shape: tuple[int, ...] | None
    num_classes: int | None  # integer labels: the largest + 1 (words: how many)
    tokens: int | None = None  # a token file: how many
    fields: tuple[FileField, ...] | None = None  # a .npz: every array, in the archive's order
    layout: FileProblem | None = None  # why the file cannot feed (x, y) to a `loss` block


@dataclass(frozen=True, slots=True)
class FileField:
    """One array of a .npz: its name, one sample's shape, its numpy dtype, its rows."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # "float32", "int64", ...
    count: int


COUNTS_DISAGREE = "TL0711"  # a .npz's arrays have different numbers of rows
SCALAR_FIELD = "TL0712"  # a .npz array without a sample axis
NOT_TENSORS = "TL0719"  # a .pt whose pickle holds something other than tensors


def find_file(path: str, base: Path | None) -> Path | None:
    """`path` as the emitted script will open it (`file_heads.find_place`); None if absent."""
    return find_place(path, base)


def read_facts(path: Path, target: str | None = None) -> FileFacts | FileProblem:
    """The facts of a `.npz` or `.csv` dataset file (`target` names a .csv's label column)."""
    try:
        if path.suffix == ".npz":
            return _npz_facts(path)
        if path.suffix == ".csv":
            return _csv_facts(path, target)
        if path.suffix == ".pt":
            return _pt_facts(path)
    except OSError as error:
        return cannot_read(path, error)
    return FileProblem(f"the shapes of `{path}` are not read at check time")


# --- .npy / .npz ---------------------------------------------------------------------------


def _npz_facts(path: Path) -> FileFacts | FileProblem:
    """Every array's header; with arrays `x` and `y`, the (x, y) facts too (labels read)."""
    import zipfile  # here, not at the top: a check without data files does not pay for it

    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        return FileProblem(
            f"`{path}` is not a .npz archive", "save it with `np.savez(path, x=x, y=y)`"
        )
    with archive:
        try:
            headers = _npz_headers(path, archive)
            if isinstance(headers, FileProblem):
                return headers
            if "x" not in headers or "y" not in headers:
                fields = _fields(path, headers)
                return fields if isinstance(fields, FileProblem) else _named_facts(path, fields)
            y_info = archive.getinfo("y.npy")
            with archive.open("y.npy") as member:
                y = read_npy_header(member)
                assert not isinstance(y, FileProblem), "read once already"
                labels = _labels(member, y[0], y_info.file_size - y[1])
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as error:
            return FileProblem(f"`{path}` is a damaged .npz archive: {error}")
    facts = _array_facts(path, headers["x"], headers["y"], labels)
    if isinstance(facts, FileProblem):
        return facts
    fields = _fields(path, headers)
    return fields if isinstance(fields, FileProblem) else replace(facts, fields=fields)


def _npz_headers(path: Path, archive: ZipFile) -> dict[str, ArrayHeader] | FileProblem:
    """Each `NAME.npy` member's header, by NAME, in the archive's order."""
    headers: dict[str, ArrayHeader] = {}
    for name in archive.namelist():
        if not name.endswith(".npy"):
            continue
        with archive.open(name) as member:
            header = read_npy_header(member)
        field = name.removesuffix(".npy")
        if isinstance(header, FileProblem):
            return FileProblem(f"`{path}`'s `{field}`: {header.message}", header.help)
        headers[field] = header[0]
    return headers


def _fields(path: Path, headers: dict[str, ArrayHeader]) -> tuple[FileField, ...] | FileProblem:
    """The arrays as fields: one row per sample each, every array the same number of rows."""
    if not headers:
        return FileProblem(f"`{path}` holds no arrays", _save_help(path, "x=x, y=y"))
    fields: list[FileField] = []
    for name, header in headers.items():
        if not header.shape:
            return FileProblem(
                f"`{path}`'s `{name}` is a scalar, not an array of samples",
                "save one row per sample: an array of shape [N, ...]",
                SCALAR_FIELD,
            )
        fields.append(FileField(name, header.shape[1:], header.dtype, header.shape[0]))
    first = fields[0]
    for other in fields[1:]:
        if other.count != first.count:
            return FileProblem(
                f"`{path}` holds {first.count:,} samples of `{first.name}` but {other.count:,} "
                f"of `{other.name}`",
                "every array of a dataset needs one row per sample",
                COUNTS_DISAGREE,
            )
    return tuple(fields)


def _named_facts(path: Path, fields: tuple[FileField, ...]) -> FileFacts:
    """A .npz of named arrays, without `x` and `y`: its fields and their count only."""
    listed = ", ".join(f"{f.name} {list(f.shape)} {f.dtype}" for f in fields)
    what = f"the header of `{path}`: {listed}"
    layout = FileProblem(
        f"`{path}` must hold arrays named `x` and `y`; it holds "
        + ", ".join(f"`{f.name}`" for f in fields),
        _save_help(path, "x=samples, y=targets"),
    )
    return FileFacts(
        str(path), what, fields[0].count, None, None, None, None, None, fields=fields,
        layout=layout,
    )  # fmt: skip


def _save_help(path: Path, arrays: str) -> str:
    if path.suffix == ".pt":
        return "save it with `torch.save((samples, targets), path)`"
    return f"save it with `np.savez(path, {arrays})`"


def _pt_facts(path: Path) -> FileFacts | FileProblem:
    """A torch.save file's tensors, from its pickle (`torch_files.py`), as a .npz's arrays:
    `x` and `y` (a saved `(x, y)` too) are samples and targets, other names fields."""
    from tensorloom.catalogue.torch_files import read_pt_headers, read_pt_labels

    tensors = read_pt_headers(path)
    if not isinstance(tensors, dict):
        return FileProblem(tensors.message, tensors.help, NOT_TENSORS if tensors.foreign else None)
    headers = {name: ArrayHeader(t.dtype, t.shape) for name, t in tensors.items()}
    fields = _fields(path, headers)
    if isinstance(fields, FileProblem) or "x" not in headers or "y" not in headers:
        return fields if isinstance(fields, FileProblem) else _named_facts(path, fields)
    labels = read_pt_labels(path, tensors["y"])
    if not isinstance(labels, int | None):
        return FileProblem(labels.message, labels.help)
    facts = _array_facts(path, headers["x"], headers["y"], labels)
    return facts if isinstance(facts, FileProblem) else replace(facts, fields=fields)


def _labels(stream: IO[bytes], header: ArrayHeader, size: int) -> int | FileProblem | None:
    """The largest integer label + 1 (0 for no labels); None for float targets or too many."""
    if header.descr not in INTEGER_DESCRS or size > MAX_LABEL_BYTES:
        return None
    width = INTEGER_DESCRS[header.descr]
    count = _product(header.shape)
    data = stream.read(count * width)
    if len(data) < count * width:
        return FileProblem(f"`y` holds {len(data) // width:,} labels, its header says {count:,}")
    if count == 0:
        return 0
    values = struct.unpack(f"<{count}{_STRUCT[header.descr]}", data)
    low = min(values)
    if low < 0:
        return FileProblem(f"`y` has a negative class label ({low})", "class labels count from 0")
    return int(max(values)) + 1


def _array_facts(
    path: Path, x: ArrayHeader, y: ArrayHeader, labels: int | FileProblem | None
) -> FileFacts | FileProblem:
    if isinstance(labels, FileProblem):
        return FileProblem(f"`{path}`'s {labels.message}", labels.help)
    if not x.shape:
        return FileProblem(f"`{path}`'s `x` is a scalar, not an array of samples")
    if not y.shape:
        return FileProblem(f"`{path}`'s `y` is a scalar, not an array of targets")
    if x.shape[0] != y.shape[0]:
        return FileProblem(
            f"`{path}` holds {x.shape[0]:,} samples (`x`) but {y.shape[0]:,} targets (`y`)",
            "`x` and `y` need one row per sample",
        )
    floats = y.descr in FLOAT_DESCRS or "float" in y.dtype  # a .pt's header: dtype names
    what = f"the header of `{path}`: x {list(x.shape)} {x.dtype}, y {list(y.shape)} {y.dtype}"
    if isinstance(labels, int) and not floats:
        what += f", labels 0..{labels - 1}" if labels else ""
    return FileFacts(
        str(path), what, x.shape[0], x.shape[1:], x.dtype, FLOATS if floats else INDICES,
        y.shape[1:], None if floats else labels,
    )  # fmt: skip


# --- .csv ------------------------------------------------------------------------------------


def _csv_facts(path: Path, target: str | None) -> FileFacts | FileProblem:
    import csv

    size = path.stat().st_size
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle)
        try:
            columns = next(reader, None)
        except csv.Error as error:
            return FileProblem(f"`{path}` is not a .csv file: {error}")
        if not columns:
            return FileProblem(f"`{path}` is empty: a .csv dataset starts with a header row")
        if target is None or target not in columns:
            listed = ", ".join(f"`{c}`" for c in columns[:12]) + (
                " ..." if len(columns) > 12 else ""
            )
            return FileProblem(
                f"`{path}` has no column `{target}`: its columns are {listed}",
                "`target=` names the label column of the header row",
            )
        features = len(columns) - 1
        if size > MAX_CSV_BYTES:
            what = f"the header of `{path}`: {features} feature columns (rows not counted)"
            return FileFacts(str(path), what, None, (features,), "float32", None, (), None)
        return _csv_rows(path, reader, columns.index(target), features)


def _csv_rows(
    path: Path, reader: Iterator[list[str]], column: int, features: int
) -> FileFacts | FileProblem:
    count = 0
    integers: list[int] = []
    kind = INDICES
    words: set[str] = set()
    import csv

    try:
        for row in reader:
            if not row:
                continue
            count += 1
            if len(row) != features + 1:
                return FileProblem(
                    f"row {count + 1} of `{path}` has {len(row)} columns, the header {features + 1}"
                )
            value = row[column].strip()
            kind = _csv_value(value, kind, integers, words)
    except csv.Error as error:
        return FileProblem(f"`{path}` is not a .csv file: {error}")
    classes: int | None = None
    if kind == INDICES and integers:
        classes = max(integers) + 1 if min(integers) >= 0 else None
    elif kind == "words":
        classes, kind = len(words), INDICES
    targets = None if kind == FLOATS and not count else kind
    what = f"`{path}`: {count:,} rows, {features} feature columns"
    if targets == FLOATS:
        what += ", float targets"
    elif classes is not None:
        what += f", {classes} classes"
    return FileFacts(str(path), what, count, (features,), "float32", targets, (), classes)


def _csv_value(value: str, kind: str, integers: list[int], words: set[str]) -> str:
    """The target column's kind so far (the runtime's rule: ints, else floats, else words)."""
    words.add(value)
    if kind == INDICES:
        try:
            integers.append(int(value))
            return INDICES
        except ValueError:
            kind = FLOATS
    if kind == FLOATS:
        try:
            float(value)
            return FLOATS
        except ValueError:
            return "words"
    return "words"


# --- token files ---------------------------------------------------------------------


def token_count(path: Path, dtype: str) -> int | FileProblem:
    """How many tokens of `dtype` a token file holds, from its size."""
    size = path.stat().st_size
    width = TOKEN_SIZES.get(dtype, 2)
    if size % width:
        return FileProblem(
            f"`{path}` is {size:,} bytes, not a whole number of {dtype} tokens",
            f"is `dtype=` right? {dtype} tokens are {width} bytes each",
        )
    return size // width


def _product(shape: tuple[int, ...]) -> int:
    size = 1
    for dim in shape:
        size *= dim
    return size


# --- the dataset as its files state it -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DataCheck:
    """A dataset after its files were read: the info, where its shapes came from, problems."""

    info: DatasetInfo
    origin: str
    problems: tuple[DatasetProblem, ...] = ()
    # A .npz of named arrays without `x` and `y`: a problem only for a `loss` block, which
    # feeds the model `x` (TL0710); a block of objectives takes the arrays by name.
    layout: DatasetProblem | None = None


@dataclass(frozen=True, slots=True)
class DatasetProblem:
    code: str  # TL0708 (a warning: the file is absent), TL0709 to TL0712, TL0714
    message: str
    option: str | None = None  # the keyword at fault; None: the dataset's source
    help: str | None = None

    @property
    def is_warning(self) -> bool:
        return self.code == ABSENT


def dataset_problem(
    problem: FileProblem, default: str, option: str | None = None
) -> DatasetProblem:
    """A file's problem as the dataset's: its own code, else `default`."""
    return DatasetProblem(problem.code or default, problem.message, option, problem.help)


ABSENT = "TL0708"  # the file is not there at check time: a warning
CONTRADICTS = "TL0709"  # the file contradicts a declaration, or cannot feed the program
UNREADABLE = "TL0710"  # the file is not in the format its suffix says
MISSING_FIELD = "TL0714"  # `fields=` names an array the file does not hold


def _file_stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


_FILES = ReadCache[FileFacts](_file_stamp)


def check_data(info: DatasetInfo, base: Path | None) -> DataCheck:
    """`info` (from `lookup_dataset`) with what its files say; `base` is the program's folder."""
    if info.synthetic:
        return DataCheck(info, "synthetic data: shapes from the model")
    if info.name in LM_SOURCES:
        return _token_data(info, base)
    if not is_file_source(info.name):
        return DataCheck(info, f"the catalogue's `{info.name}`")
    declared = _declared(info)
    found = find_file(info.name, base)
    if found is None:
        problem = DatasetProblem(
            ABSENT,
            f"`{info.name}` is not there at check time: the model is not checked against it",
            None,
            "if the data lives on the training machine, declare `sample_shape=[...]` "
            "(and `num_classes=`) to check the model",
        )
        return DataCheck(info, f"{declared} (`{info.name}` not found)", (problem,))
    target = info.options.get("target")
    column = target if isinstance(target, str) else None
    facts = _FILES.read(found, (column,), lambda: read_facts(found, column))
    if isinstance(facts, FileProblem):
        return DataCheck(info, declared, (dataset_problem(facts, UNREADABLE),))
    return _with_facts(info, facts)


def _declared(info: DatasetInfo) -> str:
    if info.sample_shape is None:
        return "no shapes known"
    return f"declared `sample_shape={list(info.sample_shape)}`"


def _data_fields(facts: FileFacts) -> tuple[DataField, ...] | None:
    """A .npz's arrays as the fields a batch carries: float arrays are f32, others (integer,
    bool) int64, as the runtime's `_as_features` converts them."""
    if facts.fields is None:
        return None
    return tuple(DataField(f.name, f.shape, element_type(f.dtype)) for f in facts.fields)


def _named_arrays(info: DatasetInfo, facts: FileFacts) -> DataCheck:
    """A .npz without `x` and `y`: its arrays are its fields, by name."""
    assert facts.layout is not None
    layout = DatasetProblem(UNREADABLE, facts.layout.message, None, facts.layout.help)
    updated = replace(info, fields=_data_fields(facts), task=UNKNOWN_TASK)
    return DataCheck(updated, facts.what, layout=layout)


def _declared_fields(info: DatasetInfo, facts: FileFacts) -> DataCheck | None:
    """`fields=["image", "text"]` against the file's arrays: those, with the file's shapes,
    or TL0714 for a name the file lacks."""
    declared = info.options.get("fields")
    if not isinstance(declared, list) or facts.fields is None:
        return None
    held = {f.name: f for f in facts.fields}
    missing = [str(n) for n in declared if n not in held]
    if missing:
        listed = ", ".join(f"`{n}`" for n in held)
        message = f"`{info.name}` has no array `{missing[0]}`: it holds {listed}"
        problem = DatasetProblem(MISSING_FIELD, message, "fields", "name arrays the file holds")
        return DataCheck(info, facts.what, (problem,))
    chosen = tuple(held[str(n)] for n in declared)
    fields = _data_fields(replace(facts, fields=chosen))
    return DataCheck(replace(info, fields=fields), facts.what)


def _with_facts(info: DatasetInfo, facts: FileFacts) -> DataCheck:
    declared = _declared_fields(info, facts)
    if declared is not None:
        return declared
    if facts.layout is not None:
        return _named_arrays(info, facts)
    problems: list[DatasetProblem] = []
    declared_shape = info.options.get("sample_shape")
    shape = facts.sample_shape
    if isinstance(declared_shape, list) and shape is not None and tuple(declared_shape) != shape:
        problems.append(DatasetProblem(
            CONTRADICTS,
            f"`sample_shape={declared_shape}` contradicts `{info.name}`, whose samples are "
            f"{list(shape)}",
            "sample_shape",
            f"write `sample_shape={list(shape)}`, or leave it out: the file's header says it",
        ))  # fmt: skip
    declared_classes = info.options.get("num_classes")
    if isinstance(declared_classes, int) and not isinstance(declared_classes, bool):
        if facts.targets == FLOATS:
            problems.append(DatasetProblem(
                CONTRADICTS,
                f"`num_classes={declared_classes}`, but `{info.name}`'s targets are floats "
                "(regression), not class labels",
                "num_classes",
                "leave `num_classes=` out, or save integer class labels as `y`",
            ))  # fmt: skip
        elif facts.num_classes is not None and facts.num_classes > declared_classes:
            problems.append(DatasetProblem(
                CONTRADICTS,
                f"`num_classes={declared_classes}`, but `{info.name}`'s labels run up to "
                f"{facts.num_classes - 1}: {facts.num_classes} classes",
                "num_classes",
                f"write `num_classes={facts.num_classes}`",
            ))  # fmt: skip
    if problems:
        return DataCheck(info, facts.what, tuple(problems))
    floats = facts.targets == FLOATS
    classes = info.num_classes if info.num_classes is not None else facts.num_classes
    target_shape = facts.target_shape if facts.target_shape is not None else info.target_shape
    task = REGRESSION if floats else CLASSIFICATION if facts.targets == INDICES else info.task
    if facts.targets == INDICES and target_shape:
        task = SEQUENCE
    dtype = "f32" if facts.sample_dtype is None else element_type(facts.sample_dtype)
    updated = replace(
        info,
        sample_shape=facts.sample_shape if facts.sample_shape is not None else info.sample_shape,
        dtype=dtype,
        num_classes=None if floats else classes,
        target_shape=target_shape,
        target_dtype="f32" if floats else "i64",
        task=task,
        fields=_data_fields(facts),
    )
    return DataCheck(updated, facts.what)


STDLIB_CORPUS = "stdlib"  # `load_dataset("text", path="stdlib")`: Python's own library source


def _token_data(info: DatasetInfo, base: Path | None) -> DataCheck:
    path = info.options.get("path")
    windows = f"`{info.name}`: windows of `block_size={info.block_size}` tokens"
    if info.name == "words":
        windows = (f"`words`: `batch_size` streams of words, windows of "
                   f"`block_size={info.block_size}` in order")  # fmt: skip
    if not isinstance(path, str) or (info.name != "tokens" and path == STDLIB_CORPUS):
        return DataCheck(info, windows)
    found = find_file(path, base)
    if found is None:
        what = "tokens" if info.name == "tokens" else "text"
        problem = DatasetProblem(
            ABSENT,
            f"`{path}` is not there at check time: its size is not checked",
            "path",
            f"fine if the {what} lives on the training machine; the run stops if it is not there",
        )
        return DataCheck(info, f"`block_size` (`{path}` not found)", (problem,))
    if info.name != "tokens":
        return DataCheck(info, windows)
    dtype = info.options.get("dtype", "uint16")
    count = token_count(found, dtype if isinstance(dtype, str) else "uint16")
    if isinstance(count, FileProblem):
        return DataCheck(info, "", (dataset_problem(count, UNREADABLE, "path"),))
    block = info.block_size or 0
    origin = f"`{path}`: {count:,} {dtype} tokens, windows of `block_size` {block}"
    if count < block + 1:
        problem = DatasetProblem(
            CONTRADICTS,
            f"`{path}` holds {count:,} tokens, fewer than one window (`block_size` + 1 = "
            f"{block + 1:,})",
            "block_size",
            "use a smaller `block_size`, or more data",
        )
        return DataCheck(info, origin, (problem,))
    return DataCheck(info, origin)
