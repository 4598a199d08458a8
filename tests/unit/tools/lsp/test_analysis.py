"""The language server's analysis in process: hover, definition and completion on small programs."""

from __future__ import annotations

from pathlib import Path

from tensorloom.tools.lsp import complete, hover, navigate
from tensorloom.tools.lsp.document import Analysis, analyze

SCRIPT = """\
model Net:
    layer fc1 = Linear(8, 16)
    layer fc2 = Linear(16, 4)

    fn forward(self, x: Tensor[B, 8]) -> Tensor:
        let h = self.fc1(x)
        let r = h
        h = relu(h)
        h = self.fc2(h)
        return h + 0 * r.sum()

let net = Net()
"""


def _analysis(tmp_path: Path, text: str = SCRIPT, name: str = "net.tl") -> Analysis:
    path = tmp_path / name
    path.write_text(text)
    return analyze(str(path), text)


def _hover(analysis: Analysis, line: int, word: str, nth: int = 0) -> str:
    text = analysis.line(line)
    col = text.index(word, text.index(word) + 1 if nth else 0) + 1
    found = hover.hover(analysis, line, col)
    assert found is not None, (line, word)
    return found[0]


def test_hover_follows_reassignments_and_aliases(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    assert analysis.diagnostics == []
    assert "h: Tensor[B, 16]" in _hover(analysis, 6, "h")  # let h = self.fc1(x)
    assert "r: Tensor[B, 16]" in _hover(analysis, 7, "r")  # let r = h: h's shape
    assert "h: Tensor[B, 16]" in _hover(analysis, 9, "h", nth=1)  # the h that fc2 reads
    assert "h: Tensor[B, 4]" in _hover(analysis, 10, "h")  # after h = self.fc2(h)
    assert "x: Tensor[B, 8]" in _hover(analysis, 6, "x")  # the parameter


def test_hover_on_a_builtin_shows_its_signature_and_result(tmp_path: Path) -> None:
    text = _hover(_analysis(tmp_path), 8, "relu")
    assert "relu(x)  ->  F.relu" in text
    assert "relu(h): Tensor[B, 16]" in text


def test_hover_on_a_train_setting(tmp_path: Path) -> None:
    text = SCRIPT + 'let data = load_dataset("digits", flatten=true)\n'
    text = text.replace("Linear(8, 16)", "Linear(64, 16)").replace("[B, 8]", "[B, 64]")
    text += "train net on data:\n    epochs = 2\n    loss = CrossEntropy\n"
    analysis = _analysis(tmp_path, text.replace("Linear(16, 4)", "Linear(16, 10)"))
    expected = "train setting: number of passes over the training data"
    assert expected in _hover(analysis, 15, "epochs")


def test_definition_of_a_local_and_of_a_parameter(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    span = navigate.definition(analysis, 10, 24)  # the `r` of `r.sum()`
    assert span is not None and (span.line, span.col) == (7, 13)
    param = navigate.definition(analysis, 6, 26)
    assert param is not None and (param.line, param.col) == (5, 22)


def test_definition_through_an_import_alias(tmp_path: Path) -> None:
    (tmp_path / "blocks.nml").write_text(
        "@model Block:\n    @layers:\n        fc = Linear(4, 4)\n    @forward(x):\n"
        "        return fc(x)\n"
    )
    analysis = _analysis(tmp_path, "import blocks.nml as B\nlet net = B()\n", "main.tl")
    target = navigate.definition(analysis, 2, 11)
    assert target is not None
    assert (Path(target.file).name, target.line, target.col) == ("blocks.nml", 1, 8)


def test_symbols_outline_declarations_generically(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    assert analysis.root is not None
    (model, net) = navigate.symbols(analysis.root)
    assert (model.name, model.kind, net.name, net.kind) == ("Net", "model", "net", "variable")
    forward = model.children[-1]
    assert (forward.name, forward.kind) == ("forward", "method")
    assert [(c.name, c.kind) for c in forward.children] == [("h", "variable"), ("r", "variable")]


def test_symbols_outline_an_nml_weights_map(tmp_path: Path) -> None:
    text = (
        "@model Net:\n    @layers:\n        fc = Linear(8, 2)\n\n"
        '@weights hf for Net:\n    "{l}.{p}" -> "{l}.{p}"\n'
    )
    analysis = _analysis(tmp_path, text, "net.nml")
    assert analysis.root is not None
    assert [(s.name, s.kind) for s in navigate.symbols(analysis.root)] == [
        ("Net", "model"), ("hf", "weights"),
    ]  # fmt: skip


def test_definition_of_the_map_a_weights_line_uses(tmp_path: Path) -> None:
    (tmp_path / "net.nml").write_text(
        "@model Net:\n    @layers:\n        fc = Linear(8, 2)\n\n"
        '@weights hf for Net:\n    "{l}.{p}" -> "{l}.{p}"\n'
    )
    text = 'import net.nml as Net\n\nlet net = Net()\n\nweights net from "w" using hf\n'
    analysis = _analysis(tmp_path, text)
    found = navigate.definition(analysis, 5, 29)
    assert found is not None
    assert (Path(found.file).name, found.line, found.col) == ("net.nml", 5, 10)


def test_completion_while_the_file_does_not_parse(tmp_path: Path) -> None:
    text = SCRIPT.replace("        return h + 0 * r.sum()", "        return self.")
    analysis = _analysis(tmp_path, text)
    assert analysis.diagnostics  # a syntax error: the AST is the recovered one
    labels = [i.label for i in complete.completions(analysis, 10, 21)]
    assert labels == ["fc1", "fc2", "forward"]
    functions = {i.label: i.detail for i in complete.completions(analysis, 12, 1)}
    assert functions["softmax"].startswith("softmax(")
    assert "Linear" in functions and "Net" in functions


def test_a_declared_loss_function_is_completed_and_found(tmp_path: Path) -> None:
    from tensorloom.frontend import ast
    from tensorloom.source import Span

    analysis = _analysis(tmp_path, SCRIPT + "train net on data:\n    loss = \n")
    assert analysis.root is not None
    where = Span(analysis.path, 20, 1, 20, 10)  # a top-level function, as a loss fn would be
    analysis.root.items.append(ast.FnDecl(where, "my_loss", where, [], None, []))
    labels = {i.label: i.kind for i in complete.completions(analysis, 14, 12)}
    assert {"CrossEntropy": "loss", "MSE": "loss", "my_loss": "function"}.items() <= labels.items()
    assert "Linear" not in labels
    definition = navigate.definition(analysis, 14, 13)  # on `loss = my_loss` once typed
    assert definition is None  # not typed yet: the line holds only `loss = `
    analysis.text = analysis.text.replace("    loss = \n", "    loss = my_loss\n")
    found = navigate.definition(analysis, 14, 13)
    assert found == where
