"""`paictl lsp`'s memory under a long editing session: resident memory after 1,000 and after 20,000 edits.

    python benchmarks/lsp_memory.py [--edits 20000] [--early 1000]

A plain JSON-RPC client (lsp_latency.py's) opens a 200-line job and sends didChange notifications, each the whole
text with one number changed, as fast as the server reads them; after `--early` edits and again after `--edits`
it waits for the server to have handled them all (a hover request answered after them) and reads the server's
VmRSS from /proc. The peer is pygls alone (a LanguageServer with no feature of its own, whose document store takes
the same edits), which keeps a finished future per notification (pygls#608) and so grows with every edit.

Goal (issue 38): paictl's RSS after 20,000 edits within 10 MB of its RSS after 1,000. The peer's growth is printed
beside it, and both growths per 1,000 edits.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

from interleave import prepare, tool, Report
from lsp_latency import Client, initialize, job_text

GOAL_MB = 10.0
PEER = """\
from pygls.lsp.server import LanguageServer
from lsprotocol import types

server = LanguageServer("pygls-peer", "0")


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls, params):
    return None


server.start_io()
"""


class DrainedClient(Client):
    """Reads the server's output on a thread (its diagnostics must never fill the pipe) and keeps the answers."""

    def __init__(self, argv: list[str]):
        super().__init__(argv)
        self.answers: dict[int, dict] = {}
        self.arrived = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                message = super().read()
            except (RuntimeError, ValueError, OSError):
                return
            if "id" in message and "method" not in message:
                with self.arrived:
                    self.answers[message["id"]] = message
                    self.arrived.notify_all()

    def answer(self, request: int, timeout: float = 300) -> dict:
        with self.arrived:
            if not self.arrived.wait_for(lambda: request in self.answers, timeout):
                raise RuntimeError(f"no answer to request {request}")
            return self.answers.pop(request)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def close(self) -> None:
        self.answer(self.send("shutdown", None, request=True))
        self.send("exit", None)
        self.process.wait(30)


def session(argv: list[str], early: int, edits: int) -> tuple[float, float]:
    """(RSS after `early` edits, RSS after `edits`), in MB."""
    text = job_text(200)
    with tempfile.TemporaryDirectory() as folder:
        uri = (Path(folder) / "job.yaml").as_uri()
        client = DrainedClient(argv)
        request = client.send("initialize", {"processId": None, "rootUri": Path(folder).as_uri(),
                                             "capabilities": {}}, request=True)
        client.answer(request)
        client.send("initialized", {})
        client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                              "text": text}})
        figures = []
        for version in range(2, edits + 2):
            changed = text.replace("epochs: 3", f"epochs: {version}", 1)
            client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                   "contentChanges": [{"text": changed}]})
            if version - 1 in (early, edits):
                settle(client, uri)
                figures.append(client.rss_mb())
        client.close()
    return figures[0], figures[1]


def settle(client: DrainedClient, uri: str) -> None:
    """Every edit sent so far handled (requests are answered in order), and the last check run (its debounce)."""
    hover = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 2}}
    client.answer(client.send("textDocument/hover", hover, request=True))
    time.sleep(0.5)
    client.answer(client.send("textDocument/hover", hover, request=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=20_000)
    parser.add_argument("--early", type=int, default=1_000)
    args = parser.parse_args()
    prepare()
    paictl = tool("paictl")
    report = Report(f"paictl lsp memory: RSS after {args.early:,} and {args.edits:,} edits")
    early, late = session([paictl, "lsp"], args.early, args.edits)
    report.add(f"paictl lsp: RSS after {args.early:,} -> {args.edits:,} edits",
               f"{early:.1f} MB -> {late:.1f} MB (+{late - early:.1f} MB)", f"+{GOAL_MB:g} MB at most",
               late - early <= GOAL_MB)
    peer_early, peer_late = session([sys.executable, "-c", PEER], args.early, args.edits)
    report.add(f"pygls alone (peer): RSS after {args.early:,} -> {args.edits:,} edits",
               f"{peer_early:.1f} MB -> {peer_late:.1f} MB (+{peer_late - peer_early:.1f} MB)", "", None)
    report.add("growth per 1,000 edits: paictl lsp / pygls alone",
               f"{(late - early) * 1000 / (args.edits - args.early):.2f} MB / "
               f"{(peer_late - peer_early) * 1000 / (args.edits - args.early):.2f} MB", "", None)
    print(json.dumps({"paictl_rss_mb": [round(early, 1), round(late, 1)],
                      "pygls_rss_mb": [round(peer_early, 1), round(peer_late, 1)]}))
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
