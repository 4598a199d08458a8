"""The language server on the newer lines of a program, in process: a train block's `step`,
`group` and `carry` lines and `target = FIELD`, `@weights` maps and `using`, and assignments
into an index (`x[mask] = 0.0`, `x[:, 0] += 1.0`): completion, hover and semantic tokens."""

from __future__ import annotations

from pathlib import Path

from tensorloom.tools.lsp import complete, hover, navigate, semantic
from tensorloom.tools.lsp.document import Analysis, analyze

STEPS = """\
model LM:
    layer encoder = Embedding(100, 16)
    layer rnn = GRU(16, 32)
    layer decoder = Linear(32, 100)
    layer h0 = Parameter(1, 1, 32)

    fn forward(self, x: Tensor[B, T], h: Tensor):
        let (out, next) = self.rnn(self.encoder(x), h)
        let logits = self.decoder(out)
        logits[logits < -50.0] = -50.0
        logits[:, 0] += 1.0
        return (logits, next)

fn lm_loss(net, x, y, h):
    let (logits, next) = net(x, h.expand(1, x.size(0), 32))
    return (cross_entropy(logits.flatten(0, 1), y.flatten()), next)

let net = LM()
let data = load_dataset("words", path="stdlib", block_size=8, vocab=100)

train net on data:
    batch_size = 4
    group head = params(net.decoder)
    group rest = params(net.encoder, net.rnn, net.h0)
    step lm_loss with (SGD(head, lr=1.0), Adam(rest, lr=0.01)) until epoch 3
    carry h = net.h0
    lr_schedule = step(step_size=2)
"""

FIELDS = """\
model Pair:
    layer img = Linear(64, 10)
    layer words = Embedding(19, 10)
    fn forward(self, image: Tensor[B, 1, 8, 8], text: Tensor[B, 4]) -> Tensor[B, 10]:
        return self.img(image.flatten(1)) + mean(self.words(text), dim=1)

let net = Pair()
let pairs = load_dataset("digits-captions")

train net on pairs:
    loss = CrossEntropy
    target = label
"""

MAPS = """\
@model Net:
    @layers:
        fc = Linear(8, 2)
    @forward(x: Tensor[B, 8]):
        return fc(x)

@weights hf for Net:
    "{l}.{p}" -> "{l}.{p}"
    ignore "extra"
"""


def _analysis(tmp_path: Path, text: str, name: str = "prog.tl") -> Analysis:
    path = tmp_path / name
    path.write_text(text)
    analysis = analyze(str(path), text)
    assert analysis.diagnostics == [], analysis.diagnostics
    return analysis


def _labels(analysis: Analysis, line: int, typed: str) -> dict[str, str]:
    """The completions at the end of `typed`, written in place of line `line`."""
    lines = analysis.text.splitlines()
    text, lines[line - 1] = analysis.text, typed
    analysis.text = "\n".join(lines) + "\n"
    try:
        return {i.label: i.kind for i in complete.completions(analysis, line, len(typed) + 1)}
    finally:
        analysis.text = text


def _hover(analysis: Analysis, line: int, word: str) -> str:
    col = analysis.line(line).index(word) + 1
    found = hover.hover(analysis, line, col)
    assert found is not None, (line, word)
    return found[0]


# --- completion ---------------------------------------------------------------------------


def test_a_block_of_steps_completes_the_keys_it_takes_and_its_lines(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    labels = _labels(analysis, 22, "    ")
    assert {"epochs", "batch_size", "grad_clip", "lr_schedule", "seed"} <= labels.keys()
    # each step names its optimizer (TL0431); a block of steps has no loss to target (TL0471)
    assert not {"optimizer", "loss", "objective", "target"} & labels.keys()
    starts = {k: v for k, v in labels.items() if v == "keyword"}
    assert starts == {"step": "keyword", "group": "keyword", "carry": "keyword",
                      "checkpoint": "keyword"}  # fmt: skip


def test_a_block_without_steps_completes_every_key(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, FIELDS)
    labels = _labels(analysis, 11, "    ")
    assert {"optimizer", "loss", "objective", "target", "step", "carry"} <= labels.keys()


def test_a_block_of_objectives_completes_no_target(tmp_path: Path) -> None:
    text = FIELDS.replace("    loss = CrossEntropy\n    target = label\n", "    objective = f\n")
    text = text.replace(
        "let net", "fn f(net, image, text):\n    return mean(net(image, text))\n\nlet net"
    )
    analysis = _analysis(tmp_path, text + "    epochs = 1\n")
    labels = _labels(analysis, len(analysis.text.splitlines()), "    ")
    assert "target" not in labels and {"epochs", "objective", "loss"} <= labels.keys()


def test_a_step_line_completes_objectives_optimizers_and_their_arguments(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    assert _labels(analysis, 25, "    step ") == {"lm_loss": "function"}
    optimizers = _labels(analysis, 25, "    step lm_loss with ")
    assert {"SGD", "Adam", "AdamW", "Muon"} <= optimizers.keys()
    assert set(optimizers.values()) == {"optimizer"}
    assert _labels(analysis, 25, "    step lm_loss with (SGD(head), ").keys() == optimizers.keys()
    inside = _labels(analysis, 25, "    step lm_loss with AdamW(")
    assert {"head": "variable", "rest": "variable", "net": "variable"}.items() <= inside.items()
    assert {"lr=", "weight_decay=", "grad_clip=", "lr_schedule="} <= inside.keys()
    assert "epochs=" not in inside  # a key of the block, not of a step's optimizer


def test_target_and_objective_complete_from_the_data_and_the_file(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, FIELDS)
    fields = {i.label: i.detail for i in complete.completions(analysis, 12, 14)}
    assert fields == {
        "image": "field of the data: [B, 1, 8, 8] float32",
        "text": "field of the data: [B, 4] int64",
        "label": "field of the data: [B] int64",
    }
    steps = _analysis(tmp_path, STEPS)
    assert _labels(steps, 22, "    objective = ") == {"lm_loss": "function"}


def test_using_completes_the_weights_maps_of_the_imports(tmp_path: Path) -> None:
    (tmp_path / "net.nml").write_text(MAPS)
    text = 'import net.nml as Net\n\nlet net = Net()\n\nweights net from "w" using hf\n'
    analysis = analyze(str(tmp_path / "main.tl"), text)
    assert _labels(analysis, 5, 'weights net from "w" using ') == {"hf": "weights"}


def test_an_instance_completes_its_layers_in_a_carry_and_a_group(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    layers = {"encoder", "rnn", "decoder", "h0", "forward"}
    assert _labels(analysis, 26, "    carry h = net.").keys() == layers
    assert _labels(analysis, 23, "    group head = params(net.de").keys() == layers
    assert "h0" not in _labels(analysis, 26, "    carry h = x.")  # not an instance


def test_the_new_words_are_keywords_everywhere_else(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    labels = _labels(analysis, 18, "")
    assert {"step", "group", "carry", "weights", "using", "until", "epoch"} <= {
        k for k, v in labels.items() if v == "keyword"
    }


# --- hover ----------------------------------------------------------------------------------


def test_hover_on_a_step_line(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    text = _hover(analysis, 25, "step")
    assert "step lm_loss with (SGD(head, lr=1.0), Adam(rest, lr=0.01)) until epoch 3" in text
    assert "a step of each batch: `lm_loss`'s value, one backward, then a step of " in text
    assert "`SGD(head, lr=1.0)`, `Adam(rest, lr=0.01)`; until epoch 3" in text
    assert "fn lm_loss(net, x, y, h)" in _hover(analysis, 25, "lm_loss")


def test_hover_on_step_outside_a_step_line_is_the_schedule(tmp_path: Path) -> None:
    text = _hover(_analysis(tmp_path, STEPS), 27, "step")
    assert "learning-rate schedule" in text and "a step of each batch" not in text


def test_hover_on_a_group_where_it_is_declared_and_where_a_step_names_it(
    tmp_path: Path,
) -> None:
    analysis = _analysis(tmp_path, STEPS)
    declared = _hover(analysis, 23, "head")
    assert "group head = params(net.decoder)" in declared and "parameter group" in declared
    assert f"declared at {tmp_path / 'prog.tl'}:23:11" in declared
    assert _hover(analysis, 23, "group") == declared
    col = analysis.line(25).index("head") + 1
    used = hover.hover(analysis, 25, col)
    assert used is not None and used[0] == declared


def test_hover_on_a_carry_shows_the_carried_type(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    text = _hover(analysis, 26, "carry")
    assert "carry h = net.h0" in text and "carried value: `[1, B, 32]`" in text
    assert "`net.h0` again at each epoch's start" in text
    assert _hover(analysis, 26, "h ") == text


def test_hover_on_a_target_field(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, FIELDS)
    assert "the loss's target: field of the data: [B] int64 of `pairs`" in _hover(
        analysis, 12, "label"
    )
    assert "train setting: " in _hover(analysis, 12, "target")


def test_hover_on_a_weights_map_and_its_using(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, MAPS, "net.nml")
    text = _hover(analysis, 7, "hf")
    assert "@weights hf for Net" in text and "weights map of `Net`: 2 rules" in text
    (tmp_path / "main.tl").write_text("")
    main = analyze(
        str(tmp_path / "main.tl"),
        'import net.nml as Net\n\nlet net = Net()\n\nweights net from "w" using hf\n',
    )
    assert _hover(main, 5, "hf") == text


def test_hover_on_an_index_assignment_shows_the_tensor(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    assert "logits: Tensor[B, T, 100]" in _hover(analysis, 10, "logits")
    assert "logits: Tensor[B, T, 100]" in _hover(analysis, 11, "logits")


def test_definition_of_a_group_and_a_carry_a_line_names(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    used = navigate.definition(analysis, 25, analysis.line(25).index("rest") + 1)
    assert used is not None and (used.line, used.col) == (24, 11)
    carry = navigate.definition(analysis, 26, 11)
    assert carry is not None and (carry.line, carry.col) == (26, 11)


# --- semantic tokens ------------------------------------------------------------------------


def test_the_words_that_start_train_lines_are_keywords(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, STEPS)
    found = {
        (c.line, analysis.line(c.line)[c.col - 1 : c.col - 1 + c.length]): c.kind
        for c in semantic.classify(analysis)
        if c.line > 20
    }
    assert found == {
        (22, "batch_size"): "key",
        (23, "group"): "key",
        (24, "group"): "key",
        (25, "step"): "key",
        (26, "carry"): "key",
        (27, "lr_schedule"): "key",
    }
