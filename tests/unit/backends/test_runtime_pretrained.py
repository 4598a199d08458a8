"""runtime/pretrained.py's joins and splits: a fused q/k/v split into three Linears and
separate ones joined into `nn.MultiheadAttention`'s packed projection, loaded with the
values where they belong and exported back to the same file tensors (a round trip)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tensorloom.backends.runtime.pretrained import (
    WeightsError,
    export_pretrained,
    load_pretrained,
    read_tensors,
    weight_sources,
)

safetensors_torch = pytest.importorskip("safetensors.torch")


class Split(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(4, 4), nn.Linear(4, 2), nn.Linear(4, 2)


SPLIT = (
    ("attn.c_attn.weight", ("q.weight", "k.weight", "v.weight"), True, 0),
    ("attn.c_attn.bias", ("q.bias", "k.bias", "v.bias"), False, 0),
)
JOIN = (
    (("l.{i}.query.weight", "l.{i}.key.weight", "l.{i}.value.weight"),
     "attn.{i}.in_proj_weight", False, 0),
    (("l.{i}.query.bias", "l.{i}.key.bias", "l.{i}.value.bias"), "attn.{i}.in_proj_bias",
     False, 0),
    ("l.{i}.out.{p}", "attn.{i}.out_proj.{p}", False),
)  # fmt: skip


def _save(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    safetensors_torch.save_file(tensors, str(path))


def test_a_fused_tensor_splits_into_the_models_and_exports_back(tmp_path: Path) -> None:
    fused = {"attn.c_attn.weight": torch.randn(4, 8), "attn.c_attn.bias": torch.randn(8)}
    _save(tmp_path / "w.safetensors", fused)
    model = Split()
    load_pretrained(model, tmp_path / "w.safetensors", SPLIT)
    weight = fused["attn.c_attn.weight"].t()  # Conv1D's [in, out], read as [out, in]
    assert torch.equal(model.q.weight, weight[:4]) and torch.equal(model.v.weight, weight[6:])
    assert torch.equal(model.k.bias, fused["attn.c_attn.bias"][4:6])
    export_pretrained(model, tmp_path / "out", SPLIT)
    back = read_tensors(tmp_path / "out")
    assert back.keys() == fused.keys()
    assert all(torch.equal(back[k], v) for k, v in fused.items())


def test_separate_tensors_join_into_the_packed_projection(tmp_path: Path) -> None:
    model = nn.Module()
    model.attn = nn.ModuleList([nn.MultiheadAttention(6, 2, batch_first=True) for _ in range(2)])
    tensors = {
        f"l.{i}.{part}.{kind}": torch.randn(6, 6) if kind == "weight" else torch.randn(6)
        for i in range(2)
        for part in ("query", "key", "value", "out")
        for kind in ("weight", "bias")
    }
    _save(tmp_path / "w.safetensors", tensors)
    load_pretrained(model, tmp_path / "w.safetensors", JOIN)
    packed = model.attn[1].in_proj_weight
    assert torch.equal(packed[6:12], tensors["l.1.key.weight"])
    assert torch.equal(model.attn[0].in_proj_bias[12:], tensors["l.0.value.bias"])
    export_pretrained(model, tmp_path / "out", JOIN)  # equal parts: no source at hand
    back = read_tensors(tmp_path / "out")
    assert back.keys() == tensors.keys()
    assert all(torch.equal(back[k], v) for k, v in tensors.items())


def test_an_uneven_join_exports_by_the_sources_sizes(tmp_path: Path) -> None:
    """A grouped-query q/k/v (4 + 2 + 2 rows) joined into one `qkv`: split back by the sizes
    the source's header gives, and refused without it (equal parts would be wrong)."""
    model = nn.Module()
    model.qkv = nn.Linear(4, 8, bias=False)
    tensors = {"q": torch.randn(4, 4), "k": torch.randn(2, 4), "v": torch.randn(2, 4)}
    _save(tmp_path / "w.safetensors", tensors)
    rules = ((("q", "k", "v"), "qkv.weight", False, 0),)
    load_pretrained(model, tmp_path / "w.safetensors", rules)
    export_pretrained(model, tmp_path / "out", rules, source=tmp_path / "w.safetensors")
    back = read_tensors(tmp_path / "out")
    assert all(torch.equal(back[k], v) for k, v in tensors.items())
    with pytest.raises(WeightsError, match="pass the source with --weights"):
        export_pretrained(model, tmp_path / "none", rules)


def test_a_split_that_does_not_add_up_is_a_weights_error(tmp_path: Path) -> None:
    fused = {"attn.c_attn.weight": torch.randn(4, 9), "attn.c_attn.bias": torch.randn(8)}
    _save(tmp_path / "w.safetensors", fused)
    with pytest.raises(
        WeightsError, match="give 9 along dim 0, the model's tensors take 4 \\+ 2 \\+ 2"
    ):
        load_pretrained(Split(), tmp_path / "w.safetensors", SPLIT)


def test_a_join_missing_a_partner_is_a_weights_error(tmp_path: Path) -> None:
    _save(tmp_path / "w.safetensors", {"q": torch.randn(4, 4), "k": torch.randn(2, 4)})
    model = nn.Module()
    model.qkv = nn.Linear(4, 8, bias=False)
    with pytest.raises(WeightsError, match="a rule joins `v`, which it lacks"):
        load_pretrained(
            model, tmp_path / "w.safetensors", ((("q", "k", "v"), "qkv.weight", False, 0),)
        )


def test_weights_flags_of_a_block_of_several_models_replace_their_models_sources() -> None:
    defaults = {"T": "teacher.safetensors", "S": "student.pt"}
    assert weight_sources(defaults, ["T=other/"]) == {"T": "other/", "S": "student.pt"}
    assert weight_sources(defaults, []) == defaults
    for wrong in ("other/", "G=g.pt"):
        with pytest.raises(
            WeightsError, match=f"--weights {wrong}: give MODEL=PATH, MODEL one of T, S"
        ):
            weight_sources(defaults, [wrong])
