"""`paictl lsp` driven by a real LSP client (pytest-lsp, on pygls' client) over the server's standard input and
output: the process an editor starts, spoken to as an editor speaks."""

from __future__ import annotations

import os
import sys

import pytest

if not os.environ.get("CI"):  # CI installs the `test` extra: there a missing pytest-lsp fails loudly
    pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (it is in the `test` extra)")

import pytest_lsp  # noqa: E402
from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

SERVER = [sys.executable, "-m", "paictl", "lsp"]


def initialize_params(**options) -> lsp.InitializeParams:
    return lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(
            workspace=lsp.WorkspaceClientCapabilities(configuration=True),
            text_document=lsp.TextDocumentClientCapabilities(
                publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
                hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown]),
                code_action=lsp.CodeActionClientCapabilities(),
                completion=lsp.CompletionClientCapabilities()),
            general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16])),
        initialization_options=options or None)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module")
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(initialize_params(debounceMs=20))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[*SERVER, "--target", "jobset"]), scope="module")
async def jobset_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(initialize_params())
    yield
    await lsp_client.shutdown_session()
