"""The script's data loaders as `py` ops: `build_loaders(args, ctx)`.

    def build_loaders(
        args: argparse.Namespace, ctx: DistContext
    ) -> tuple[DeviceLoader, DeviceLoader, DataInfo]:
        options = DATASET_OPTIONS
        train, val, info = load_digits(data_root=args.data_root, **options)  # mnist.tl:32
        shard = {"rank": ctx.rank, "world_size": ctx.world_size, "device": ctx.device}
        train_loader = DeviceLoader(*train, batch_size=args.batch_size, shuffle=True,
                                    drop_last=True, seed=args.seed, **shard)
        val_loader = DeviceLoader(*val, batch_size=args.batch_size, shuffle=False,
                                  even_shards=False, **shard)
        return train_loader, val_loader, info

The reader is the dataset's (runtime/data.py, runtime/tokens.py for language-model
data); a built-in dataset lives on the device (`DeviceLoader`), a file may not
(`make_loader`); a data file's labels are checked against the model's classes; a
model with per-token outputs gets each sample's class for each token (`_per_token`).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from tensorloom.catalogue.datasets import (
    PAIRED_SOURCES,
    SEQUENCE_TASKS,
    is_file_source,
    is_folder_source,
)
from tensorloom.dialects import py
from tensorloom.passes.support.py_builder import PyBuilder
from tensorloom.passes.train_lowering.plan import ScriptPlan, image_dataset

DEFINES = ("build_loaders", "_per_token")
"""The top-level names these functions take in the script (mangle-names keeps them free)."""


def _reader(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """`load_digits(data_root=args.data_root, **options)`: the dataset's reader."""
    if plan.streams:
        name, named = "load_word_dataset", True
    elif plan.language_model_data:
        name, named = "load_token_dataset", True
    elif plan.dataset is None:
        name, named = "load_synthetic", False
    elif plan.dataset == "digits":
        name, named = "load_digits", False
    elif plan.dataset in PAIRED_SOURCES:
        name, named = "load_digit_captions", False
    elif plan.dataset in SEQUENCE_TASKS:
        name, named = "load_sequence_task", True
    elif is_folder_source(plan.dataset):
        name, named = "load_folder_dataset", True
    elif is_file_source(plan.dataset):
        name, named = "load_file_dataset", True
    else:
        name, named = "load_image_dataset", True
    first = [("", b.name("DATASET"))] if named else []
    if image_dataset(plan):  # the one kind `--download` fetches
        first.append(("download", b.path("args", "download")))
    rest = [("data_root", b.path("args", "data_root")), ("**", b.name("options"))]
    return b.call_with(name, [*first, *rest])


def info_type(plan: ScriptPlan) -> str:
    """What the reader says of the data: `TokenInfo` for language-model data, else `DataInfo`."""
    return "TokenInfo" if plan.language_model_data else "DataInfo"


def loader_type(b: PyBuilder, plan: ScriptPlan) -> SSAValue:
    """The loaders' type: `DeviceLoader`, `DeviceLoader | HostLoader`, `WindowLoader` or
    `StreamLoader`."""
    if plan.streams:
        return b.name("StreamLoader")
    if plan.language_model_data:
        return b.name("WindowLoader")
    if plan.resident_data:
        return b.name("DeviceLoader")
    return b.binop("|", b.name("DeviceLoader"), b.name("HostLoader"))


def _read(b: PyBuilder, plan: ScriptPlan) -> None:
    """`train, val, info = reader(...)`, at the dataset's line of the source."""
    splits = b.tuple_of(b.name("train"), b.name("val"), b.name("info"))
    read = py.AssignOp(splits, _reader(b, plan))
    if plan.data_location is not None:
        read.location = plan.data_location  # the `# mnist.tl:32` of the source map
    b.stmt(read)


def _shard(b: PyBuilder) -> None:
    """`shard = {"rank": ..., "world_size": ..., "device": ...}`: this process's part."""
    entries = [(b.const(k), b.path("ctx", k)) for k in ("rank", "world_size", "device")]
    b.assign("shard", b.add(py.DictOp(entries)))


def _loaders(b: PyBuilder, plan: ScriptPlan) -> None:
    """`train_loader`, `val_loader`: shuffled, whole batches for training; every sample,
    in order, for validation."""
    args, shard = b.name("args"), ("**", b.name("shard"))
    batch = ("batch_size", b.attr(args, "batch_size"))
    if plan.streams:  # main.py's batchify: `batch_size` streams, windows in order
        for split in ("train", "val"):
            streams = [("", b.name(split)), ("block_size", b.name("block")), batch, shard]
            b.assign(f"{split}_loader", b.call_with("StreamLoader", streams))
        return
    if plan.language_model_data:
        block = ("block_size", b.name("block"))
        train = [
            ("", b.name("train")),
            block,
            batch,
            ("shuffle", b.const(True)),
            ("windows_per_epoch", b.name("windows")),
            ("seed", b.path("args", "seed")),
            shard,
        ]
        b.assign("train_loader", b.call_with("WindowLoader", train))
        val = [
            ("", b.name("val")),
            block,
            ("batch_size", b.path("args", "batch_size")),
            ("shuffle", b.const(False)),
            shard,
        ]
        b.assign("val_loader", b.call_with("WindowLoader", val))
        return
    make = "DeviceLoader" if plan.resident_data else "make_loader"
    train = [
        ("*", b.name("train")),
        batch,
        ("shuffle", b.const(True)),
        ("drop_last", b.const(True)),
        ("seed", b.path("args", "seed")),
        shard,
    ]
    b.assign("train_loader", b.call_with(make, train))
    val = [
        ("*", b.name("val")),
        ("batch_size", b.path("args", "batch_size")),
        ("shuffle", b.const(False)),
        ("even_shards", b.const(False)),
        shard,
    ]
    b.assign("val_loader", b.call_with(make, val))


def _after_reading(b: PyBuilder, plan: ScriptPlan) -> None:
    """A data file's labels checked against the model's classes; per-token labels."""
    if plan.label_classes is not None and plan.classification:
        splits = [b.name(n) for n in ("train", "val", "info")]
        b.expr(b.call("check_labels", *splits, classes=b.const(plan.label_classes),
                      model=b.const(plan.model_class)))  # fmt: skip
    if plan.per_token_length is None:
        return
    b.comment("the model labels every token: each sample's class becomes each token's")
    length = plan.per_token_length
    labelled = [b.call("_per_token", b.name(n), b.const(length)) for n in ("train", "val")]
    b.assign(b.tuple_of(b.name("train"), b.name("val")), b.tuple_of(*labelled))


def build_loaders_ops(plan: ScriptPlan) -> list[Operation]:
    """`build_loaders(args, ctx)` (and `_per_token` for per-token outputs)."""
    top, body = PyBuilder(), PyBuilder()
    if plan.language_model_data and not plan.streams:
        body.assign("options", body.call("dict", body.name("DATASET_OPTIONS")))
        windows = body.method(body.name("options"), "pop", body.const("windows_per_epoch"),
                              body.const(None))  # fmt: skip
        body.assign("windows", windows)
    else:
        body.assign("options", body.name("DATASET_OPTIONS"))
    _read(body, plan)
    _after_reading(body, plan)
    _shard(body)
    if plan.language_model_data:
        body.assign("block", body.subscript(body.name("options"), body.const("block_size")))
    _loaders(body, plan)
    body.expr(body.call("check_epoch_has_steps", body.call("len", body.name("train_loader")),
                        batch_size=body.path("args", "batch_size"),
                        grad_accum=body.name("GRAD_ACCUM")))  # fmt: skip
    splits = [body.name(n) for n in ("train_loader", "val_loader", "info")]
    body.stmt(py.ReturnOp(splits))
    loader = loader_type(top, plan)
    returns = top.generic("tuple", loader, loader_type(top, plan), info_type(plan))
    params = [("args", "argparse.Namespace"), ("ctx", "DistContext")]
    top.def_("build_loaders", params, body, returns)
    if plan.per_token_length is not None:
        top.ops += _per_token_ops()
    return top.ops


def _per_token_ops() -> list[Operation]:
    """`_per_token(pair, length)`: a sample's class label repeated for each of its tokens."""
    top, body = PyBuilder(), PyBuilder()
    body.assign(body.tuple_of(body.name("x"), body.name("y")), body.name("pair"))
    every = body.add(py.SliceOp())
    column = body.subscript(body.name("y"), every, body.const(None))
    spread = body.method(column, "expand", body.const(-1), body.name("length"))
    body.stmt(py.ReturnOp([body.name("x"), body.method(spread, "contiguous")]))
    pair = top.generic("tuple", "torch.Tensor", "torch.Tensor")
    returns = top.generic("tuple", "torch.Tensor", "torch.Tensor")
    top.def_("_per_token", [("pair", pair), ("length", "int")], body, returns)
    return top.ops
