"""What an editor does with the server's answers: open a document and wait for its diagnostics, apply edits."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from lsprotocol import types as lsp


async def open_document(client, path: Path, text: str | None = None, version: int = 1) -> list[lsp.Diagnostic]:
    text = path.read_text() if text is None else text
    uri = path.as_uri()
    client.diagnostics.pop(uri, None)
    if not hasattr(client, "texts"):
        client.texts = {}
    client.texts[uri] = text
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=version, text=text)))
    return await diagnostics_of(client, uri)


async def diagnostics_of(client, uri: str, timeout: float = 60) -> list[lsp.Diagnostic]:
    """The diagnostics published for `uri` since the caller removed the last ones from `client.diagnostics`
    (pytest-lsp's client records each publishDiagnostics there)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while uri not in client.diagnostics:
        if loop.time() > deadline:
            raise TimeoutError(f"no diagnostics for {uri} within {timeout} s")
        await asyncio.sleep(0.005)
    return list(client.diagnostics[uri])


async def change_document(client, uri: str, version: int, changes: list) -> list[lsp.Diagnostic]:
    """Send `changes` as the server asks (it declares full sync): each applied here, the whole text sent."""
    client.diagnostics.pop(uri, None)
    text = client.texts[uri]
    for change in changes:
        text = apply_text_edits(text, [lsp.TextEdit(range=change.range, new_text=change.text)])
    client.texts[uri] = text
    changes = [lsp.TextDocumentContentChangeWholeDocument(text=text)]
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=changes))
    return await diagnostics_of(client, uri)


def apply_text_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 positions) as an editor does, from the last to the first."""
    lines = _lines(text)

    def offset(position: lsp.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        before = sum(len(line) for line in lines[:position.line])
        line = lines[position.line]
        units, index = 0, 0
        while index < len(line) and units < position.character:
            units += 2 if ord(line[index]) > 0xFFFF else 1
            index += 1
        return before + index

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
        lines = _lines(text)
    return text


def _lines(text: str) -> list[str]:
    """Lines as LSP counts them, with their breaks: only CR LF, CR and LF end a line (not U+2028, as splitlines)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text) or [""]
