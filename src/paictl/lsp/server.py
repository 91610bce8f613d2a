"""`paictl lsp`: the Language Server Protocol face of validate, built on pygls.

The server holds one `Analysis` per open document (analysis.py: the same diagnostics as `paictl validate`, plus a
configured target's) and answers every request from it or from the document's text; everything here is conversion
between those records and LSP's types. A change is checked at once when it comes alone, and a burst of
changes (within `debounceMs` of each other) once it is over; opening and saving check at once.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from paictl import __version__
from paictl.protocol.diagnostics import Diagnostic, Severity
from paictl.protocol.fixes import Fix, TextEdit, fix_text
from paictl.protocol.loading import source_lines

from . import completion, navigation
from .analysis import Analysis, Settings, analyse, is_checkable, validate_document

_TOKEN_END = re.compile(r"[\s:,\]}]")
_KINDS = {"key": lsp.CompletionItemKind.Property, "value": lsp.CompletionItemKind.EnumMember,
          "reference": lsp.CompletionItemKind.Reference, "placeholder": lsp.CompletionItemKind.Variable}


class PaictlLanguageServer(LanguageServer):
    def __init__(self, settings: Settings):
        # Full sync: the editor sends the whole text on each change. pygls applies incremental edits on lines split
        # by Python's str.splitlines, which also breaks at U+2028, U+0085, form feeds...; LSP and YAML break only at
        # CR and LF, so an edit below such a character would land on the wrong line. A job is a few kilobytes.
        super().__init__("paictl", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.settings = settings
        self.analyses: dict[str, Analysis] = {}
        #: The last parsed data of each document: completion keeps working while a line is half typed.
        self.last_data: dict[str, Any] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.last_change: dict[str, float] = {}
        self.reported_settings_errors: set[str] = set()

    # -- checking ------------------------------------------------------------------------------------------

    def check(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        text, surrogates = _without_lone_surrogates(document.source)
        if not is_checkable(text, self.settings):
            self.analyses.pop(uri, None)
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
            return
        try:
            analysis = analyse(text, _path_of(document), self.settings)
        except Exception as error:  # noqa: BLE001 - a bug in a check must not end the editor's session
            from paictl.protocol.diagnostics import one_line

            self.window_log_message(lsp.LogMessageParams(
                type=lsp.MessageType.Error, message=f"paictl: internal error checking {uri}: {one_line(repr(error))}"))
            return
        if surrogates:
            analysis = analysis._replace(diagnostics=tuple(surrogates) + analysis.diagnostics)
        self.analyses[uri] = analysis
        if analysis.data is not None:
            self.last_data[uri] = analysis.data
        if analysis.settings_error and analysis.settings_error not in self.reported_settings_errors:
            self.reported_settings_errors.add(analysis.settings_error)
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                           message=analysis.settings_error))
        lines = source_lines(text)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=document.version,
            diagnostics=[to_lsp_diagnostic(d, lines, document) for d in analysis.diagnostics]))

    def check_later(self, uri: str) -> None:
        """Check after a change: at once when the document has been quiet for the debounce time (a single edit
        costs no waiting), else once the burst of changes has been quiet that long (a paste, a multi-cursor
        edit, fast typing: one check at its end, not one per change)."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        quiet = asyncio.get_running_loop().time() - self.last_change.get(uri, float("-inf"))
        self.last_change[uri] = asyncio.get_running_loop().time()
        debounce = max(0, self.settings.debounce_ms) / 1000
        self.pending[uri] = asyncio.ensure_future(self._after_quiet(uri, 0 if quiet >= debounce else debounce))

    async def _after_quiet(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self.pending.pop(uri, None)
        if uri in self.workspace.text_documents:
            self.check(uri)

    def current(self, uri: str) -> Analysis | None:
        """The analysis of the document as it is now (a request arriving within the debounce checks first)."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
            self.check(uri)
        return self.analyses.get(uri)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(text: str) -> tuple[str, list[Diagnostic]]:
    """An editor's buffer may hold a lone UTF-16 surrogate (a JSON `\\ud800` escape decodes to one), which no
    UTF-8 file can: each is an E100 at its place (as `validate` reports bytes that are not UTF-8), and the text is
    checked with U+FFFD in its place (one UTF-16 unit for one: every position after it holds)."""
    if not _LONE_SURROGATE.search(text):
        return text, []
    found = []
    for line_number, line in enumerate(source_lines(text), start=1):
        for match in _LONE_SURROGATE.finditer(line):
            found.append(Diagnostic(code="E100", severity=Severity.ERROR, file="", line=line_number,
                                    column=match.start() + 1, end_column=match.start() + 1, pointer="",
                                    message=f"U+{ord(match.group()):04X} is a lone surrogate: not a character, and "
                                            "not valid UTF-8", hint="delete it, or complete the pair"))
    return _LONE_SURROGATE.sub("\ufffd", text), found


def _readable_document(ls: PaictlLanguageServer, uri: str):
    """The document, open or else on disk (pygls reads a file the editor has not opened); None when it is neither:
    a request about a file that is gone or unreadable has no answer (null), not an internal error."""
    document = ls.workspace.get_text_document(uri)
    try:
        document.source
    except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    return document


def _path_of(document) -> str:
    return document.path or document.uri


# -- conversions ------------------------------------------------------------------------------------------------

def _client_range(document, lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> lsp.Range:
    return document.position_codec.range_to_client_units(lines or [""], ServerTextRange(
        ServerTextPosition(*start), ServerTextPosition(*end)))


def _cursor(document, lines: list[str], position: lsp.Position) -> ServerTextPosition:
    """The cursor in characters. Past the end of its line (an empty line the editor shows indented, before the
    spaces are typed) the columns beyond it count as spaces: they say how deep the cursor is."""
    where = document.position_codec.position_from_client_units(lines or [""], position)
    if where.line < len(lines):
        width = document.position_codec.client_num_units(lines[where.line])
        if position.character > width:
            return ServerTextPosition(where.line, len(lines[where.line]) + position.character - width)
    return where


def diagnostic_span(d: Diagnostic, lines: list[str]) -> tuple[int, int, int]:
    """(line, start, end) of a diagnostic, 0-based; the underlined token as `paictl validate`'s caret shows it."""
    if d.line is None or d.column is None or not 0 < d.line <= len(lines):
        return 0, 0, 0
    line, start = d.line - 1, d.column - 1
    text = lines[line]
    if d.end_column is not None:
        return line, start, max(start + 1, d.end_column)
    rest = text[start:]
    end = _TOKEN_END.search(rest, 1) if rest else None
    return line, start, start + max(1, end.start() if end else len(rest.rstrip()))


def to_lsp_diagnostic(d: Diagnostic, lines: list[str], document) -> lsp.Diagnostic:
    line, start, end = diagnostic_span(d, lines)
    message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
    return lsp.Diagnostic(
        range=_client_range(document, lines, (line, min(start, len(lines[line]) if lines else 0)),
                            (line, min(end, len(lines[line]) if lines else 0))),
        message=message, severity=lsp.DiagnosticSeverity.Error if d.severity is Severity.ERROR
        else lsp.DiagnosticSeverity.Warning,
        code=d.code, source="paictl", code_description=lsp.CodeDescription(href=navigation.CODES_URL),
        data={"pointer": d.pointer, "hint": d.hint})


def to_lsp_edit(edit: TextEdit, lines: list[str], document) -> lsp.TextEdit:
    return lsp.TextEdit(range=_client_range(document, lines, (edit.start_line, edit.start_column),
                                            (edit.end_line, edit.end_column)), new_text=edit.new_text)


def to_code_action(fix: Fix, uri: str, lines: list[str], document) -> lsp.CodeAction:
    return lsp.CodeAction(
        title=f"{fix.title} ({fix.diagnostic.code})", kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[to_lsp_diagnostic(fix.diagnostic, lines, document)],
        is_preferred=fix.safe,
        edit=lsp.WorkspaceEdit(changes={uri: [to_lsp_edit(e, lines, document) for e in fix.edits]}))


# -- the server -------------------------------------------------------------------------------------------------

FIX_ALL_KIND = "source.fixAll.paictl"


def build_server(settings: Settings | None = None) -> PaictlLanguageServer:
    server = PaictlLanguageServer(settings or Settings())

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: PaictlLanguageServer, params: lsp.InitializeParams) -> None:
        ls.settings = Settings.from_options(params.initialization_options, ls.settings)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration(ls: PaictlLanguageServer, params: lsp.DidChangeConfigurationParams) -> None:
        settings = params.settings
        workspace = ls.client_capabilities.workspace
        if settings is None and workspace is not None and workspace.configuration:
            # A client that only says "changed" (settings: null) is asked for the `paictl` section.
            try:
                answer = await ls.workspace_configuration_async(lsp.ConfigurationParams(
                    items=[lsp.ConfigurationItem(section="paictl")]))
                settings = answer[0] if answer else None
            except Exception:  # noqa: BLE001 - a client that cannot answer keeps the settings it had
                settings = None
        ls.settings = Settings.from_options(settings, ls.settings)
        for uri in list(ls.workspace.text_documents):
            ls.check(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PaictlLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PaictlLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.check_later(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PaictlLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        waiting = ls.pending.pop(params.text_document.uri, None)
        if waiting is not None:
            waiting.cancel()
        ls.check(params.text_document.uri)  # files an item names may have changed on disk

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PaictlLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        waiting = ls.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        ls.analyses.pop(uri, None)
        ls.last_data.pop(uri, None)
        ls.last_change.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: PaictlLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        uri = params.text_document.uri
        document = _readable_document(ls, uri)
        if document is None:
            return None
        analysis = ls.current(uri)
        lines = source_lines(document.source)
        where = _cursor(document, lines, params.position)
        parts, span = [], None
        for d in (analysis.diagnostics if analysis else ()):
            line, start, end = diagnostic_span(d, lines)
            if line == where.line and start <= where.character <= end:
                parts.append(navigation.diagnostic_hover(d))
                span = span or (line, start, end)
        rendered = navigation.placeholder_hover(lines, where.line, where.character, ls.last_data.get(uri))
        if rendered is not None:
            parts.append(rendered[0])
            span = span or tuple(rendered[1])
        described = navigation.key_hover(lines, where.line, where.character, ls.last_data.get(uri))
        if described is not None:
            parts.append(described[0])
            span = span or tuple(described[1])
        if not parts:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)),
                         range=_client_range(document, lines, (span[0], span[1]), (span[0], span[2])))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["$", ".", " ", ":"]))
    def complete(ls: PaictlLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        uri = params.text_document.uri
        document = _readable_document(ls, uri)
        if document is None:
            return lsp.CompletionList(is_incomplete=False, items=[])
        lines = source_lines(document.source) or [""]
        if document.source.endswith(("\n", "\r")):
            lines.append("")
        where = _cursor(document, lines, params.position)
        data = ls.analyses[uri].data if uri in ls.analyses and ls.analyses[uri].data is not None else \
            ls.last_data.get(uri)
        items = []
        for candidate in completion.complete(lines, where.line, where.character, data):
            start = max(0, where.character - candidate.replace_length)
            items.append(lsp.CompletionItem(
                label=candidate.label, kind=_KINDS[candidate.kind], detail=candidate.detail or None,
                documentation=candidate.documentation,
                text_edit=lsp.TextEdit(range=_client_range(document, lines, (where.line, start),
                                                           (where.line, where.character)),
                                       new_text=candidate.insert)))
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL_KIND]))
    def code_actions(ls: PaictlLanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        analysis = ls.current(uri)
        if analysis is None:
            return []
        lines = source_lines(analysis.text)
        wanted = document.position_codec.range_from_client_units(lines or [""], params.range)
        only = params.context.only
        actions = []
        if not only or any(kind.startswith(lsp.CodeActionKind.QuickFix) for kind in only):
            for fix in analysis.fixes:
                line, start, end = diagnostic_span(fix.diagnostic, lines)
                if wanted.start.line <= line <= wanted.end.line:
                    actions.append(to_code_action(fix, uri, lines, document))
        # Fixing everything validates the text again after each round: done only when asked for by kind (the
        # editor's "fix all" or source-action menu, or on save), never for the light bulb on every cursor move.
        if analysis.fixes and only and any(FIX_ALL_KIND.startswith(kind) for kind in only):
            fixed = fix_text(analysis.text, _path_of(document), validate_document).text
            if fixed != analysis.text:
                if not lines or analysis.text.endswith(("\n", "\r")):
                    end = lsp.Position(line=len(lines), character=0)
                else:
                    end = _client_range(document, lines, (0, 0), (len(lines) - 1, len(lines[-1]))).end
                actions.append(lsp.CodeAction(
                    title="Apply every safe paictl fix", kind=FIX_ALL_KIND,
                    edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(
                        range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=fixed)]})))
        return actions

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: PaictlLanguageServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        uri = params.text_document.uri
        document = _readable_document(ls, uri)
        if document is None:
            return None
        text = document.source
        lines = source_lines(text) or [""]
        where = _cursor(document, lines, params.position)
        analysis = ls.current(uri)
        data = analysis.data if analysis is not None else None
        pointer = navigation.definition(lines, where.line, where.character, data)
        if pointer is None:
            return None
        from paictl.protocol.loading import DocumentError, load_located

        try:
            positions = load_located(text, _path_of(document)).positions or {}
        except DocumentError:
            return None
        span = navigation.range_of_pointer(positions, pointer, lines)
        if span is None:
            return None
        return lsp.Location(uri=uri, range=_client_range(document, lines, (span.line, span.start),
                                                         (span.line, span.end)))

    return server


def serve(settings: Settings | None = None) -> int:
    """Serve one client over standard input and output until it says exit (or a stream closes); the exit status:
    0 after `shutdown`, else 1 (stdio.py)."""
    from .stdio import serve_stdio

    return serve_stdio(build_server(settings))
