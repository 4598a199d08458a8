"""What the compiler knows statically about each dataset `load_dataset(...)` can name.

    let data = load_dataset("digits", flatten=true)

    lookup_dataset("digits", {"flatten": True})
    # DatasetInfo(name="digits", sample_shape=(64,), dtype="f32", num_classes=10,
    #             target_shape=(), target_dtype="i64", task="classification", ...)

Shape inference uses `sample_shape` (one sample, without the batch dimension) and
`dtype` as the model's input, and the loss checks use `num_classes`, `target_shape`
and `task`. Language-model data (`load_dataset("text", path=..., block_size=256)`,
`load_dataset("tokens", path="train.bin", block_size=1024, vocab=50257)`) has
samples `(block_size,)` of int64 tokens, per-token targets `(block_size,)` and
`num_classes` the vocabulary; `DatasetInfo.block_size` is that T. A file path's
shapes are unknown (None) unless the user annotates them with `sample_shape=[...]`
and `num_classes=...`. `load_dataset()` with no source
is synthetic: its shapes are taken from the model by the caller.

The figures here must agree with `tensorloom/backends/runtime/data.py`, which
loads the data in the emitted script; `tests/unit/dialects/test_datasets.py`
checks that they do. This module never imports torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tensorloom.diagnostics.core import did_you_mean

# An option's value as the compiler sees it: a literal from the `.tl` source.
OptionValue = bool | int | float | str | list[int] | list[str]

CLASSIFICATION = "classification"
SEQUENCE = "sequence"
REGRESSION = "regression"
UNKNOWN_TASK = "unknown"

FILE_SUFFIXES = (".npz", ".pt", ".csv")


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One keyword `load_dataset` accepts for a source: its type, default, meaning."""

    name: str
    kind: str  # "bool", "int", "float", "str", "shape" (positive ints) or "names" (strings)
    default: OptionValue | None
    doc: str
    runtime: bool = True  # False: a compile-time annotation the script never receives


@dataclass(frozen=True, slots=True)
class DataField:
    """One named tensor each sample of a dataset holds: `image` [1, 8, 8] f32."""

    name: str
    shape: tuple[int, ...] | None  # one sample's, without the batch dimension; None: unknown
    dtype: str  # "f32" or "i64", as in `!nml.tensor`


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """A dataset's samples as the compiler sees them; None where unknown until run time."""

    name: str
    sample_shape: tuple[int, ...] | None
    dtype: str  # element type of a sample, as in `!nml.tensor`: "f32" or "i64"
    num_classes: int | None
    target_shape: tuple[int, ...] | None  # () for one class per sample, (T,) per token
    target_dtype: str
    task: str
    default_split: str
    synthetic: bool = False
    options: dict[str, OptionValue] = field(default_factory=dict[str, OptionValue])
    # Data of named tensors (a .npz's arrays, `digits-captions`): each field, in the file's
    # order; None for (x, y) data, whose fields are the samples and the targets.
    fields: tuple[DataField, ...] | None = None

    def field_named(self, name: str) -> DataField | None:
        return next((f for f in self.fields or () if f.name == name), None)

    @property
    def block_size(self) -> int | None:
        """The sequence length T of language-model data (its windows), else None."""
        value = self.options.get("block_size") if self.name in LM_SOURCES else None
        return value if isinstance(value, int) else None

    def runtime_kwargs(self) -> dict[str, OptionValue]:
        """The keyword arguments the emitted `load_dataset(...)` call receives."""
        specs = _options_of(self.name)
        return {k: v for k, v in self.options.items() if k not in specs or specs[k].runtime}


@dataclass(frozen=True, slots=True)
class DatasetError:
    """Why a `load_dataset(...)` call is wrong; the caller turns it into a Diagnostic."""

    code: str
    message: str
    option: str | None = None  # the keyword at fault; None: the dataset name itself
    help: str | None = None


# --- the options each source accepts ---------------------------------------------------

_FLATTEN = OptionSpec("flatten", "bool", False, "flatten each sample to one dimension")
_DATA_ROOT = OptionSpec("data_root", "str", None, "directory holding the dataset's files")
_DOWNLOAD = OptionSpec("download", "bool", True, "download missing files when possible")
_VAL_FRACTION = OptionSpec("val_fraction", "float", 0.1, "share of samples held out")
_SPLIT_SEED = OptionSpec("split_seed", "int", 0, "seed of the train/validation split")
_SIZE = OptionSpec("size", "int", None, "number of samples generated")
_SEED = OptionSpec("seed", "int", 0, "seed of the generated data")

_IMAGE_OPTIONS = (_FLATTEN, _DATA_ROOT, _DOWNLOAD)
_HOLD_OUT_OPTIONS = (_VAL_FRACTION, _SPLIT_SEED)
_SEQUENCE_OPTIONS = (
    OptionSpec("vocab", "int", 16, "number of distinct tokens"),
    OptionSpec("length", "int", 12, "tokens per sequence"),
    OptionSpec("size", "int", 4096, "number of sequences"),
    _SEED,
    *_HOLD_OUT_OPTIONS,
)
_FILE_OPTIONS = (
    OptionSpec("target", "str", None, "the label column of a .csv file"),
    OptionSpec("fields", "names", None, "the arrays of a .npz or .pt to load, by name"),
    OptionSpec("sample_shape", "shape", None, "the shape of one sample", runtime=False),
    OptionSpec("num_classes", "int", None, "the number of classes", runtime=False),
    *_HOLD_OUT_OPTIONS,
)
_BLOCK_SIZE = OptionSpec("block_size", "int", None, "tokens per window: the model's T")
_WINDOWS = OptionSpec(
    "windows_per_epoch", "int", None, "random windows per training epoch (default: whole windows)"
)
_TEXT_OPTIONS = (
    OptionSpec("path", "str", None, 'a text file, or "stdlib": the Python standard library'),
    _BLOCK_SIZE,
    OptionSpec("val_fraction", "float", 0.1, "share of the file, at its end, held out"),
    OptionSpec("max_bytes", "int", None, "read at most this many bytes (stdlib: 16,000,000)"),
    _WINDOWS,
)
_TOKEN_OPTIONS = (
    OptionSpec("path", "str", None, "nanoGPT's train.bin; val.bin lies beside it"),
    _BLOCK_SIZE,
    OptionSpec("dtype", "str", "uint16", "element type of the token ids: uint16 or uint32"),
    OptionSpec("vocab", "int", None, "number of distinct tokens (50257 for GPT-2's BPE)"),
    _WINDOWS,
)
_WORD_OPTIONS = (
    OptionSpec("path", "str", None, 'a text file, or "stdlib": the Python standard library'),
    _BLOCK_SIZE,
    OptionSpec("vocab", "int", 10000, "words kept: the most frequent, `<unk>` for the rest"),
    OptionSpec("val_fraction", "float", 0.1, "share of the words, at the end, held out"),
    OptionSpec("max_bytes", "int", None, "read at most this many bytes (stdlib: 16,000,000)"),
)
_FOLDER_OPTIONS = (
    OptionSpec("fields", "names", None, "the field folders to load, by name (default: all)"),
    OptionSpec("text", "str", "bytes", 'how .txt files read: "bytes" (ids 0-255) or "words"'),
    OptionSpec("length", "int", None, "tokens per .txt file, cut or padded (default: the longest)"),
    OptionSpec("vocab", "int", 10000, 'words kept with `text="words"`, `<unk>` for the rest'),
    *_HOLD_OUT_OPTIONS,
)
_SYNTHETIC_OPTIONS = (
    OptionSpec("size", "int", 2048, "number of samples generated"),
    _SEED,
    *_HOLD_OUT_OPTIONS,
)


@dataclass(frozen=True, slots=True)
class _Source:
    sample_shape: tuple[int, ...]
    dtype: str
    num_classes: int
    task: str
    default_split: str
    options: tuple[OptionSpec, ...]


_HOLD_OUT = "a seeded random hold-out of `val_fraction` (default 0.1)"
_NAMED: dict[str, _Source] = {
    "digits": _Source(
        (1, 8, 8), "f32", 10, CLASSIFICATION, _HOLD_OUT, (_FLATTEN, *_HOLD_OUT_OPTIONS)
    ),
    "mnist": _Source(
        (1, 28, 28), "f32", 10, CLASSIFICATION, "the official test set", _IMAGE_OPTIONS
    ),
    "fashion-mnist": _Source(
        (1, 28, 28), "f32", 10, CLASSIFICATION, "the official test set", _IMAGE_OPTIONS
    ),
    "cifar10": _Source(
        (3, 32, 32), "f32", 10, CLASSIFICATION, "the official test batch", _IMAGE_OPTIONS
    ),
}
PAIRED_SOURCES = ("digits-captions",)
"""Named-field data built in: scikit-learn's digits, each with a caption (runtime/data.py)."""
CAPTION_LENGTH = 4  # digit, ink, horizontal place, vertical place
CAPTION_VOCAB = 19  # 10 digit words and three words for each of the three properties
SEQUENCE_TASKS = ("reverse", "sort", "copy")
LM_SOURCES = ("text", "tokens", "words")
"""Language-model data (runtime/tokens.py): windows of `block_size` tokens, next-token targets."""
ORDERED_SOURCES = ("words",)
"""Data whose batches continue one another (`batch_size` streams, windows in order), which a
train block's `carry` needs."""
WORDS_VOCAB = 10000  # the `words` dataset's default vocabulary, `<unk>` included
DATASET_NAMES = (*_NAMED, *PAIRED_SOURCES, *SEQUENCE_TASKS, *LM_SOURCES)
TEXT_VOCAB = 256  # one token per byte
TOKEN_DTYPES = ("uint16", "uint32")
FOLDER_TEXTS = ("bytes", "words")  # how a folder of pairs reads its .txt files


def _options_of(name: str | None) -> dict[str, OptionSpec]:
    if name is None or name == "synthetic":
        specs = _SYNTHETIC_OPTIONS
    elif name in _NAMED:
        specs = _NAMED[name].options
    elif name in PAIRED_SOURCES:
        specs = (_FLATTEN, *_HOLD_OUT_OPTIONS)
    elif name in SEQUENCE_TASKS:
        specs = _SEQUENCE_OPTIONS
    elif name == "text":
        specs = _TEXT_OPTIONS
    elif name == "tokens":
        specs = _TOKEN_OPTIONS
    elif name == "words":
        specs = _WORD_OPTIONS
    elif is_folder_source(name):
        specs = _FOLDER_OPTIONS
    else:
        specs = _FILE_OPTIONS
    return {spec.name: spec for spec in specs}


def accepted_options(name: str | None) -> dict[str, OptionSpec]:
    """The keywords `load_dataset(name, ...)` accepts, by name."""
    return _options_of(name)


# --- lookup ----------------------------------------------------------------------------


def lookup_dataset(
    name: str | None, options: Mapping[str, OptionValue]
) -> DatasetInfo | DatasetError:
    """What `load_dataset(name, **options)` yields, or why the call is wrong."""
    if name is not None and not is_file_source(name) and name not in DATASET_NAMES:
        return _unknown_name(name)
    error = check_options(name, options)
    if error is not None:
        return error
    values = dict(options)
    if name is None:
        return _synthetic_info(values)
    if name in SEQUENCE_TASKS:
        return _sequence_info(name, values)
    if name in LM_SOURCES:
        return _lm_info(name, values)
    if name in _NAMED:
        return _named_info(name, values)
    if name in PAIRED_SOURCES:
        return _captions_info(name, values)
    if is_folder_source(name):
        return _folder_info(name, values)
    return _file_info(name, values)


def is_file_source(name: str) -> bool:
    return name.endswith(FILE_SUFFIXES) or "/" in name or "\\" in name


def is_folder_source(name: str) -> bool:
    """A folder of pairs, written with its trailing slash: `load_dataset("pairs/")`."""
    return name.endswith(("/", "\\"))


def _unknown_name(name: str) -> DatasetError:
    suggestion = did_you_mean(name, DATASET_NAMES)
    help_text = (
        f"did you mean `{suggestion}`?"
        if suggestion
        else f"use one of {_listing(DATASET_NAMES)}, or a .npz, .pt or .csv file path"
    )
    return DatasetError("TL0701", f"unknown dataset `{name}`", None, help_text)


def check_options(name: str | None, options: Mapping[str, OptionValue]) -> DatasetError | None:
    """The first unknown, mistyped or out-of-range option, in the order given."""
    specs = _options_of(name)
    for key, value in options.items():
        spec = specs.get(key)
        error = _unknown_option(name, key, specs) if spec is None else _check_value(spec, value)
        if error is not None:
            return error
    return None


def _unknown_option(name: str | None, key: str, specs: dict[str, OptionSpec]) -> DatasetError:
    source = f"`{name}`" if name is not None else "synthetic data"
    suggestion = did_you_mean(key, specs)
    help_text = f"did you mean `{suggestion}`?" if suggestion else f"accepted: {_listing(specs)}"
    return DatasetError("TL0702", f"{source} has no option `{key}`", key, help_text)


def _check_value(spec: OptionSpec, value: OptionValue) -> DatasetError | None:
    if not _has_kind(value, spec.kind):
        message = f"option `{spec.name}` expects {_KIND_WORDS[spec.kind]}, got `{value!r}`"
        return DatasetError("TL0703", message, spec.name)
    return _check_range(spec.name, value)


_KIND_WORDS = {
    "bool": "`true` or `false`",
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "shape": "a list of positive integers",
    "names": 'a list of names, as in `["image", "text"]`',
}


def _has_kind(value: OptionValue, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "names":
        return isinstance(value, list) and bool(value) and all(_is_name(v) for v in value)
    return isinstance(value, list) and all(_is_positive_int(v) for v in value)


def _is_name(value: object) -> bool:
    return isinstance(value, str) and value.isidentifier()


def _is_positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


_POSITIVE = ("vocab", "length", "size", "num_classes", "block_size", "max_bytes",
             "windows_per_epoch")  # fmt: skip


def _check_range(key: str, value: OptionValue) -> DatasetError | None:
    if key == "val_fraction" and not 0.0 <= float(value) < 1.0:  # type: ignore[arg-type]
        return DatasetError("TL0704", f"`val_fraction` must be in [0, 1), got {value}", key)
    if key == "vocab" and isinstance(value, int) and value < 2:
        return DatasetError("TL0704", f"`vocab` must be at least 2, got {value}", key)
    if key == "text" and value not in FOLDER_TEXTS:
        message = f'`text` must be "bytes" or "words", got `{value}`'
        return DatasetError("TL0704", message, key, 'write `text="bytes"` or `text="words"`')
    if key == "dtype" and value not in TOKEN_DTYPES:
        message = f"`dtype` of token ids must be `uint16` or `uint32`, got `{value}`"
        return DatasetError("TL0704", message, key, 'nanoGPT writes `dtype="uint16"`')
    if key in _POSITIVE and isinstance(value, int) and value < 1:
        return DatasetError("TL0704", f"`{key}` must be positive, got {value}", key)
    return None


def _named_info(name: str, options: dict[str, OptionValue]) -> DatasetInfo:
    source = _NAMED[name]
    shape = source.sample_shape
    if options.get("flatten", False):
        shape = (_product(shape),)
    return DatasetInfo(
        name, shape, source.dtype, source.num_classes, (), "i64", source.task,
        source.default_split, options=options,
    )  # fmt: skip


def _captions_info(name: str, options: dict[str, OptionValue]) -> DatasetInfo:
    """`digits-captions`: `image` [1, 8, 8] (flattened [64]), `text` [4] caption tokens over
    `CAPTION_VOCAB` words, `label` [] the digit."""
    image = (64,) if options.get("flatten", False) else (1, 8, 8)
    fields = (
        DataField("image", image, "f32"),
        DataField("text", (CAPTION_LENGTH,), "i64"),
        DataField("label", (), "i64"),
    )
    return DatasetInfo(
        name, None, "f32", None, None, "i64", UNKNOWN_TASK, _HOLD_OUT, options=options,
        fields=fields,
    )  # fmt: skip


def _sequence_info(name: str, options: dict[str, OptionValue]) -> DatasetInfo:
    specs = _options_of(name)
    length = int(options.get("length", specs["length"].default))  # type: ignore[arg-type]
    vocab = int(options.get("vocab", specs["vocab"].default))  # type: ignore[arg-type]
    return DatasetInfo(
        name, (length,), "i64", vocab, (length,), "i64", SEQUENCE, _HOLD_OUT, options=options
    )


def _lm_info(name: str, options: dict[str, OptionValue]) -> DatasetInfo | DatasetError:
    """`[B, T]` int64 windows and `[B, T]` next-token targets over `vocab` classes."""
    missing = [key for key in ("path", "block_size") if key not in options]
    if name == "tokens" and "vocab" not in options:
        missing.append("vocab")
    if missing:
        return _lm_missing(name, missing)
    block = int(options["block_size"])  # type: ignore[arg-type]
    vocab = TEXT_VOCAB if name == "text" else int(options.get("vocab", WORDS_VOCAB))  # type: ignore[arg-type]
    split = {"text": "the last `val_fraction` of the file", "tokens": "`val.bin` beside it",
             "words": "the last `val_fraction` of the words, in order"}[name]  # fmt: skip
    return DatasetInfo(
        name, (block,), "i64", vocab, (block,), "i64", SEQUENCE, split, options=options
    )


_LM_EXAMPLES = {"text": 'path="corpus.txt", block_size=256',
                "tokens": 'path="train.bin", block_size=1024, vocab=50257',
                "words": 'path="stdlib", block_size=35, vocab=10000'}  # fmt: skip


def _lm_missing(name: str, missing: list[str]) -> DatasetError:
    listed = ", ".join(f"`{key}=`" for key in missing)
    message = f"a `{name}` dataset needs {listed}"
    return DatasetError(
        "TL0706", message, None, f'write `load_dataset("{name}", {_LM_EXAMPLES[name]})`'
    )


def is_language_model_data(info: DatasetInfo) -> bool:
    return info.name in LM_SOURCES


def _file_info(path: str, options: dict[str, OptionValue]) -> DatasetInfo | DatasetError:
    if not path.endswith(FILE_SUFFIXES):
        message = f"cannot load `{path}`: expected a .npz, .pt or .csv file"
        help_text = "convert the data to one of those formats"
        if "." not in path.rsplit("/", 1)[-1]:  # no suffix: a folder, perhaps
            help_text += f'; a folder of pairs is written with its trailing slash: `"{path}/"`'
        return DatasetError("TL0705", message, None, help_text)
    if "fields" in options and not path.endswith((".npz", ".pt")):
        message = f"`fields=` names arrays of a .npz or .pt file, and `{path}` is neither"
        return DatasetError("TL0713", message, "fields", "remove `fields=`")
    if path.endswith(".csv") and "target" not in options:
        message = f"a .csv dataset needs the label column: `target=` is missing for `{path}`"
        return DatasetError("TL0706", message, None, 'add `target="label"` naming the column')
    shape = options.get("sample_shape")
    num_classes = options.get("num_classes")
    declared = options.get("fields")
    if isinstance(declared, list):  # `fields=["image", "text"]`: their shapes from the file
        fields = tuple(DataField(str(name), None, "f32") for name in declared)
        return DatasetInfo(
            path, None, "f32", None, None, "i64", UNKNOWN_TASK, _HOLD_OUT, options=options,
            fields=fields,
        )  # fmt: skip
    return DatasetInfo(
        path,
        tuple(d for d in shape if isinstance(d, int)) if isinstance(shape, list) else None,
        "f32",
        num_classes if isinstance(num_classes, int) else None,
        () if num_classes is not None else None,
        "i64",
        CLASSIFICATION if num_classes is not None else UNKNOWN_TASK,
        _HOLD_OUT,
        options=options,
    )


def _folder_info(path: str, options: dict[str, OptionValue]) -> DatasetInfo:
    """A folder of pairs (catalogue/pair_folders.py): its fields as `fields=` declares them,
    their shapes unknown until its files are read (`check_data`)."""
    declared = options.get("fields")
    names = [str(n) for n in declared] if isinstance(declared, list) else []
    fields = tuple(DataField(name, None, "f32") for name in names)
    return DatasetInfo(
        path, None, "f32", None, None, "i64", UNKNOWN_TASK, _HOLD_OUT, options=options,
        fields=fields,
    )  # fmt: skip


def _synthetic_info(options: dict[str, OptionValue]) -> DatasetInfo:
    return DatasetInfo(
        "synthetic", None, "f32", None, (), "i64", CLASSIFICATION, _HOLD_OUT, True, options
    )


def synthetic_dataset(sample_shape: tuple[int, ...], num_classes: int) -> DatasetInfo:
    """The synthetic dataset for a model whose input and output shapes were inferred."""
    return DatasetInfo(
        "synthetic", sample_shape, "f32", num_classes, (), "i64", CLASSIFICATION, _HOLD_OUT, True,
        {"sample_shape": list(sample_shape), "num_classes": num_classes},
    )  # fmt: skip


def _product(shape: tuple[int, ...]) -> int:
    size = 1
    for dim in shape:
        size *= dim
    return size


def _listing(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)
