"""How `paictl lsp` reads a document's text, through a real client: positions in UTF-16 units, lines broken at CR
and LF only (as LSP counts them), full-text sync, and 2 MiB documents or a 1 MiB line answered like any other."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if not os.environ.get("CI"):  # CI installs the `test` extra: there a missing pytest-lsp fails loudly
    pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (it is in the `test` extra)")

from lsprotocol import types as lsp  # noqa: E402

from lspclient import apply_text_edits, change_document, open_document  # noqa: E402
from lspfixtures import client  # noqa: E402,F401 - fixtures
from test_lsp_features import MISSPELT  # noqa: E402


pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_positions_are_utf16_after_characters_outside_the_bmp(client, tmp_path):
    """An editor counts a character like 😀 as two UTF-16 units: ranges and edits after it are shifted by one."""
    text = MISSPELT.replace("comands", "commands").replace(
        "- python train.py --epochs <% $parameters.epochs %>", "- echo 😀 <% $parameters.epochz %>")
    job = tmp_path / "emoji.yaml"
    diagnostics = await open_document(client, job, text)
    (w401,) = [d for d in diagnostics if d.code == "W401"]
    line = text.splitlines()[16]
    assert w401.range.start == lsp.Position(line=16, character=line.index("<%") + 1)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=job.as_uri()), range=w401.range,
        context=lsp.CodeActionContext(diagnostics=[w401])))
    fixed = apply_text_edits(text, actions[0].edit.changes[job.as_uri()])
    assert "- echo 😀 <% $parameters.epochs %>" in fixed


async def test_a_2_mib_job_and_a_hostile_line_through_the_server(client, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hostile_shapes import SHAPES

    from paictl.protocol.source import MAX_FILE_BYTES

    shapes = {shape.name: shape for shape in SHAPES}
    big = tmp_path / "roles.yaml"
    text = shapes["roles-10000-one-typo"].build(MAX_FILE_BYTES)
    diagnostics = await open_document(client, big, text)
    line = text.split("\n").index("    instancez: 1")
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("E202", line)]
    long_line = tmp_path / "long.yaml"
    await open_document(client, long_line, "protocolVersion: 2\n" + shapes["one-long-plain-line"].build(2 ** 20))
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=long_line.as_uri()), position=lsp.Position(line=1, character=5)))
    assert hover is None or hover.contents.value
    completion = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=long_line.as_uri()), position=lsp.Position(line=1, character=2 ** 19)))
    assert list(completion.items) == []


async def test_lines_are_counted_as_lsp_counts_them(client, tmp_path):
    """Only CR and LF break lines (LSP): a U+2028 inside a value does not shift what follows, before or after a
    change (Python's str.splitlines would break there)."""
    text = MISSPELT.replace("name: held-out", 'name: held-out\ndescription: "one\u2028line"')
    job = tmp_path / "separators.yaml"
    diagnostics = await open_document(client, job, text)
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("E201", 12), ("E202", 16)]
    line = text.split("\n").index("    instances: 2")
    changed = await change_document(client, job.as_uri(), 2, [lsp.TextDocumentContentChangePartial(
        range=lsp.Range(start=lsp.Position(line=line, character=4), end=lsp.Position(line=line, character=13)),
        text="instancez")])
    assert [(d.code, d.range.start.line) for d in changed] == [("E201", 12), ("E202", line), ("E202", 16)]


async def test_the_server_asks_for_full_text_sync(tmp_path):
    from lspfixtures import SERVER, initialize_params
    from pytest_lsp import ClientServerConfig

    lsp_client = await ClientServerConfig(server_command=SERVER).start()
    try:
        result = await lsp_client.initialize_session(initialize_params())
        assert result.capabilities.text_document_sync.change == lsp.TextDocumentSyncKind.Full
        await lsp_client.shutdown_session()
    finally:
        await lsp_client.stop()
