"""`tlc lsp` driven by a real LSP client (pytest-lsp): diagnostics, hover, definition,
completion and symbols, over stdio, in a server subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

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
    optimizer = Adam(lr=0.001)
    loss = CrossEntropy
"""
FIXED = NET.replace("Linear(128, 10)", "Linear(256, 10)")


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tensorloom.tools.tlc", "lsp"])
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    params = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=ROOT.as_uri())
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


def _at(uri: str, line: int, col: int) -> dict[str, object]:
    """The request fields for 1-based (line, col), as `tlc` prints positions."""
    return {
        "text_document": types.TextDocumentIdentifier(uri=uri),
        "position": types.Position(line=line - 1, character=col - 1),
    }


def _check_json(path: Path) -> list[dict[str, object]]:
    result = subprocess.run(
        [sys.executable, "-m", "tensorloom.tools.tlc", "check", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    return json.loads(result.stdout)["diagnostics"]


@pytest.mark.asyncio
async def test_diagnostics_match_tlc_check(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "net.tl"
    path.write_text(NET)
    uri = await _open(client, path)
    found = client.diagnostics[uri]
    expected = _check_json(path)
    assert [d.code for d in found] == [d["code"] for d in expected] == ["TL0201"]
    lsp, want = found[0], expected[0]
    primary = want["primary"]
    assert isinstance(primary, dict)
    assert (lsp.range.start.line + 1, lsp.range.start.character + 1) == (
        primary["line"],
        primary["column"],
    )
    assert (lsp.range.end.line + 1, lsp.range.end.character + 1) == (
        primary["end_line"],
        primary["end_column"],
    )
    assert lsp.severity == types.DiagnosticSeverity.Error
    assert lsp.message.splitlines() == [
        "`fc2` expects 128 input features, got 256",
        "input is [B, 256]",
        f"help: {want['help']}",
    ]
    assert lsp.related_information is not None
    related = lsp.related_information[0]
    assert related.message == "`fc2` is declared here"
    assert related.location.uri == uri
    assert (related.location.range.start.line, related.location.range.start.character) == (2, 4)


@pytest.mark.asyncio
async def test_change_and_save_recheck(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "net.tl"
    path.write_text(NET)
    uri = await _open(client, path)
    assert [d.code for d in client.diagnostics[uri]] == ["TL0201"]
    start = types.Position(line=2, character=23)
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(start=start, end=types.Position(line=2, character=26)), text="256"
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[edit],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []
    path.write_text(FIXED.replace("epochs = 10", "epochs = 0"))
    broken = types.TextDocumentContentChangeWholeDocument(text=path.read_text())
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[broken],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    (found,) = client.diagnostics[uri]
    assert (found.code, found.range.start.line + 1, found.range.start.character + 1) == (
        "TL0403",
        12,
        14,
    )


@pytest.mark.asyncio
async def test_diagnostic_in_an_imported_file_is_published_on_that_file(
    client: LanguageClient, tmp_path: Path
) -> None:
    (tmp_path / "block.nml").write_text(
        "@model Block:\n    @layers:\n        fc = Linaer(8, 8)\n    @forward(x):\n"
        "        return fc(x)\n"
    )
    path = tmp_path / "train.tl"
    uri = await _open(client, path, "import block.nml as Block\nlet net = Block()\n")
    imported = (tmp_path / "block.nml").resolve().as_uri()
    if imported not in client.diagnostics:
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[imported]] == ["TL0302"]
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_hover(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "net.tl"
    uri = await _open(client, path, FIXED)
    layer = await client.text_document_hover_async(types.HoverParams(**_at(uri, 6, 27)))
    assert layer is not None and isinstance(layer.contents, types.MarkupContent)
    text = layer.contents.value
    assert "layer fc1 = Linear(64, 256)" in text
    assert "Linear(in_features, out_features, bias=True)  ->  nn.Linear" in text
    assert "`net`: output [B, 256], 16,640 parameters" in text
    value = await client.text_document_hover_async(types.HoverParams(**_at(uri, 6, 34)))
    assert value is not None and isinstance(value.contents, types.MarkupContent)
    assert "relu: Tensor[B, 256]" in value.contents.value
    param = await client.text_document_hover_async(types.HoverParams(**_at(uri, 6, 16)))
    assert param is not None and isinstance(param.contents, types.MarkupContent)
    assert "x: Tensor[B, 64]" in param.contents.value
    model = await client.text_document_hover_async(types.HoverParams(**_at(uri, 8, 14)))
    assert model is not None and isinstance(model.contents, types.MarkupContent)
    assert "`net`: input [B, 64], output [B, 10], 19,210 parameters" in model.contents.value


@pytest.mark.asyncio
async def test_definition_of_layers_models_imports_and_kernels(client: LanguageClient) -> None:
    net = await _open(client, EXAMPLES / "mnist.tl")
    layer = await client.text_document_definition_async(types.DefinitionParams(**_at(net, 28, 27)))
    assert isinstance(layer, types.Location)
    assert (layer.uri, layer.range.start.line + 1, layer.range.start.character + 1) == (net, 23, 11)
    model = await client.text_document_definition_async(types.DefinitionParams(**_at(net, 31, 12)))
    assert isinstance(model, types.Location)
    assert (model.range.start.line + 1, model.range.start.character + 1) == (22, 7)

    script = await _open(client, EXAMPLES / "train_transformer.tl")
    lines = (EXAMPLES / "train_transformer.tl").read_text().splitlines()
    row = next(i for i, text in enumerate(lines, 1) if text.startswith("import "))
    target = await client.text_document_definition_async(
        types.DefinitionParams(**_at(script, row, 9))
    )
    assert isinstance(target, types.Location)
    assert target.uri == (EXAMPLES / "transformer.nml").resolve().as_uri()

    kernels = await _open(client, EXAMPLES / "custom_kernel.tl")
    lines = (EXAMPLES / "custom_kernel.tl").read_text().splitlines()
    row, text = next((i, t) for i, t in enumerate(lines, 1) if "|> fast_gelu" in t)
    kernel = await client.text_document_definition_async(
        types.DefinitionParams(**_at(kernels, row, text.index("fast_gelu") + 2))
    )
    assert isinstance(kernel, types.Location)
    declared = next(i for i, t in enumerate(lines, 1) if t.startswith("@kernel def fast_gelu"))
    assert kernel.range.start.line + 1 == declared


async def _labels(client: LanguageClient, uri: str, line: int, col: int) -> list[str]:
    found = await client.text_document_completion_async(
        types.CompletionParams(**_at(uri, line, col))
    )
    assert isinstance(found, types.CompletionList)
    return [item.label for item in found.items]


@pytest.mark.asyncio
async def test_completion(client: LanguageClient, tmp_path: Path) -> None:
    text = FIXED + "    optimizer = \n    \n"
    text = text.replace("        return x |> self.fc1", "        return x |> self.")
    uri = await _open(client, tmp_path / "net.tl", text + "let other = Classifier(\n")
    members = await _labels(client, uri, 6, 26)
    assert members == ["fc1", "fc2", "forward"]
    keys = await _labels(client, uri, 16, 5)
    assert {"epochs", "optimizer", "loss", "batch_size", "lr_schedule"} <= set(keys)
    optimizers = await _labels(client, uri, 15, 17)
    assert {"Adam", "AdamW", "SGD"} <= set(optimizers) and "Linear" not in optimizers
    anywhere = await _labels(client, uri, 8, 11)
    assert {"Linear", "Conv2d", "relu", "softmax", "Classifier", "model", "train"} <= set(anywhere)

    (tmp_path / "block.nml").write_text(
        "@model Block:\n    @config:\n        width = 8\n    @layers:\n"
        "        fc = Linear(width, width)\n    @forward(x):\n        return fc(x)\n"
    )
    uri = await _open(client, tmp_path / "u.tl", "import block.nml as Block\nlet b = Block(\n")
    assert (await _labels(client, uri, 2, 15))[0] == "width="
    uri = await _open(client, tmp_path / "v.tl", "model M:\n    layer fc = Linear(\n")
    assert (await _labels(client, uri, 2, 23))[:3] == ["in_features=", "out_features=", "bias="]


@pytest.mark.asyncio
async def test_document_symbols(client: LanguageClient) -> None:
    uri = await _open(client, EXAMPLES / "mnist.tl")
    found = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert found is not None
    outline = [(s.name, s.kind) for s in found if isinstance(s, types.DocumentSymbol)]
    assert outline == [
        ("Classifier", types.SymbolKind.Class),
        ("net", types.SymbolKind.Variable),
        ("data", types.SymbolKind.Variable),
        ("train", types.SymbolKind.Event),
    ]
    model = found[0]
    assert isinstance(model, types.DocumentSymbol) and model.children is not None
    assert [(c.name, c.kind) for c in model.children] == [
        ("fc1", types.SymbolKind.Field),
        ("fc2", types.SymbolKind.Field),
        ("fc3", types.SymbolKind.Field),
        ("forward", types.SymbolKind.Method),
    ]


@pytest.mark.asyncio
async def test_saving_an_imported_file_rechecks_its_importers(
    client: LanguageClient, tmp_path: Path
) -> None:
    block = tmp_path / "block.nml"
    text = "@model Block:\n    @config:\n        width = 8\n    @layers:\n"
    text += "        fc = Linear(width, width)\n    @forward(x):\n        return fc(x)\n"
    block.write_text(text)
    source = "import block.nml as B\nlet b = B(width=16)\n"
    script = await _open(client, tmp_path / "train.tl", source)
    assert list(client.diagnostics[script]) == []
    nml = await _open(client, block)
    block.write_text(text.replace("width", "size"))
    change = types.TextDocumentContentChangeWholeDocument(text=block.read_text())
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=nml, version=2),
            content_changes=[change],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=nml))
    )
    for _ in range(3):  # the saved file's, then its importer's
        if list(client.diagnostics.get(script, [])):
            break
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    (found,) = client.diagnostics[script]
    assert (found.code, found.range.start.line, found.range.start.character) == ("TL0420", 1, 10)
