"""How fast paictl says an OpenPAI cluster cannot be reached, against curl asking the same address.

Two addresses nothing answers at: a refused port on 127.0.0.1, and a host name that does not resolve
(`paictl-bench.invalid`, asked of a DNS server on loopback in a network namespace of the benchmark's own:
benchmarks/loopback_dns.py). For each, `paictl status JOB --target openpai --cluster ALIAS` (exit 3, one line) and
`curl -sS URL/api/v2/jobs/alice~JOB` (exit 7 / 6) run interleaved (A B A B); the ratio is the median of the
per-round ratios. The issue's goal: paictl within 2x of curl. Python's start-up alone is ~2-3x curl's whole run, so
the goal cannot be met by a Python CLI; the figure shows what paictl costs on top of `python -c pass`, printed
beside it. `status` is answered before typer is imported (cli/entry.py `unreachable_cluster`, the backend's
`check_reachable`: the clusters file through yaml-rs, then a plain TCP connect, before httpx, which alone takes
~0.3-0.5 s, is loaded). `submit` to the refused port is measured too: it compiles the job before it asks the
cluster, so it costs a compile more.

    python benchmarks/openpai_unreachable.py [--rounds 7]
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
from interleave import ENV, Report, interleaved, prepare, ratio  # noqa: E402


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    curl = shutil.which("curl")
    if curl is None:
        sys.exit("curl is not on PATH: it is the peer this benchmark compares against")
    private = loopback_dns.enter()  # the unknown host is asked of a DNS server on loopback, never the machine's
    prepare()
    report = Report("unreachable OpenPAI cluster: paictl vs curl (median of per-round ratios)")
    with tempfile.TemporaryDirectory() as scratch:
        ENV.update({"XDG_CONFIG_HOME": scratch, "PAICTL_BENCH_TOKEN": "bench-token"})
        os.environ.update({"XDG_CONFIG_HOME": scratch})
        cases = {"refused": f"http://127.0.0.1:{dead_port()}", "unknown host": "http://paictl-bench.invalid"}
        if not private:
            del cases["unknown host"]
        for alias, url in zip(("refused", "unknown"), cases.values()):
            subprocess.run([sys.executable, "-m", "paictl", "openpai", "add", alias, url, "--user", "alice",
                            "--no-check", "--token-env", "PAICTL_BENCH_TOKEN"], check=True, env=ENV,
                           stdout=subprocess.DEVNULL)
        for (case, url), alias in zip(cases.items(), ("refused", "unknown")):
            samples = interleaved({
                "paictl": [sys.executable, "-m", "paictl", "status", "job", "--target", "openpai", "--cluster",
                           alias],
                "curl": [curl, "-sS", "-H", "Authorization: Bearer bench-token", f"{url}/api/v2/jobs/alice~job"],
                "python": [sys.executable, "-c", "pass"],
            }, rounds=args.rounds)
            paictl, peer, python = samples["paictl"], samples["curl"], samples["python"]
            assert paictl.codes == {3}, f"paictl exited {paictl.codes}"
            figure = ratio(paictl, peer)
            report.add(f"{case}: paictl/curl", f"{figure:.1f}x ({paictl.median * 1000:.0f} ms vs "
                       f"{peer.median * 1000:.0f} ms; python -c pass {python.median * 1000:.0f} ms)", "<= 2x",
                       figure <= 2)
        job = str(Path(__file__).resolve().parents[1] / "examples" / "hello-world.yaml")
        samples = interleaved({
            "paictl": [sys.executable, "-m", "paictl", "submit", job, "--target", "openpai", "--cluster", "refused"],
            "curl": [curl, "-sS", "-H", "Authorization: Bearer bench-token", f"{cases['refused']}/api/v2/jobs",
                     "--data-binary", f"@{job}"],
        }, rounds=args.rounds)
        paictl, peer = samples["paictl"], samples["curl"]
        assert paictl.codes == {3}, f"paictl exited {paictl.codes}"
        figure = ratio(paictl, peer)
        report.add("submit, refused: paictl/curl", f"{figure:.1f}x ({paictl.median * 1000:.0f} ms vs "
                   f"{peer.median * 1000:.0f} ms)", "<= 2x", figure <= 2)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
