"""The compiler's static dataset knowledge, and its agreement with the runtime loaders."""

from __future__ import annotations

import pytest

from tensorloom.catalogue.datasets import (
    DatasetError,
    DatasetInfo,
    lookup_dataset,
    synthetic_dataset,
)


def _info(name: str | None, **options: object) -> DatasetInfo:
    result = lookup_dataset(name, options)  # type: ignore[arg-type]
    assert isinstance(result, DatasetInfo), result
    return result


def _error(name: str | None, **options: object) -> DatasetError:
    result = lookup_dataset(name, options)  # type: ignore[arg-type]
    assert isinstance(result, DatasetError), result
    return result


def test_named_shapes_respect_flatten() -> None:
    assert _info("digits").sample_shape == (1, 8, 8)
    assert _info("digits", flatten=True).sample_shape == (64,)
    assert _info("mnist", flatten=True).sample_shape == (784,)
    cifar = _info("cifar10")
    assert (cifar.sample_shape, cifar.num_classes, cifar.target_shape) == ((3, 32, 32), 10, ())


def test_sequence_tasks_have_per_token_targets() -> None:
    info = _info("reverse", vocab=32, length=20)
    assert (info.sample_shape, info.target_shape, info.dtype) == ((20,), (20,), "i64")
    assert (info.num_classes, info.task) == (32, "sequence")
    assert _info("sort").sample_shape == (12,)


def test_unknown_names_and_options_suggest_a_fix() -> None:
    error = _error("mnits")
    assert (error.code, error.help) == ("TL0701", "did you mean `mnist`?")
    error = _error("digits", flaten=True)
    assert (error.code, error.option, error.help) == ("TL0702", "flaten", "did you mean `flatten`?")


def test_option_types_and_ranges_are_checked() -> None:
    assert _error("digits", flatten=1).code == "TL0703"
    assert _error("reverse", vocab=1).code == "TL0704"
    assert _error("digits", val_fraction=1.5).option == "val_fraction"


def test_file_sources() -> None:
    assert _info("data/train.npz").sample_shape is None
    annotated = _info("data/train.pt", sample_shape=[13], num_classes=3)
    assert (annotated.sample_shape, annotated.num_classes) == ((13,), 3)
    assert annotated.runtime_kwargs() == {}
    assert _error("data/train.csv").code == "TL0706"
    assert _error("data/train.parquet").code == "TL0705"


def test_synthetic_takes_the_models_shapes() -> None:
    assert _info(None).synthetic and _info(None).sample_shape is None
    info = synthetic_dataset((784,), 10)
    assert info.runtime_kwargs() == {"sample_shape": [784], "num_classes": 10}


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("digits", {}),
        ("digits", {"flatten": True}),
        ("copy", {"vocab": 8, "length": 5, "size": 50}),
    ],
)
def test_static_shapes_match_what_the_runtime_loads(name: str, options: dict[str, object]) -> None:
    from tensorloom.backends.runtime.data import load_dataset

    info = _info(name, **options)
    (x, y), _, runtime_info = load_dataset(name, **info.runtime_kwargs())
    assert tuple(x.shape[1:]) == info.sample_shape and tuple(y.shape[1:]) == info.target_shape
    assert runtime_info.num_classes == info.num_classes


def test_language_model_data_has_block_size_windows_and_next_token_targets() -> None:
    text = _info("text", path="stdlib", block_size=256)
    assert (text.sample_shape, text.target_shape, text.dtype) == ((256,), (256,), "i64")
    assert (text.num_classes, text.task) == (256, "sequence")
    tokens = _info("tokens", path="train.bin", dtype="uint16", block_size=1024, vocab=50257)
    assert (tokens.sample_shape, tokens.num_classes) == ((1024,), 50257)
    assert tokens.runtime_kwargs()["block_size"] == 1024


def test_language_model_data_needs_its_options() -> None:
    assert _error("text", block_size=8).message == "a `text` dataset needs `path=`"
    error = _error("tokens", path="train.bin", block_size=8)
    assert (error.code, error.message) == ("TL0706", "a `tokens` dataset needs `vocab=`")
    assert _error("tokens", path="t.bin", block_size=8, vocab=9, dtype="int8").code == "TL0704"
    assert _error("text", path="c.txt", block_size=0).option == "block_size"
    assert _error("text", path="c.txt", block_size=8, vocab=9).code == "TL0702"


@pytest.mark.parametrize("flatten", [False, True])
def test_digit_captions_fields_match_what_the_runtime_loads(flatten: bool) -> None:
    pytest.importorskip("sklearn")
    from tensorloom.backends.runtime.data import CAPTION_WORDS, load_digit_captions
    from tensorloom.catalogue.datasets import CAPTION_VOCAB

    info = _info("digits-captions", flatten=flatten)
    assert info.fields is not None and info.sample_shape is None
    names = tuple(f.name for f in info.fields)
    train, val, _ = load_digit_captions(flatten=flatten, fields=names)
    for field, tensor in zip(info.fields, (*train,), strict=True):
        assert tuple(tensor.shape[1:]) == field.shape
        assert str(tensor.dtype) == ("torch.int64" if field.dtype == "i64" else "torch.float32")
    assert len(val[0]) == 180 and len(CAPTION_WORDS) == CAPTION_VOCAB


def test_a_digit_caption_names_the_digit_and_thirds_of_its_ink_and_place() -> None:
    pytest.importorskip("sklearn")
    import torch

    from tensorloom.backends.runtime.data import digit_captions

    x = torch.zeros(3, 1, 8, 8)
    x[0, 0, :, 0] = 1.0  # a thin stroke at the left
    x[1, 0, 3:5, 3:5] = 1.0  # a middling blob in the middle
    x[2, 0, 4:, 4:] = 1.0  # a bold square at the bottom right
    text = digit_captions(x, torch.tensor([1, 0, 7]))
    assert text[:, 0].tolist() == [1, 0, 7]  # the digit's name
    assert text[:, 1].tolist() == [11, 10, 12]  # ink: 8, 4, 16 pixels: regular, thin, bold
    assert text[:, 2].tolist() == [13, 14, 15]  # across: column 0, 3.5, 5.5
    assert text[:, 3].tolist() == [16, 16, 18]  # down: row 3.5, 3.5, 5.5


def test_declared_fields_of_a_file() -> None:
    info = _info("pairs.npz", fields=["image", "text"])
    assert info.fields is not None and [(f.name, f.shape) for f in info.fields] == [
        ("image", None),
        ("text", None),
    ]
    assert info.runtime_kwargs() == {"fields": ["image", "text"]}
    assert _error("pairs.npz", fields=["two words"]).code == "TL0703"
    assert _error("pairs.npz", fields=[]).code == "TL0703"
    assert _error("t.csv", target="y", fields=["a"]).code == "TL0713"
