"""The one paste: a script gets the runtime definitions its code reaches, and no others."""

from __future__ import annotations

from typing import Any

from tensorloom.backends import runtime


def _run(roots: list[str]) -> dict[str, Any]:
    pasted = runtime.paste(roots)
    imports = []
    for module, alias, name in pasted.imports:
        if name:
            imports.append(f"from {module} import {name}")
        else:
            imports.append(f"import {module}" + (f" as {alias}" if alias else ""))
    text = "\n".join(["from __future__ import annotations", *imports, pasted.text])
    namespace: dict[str, Any] = {}
    exec(compile(text, "<pasted>", "exec"), namespace)
    return namespace


def test_no_two_modules_define_the_same_name() -> None:
    owner: dict[str, str] = {}
    for definition in runtime.definitions():
        for name in definition.binds:
            assert name not in owner, f"`{name}` is in {owner[name]} and {definition.module}"
            owner[name] = definition.module


def test_every_definition_pasted_together_runs() -> None:
    names = sorted(n for d in runtime.definitions() for n in d.binds)
    namespace = _run(names)
    assert set(names) <= set(namespace)
    # Decorators travel with their classes: a dataclass still takes its fields.
    plan = namespace["PrecisionPlan"](None, False)
    assert plan.use_scaler is False


def test_a_root_brings_what_it_calls_and_nothing_else() -> None:
    namespace = _run(["strip_prefixes"])
    assert namespace["strip_prefixes"]({"_orig_mod.module.fc.weight": 1}) == {"fc.weight": 1}
    pasted = {n for d in runtime.paste(["load_weights"]).definitions for n in d.binds}
    assert pasted == {
        "load_weights", "read_checkpoint", "_RESUME_KEYS", "_load_model", "unwrap_model",
        "strip_prefixes", "saved_ema_state", "tensor_checksum", "CheckpointError",
    }  # fmt: skip


def test_digits_carry_no_image_reader_download_or_process_group() -> None:
    pasted = runtime.paste(["load_digits", "DeviceLoader", "resolve_device"])
    names = {n for d in pasted.definitions for n in d.binds}
    assert {"load_digits", "_split", "DeviceLoader", "DataInfo"} <= names
    for absent in ("_read_cifar", "read_idx", "_download", "_read_csv", "HostLoader",
                   "setup_distributed", "all_reduce_sum", "load_dataset"):  # fmt: skip
        assert absent not in names
    modules = {module for module, _, _ in pasted.imports}
    # gzip stays: the digits are read from scikit-learn's digits.csv.gz
    assert not modules & {"urllib.request", "tarfile", "pickle", "torch.distributed"}


def test_each_pasted_import_is_read() -> None:
    pasted = runtime.paste(["MetricsWriter", "format_epoch_summary"])
    read = {n for d in pasted.definitions for n in d.reads}
    for module, alias, name in pasted.imports:
        assert (name or alias or module.split(".")[0]) in read


def test_a_local_named_like_a_definition_does_not_bring_it() -> None:
    """`prepare_checkpoint_dir(..., resume=...)` names its parameter `resume`; it does not need
    the runtime's `resume`, which a program of its own `resume` (FSDP's) must not be given."""
    pasted = {n for d in runtime.paste(["prepare_checkpoint_dir"]).definitions for n in d.binds}
    assert "prepare_checkpoint_dir" in pasted and "resume" not in pasted
    # a dataclass's field is no reference either: `Trainer.carried` is not `carried()`
    record = {n for d in runtime.paste(["Trainer"]).definitions for n in d.binds}
    assert "carried" not in record and "DistContext" in record


def test_a_name_the_script_defines_is_not_a_root() -> None:
    source = "def resume(trainer, path):\n    pass\n\nresume(1, 2)\nsave_last(1, 2)\n"
    assert runtime.names_read(source) == {"save_last"}
