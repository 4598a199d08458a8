"""`tlc lsp`'s editing features through the protocol (pytest-lsp, a server subprocess): inlay
hints, semantic tokens, formatting, rename across files, quick fixes, and hover and definition
on loop variables, instances, data, imports and train-block values."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tensorloom.frontend.format import format_text
from tensorloom.tools.lsp.semantic import LEGEND

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples"

NET = """\
model Classifier:
    layer fc1 = Linear(64, 256)
    layer fc2 = Linear(128, 10)

    fn forward(self, x: Tensor[B, 64]) -> Tensor:
        return x |> self.fc1 |> relu |> self.fc2

let net = Classifier()
let data = load_dataset("digits", flatten=true)

train net on data:
    epochs = 10
    optimizer = Adamm(lr=0.001)
    loss = CrossEntropy
"""
BLOCK = """\
@model Block:
    @config:
        width = 8
    @layers:
        fc = Linear(width, width)
    @forward(x: Tensor[B, 8]):
        return fc(x)
"""
SCRIPT = """\
import block.nml
let net = Block(width=8)
"""


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tensorloom.tools.tlc", "lsp"])
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    params = types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        root_uri=ROOT.as_uri(),
        initialization_options={"inlayHints": {"shapes": True, "configs": True}},
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, path: Path, text: str | None = None) -> str:
    uri = path.resolve().as_uri()
    document = types.TextDocumentItem(
        uri=uri,
        language_id="tensorloom",
        version=1,
        text=path.read_text() if text is None else text,
    )
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=document))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri


async def _replace(client: LanguageClient, uri: str, text: str, version: int) -> None:
    change = types.TextDocumentContentChangeWholeDocument(text=text)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[change],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)


def _at(uri: str, line: int, col: int) -> dict[str, object]:
    """The request fields for 1-based (line, col), as `tlc` prints positions."""
    return {
        "text_document": types.TextDocumentIdentifier(uri=uri),
        "position": types.Position(line=line - 1, character=col - 1),
    }


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """`text` with LSP edits applied (last first, so earlier positions stay valid)."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(position: types.Position) -> int:
        return min(offsets[position.line] + position.character, len(text))

    ordered = sorted(edits, key=lambda e: offset(e.range.start), reverse=True)
    for edit in ordered:
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def _whole_file(uri: str) -> types.Range:
    return types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=999, character=0)
    )


async def _hints(client: LanguageClient, uri: str) -> list[tuple[int, int, str]]:
    found = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=_whole_file(uri)
        )
    )
    return [(h.position.line + 1, h.position.character + 1, str(h.label)) for h in found or []]


@pytest.mark.asyncio
async def test_inlay_hints_show_shapes_on_gpt(client: LanguageClient) -> None:
    uri = await _open(client, EXAMPLES / "gpt.nml")
    lines = (EXAMPLES / "gpt.nml").read_text().splitlines()
    found = await _hints(client, uri)
    shown = {(lines[line - 1][: col - 1].strip(), label) for line, col, label in found}
    assert ("x = block", ": [B, T, 768]") not in shown  # a hint follows the name, not the call
    assert ("for block in h:", "") not in shown
    loop_body = next(i for i, t in enumerate(lines, 1) if t.strip() == "x = block(x)")
    assert (loop_body, lines[loop_body - 1].index("x") + 2, ": [B, T, 768]") in found
    pos = next(i for i, t in enumerate(lines, 1) if "let pos = arange(T)" in t)
    assert (pos, lines[pos - 1].index("pos") + 4, ": [T]") in found
    assert ("@forward(x", ": [B, T, 768]") in shown  # Block's and MLP's unwritten input
    assert ("x", ": [B, T, 768]") in shown  # `x = x + attn(ln_1(x))` in Block


@pytest.mark.asyncio
async def test_inlay_hints_show_an_instance_config_and_can_be_turned_off(
    client: LanguageClient,
) -> None:
    uri = await _open(client, EXAMPLES / "train_gpt.tl")
    lines = (EXAMPLES / "train_gpt.tl").read_text().splitlines()
    row = next(i for i, t in enumerate(lines, 1) if t.startswith("let model = GPT("))
    assert (row, len(lines[row - 1]) + 1, "dropout=0.0") in await _hints(client, uri)
    settings = {"tensorloom": {"inlayHints": {"configs": False}}}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))
    assert await _hints(client, uri) == []


@pytest.mark.asyncio
async def test_semantic_tokens(client: LanguageClient) -> None:
    uri = await _open(client, EXAMPLES / "train_gpt.tl")
    found = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert found is not None
    lines = (EXAMPLES / "train_gpt.tl").read_text().splitlines()
    line, col, named = 0, 0, []
    data = found.data
    for index in range(0, len(data), 5):
        line += data[index]
        col = data[index + 1] + (col if data[index] == 0 else 0)
        text = lines[line][col : col + data[index + 2]]
        named.append((text, LEGEND[data[index + 3]]))
    assert ("GPT", "class") in named and ("n_layer", "parameter") in named
    assert ("epochs", "keyword") in named and ("optimizer", "keyword") in named

    uri = await _open(client, EXAMPLES / "gpt.nml")
    found = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert found is not None
    kinds = {LEGEND[found.data[i + 3]] for i in range(0, len(found.data), 5)}
    assert {"class", "property", "parameter", "typeParameter"} <= kinds


@pytest.mark.asyncio
async def test_formatting(client: LanguageClient, tmp_path: Path) -> None:
    messy = "model M:\n  layer fc=Linear(4,4)\n  fn forward(self,x:Tensor[B,4]) -> Tensor:\n"
    messy += "      return x|>self.fc   // out\n"
    uri = await _open(client, tmp_path / "m.tl", messy)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            options=types.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    assert edits is not None
    formatted = _apply(messy, edits)
    assert (
        formatted
        == format_text(messy, "m.tl")
        == (
            "model M:\n    layer fc = Linear(4, 4)\n"
            "    fn forward(self, x: Tensor[B, 4]) -> Tensor:\n"
            "        return x |> self.fc  // out\n"
        )
    )
    await _replace(client, uri, formatted, 2)
    again = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            options=types.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    assert not again


@pytest.mark.asyncio
async def test_rename_a_config_entry_and_a_model_across_files(
    client: LanguageClient, tmp_path: Path
) -> None:
    (tmp_path / "block.nml").write_text(BLOCK)
    (tmp_path / "train.tl").write_text(SCRIPT)
    uri = await _open(client, tmp_path / "train.tl")
    block_uri = (tmp_path / "block.nml").resolve().as_uri()
    keyword = _at(uri, 2, 18)  # `width` in `Block(width=8)`
    where = await client.text_document_prepare_rename_async(types.PrepareRenameParams(**keyword))
    assert isinstance(where, types.Range) and (where.start.character, where.end.character) == (
        16,
        21,
    )
    edit = await client.text_document_rename_async(types.RenameParams(**keyword, new_name="dim"))
    assert edit is not None and edit.changes is not None
    assert set(edit.changes) == {uri, block_uri}
    block = _apply(BLOCK, edit.changes[block_uri])
    script = _apply(SCRIPT, edit.changes[uri])
    assert "        dim = 8\n" in block and "Linear(dim, dim)" in block
    assert script == "import block.nml\nlet net = Block(dim=8)\n"

    edit = await client.text_document_rename_async(
        types.RenameParams(**_at(uri, 2, 11), new_name="Cell")
    )
    assert edit is not None and edit.changes is not None
    (tmp_path / "block.nml").write_text(_apply(block, edit.changes[block_uri]))
    (tmp_path / "train.tl").write_text(_apply(script, edit.changes[uri]))
    assert (tmp_path / "train.tl").read_text() == "import block.nml\nlet net = Cell(dim=8)\n"
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "tensorloom.tools.tlc",
            "check",
            "--no-cache",
            str(tmp_path / "train.tl"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    builtin = await client.text_document_prepare_rename_async(
        types.PrepareRenameParams(**_at(block_uri, 5, 15))
    )
    assert builtin is None  # `Linear` is the catalogue's


@pytest.mark.asyncio
async def test_rename_a_loop_variable_and_a_layer(client: LanguageClient) -> None:
    uri = await _open(client, EXAMPLES / "gpt.nml")
    lines = (EXAMPLES / "gpt.nml").read_text().splitlines()
    row = next(i for i, t in enumerate(lines, 1) if t.strip() == "for block in h:")
    edit = await client.text_document_rename_async(
        types.RenameParams(**_at(uri, row, lines[row - 1].index("block") + 1), new_name="layer_i")
    )
    assert edit is not None and edit.changes is not None
    assert [(e.range.start.line + 1, e.new_text) for e in edit.changes[uri]] == [
        (row, "layer_i"),
        (row + 1, "layer_i"),
    ]
    edit = await client.text_document_rename_async(
        types.RenameParams(**_at(uri, row, lines[row - 1].index(" h:") + 2), new_name="blocks")
    )
    assert edit is not None and edit.changes is not None
    assert [e.range.start.line + 1 for e in edit.changes[uri]] == [row - 6, row]


@pytest.mark.asyncio
async def test_quick_fixes_clear_their_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "net.tl"
    uri = await _open(client, path, NET)
    assert sorted(d.code for d in client.diagnostics[uri]) == ["TL0201", "TL0404"]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=_whole_file(uri),
            context=types.CodeActionContext(diagnostics=list(client.diagnostics[uri])),
        )
    )
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
    assert titles == ["change `fc2` to `Linear(256, 10)`", "change `Adamm` to `Adam`"]
    text = NET
    for action in actions:
        assert isinstance(action, types.CodeAction) and action.edit and action.edit.changes
        text = _apply(text, action.edit.changes[uri])
    await _replace(client, uri, text, 2)
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_quick_fix_imports_a_model_declared_beside_the_file(
    client: LanguageClient, tmp_path: Path
) -> None:
    (tmp_path / "block.nml").write_text(BLOCK)
    text = "// a script\nlet net = Block(width=8)\n"
    uri = await _open(client, tmp_path / "train.tl", text)
    assert [d.code for d in client.diagnostics[uri]] == ["TL0302"]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=_whole_file(uri),
            context=types.CodeActionContext(diagnostics=list(client.diagnostics[uri])),
        )
    )
    assert actions is not None and len(actions) == 1
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.edit and action.edit.changes
    assert action.title == "import `Block` from `block.nml`"
    fixed = _apply(text, action.edit.changes[uri])
    assert fixed == "// a script\nimport block.nml\nlet net = Block(width=8)\n"
    await _replace(client, uri, fixed, 2)
    assert list(client.diagnostics[uri]) == []


async def _hover_text(client: LanguageClient, uri: str, line: int, col: int) -> str | None:
    found = await client.text_document_hover_async(types.HoverParams(**_at(uri, line, col)))
    if found is None:
        return None
    assert isinstance(found.contents, types.MarkupContent)
    return found.contents.value


@pytest.mark.asyncio
async def test_hover_and_definition_of_every_named_thing(client: LanguageClient) -> None:
    uri = await _open(client, EXAMPLES / "gpt.nml")
    lines = (EXAMPLES / "gpt.nml").read_text().splitlines()
    row = next(i for i, t in enumerate(lines, 1) if t.strip() == "for block in h:")
    at_for = lines[row - 1].index("for") + 1
    loop = await _hover_text(client, uri, row, at_for)  # not `for block in h:: Tensor[...]`
    assert (
        loop is not None and loop.startswith("```tl\nfor block in h\n```") and "Tensor" not in loop
    )
    loop_var = await _hover_text(client, uri, row + 1, lines[row].index("block") + 2)
    assert loop_var is not None and "loop variable: each layer of `h`, a `Block(" in loop_var
    target = await client.text_document_definition_async(
        types.DefinitionParams(**_at(uri, row + 1, lines[row].index("block") + 2))
    )
    assert isinstance(target, types.Location)
    assert (target.range.start.line + 1, target.range.start.character + 1) == (
        row,
        lines[row - 1].index("block") + 1,
    )

    script = await _open(client, EXAMPLES / "train_gpt.tl")
    lines = (EXAMPLES / "train_gpt.tl").read_text().splitlines()

    def where(prefix: str, word: str) -> tuple[int, int]:
        row = next(i for i, t in enumerate(lines, 1) if t.strip().startswith(prefix))
        return row, lines[row - 1].index(word) + 1

    instance = await _hover_text(client, script, *where("train model", "model"))
    assert instance is not None and "478,272 parameters" in instance and "`dropout=0.0`" in instance
    data = await _hover_text(client, script, *where("train model", "data"))
    assert data is not None and "samples [B, 64], targets [B, 64] class labels" in data
    dataset = await _hover_text(client, script, *where("let data", "text"))
    assert (
        dataset is not None and "- `block_size: int` (tokens per window: the model's T)" in dataset
    )
    imported = await _hover_text(client, script, *where("import", "gpt"))
    assert imported is not None and "models: `MLP`, `Block`, `GPT`" in imported
    optimizer = await _hover_text(client, script, *where("optimizer", "AdamW"))
    assert optimizer is not None and "Adam with decoupled weight decay" in optimizer
    assert "`lr: float > 0`" in optimizer
    loss = await _hover_text(client, script, *where("loss", "CrossEntropy"))
    assert loss is not None and "loss: log-softmax over dim 1, then NLL" in loss
    override = await _hover_text(client, script, *where("let model", "n_layer"))
    assert override is not None and "config of `GPT`, default `12`" in override
    definition = await client.text_document_definition_async(
        types.DefinitionParams(**_at(script, *where("let model", "n_layer")))
    )
    assert isinstance(definition, types.Location)
    assert definition.uri == (EXAMPLES / "gpt.nml").resolve().as_uri()


@pytest.mark.asyncio
async def test_rename_refuses_a_keyword_and_a_builtin(client: LanguageClient) -> None:
    uri = await _open(client, EXAMPLES / "gpt.nml")
    lines = (EXAMPLES / "gpt.nml").read_text().splitlines()
    row = next(i for i, t in enumerate(lines, 1) if t.strip() == "for block in h:")
    at = _at(uri, row, lines[row - 1].index("block") + 1)
    with pytest.raises(Exception, match="`return` is not a valid name"):
        await client.text_document_rename_async(types.RenameParams(**at, new_name="return"))
    layer_norm = next(i for i, t in enumerate(lines, 1) if "LayerNorm(n_embd)" in t)
    builtin = _at(uri, layer_norm, lines[layer_norm - 1].index("LayerNorm") + 1)
    with pytest.raises(Exception, match="only a model, layer, config entry"):
        await client.text_document_rename_async(types.RenameParams(**builtin, new_name="Norm"))


@pytest.mark.asyncio
async def test_references_of_a_config_entry_across_files(
    client: LanguageClient, tmp_path: Path
) -> None:
    (tmp_path / "block.nml").write_text(BLOCK)
    (tmp_path / "train.tl").write_text(SCRIPT)
    uri = await _open(client, tmp_path / "train.tl")
    block_uri = (tmp_path / "block.nml").resolve().as_uri()
    for declaration, expected in ((True, 4), (False, 3)):
        found = await client.text_document_references_async(
            types.ReferenceParams(
                **_at(uri, 2, 18), context=types.ReferenceContext(include_declaration=declaration)
            )
        )
        assert found is not None and len(found) == expected
        places = {(f.uri, f.range.start.line + 1, f.range.start.character + 1) for f in found}
        assert (uri, 2, 17) in places and (block_uri, 5, 21) in places
        assert ((block_uri, 3, 9) in places) == declaration


@pytest.mark.asyncio
async def test_hover_on_a_loss_function_and_its_shape_hints(client: LanguageClient) -> None:
    uri = await _open(client, EXAMPLES / "train_vae.tl")
    lines = (EXAMPLES / "train_vae.tl").read_text().splitlines()
    row = next(i for i, t in enumerate(lines, 1) if t.strip() == "loss = elbo")
    text = await _hover_text(client, uri, row, lines[row - 1].index("elbo") + 1)
    assert text is not None and text.startswith("```tl\nfn elbo(out, x, y) -> Tensor\n```")
    kl = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("let kl ="))
    assert (kl, lines[kl - 1].index("kl") + 3, ": []") in await _hints(client, uri)
