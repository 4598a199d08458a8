"""A `torch.save` file as a dataset, end to end (issue 30, item 3).

scikit-learn's digits saved as `{"image": x, "label": y}` train through an objective that
takes the fields by name; saved as `(x, y)` they train through a `loss` block. `tlc check`
read both files' shapes from their pickles; the script loads them with `torch.load`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tensorloom.backends.runtime.data import load_digits
from tests.e2e.test_train_pipeline import compile_program, records, run

DICT = """
model Classifier:
    layer fc1 = Linear(64, 32)
    layer fc2 = Linear(32, 10)
    fn forward(self, image: Tensor[B, 1, 8, 8]) -> Tensor:
        return image.flatten(1) |> self.fc1 |> relu |> self.fc2

fn digit_loss(net, image, label) -> Tensor:
    return cross_entropy(net(image), label)

let net = Classifier()
let digits = load_dataset("digits.pt")

train net on digits:
    epochs = 3
    batch_size = 32
    optimizer = Adam(lr=0.01)
    objective = digit_loss
"""

TUPLE = """
model Classifier:
    layer fc = Linear(64, 10)
    fn forward(self, x: Tensor) -> Tensor:
        return self.fc(x)

let net = Classifier()
let digits = load_dataset("digits_xy.pt")

train net on digits:
    epochs = 3
    batch_size = 32
    optimizer = Adam(lr=0.01)
    loss = CrossEntropy
"""


def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    (x, y), (vx, vy), _ = load_digits()
    return torch.cat([x, vx]), torch.cat([y, vy])


def test_a_pt_dict_of_named_tensors_trains_on_the_fields_its_objective_names(
    tmp_path: Path,
) -> None:
    image, label = _digits()
    torch.save({"image": image, "label": label}, tmp_path / "digits.pt")
    script = compile_program(tmp_path, DICT, name="pt_dict")
    text = script.read_text()
    assert '"fields": ("image", "label")' in text
    run(script, "--metrics", "m.jsonl", "--checkpoint-dir", "ckpt")
    rows = records(tmp_path / "m.jsonl")
    first, last = rows[0]["train_loss"], rows[-1]["train_loss"]
    assert isinstance(first, float) and isinstance(last, float)
    assert last < 0.5 * first  # the digits are learnt, not merely loaded
    evaluated = run(script, "--evaluate", "ckpt/last.pt")
    assert "val_loss" in evaluated.stdout


def test_a_pt_tuple_trains_as_x_and_y_through_a_loss_block(tmp_path: Path) -> None:
    image, label = _digits()
    torch.save((image.flatten(1), label), tmp_path / "digits_xy.pt")
    script = compile_program(tmp_path, TUPLE, name="pt_tuple")
    run(script, "--metrics", "m.jsonl")
    rows = records(tmp_path / "m.jsonl")
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]  # type: ignore[operator]
