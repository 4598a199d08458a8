"""train-config: one `train.config` per train block, every field at the block's value or the
catalogue default, and nothing else of the block left for the lowering to read."""

from __future__ import annotations

import pytest

from tensorloom.catalogue.optimizers import OPTIMIZERS
from tensorloom.catalogue.train_keys import CONFIG_FIELDS, TRAIN_KEYS, TrainKey
from tensorloom.catalogue.train_rules import write_plain
from tensorloom.dialects import train
from tensorloom.pipeline import compile_text

PROGRAM = """model Net:
    layer fc = Linear(64, 10)
    fn forward(self, x: Tensor) -> Tensor:
        return x |> self.fc

fn my_loss(out: Tensor, y: Tensor) -> Tensor:
    return cross_entropy(out, y)

let net = Net()
let data = load_dataset("digits", flatten=true)
train net on data:
{body}
"""


def _config(body: str) -> train.ConfigOp:
    result = compile_text(PROGRAM.format(body=body), "p.tl", until="train")
    assert result.module is not None, [d.message for d in result.sink]
    assert not result.sink.has_errors, [d.message for d in result.sink]
    (loop,) = [op for op in result.module.walk() if isinstance(op, train.LoopOp)]
    assert not [op for op in loop.body.block.ops if isinstance(op, train.SetOp)]
    assert not [op for op in loop.body.block.ops if isinstance(op, train.CheckpointOp)]
    return train.config_of(loop)


def test_a_block_of_one_key_gets_every_default_from_the_catalogue() -> None:
    config = _config("    seed = 3")
    values = {f.name: config.value(f.name) for f in CONFIG_FIELDS}
    expected = {f.name: f.default for f in CONFIG_FIELDS}
    expected["seed"] = 3
    expected["optimizer_args"] = {"lr": OPTIMIZERS["Adam"].default_lr}
    assert values == expected


@pytest.mark.parametrize(
    ("optimizer", "lr"), [("Adagrad", 0.01), ("Adadelta", 1.0), ("SGD", 0.001)]
)
def test_an_optimizer_without_lr_gets_torch_default(optimizer: str, lr: float) -> None:
    assert _config(f"    optimizer = {optimizer}").value("optimizer_args") == {"lr": lr}


def test_the_block_values_and_their_normal_forms() -> None:
    config = _config(
        "    epochs = 4\n"
        "    optimizer = AdamW(lr=3e-4, weight_decay=0.1)\n"
        "    loss = my_loss\n"
        "    lr_schedule = constant_with_warmup\n"
        "    accumulate_steps = 2\n"
        "    compile = false\n"
        "    early_stopping = patience(3)\n"
        "    metrics = [accuracy, top_k(5)]\n"
        "    checkpoint every 50 steps"
    )
    assert config.value("epochs") == 4
    assert config.value("optimizer") == "AdamW"
    assert config.value("optimizer_args") == {"lr": 3e-4, "weight_decay": 0.1}
    assert (config.value("loss"), config.value("loss_fn")) == ("my_loss", True)
    assert config.value("lr_schedule_args") == {"warmup_steps": 100}  # the record's default
    assert config.value("grad_accum") == 2  # the older name, under the newer
    assert config.value("compile") == "off"
    assert config.value("early_stopping") == {"patience": 3, "metric": "val_loss",
                                              "min_delta": 0.0}  # fmt: skip
    assert config.value("metrics") == [
        {"kind": "accuracy", "name": "accuracy", "k": 1},
        {"kind": "top_k", "name": "top5_accuracy", "k": 5},
    ]
    assert (config.value("checkpoint_every"), config.value("checkpoint_unit")) == (50, "steps")
    loss_at = config.loc("loss")
    assert loss_at is not None and "p.tl" in str(loss_at)


def test_max_steps_without_epochs_leaves_epochs_none_and_a_twin_length_no_default() -> None:
    config = _config("    max_steps = 30\n    lr_schedule = constant_with_warmup(warmup_epochs=1)")
    assert config.value("epochs") is None
    assert config.value("lr_schedule_args") == {"warmup_epochs": 1}


def test_the_verifier_rejects_a_missing_or_mistyped_field() -> None:
    fields = {f.name: train.config_attr(f.default) for f in CONFIG_FIELDS}
    train.ConfigOp(fields).verify_()
    with pytest.raises(Exception, match="lacks epochs"):
        train.ConfigOp({k: v for k, v in fields.items() if k != "epochs"}).verify_()
    with pytest.raises(Exception, match="`epochs` must be int"):
        train.ConfigOp({**fields, "epochs": train.config_attr("ten")}).verify_()
    with pytest.raises(Exception, match="`seed` must be int"):
        train.ConfigOp({**fields, "seed": train.config_attr(None)}).verify_()  # not optional


def _a_value_other_than_the_default(key: TrainKey) -> object:
    """A value the key's record admits and that differs from its default."""
    arg = key.value
    assert arg is not None
    if key.choices:
        return next(c for c in key.choices if c != key.default and isinstance(c, str))
    if arg.type == "bool":
        return not key.default
    low = arg.low if arg.low is not None else 0
    high = arg.high if arg.high is not None else low + 10
    return int(low) + 3 if arg.type == "int" else (low + high) / 2


def _spelled(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def test_every_plain_key_reaches_its_field_with_no_rule_of_its_own() -> None:
    """A key whose record names no rule (`reach` is `write_plain`) is written as it is: adding
    one is its record alone, and `tlc check` cannot accept it and then drop it."""
    plain = [k for k in TRAIN_KEYS if k.check is None and k.reach is write_plain and k.value]
    plain = [k for k in plain if k.older_name_of is None]
    assert {"grad_clip", "grad_accum", "ema", "seed", "log_every"} <= {k.name for k in plain}
    values = {k.name: _a_value_other_than_the_default(k) for k in plain}
    config = _config("\n".join(f"    {name} = {_spelled(v)}" for name, v in values.items()))
    assert {name: config.value(name) for name in values} == values
