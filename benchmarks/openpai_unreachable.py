"""How fast paictl says an OpenPAI cluster cannot be reached, against curl asking the same address.

Two addresses nothing answers at: a refused port on 127.0.0.1, and a host name that does not resolve
(`paictl-bench.invalid`, asked of a DNS server on loopback in a network namespace of the benchmark's own:
benchmarks/loopback_dns.py). For each, `paictl status|stop|logs JOB` and `paictl submit JOB.yaml` with
`--target openpai --cluster ALIAS` (exit 3, one line) and `curl -sS URL/api/v2/jobs/alice~job` (exit 7 / 6) run
interleaved (A B A B); each ratio is the median of the per-round ratios. The issue's goal: paictl within 2x of curl.

paictl is the console script of a normal install (benchmarks/installed.py refuses an editable one, whose import hook
made `python -c pass` 2.2x slower). Printed beside the figures, for what no change to paictl can remove:
`python -c pass`, and the console script as the installer wrote it with paictl's import taken out (pip 23's
imported `re`, a cost as large as Python's own start-up; pip 26's does not). The answer is given before anything but the interpreter's own modules is loaded (cli/entry.py
`unreachable_cluster`, targets/openpai/reach.py: the clusters file read in the shape paictl writes it, one TCP
connection through `_socket`), and `submit` asks before it reads the job (submit_run.ensure_reachable).

    python benchmarks/openpai_unreachable.py [--rounds 9]    # with the interpreter of a non-editable install
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback_dns  # noqa: E402
from installed import console_script, load, wrapper_floor  # noqa: E402
from interleave import ENV, Report, interleaved, ratio  # noqa: E402

GOAL = 2.0
JOB = Path(__file__).resolve().parents[1] / "examples" / "hello-world.yaml"


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    curl = shutil.which("curl")
    if curl is None:
        sys.exit("curl is not on PATH: it is the peer this benchmark compares against")
    paictl = console_script()  # before entering the namespace: a refusal is said once
    private = loopback_dns.enter()  # the unknown host is asked of a DNS server on loopback, never the machine's
    report = Report(f"unreachable OpenPAI cluster: paictl vs curl (median of per-round ratios; {load()} at start)")
    with tempfile.TemporaryDirectory() as scratch:
        ENV.update({"XDG_CONFIG_HOME": scratch, "PAICTL_BENCH_TOKEN": "bench-token"})
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            ENV.pop(name, None)  # through a proxy nothing is refused: the answer would be another one
        cases = {"refused": f"http://127.0.0.1:{dead_port()}", "unknown host": "http://paictl-bench.invalid"}
        if not private:
            del cases["unknown host"]
        floor = wrapper_floor(paictl, scratch)
        for alias, url in zip(("refused", "unknown"), cases.values()):
            subprocess.run([paictl, "openpai", "add", alias, url, "--user", "alice", "--no-check", "--token-env",
                            "PAICTL_BENCH_TOKEN"], check=True, env=ENV, stdout=subprocess.DEVNULL)
        for (case, url), alias in zip(cases.items(), ("refused", "unknown")):
            cluster = ["--target", "openpai", "--cluster", alias]
            commands = {
                "status": [paictl, "status", "job", *cluster],
                "stop": [paictl, "stop", "job", *cluster],
                "logs": [paictl, "logs", "job", *cluster],
                "submit": [paictl, "submit", str(JOB), *cluster],
                "curl": [curl, "-sS", "-H", "Authorization: Bearer bench-token", f"{url}/api/v2/jobs/alice~job"],
                "python -c pass": [sys.executable, "-c", "pass"],
                "console script floor": [floor],
            }
            samples = interleaved(commands, rounds=args.rounds)
            peer = samples["curl"]
            for command in ("status", "stop", "logs", "submit"):
                ours = samples[command]
                assert ours.codes == {3}, f"paictl {command} exited {ours.codes}"
                figure = ratio(ours, peer)
                report.add(f"{case}: paictl {command} / curl", f"{figure:.2f}x ({ours.median * 1000:.0f} ms vs "
                           f"{peer.median * 1000:.0f} ms; {ratio(ours, samples['console script floor']):.2f}x the "
                           f"console script floor)", f"<= {GOAL:g}x", figure <= GOAL)
            for floor_name in ("python -c pass", "console script floor"):
                report.add(f"{case}: {floor_name} / curl", f"{ratio(samples[floor_name], peer):.2f}x "
                           f"({samples[floor_name].median * 1000:.0f} ms)", "none: the interpreter's", None)
    print(f"\n{load()} at the end")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
