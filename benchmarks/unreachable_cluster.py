"""How fast paictl answers when the cluster cannot be reached, against `kubectl get pods` on the same kubeconfig.

A stale kubeconfig (a cluster that was torn down, a VPN that is off) must cost a user one line at once, not seconds
of retries. Two kubeconfigs: one naming a port on 127.0.0.1 where nothing listens (connection refused), one naming
a host that does not resolve (`.invalid`, RFC 2606; asked of a DNS server on loopback in a network namespace of the
benchmark's own, benchmarks/loopback_dns.py, so no query leaves the machine). For each, `paictl status demo --target framework` and
`kubectl get pods` run interleaved (A B A B); the goal is a median per-round ratio of at most 2.

paictl is the console script of a normal install (benchmarks/installed.py refuses an editable one). Before timing,
each peer's answer is checked to be the one measured: kubectl must have dialled (`connection refused`) or looked the
name up (`no such host`), not stopped early (without credentials it asks for a username and ends with `EOF`).

    python benchmarks/unreachable_cluster.py [--rounds 7]    # with the interpreter of a non-editable install
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import loopback_dns
from installed import console_script, load
from interleave import ENV, Report, interleaved, ratio, tool

GOAL = 2.0


def _refused_server() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"  # closed again: nothing listens there


def _kubeconfig(folder: Path, name: str, server: str) -> str:
    """A token for the user: without credentials kubectl asks for a username on its standard input and ends with
    `error: EOF` before it dials anything, which is not the answer to an unreachable cluster."""
    path = folder / name
    path.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{{name: c, cluster: "
                    f"{{server: '{server}'}}}}]\nusers: [{{name: u, user: {{token: bench}}}}]\ncontexts: [{{name: c, "
                    f"context: {{cluster: c, user: u, namespace: default}}}}]\n")
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    paictl = console_script()
    private = loopback_dns.enter()  # the unknown host is asked of a DNS server on loopback, never the machine's
    kubectl = tool("kubectl")
    report = Report(f"unreachable cluster: paictl status vs kubectl get pods (median per-round ratio; {load()} at "
                    "start)")
    # what each says: (paictl, kubectl); kubectl's "no such host" is Go's resolver having asked the DNS server
    cases = [("connection refused", _refused_server(), ("connection refused", "connection refused"))]
    if private:
        cases.append(("unknown host", "https://paictl-benchmark.invalid:6443", ("unknown host", "no such host")))
    with tempfile.TemporaryDirectory() as scratch:
        for label, server, answers in cases:
            config = _kubeconfig(Path(scratch), label.replace(" ", "-"), server)
            commands = {"paictl": [paictl, "status", "demo", "--target", "framework", "--kubeconfig", config],
                        "kubectl": [kubectl, "get", "pods", "--kubeconfig", config]}
            for (name, argv), answer in zip(commands.items(), answers):  # the answer timed is the one to compare
                said = subprocess.run(argv, capture_output=True, text=True, env=ENV, stdin=subprocess.DEVNULL)
                if answer not in said.stderr.lower():
                    sys.exit(f"{name} did not answer {answer!r} for {label}: {said.stderr.strip()[-300:]}")
            samples = interleaved(commands, rounds=args.rounds)
            measured = ratio(samples["paictl"], samples["kubectl"])
            report.add(f"{label}: paictl / kubectl", f"{measured:.2f}x ({samples['paictl'].median * 1000:.0f} ms "
                       f"vs {samples['kubectl'].median * 1000:.0f} ms; exit {sorted(samples['paictl'].codes)} vs "
                       f"{sorted(samples['kubectl'].codes)})", f"<= {GOAL:g}x", measured <= GOAL)
    print(f"\n{load()} at the end")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
