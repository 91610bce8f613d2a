"""`paictl lsp` against hostile clients, on the wire (issue 38): raw frames written to a real `paictl lsp` process
and its answers read back. Frames are bounded and a refused one is answered while the server stays up; JSON-RPC's
errors, shutdown and exit rules hold; a document with a lone surrogate gets diagnostics; the server ends when either
of its streams closes, with no traceback; pygls' finished futures (pygls#608) are not kept.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

import pytest

pytest.importorskip("pygls")

JOB = ("protocolVersion: 2\nname: wire\ntype: job\nprerequisites:\n  - {name: base, type: dockerimage, uri: python}\n"
       "taskRoles:\n  t:\n    dockerImage: bsae\n    resourcePerInstance: {cpu: 1, memoryMB: 100, gpu: 0}\n"
       "    commands: [echo]\n")
TRACEBACK = "Traceback (most recent call last)"


def frame(message: dict | bytes) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Wire:
    """A `paictl lsp` process spoken to in raw frames."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-m", "paictl", "lsp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pending = b""

    def send(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def request(self, message_id, method: str, params=None) -> None:
        self.send(frame({"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}))

    def notify(self, method: str, params=None) -> None:
        self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def receive(self, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            header_end = self.pending.find(b"\r\n\r\n")
            if header_end >= 0:
                length = int(self.pending[:header_end].split(b"Content-Length:")[1].split(b"\r\n")[0])
                if len(self.pending) >= header_end + 4 + length:
                    body = self.pending[header_end + 4:header_end + 4 + length]
                    self.pending = self.pending[header_end + 4 + length:]
                    return json.loads(body)
            left = deadline - time.monotonic()
            assert left > 0, "no answer from paictl lsp"
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                assert chunk, f"paictl lsp ended: {self.process.wait()} {self.process.stderr.read()!r}"
                self.pending += chunk

    def answer_to(self, message_id, timeout: float = 30) -> dict:
        while True:
            message = self.receive(timeout)
            if message.get("id") == message_id and "method" not in message:
                return message

    def initialize(self) -> None:
        self.request(0, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert "result" in self.answer_to(0)
        self.notify("initialized", {})

    def ends(self, timeout: float = 30) -> tuple[int, str]:
        code = self.process.wait(timeout)
        return code, self.process.stderr.read().decode()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def wire():
    connection = Wire()
    yield connection
    connection.close()


@pytest.mark.parametrize("header", [b"Content-Length: 1000000000000000000",
                                    b"Content-Length: 9223372036854775808",
                                    b"Content-Length: 99999999999999999999999999999999999999999",
                                    b"Content-Length: 1e18", b"Content-Length: -5",
                                    b"Content-Type: application/vscode-jsonrpc",  # no length at all
                                    b"X-" + b"a" * 20000])
def test_a_refused_frame_is_answered_and_the_server_stays_up(wire, header):
    wire.initialize()
    wire.send(header + b"\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"shutdown\"}")
    refused = wire.receive()
    assert refused["id"] is None and refused["error"]["code"] == -32600, refused
    wire.request(1, "shutdown")  # the next frame is read: the server is up and in step
    assert wire.answer_to(1) == {"jsonrpc": "2.0", "id": 1, "result": None}
    wire.notify("exit")
    code, stderr = wire.ends()
    assert code == 0 and TRACEBACK not in stderr, stderr


def test_the_frame_limit_is_the_documented_one(wire):
    from paictl.lsp.stdio import MAX_FRAME_BYTES

    wire.initialize()
    wire.send(b"Content-Length: %d\r\n\r\n" % (MAX_FRAME_BYTES + 1))
    assert f"over the limit of {MAX_FRAME_BYTES} bytes" in wire.receive()["error"]["message"]
    big = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None,
                      "padding": "x" * (MAX_FRAME_BYTES - 200)}).encode()
    assert len(big) <= MAX_FRAME_BYTES
    wire.send(frame(big))  # a frame at the limit is read
    assert wire.answer_to(2, timeout=120)["result"] is None


@pytest.mark.parametrize("body, code", [(b"{not json", -32700), (b"[1, 2]", -32600), (b"42", -32600),
                                        (b'{"jsonrpc": "1.0", "id": 3, "method": "shutdown"}', -32600),
                                        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}', -32600),
                                        (b"[" * 100000 + b"]" * 100000, -32700)])
def test_what_is_not_a_json_rpc_message_is_answered(wire, body, code):
    wire.initialize()
    wire.send(frame(body))
    answer = wire.receive()
    assert answer["id"] is None and answer["error"]["code"] == code, answer


@pytest.mark.parametrize("method, params", [
    ("textDocument/hover", {"textDocument": {"uri": 5}, "position": {"line": "x"}}),
    ("textDocument/completion", "not an object"),
    ("textDocument/definition", {"position": {"line": 0, "character": 0}}),  # no textDocument
])
def test_a_request_with_invalid_params_gets_an_error_reply(wire, method, params):
    wire.initialize()
    wire.request(11, method, params)
    answer = wire.answer_to(11)
    assert answer["error"]["code"] == -32602 and "result" not in answer, answer
    wire.request(12, "shutdown")
    assert wire.answer_to(12)["result"] is None  # still serving


def test_requests_after_shutdown_are_invalid_and_exit_then_ends_with_0(wire):
    wire.initialize()
    wire.request(1, "shutdown")
    assert wire.answer_to(1)["result"] is None
    wire.request(2, "textDocument/hover", {"textDocument": {"uri": "file:///x.yaml"},
                                           "position": {"line": 0, "character": 0}})
    assert wire.answer_to(2)["error"]["code"] == -32600
    wire.notify("exit")
    assert wire.ends()[0] == 0


def test_before_initialize_a_request_is_server_not_initialized_and_a_notification_dropped(wire, tmp_path):
    """LSP 3.17: -32002 to a request, notifications dropped (pygls ran the handler: -32603 and a traceback)."""
    uri = (tmp_path / "job.yaml").as_uri()
    wire.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                          "text": JOB}})
    wire.request(1, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    assert wire.answer_to(1) == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32002, "message": "Server not initialized: textDocument/hover before initialize"}}
    wire.initialize()
    wire.request(2, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert wire.answer_to(2)["error"]["code"] == -32600  # "may only be sent once"
    wire.request(3, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    assert wire.answer_to(3)["result"] is None  # the didOpen before initialize was dropped: no such document
    wire.request(4, "shutdown")
    assert wire.answer_to(4)["result"] is None
    wire.notify("exit")
    code, stderr = wire.ends()
    assert code == 0 and TRACEBACK not in stderr, stderr


@pytest.mark.parametrize("method, empty", [("textDocument/hover", None), ("textDocument/definition", None),
                                           ("textDocument/completion", {"isIncomplete": False, "items": []})])
def test_a_request_about_a_file_neither_open_nor_on_disk_answers_empty(wire, tmp_path, method, empty):
    """pygls reads an unopened document from disk: a missing file was an internal error with a traceback."""
    wire.initialize()
    wire.request(1, method, {"textDocument": {"uri": (tmp_path / "gone.yaml").as_uri()},
                             "position": {"line": 0, "character": 0}})
    assert wire.answer_to(1) == {"jsonrpc": "2.0", "id": 1, "result": empty}


def test_exit_without_shutdown_ends_with_1(wire):
    wire.initialize()
    wire.notify("exit")
    code, stderr = wire.ends()
    assert code == 1 and TRACEBACK not in stderr


def test_a_document_with_a_lone_surrogate_gets_diagnostics(wire):
    wire.initialize()
    text = JOB.replace("name: wire", "name: wire\ud800")  # json.dumps writes it as the escape `\ud800`
    wire.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///tmp/job.yaml", "languageId": "yaml",
                                                          "version": 1, "text": text}})
    published = wire.receive()
    assert published["method"] == "textDocument/publishDiagnostics", published
    messages = {d["code"]: d for d in published["params"]["diagnostics"]}
    assert "E100" in messages and messages["E100"]["range"]["start"] == {"line": 1, "character": 10}, messages
    assert "E304" in messages  # the rest of the document is checked too


def test_the_server_ends_when_its_input_closes(wire):
    wire.initialize()
    wire.process.stdin.close()
    code, stderr = wire.ends()
    assert code == 1 and TRACEBACK not in stderr


def test_the_server_ends_when_its_output_is_closed_by_the_client(wire):
    """A client that closes the server's output but keeps writing: the server ends (at once, not per message)
    without a traceback."""
    wire.initialize()
    wire.process.stdout.close()
    for version in range(2, 40):
        try:
            wire.notify("textDocument/didOpen", {"textDocument": {"uri": f"file:///j{version}.yaml",
                                                                  "languageId": "yaml", "version": version,
                                                                  "text": JOB}})
        except BrokenPipeError:
            break
        time.sleep(0.02)
    code, stderr = wire.ends()
    assert code == 1 and TRACEBACK not in stderr and stderr.count("\n") <= 1, stderr


def test_finished_notification_futures_are_not_kept():
    """pygls#608 in-process, through the same session code the server runs: 300 edits leave no finished futures
    behind (pygls alone keeps one per edit)."""
    from paictl.lsp.server import build_server
    from paictl.lsp.stdio import _Session  # noqa: PLC2701 - the session is what the workaround lives in

    server = build_server()

    class Sink:
        def write(self, data):
            pass

        def close(self):
            pass

    server.protocol.set_writer(Sink())

    async def edits() -> int:
        session = _Session(server)
        session.handle(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                   "params": {"processId": None, "rootUri": None, "capabilities": {}}}).encode())
        session.handle(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///j.yaml", "languageId": "yaml", "version": 1, "text": JOB}}}).encode())
        for version in range(2, 302):
            session.handle(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": "file:///j.yaml", "version": version},
                "contentChanges": [{"text": JOB + f"# {version}\n"}]}}).encode())
            await asyncio.sleep(0)
        return len(server.protocol._request_futures)

    import asyncio

    assert asyncio.run(edits()) <= 2
