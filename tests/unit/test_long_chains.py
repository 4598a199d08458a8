"""Long left-associative chains check, compile and print in every stage (issue 15).

Each form is 1,100 links long: past Python's default recursion limit of 1,000
frames, so a stage that walks it recursively without `recursion_room()` (or
iteratively) fails here with a RecursionError reported as TL0901.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.printer import Printer

from tensorloom.pipeline import compile_file, python_source
from tensorloom.recursion import recursion_room
from tensorloom.tools.check import check_file

N = 1_100

MODEL = """model M:
    layer fc = Linear(4, 4)

    fn forward(self, x: Tensor[B, 4]) -> Tensor:
        let y = {chain}
        return self.fc(y)

let net = M()
"""

KERNEL = """@kernel def k(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    let offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    let mask = offsets < n
    let x = tl.load(x_ptr + offsets, mask=mask)
    let y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, {chain}, mask=mask)
"""

TRAIN = """fn my_loss(out, x, y) -> Tensor:
    return {chain}

model M:
    layer fc = Linear(64, 10)

    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return self.fc(x)

let net = M()
let data = load_dataset("digits", flatten=true)
train net on data:
    epochs = 1{plus_zero}
    batch_size = 64
    optimizer = Adam(lr=0.001{times_one})
    loss = my_loss
"""

FORMS = {
    "indexing": MODEL.format(chain="x" + "[:]" * N),
    "methods, sums and pipes": MODEL.format(
        chain="x" + "".join((".abs()", " + x.relu()", ".exp() * x")[i % 3] for i in range(N))
    ),
    "kernel sum": KERNEL.format(chain="x" + " + alpha * y" * N),
    "kernel method calls": KERNEL.format(chain="x" + ".to(tl.float32)" * N),
    "train settings and a loss": TRAIN.format(
        chain="out.mean()" + " + out.abs().mean()" * N,
        plus_zero=" + 0" * N,
        times_one=" * 1.0" * N,
    ),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_a_long_chain_checks_compiles_and_prints(form: str, tmp_path: Path) -> None:
    path = tmp_path / "chain.tl"
    path.write_text(FORMS[form])
    checked, _ = check_file(path)
    assert [d.code for d in checked.sink] == [], checked.sink.errors()
    compiled = compile_file(path, until="torch")
    assert compiled.ok and compiled.module is not None, compiled.sink.errors()
    script = python_source(compiled.module, str(path))
    compile(script, "<emitted>", "exec")
    assert checked.module is not None
    with recursion_room():  # as `tlc compile --emit=nml` prints the IR, under run_guarded
        Printer(stream=_Null()).print_op(checked.module)


class _Null:
    def write(self, text: str) -> int:
        return len(text)
