"""`read_pt_headers` reads what `torch.load` would give, without running the file's pickle."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import torch

from tensorloom.catalogue.data_files import FileFacts, read_facts
from tensorloom.catalogue.torch_files import (
    PtProblem,
    TensorHeader,
    read_pt_headers,
    read_pt_labels,
)

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)  # fmt: skip


def _loaded(path: Path) -> dict[str, TensorHeader]:
    payload = torch.load(path, weights_only=True)
    if isinstance(payload, tuple | list):
        payload = {"x": payload[0], "y": payload[1]}
    return {
        name: TensorHeader(str(t.dtype).removeprefix("torch."), tuple(t.shape))
        for name, t in payload.items()
    }


def test_every_dtype_and_shape_equals_torch_loads(tmp_path: Path) -> None:
    base = torch.arange(7 * 6 * 5).reshape(7, 6, 5)
    tensors = {f"f{i}": base.to(dtype) for i, dtype in enumerate(DTYPES)}
    tensors["view"] = base.float().transpose(1, 2)[:, 1:]  # a strided view of a shared storage
    tensors["empty"] = torch.zeros(7, 0, 3)
    tensors["param"] = torch.nn.Parameter(torch.randn(7, 2))
    tensors["grad"] = torch.randn(7, requires_grad=True)
    torch.save(tensors, tmp_path / "many.pt")
    torch.save(collections.OrderedDict(a=base, b=base[:, 0]), tmp_path / "ordered.pt")
    torch.save((base.float(), base[:, 0, 0]), tmp_path / "tuple.pt")
    torch.save([base.half(), base[:, 0, 0].bool()], tmp_path / "list.pt")
    for name in ("many", "ordered", "tuple", "list"):
        path = tmp_path / f"{name}.pt"
        assert read_pt_headers(path) == _loaded(path), name


def test_a_tuple_is_x_and_y_with_the_npz_facts(tmp_path: Path) -> None:
    torch.save((torch.randn(40, 3), torch.arange(40) % 4), tmp_path / "xy.pt")
    facts = read_facts(tmp_path / "xy.pt")
    assert isinstance(facts, FileFacts)
    assert (facts.count, facts.sample_shape, facts.targets, facts.target_shape) == (
        40, (3,), "indices", ())  # fmt: skip
    torch.save((torch.randn(40, 3), torch.randn(40, 2)), tmp_path / "reg.pt")
    facts = read_facts(tmp_path / "reg.pt")
    assert isinstance(facts, FileFacts) and facts.targets == "floats"


INTEGER_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


def test_labels_read_from_the_storage_equal_torch_max_plus_one(tmp_path: Path) -> None:
    generator = torch.Generator().manual_seed(3)
    for dtype in INTEGER_DTYPES:
        labels = torch.randint(0, 37, (200,), generator=generator).to(dtype)
        torch.save((torch.randn(200, 4), labels), tmp_path / "xy.pt")
        headers = read_pt_headers(tmp_path / "xy.pt")
        assert isinstance(headers, dict)
        assert read_pt_labels(tmp_path / "xy.pt", headers["y"]) == int(labels.max()) + 1, dtype
    whole = torch.randint(0, 9, (300,), generator=generator)
    whole[:100] = 50  # outside the view: the offset must skip them
    torch.save({"x": torch.randn(200, 4), "y": whole[100:]}, tmp_path / "view.pt")
    headers = read_pt_headers(tmp_path / "view.pt")
    assert isinstance(headers, dict)
    assert read_pt_labels(tmp_path / "view.pt", headers["y"]) == int(whole[100:].max()) + 1
    facts = read_facts(tmp_path / "view.pt")
    assert isinstance(facts, FileFacts) and facts.num_classes == int(whole[100:].max()) + 1


def test_labels_not_read_cheaply_are_unknown_and_negative_ones_a_problem(tmp_path: Path) -> None:
    grid = torch.arange(40).reshape(8, 5)
    torch.save((torch.randn(8, 3), grid[:, 0]), tmp_path / "strided.pt")  # stride 5
    torch.save((torch.randn(5, 3), torch.randn(5)), tmp_path / "floats.pt")
    for name in ("strided", "floats"):
        headers = read_pt_headers(tmp_path / f"{name}.pt")
        assert isinstance(headers, dict)
        assert read_pt_labels(tmp_path / f"{name}.pt", headers["y"]) is None, name
    torch.save((torch.randn(3, 2), torch.tensor([0, -2, 1])), tmp_path / "negative.pt")
    facts = read_facts(tmp_path / "negative.pt")
    assert not isinstance(facts, FileFacts)
    assert "negative class label (-2)" in facts.message


class _Marks:
    """Pickles as a call that creates a file: loading it would run code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def test_a_pickle_that_runs_code_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    torch.save({"x": torch.zeros(2), "y": _Marks(marker)}, tmp_path / "code.pt")
    problem = read_pt_headers(tmp_path / "code.pt")
    assert isinstance(problem, PtProblem) and problem.foreign
    assert "open`, not only tensors" in problem.message
    assert not marker.exists()


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        ({"x": torch.zeros(2), "n": 3}, "`n` is `int`, not a tensor"),
        ({"x": torch.zeros(2), 1: torch.zeros(2)}, "the key `1`, not a field name"),
        ((torch.zeros(2),) * 3, "a sequence of 3 tensors"),
        (torch.zeros(2), "holds a tensor, not a dict of tensors"),
        ("text", "holds a str, not a dict of tensors"),
    ],
)
def test_anything_but_tensors_in_a_dict_or_pair_is_refused(
    tmp_path: Path, payload: object, words: str
) -> None:
    torch.save(payload, tmp_path / "bad.pt")
    problem = read_pt_headers(tmp_path / "bad.pt")
    assert isinstance(problem, PtProblem) and problem.foreign and words in problem.message


def test_a_truncated_or_legacy_file_is_damaged_not_foreign(tmp_path: Path) -> None:
    torch.save({"x": torch.zeros(64, 3)}, tmp_path / "ok.pt")
    data = (tmp_path / "ok.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    torch.save({"x": torch.zeros(3)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    for name in ("cut", "old"):
        problem = read_pt_headers(tmp_path / f"{name}.pt")
        assert isinstance(problem, PtProblem) and not problem.foreign
        assert "not a torch.save file" in problem.message
