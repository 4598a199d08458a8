"""Every input of the fuzz findings (tests/fuzz/findings/, copied from the shared findings
folder) still gives what it gives now: a clean diagnostic at its first error, or acceptance.

Each program that once crashed, hung, miscompiled or was wrongly accepted is run through
`tlc check` and `tlc compile` in process (fuzz_outcome.classify, which reports a TL0901, an
escaped exception, a hang, a span outside the file, a check/compile disagreement and emitted
Python that does not compile as bugs), in a copy of its folder (the programs import their
neighbours). Its outcome must be the one recorded below: the code of its first error, or
`ok`. An accepted program with a model also builds the emitted model and runs one forward
on the CPU (fuzz_forward.run_forward), which is how pytorch_false_negatives/ were found.

The inputs are kept byte for byte as `NAME.tl.in` and `NAME.nml.in`, out of the way of
`tlc fmt --check tests` and of the tests that read every program under tests/. FINDING.txt
and pytorch_error.txt say what each input once did; they are not inputs. A finding added to
the folder without a line here fails `test_every_finding_has_an_outcome`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fuzz_forward import run_forward
from fuzz_outcome import classify

FINDINGS = Path(__file__).resolve().parent / "findings"
# Kept byte for byte as `NAME.tl.in`, `NAME.nml.in`: out of `tlc fmt --check tests`' way
PATHS = {p.relative_to(FINDINGS).as_posix().removesuffix(".in"): p for p in FINDINGS.rglob("*.in")}
# `09/input.tl` for `09-compile-ice-internal-compiler-error-the-IR-after-.../input.tl`
INPUTS = {(k[:2] + k[k.index("/") :] if k[:2].isdigit() else k): p for k, p in PATHS.items()}

# The first error's code of each input, or `ok`; a code that changes is a change of behaviour
# to look at (a finding is a test that must keep failing the way it fails now, or pass).
EXPECTED = {
    "00/input.tl": "TL0501",
    "01/input.tl": "TL0502",
    "02/input.tl": "TL0501",
    "03/input.tl": "TL0507",
    "04/main.tl": "ok",
    "05/input.tl": "TL0301",
    "05/lstm_seq2seq.nml": "ok",
    "06/input.tl": "TL0301",
    "07/input.tl": "TL0301",
    "08/input.tl": "TL0332",
    "09/input.tl": "ok",
    "09/vision_transformer.nml": "ok",
    "10/input.tl": "TL0330",
    "11/train_transformer.tl": "TL0139",
    "11/transformer.nml": "TL0139",
    "12/input.tl": "TL0008",
    "13/input.tl": "TL0008",
    "14/input.tl": "TL0008",
    "15/input.tl": "TL0008",
    "16/lstm_num_layers_1e8_takes_61s.nml": "TL0422",
    "16/lvl0.nml": "TL0332",
    "16/lvl1.nml": "TL0422",
    "16/main.tl": "TL0422",
    "17/input.tl": "TL0506",
    "18/main.tl": "TL0422",
    "18/model.nml": "TL0422",
    "19/input.tl": "TL0008",
    "20/input.tl": "TL0308",
    "21/input.tl": "TL0308",
    "22/input.tl": "TL0308",
    "23/input.tl": "TL0114",
    "24/main.tl": "TL0114",
    "25/input.tl": "TL0403",
    "26/input.tl": "TL0130",
    "27/input.tl": "TL0130",
    "28/input.tl": "TL0309",
    "29/input.tl": "ok",
    "29/resnet.nml": "ok",
    "30/input.tl": "TL0009",
    "30/input_let_True.tl": "TL0009",
    "31/input.tl": "TL0403",
    "31/input_int_digits.tl": "TL0403",
    "32/input.tl": "TL0009",
    "33/input.nml": "TL0215",
    "manual/int_literal_5000_digits_exit3.tl": "TL0008",
    "manual/matmul_unifies_B_and_T.nml": "TL0202",
    "manual/model_named_torch_accepted.tl": "ok",
    "manual/model_without_forward_accepted.tl": "TL0332",
    "manual/nesting_over_32_disables_shape_checks.nml": "TL0310",
    "manual/override_n_heads_0_accepted.tl": "TL0422",
    "manual/pipe_200_stages_check_ok_compile_exit3.tl": "ok",
    "manual/sum_500_terms_exit3.tl": "ok",
    "manual/symbolic_dims_residual_mismatch_accepted.nml": "TL0202",
    "manual/train_on_undefined_name_check_ok.tl": "TL0301",
    "manual/vision_transformer.nml": "ok",
    "pytorch_false_negatives/gen-10298/main.nml": "TL0201",
    "pytorch_false_negatives/gen-13021/main.tl": "TL0308",
    "pytorch_false_negatives/gen-5250/lvl0.nml": "ok",
    "pytorch_false_negatives/gen-5250/lvl1.nml": "TL0302",
    "pytorch_false_negatives/gen-5250/lvl2.nml": "TL0202",
    "pytorch_false_negatives/gen-5250/main.tl": "TL0202",
    "pytorch_false_negatives/gen-5396/lvl0.nml": "TL0215",
    "pytorch_false_negatives/gen-5396/lvl1.nml": "ok",
    "pytorch_false_negatives/gen-5396/lvl2.nml": "ok",
    "pytorch_false_negatives/gen-5396/main.tl": "TL0215",
    "pytorch_false_negatives/gen-551/main.tl": "TL0308",
    "pytorch_false_negatives/gen-6976/main.tl": "TL0308",
    "pytorch_false_negatives/gen-874/main.tl": "TL0412",
    "pytorch_false_negatives/mut-21626/input.nml": "TL0202",
    "pytorch_false_negatives/mut-21660/input.tl": "TL0422",
    "pytorch_false_negatives/mut-53631/input.tl": "TL0508",
    "pytorch_false_negatives/mut-62893/input.tl": "TL0332",
    "pytorch_false_negatives/mut-66016/input.tl": "TL0422",
    "pytorch_false_negatives/mut-66016/vision_transformer.nml": "ok",
    "pytorch_false_negatives/mut-67452/input.tl": "TL0308",
    "real-models/config_dropout_rate_rejected.nml": "ok",
    "real-models/confusing_narrow_hint.nml": "ok",
    "real-models/fp_config_compare_branch.nml": "ok",
    "real-models/fp_config_compare_branch_toplevel.nml": "ok",
    "real-models/fp_nested_annotation_names_shared.nml": "ok",
    "real-models/fp_nested_annotation_two_resolutions.nml": "ok",
    "real-models/miscompile_mha_causal_config.nml": "TL0422",
    "real-models/miscompile_scalar_log.nml": "ok",
    "real-models/silent_catalogue_shadowing.nml": "TL0309",
    "real-models/unsound_tensor_index.nml": "TL0202",
    "real-models/wrong_row_params_nested_parameter.nml": "ok",
    "render-mismatch-formfeed/input.tl": "TL0201",
    "render-mismatch-formfeed/input_u2028.tl": "TL0201",
    "security/check_ok_undefined_dataset.tl": "TL0301",
    "security/ds_name_backslash2.tl": "ok",
    "security/ds_name_quote.tl": "ok",
    "security/ds_opt_apostrophe.tl": "ok",
    "security/ds_opt_data_root.tl": "ok",
    "security/ds_opt_target.tl": "ok",
    "security/import_abs.tl": "TL0610",
    "security/import_abs2.tl": "TL0612",
    "security/import_broken_outside.tl": "TL0610",
    "security/import_rel_up.tl": "TL0616",
    "security/import_symlink.tl": "TL0101",
    "security/layer_kw_class.tl": "TL0009",
    "security/leak.nml": "TL0101",
    "security/model_None.tl": "TL0009",
    "security/nfkc_layers.tl": "TL0309",
    "security/nfkc_swap.tl": "TL0615",
    "security/nml_cfg_kw.nml": "TL0009",
    "security/torch_hub.tl": "TL0305",
    "security/torch_load_pickle.tl": "TL0305",
    "security/torch_os_system.tl": "TL0305",
}


def test_every_finding_has_an_outcome() -> None:
    assert sorted(EXPECTED) == sorted(INPUTS)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_a_finding_gives_a_clean_outcome(tmp_path: Path, name: str) -> None:
    source = INPUTS[name]
    folder = tmp_path / "finding"
    shutil.copytree(source.parent, folder)
    for copied in folder.glob("*.in"):  # the programs import their neighbours by name
        copied.rename(copied.with_suffix(""))
    text = source.read_bytes().decode("utf-8", errors="surrogateescape")
    outcome = classify(folder / source.with_suffix("").name, text)
    assert not outcome.is_bug, f"{outcome.kind}: {outcome.detail}"
    code = "ok" if outcome.kind == "ok" else outcome.detail.split()[0]
    assert code == EXPECTED[name], outcome.detail
    if outcome.kind == "ok" and outcome.python is not None and outcome.flows:
        assert run_forward(outcome.python, outcome.flows) is None
