"""`paictl lsp` as an editor feels it: diagnostics for a 1,000-line job after a change, and the server's start-up.

    python benchmarks/lsp_latency.py [--rounds 15]

A plain JSON-RPC client over the server's pipes (no framework between the clock and the bytes) opens a generated
1,000-line job, then alternately misspells and restores a key in its middle; each change is timed from the
didChange (the whole text, as the server asks) being written to its publishDiagnostics (matched by version) being read, debounce included. The peer is
what an editor without a language server runs on save: `paictl validate` of the same file, as a new process.
Start-up is the time to the `initialize` answer against `paictl --version`, interleaved.

Goals (issue 32): diagnostics within 100 ms of a change; start-up ratio printed (no goal).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from interleave import ENV, Report, prepare, run_once, tool

LATENCY_GOAL_S = 0.100


def job_text(lines: int = 1000) -> str:
    head = ["# generated for benchmarks/lsp_latency.py", "protocolVersion: 2", "name: bench-1000", "type: job",
            "parameters:", "  epochs: 3", "  lr: 0.1", "prerequisites:",
            "  - {name: img, type: dockerimage, uri: 'python:3.11'}", "taskRoles:"]
    body: list[str] = []
    index = 0
    while len(head) + len(body) < lines:
        body += [f"  worker{index}:                # role {index}", "    instances: 2", "    dockerImage: img",
                 "    resourcePerInstance:", "      cpu: 2", "      memoryMB: 4096", "      gpu: 0",
                 "    commands:", f"      - echo role {index} epochs <% $parameters.epochs %>",
                 "      - python train.py --lr <% $parameters.lr %>"]
        index += 1
    return "\n".join(head + body)[:] + "\n"


class Client:
    def __init__(self, argv: list[str]):
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=ENV)
        self.next_id = 0

    def send(self, method: str, params, request: bool = False) -> int | None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return message.get("id")

    def read(self) -> dict:
        length = 0
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.process.stdout.read(length))

    def wait(self, predicate) -> dict:
        while True:
            message = self.read()
            if predicate(message):
                return message

    def close(self) -> None:
        request = self.send("shutdown", None, request=True)
        self.wait(lambda m: m.get("id") == request)
        self.send("exit", None)
        self.process.wait(10)


def initialize(client: Client, root: Path) -> None:
    request = client.send("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}},
                          request=True)
    client.wait(lambda m: m.get("id") == request)
    client.send("initialized", {})


def start_up(paictl: str, rounds: int) -> tuple[list[float], list[float]]:
    lsp, version = [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds + 1):
            began = time.perf_counter()
            client = Client([paictl, "lsp"])
            initialize(client, Path(folder))
            lsp.append(time.perf_counter() - began)
            client.close()
            version.append(run_once([paictl, "--version"])[0])
    return lsp[1:], version[1:]  # the first round warms the caches


def change_latency(paictl: str, rounds: int) -> tuple[list[float], list[float], int]:
    text = job_text()
    lines = text.split("\n")
    target = next(i for i, line in enumerate(lines) if line == "    instances: 2" and i > len(lines) // 2)
    with tempfile.TemporaryDirectory() as folder:
        job = Path(folder) / "job.yaml"
        job.write_text(text)
        uri = job.as_uri()
        client = Client([paictl, "lsp"])
        initialize(client, Path(folder))
        client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                              "text": text}})
        client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        latencies, found = [], 0
        misspelt_text = "\n".join(lines[:target] + ["    instancess: 2"] + lines[target + 1:])
        for version in range(2, 2 + 2 * (rounds + 1)):
            misspelt = version % 2 == 0
            began = time.perf_counter()
            # The server asks for full sync: an editor sends the whole text with each change.
            client.send("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": misspelt_text if misspelt else text}]})
            message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                  and m["params"].get("version") == version)
            latencies.append(time.perf_counter() - began)
            if misspelt:
                found = len(message["params"]["diagnostics"])
                assert any(d["code"] == "E202" and d["range"]["start"]["line"] == target
                           for d in message["params"]["diagnostics"]), message
            else:
                assert message["params"]["diagnostics"] == [], message
        client.close()
        # The peer: `paictl validate` of the misspelt file, a process per save.
        job.write_text(text.replace("\n    instances: 2\n", "\n    instancess: 2\n", 1))
        peer = [run_once([paictl, "validate", str(job)])[0] for _ in range(rounds)]
    return latencies[2:], peer, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    prepare()
    paictl = tool("paictl")
    report = Report("paictl lsp (1,000-line job; medians; 30 ms debounce of bursts)")
    latencies, peer, found = change_latency(paictl, args.rounds)
    median, worst = statistics.median(latencies), max(latencies)
    p90 = sorted(latencies)[int(0.9 * (len(latencies) - 1))]
    report.add("diagnostics after a change (median / p90 / max)",
               f"{median * 1000:.0f} / {p90 * 1000:.0f} / {worst * 1000:.0f} ms ({found} diagnostic)",
               f"<= {LATENCY_GOAL_S * 1000:.0f} ms", p90 <= LATENCY_GOAL_S)
    report.add("... against `paictl validate` of the file (a process per save)",
               f"{median / statistics.median(peer):.2f}x ({statistics.median(peer) * 1000:.0f} ms)", "-", None)
    lsp, version = start_up(paictl, max(5, args.rounds // 2))
    start_ratio = statistics.median(a / b for a, b in zip(lsp, version))
    report.add("`paictl lsp` start-up to `initialize` answered / `paictl --version`",
               f"{start_ratio:.2f}x ({statistics.median(lsp):.3f} s / {statistics.median(version):.3f} s)", "-",
               None)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
