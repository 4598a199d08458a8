"""The pygls language server: LSP requests in, the analysis modules, LSP types out.

    $ tlc lsp            # speaks LSP on stdin/stdout (editors/vscode starts it)

Features: diagnostics, hover, definition, completion, document symbols, inlay hints
(shapes and instance configs), semantic tokens, formatting (`tlc fmt`'s layout),
rename (with prepareRename), references and quick fixes. Initialization options (all optional):

    {"inlayHints": {"shapes": true, "configs": true}}

On open and change a document is checked again (`document.analyze`, the
same pipeline and diagnostics as `tlc check`), on save only if its text changed
since, and saving a file re-checks the open files that import it. Its
diagnostics are then published: one LSP diagnostic per TensorLoom diagnostic, with the code, the
primary span as the range, the primary label, notes and `help:` in the
message, and each secondary span as related information. A diagnostic in an
imported file is published on that file. Positions: LSP's are 0-based, ours
1-based; columns count code points.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from tensorloom import __version__
from tensorloom.diagnostics import Diagnostic, Severity
from tensorloom.diagnostics.render_ci import full_message
from tensorloom.source import Span
from tensorloom.tools.lsp import complete, fixes, hints, hover, navigate, rename, semantic
from tensorloom.tools.lsp.document import Analysis, analyze

SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.NOTE: types.DiagnosticSeverity.Information,
}
SYMBOL_KINDS = {
    "model": types.SymbolKind.Class,
    "layer": types.SymbolKind.Field,
    "config": types.SymbolKind.Property,
    "method": types.SymbolKind.Method,
    "function": types.SymbolKind.Function,
    "kernel": types.SymbolKind.Function,
    "variable": types.SymbolKind.Variable,
    "import": types.SymbolKind.Module,
    "train": types.SymbolKind.Event,
    "weights": types.SymbolKind.Object,  # an .nml `@weights` map
}
COMPLETION_KINDS = {
    "layer": types.CompletionItemKind.Class,
    "model": types.CompletionItemKind.Class,
    "function": types.CompletionItemKind.Function,
    "kernel": types.CompletionItemKind.Function,
    "setting": types.CompletionItemKind.Property,
    "config": types.CompletionItemKind.Property,
    "argument": types.CompletionItemKind.Variable,
    "member": types.CompletionItemKind.Field,
    "variable": types.CompletionItemKind.Variable,
    "optimizer": types.CompletionItemKind.EnumMember,
    "loss": types.CompletionItemKind.EnumMember,
    "schedule": types.CompletionItemKind.EnumMember,
    "keyword": types.CompletionItemKind.Keyword,
    "field": types.CompletionItemKind.Field,
    "weights": types.CompletionItemKind.Reference,
}


class TensorLoomServer(LanguageServer):
    """The server, with each open document's latest analysis."""

    def __init__(self) -> None:
        super().__init__("tlc", __version__)
        self.analyses: dict[str, Analysis] = {}
        self.published: dict[str, set[str]] = {}  # document uri -> uris it published on
        self.hint_kinds = {"shapes": True, "configs": True}  # initializationOptions.inlayHints

    def configure(self, options: object) -> None:
        """Read `{"inlayHints": {"shapes": bool, "configs": bool}}` from the client."""
        chosen = options.get("inlayHints") if isinstance(options, dict) else None
        if isinstance(chosen, dict):
            for kind in self.hint_kinds:
                value = chosen.get(kind)  # type: ignore[union-attr]
                if isinstance(value, bool):
                    self.hint_kinds[kind] = value

    def read(self, path: str) -> str | None:
        """A file's text: the editor's when it is open, else the disk's."""
        uri = from_fs_path(str(Path(path).resolve())) or path
        document = self.workspace.text_documents.get(uri)
        if document is not None:
            return document.source
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def workspace_files(self) -> list[str]:
        """The workspace's .tl and .nml files and the open documents, as paths."""
        folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        root = self.workspace.root_path
        paths = rename.workspace_files([f for f in [*folders, root] if f])
        opened = [to_fs_path(uri) for uri in self.workspace.text_documents]
        return list(dict.fromkeys([*(p for p in opened if p), *paths]))

    def check(self, uri: str, *, force: bool = False) -> None:
        """Analyze the document's current text and publish its diagnostics.

        An unchanged text (a save right after the edits were checked) is not
        checked again unless `force`: a file it imports has changed.
        """
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        previous = self.analyses.get(uri)
        if force or previous is None or previous.text != document.source:
            self.analyses[uri] = analyze(path, document.source, previous)
        analysis = self.analyses[uri]
        by_uri: dict[str, list[types.Diagnostic]] = {uri: []}
        for diagnostic in analysis.diagnostics:
            target = uri_of(diagnostic.primary.span.file, path, uri)
            by_uri.setdefault(target, []).append(to_lsp(diagnostic, path, uri))
        for stale in self.published.get(uri, set()) - by_uri.keys():
            by_uri[stale] = []
        self.published[uri] = {u for u, found in by_uri.items() if found}
        for target, found in by_uri.items():
            version = document.version if target == uri else None
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=target, diagnostics=found, version=version)
            )

    def analysis(self, uri: str) -> Analysis:
        if uri not in self.analyses:
            self.check(uri)
        return self.analyses[uri]


def uri_of(file: str, path: str, uri: str) -> str:
    """The URI of a span's file: the document's own, or an imported file's."""
    if file == path:
        return uri
    return from_fs_path(str(Path(file).resolve())) or file


def lsp_range(span: Span) -> types.Range:
    return types.Range(
        start=types.Position(line=span.line - 1, character=span.col - 1),
        end=types.Position(line=span.end_line - 1, character=span.end_col - 1),
    )


def to_lsp(diagnostic: Diagnostic, path: str, uri: str) -> types.Diagnostic:
    """One TensorLoom diagnostic as LSP's: the message carries the label, notes and help."""
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=uri_of(label.span.file, path, uri), range=lsp_range(label.span)
            ),
            message=label.message,
        )
        for label in diagnostic.secondary
    ]
    return types.Diagnostic(
        range=lsp_range(diagnostic.primary.span),
        message=full_message(diagnostic),
        severity=SEVERITIES[diagnostic.severity],
        code=diagnostic.code,
        source="tlc",
        related_information=related or None,
    )


def _location(span: Span, path: str, uri: str) -> types.Location:
    return types.Location(uri=uri_of(span.file, path, uri), range=lsp_range(span))


def to_symbol(symbol: navigate.Symbol) -> types.DocumentSymbol:
    return types.DocumentSymbol(
        name=symbol.name,
        kind=SYMBOL_KINDS.get(symbol.kind, types.SymbolKind.Variable),
        range=lsp_range(symbol.span),
        selection_range=lsp_range(symbol.name_span),
        children=[to_symbol(child) for child in symbol.children],
    )


def to_completion(item: complete.Item) -> types.CompletionItem:
    return types.CompletionItem(
        label=item.label,
        kind=COMPLETION_KINDS.get(item.kind, types.CompletionItemKind.Text),
        detail=item.detail or None,
        insert_text=item.insert,
    )


server = TensorLoomServer()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TensorLoomServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.check(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: TensorLoomServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.check(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: TensorLoomServer, params: types.DidSaveTextDocumentParams) -> None:
    """Check the saved file, and every open file that imports it (they read it from disk)."""
    uri = params.text_document.uri
    ls.check(uri)
    saved = str(Path(to_fs_path(uri) or uri).resolve())
    for other, analysis in list(ls.analyses.items()):
        program = analysis.program
        imported = [] if program is None else [u.path for u in program.imported]
        if other != uri and saved in {str(Path(p).resolve()) for p in imported}:
            ls.check(other, force=True)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TensorLoomServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.analyses.pop(uri, None)
    for target in ls.published.pop(uri, set()):
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=target, diagnostics=[])
        )


@server.feature(types.TEXT_DOCUMENT_HOVER)
def on_hover(ls: TensorLoomServer, params: types.HoverParams) -> types.Hover | None:
    position = params.position
    found = hover.hover(
        ls.analysis(params.text_document.uri), position.line + 1, position.character + 1
    )
    if found is None:
        return None
    text, span = found
    content = types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)
    return types.Hover(contents=content, range=lsp_range(span))


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
def on_definition(ls: TensorLoomServer, params: types.DefinitionParams) -> types.Location | None:
    uri = params.text_document.uri
    analysis = ls.analysis(uri)
    position = params.position
    span = navigate.definition(analysis, position.line + 1, position.character + 1)
    if span is None:
        return None
    return _location(span, analysis.path, uri)


@server.feature(
    types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[".", "(", " "])
)
def on_completion(ls: TensorLoomServer, params: types.CompletionParams) -> types.CompletionList:
    position = params.position
    analysis = ls.analysis(params.text_document.uri)
    items = complete.completions(analysis, position.line + 1, position.character + 1)
    return types.CompletionList(is_incomplete=False, items=[to_completion(i) for i in items])


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def on_symbols(
    ls: TensorLoomServer, params: types.DocumentSymbolParams
) -> list[types.DocumentSymbol]:
    root = ls.analysis(params.text_document.uri).root
    return [] if root is None else [to_symbol(s) for s in navigate.symbols(root)]


@server.feature(types.INITIALIZE)
def on_initialize(ls: TensorLoomServer, params: types.InitializeParams) -> None:
    ls.configure(params.initialization_options)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_configuration(ls: TensorLoomServer, params: types.DidChangeConfigurationParams) -> None:
    """The same options, as `{"tensorloom": {...}}` or bare, for clients that push settings."""
    settings = params.settings
    if isinstance(settings, dict) and "tensorloom" in settings:
        settings = settings["tensorloom"]
    ls.configure(settings)


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
def on_inlay_hints(ls: TensorLoomServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    analysis = ls.analysis(params.text_document.uri)
    span = params.range
    found = hints.inlay_hints(
        analysis,
        span.start.line + 1,
        span.end.line + 1,
        shapes=ls.hint_kinds["shapes"],
        configs=ls.hint_kinds["configs"],
    )
    return [to_hint(hint) for hint in found]


def to_hint(hint: hints.Hint) -> types.InlayHint:
    shape = hint.kind == "shape"
    return types.InlayHint(
        position=types.Position(line=hint.line - 1, character=hint.col - 1),
        label=hint.label,
        kind=types.InlayHintKind.Type if shape else types.InlayHintKind.Parameter,
        padding_left=not shape,
    )


@server.feature(
    types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
    types.SemanticTokensLegend(token_types=semantic.LEGEND, token_modifiers=[]),
)
def on_semantic_tokens(
    ls: TensorLoomServer, params: types.SemanticTokensParams
) -> types.SemanticTokens:
    analysis = ls.analysis(params.text_document.uri)
    return types.SemanticTokens(data=semantic.encode(semantic.classify(analysis)))


@server.feature(types.TEXT_DOCUMENT_FORMATTING)
def on_formatting(
    ls: TensorLoomServer, params: types.DocumentFormattingParams
) -> list[types.TextEdit] | None:
    """The whole document in `tlc fmt`'s layout; nothing while it has syntax errors."""
    from tensorloom.frontend.format import Unchanged, Unformattable, format_text

    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    try:
        formatted = format_text(document.source, to_fs_path(uri) or uri)
    except (Unformattable, Unchanged):
        return None
    if formatted == document.source:
        return []
    end = types.Position(line=len(document.lines), character=0)
    whole = types.Range(start=types.Position(line=0, character=0), end=end)
    return [types.TextEdit(range=whole, new_text=formatted)]


@server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
def on_prepare_rename(
    ls: TensorLoomServer, params: types.PrepareRenameParams
) -> types.Range | None:
    position = params.position
    analysis = ls.analysis(params.text_document.uri)
    span = rename.prepare(analysis, position.line + 1, position.character + 1)
    return None if span is None else lsp_range(span)


@server.feature(types.TEXT_DOCUMENT_RENAME)
def on_rename(ls: TensorLoomServer, params: types.RenameParams) -> types.WorkspaceEdit:
    position = params.position
    analysis = ls.analysis(params.text_document.uri)
    try:
        found = rename.rename(analysis, position.line + 1, position.character + 1,
                              params.new_name, ls.workspace_files(), ls.read)  # fmt: skip
    except rename.RenameError as error:
        raise JsonRpcInvalidRequest(str(error)) from None
    return to_workspace_edit(found)


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
def on_references(ls: TensorLoomServer, params: types.ReferenceParams) -> list[types.Location]:
    """Where the name is used, by rename's rules (its declaration only when asked for)."""
    position = params.position
    analysis = ls.analysis(params.text_document.uri)
    found = rename.target(analysis, position.line + 1, position.character + 1)
    if found is None:
        return []
    spans = rename.references(found, ls.workspace_files(), ls.read)
    declaration = navigate.definition(analysis, position.line + 1, position.character + 1)
    keep = params.context.include_declaration
    return [
        _location(span, analysis.path, params.text_document.uri)
        for found_spans in spans.values()
        for span in found_spans
        if keep or span != declaration
    ]


def to_workspace_edit(edits: dict[str, list[tuple[Span, str]]]) -> types.WorkspaceEdit:
    changes = {
        from_fs_path(str(Path(path).resolve())) or path: [
            types.TextEdit(range=lsp_range(span), new_text=text) for span, text in found
        ]
        for path, found in edits.items()
    }
    return types.WorkspaceEdit(changes=changes)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def on_code_action(ls: TensorLoomServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    analysis = ls.analysis(uri)
    span = params.range
    actions = []
    for fix in fixes.fixes(analysis, span.start.line + 1, span.end.line + 1):
        actions.append(
            types.CodeAction(
                title=fix.title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[to_lsp(fix.diagnostic, analysis.path, uri)],
                edit=to_workspace_edit(fix.edits),
                is_preferred=True,
            )
        )
    return actions


def main() -> None:
    server.start_io()
