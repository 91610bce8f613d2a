"""What `paictl logs` costs on a big OpenPAI log, against curl fetching the same log in the same run.

Issue 39's goals: peak RSS of `paictl logs` on a 40 MB log under 60 MB (it held the whole body: ~196 MB), and
bytes fetched during a 10 s `--follow` of a 10 MB log that keeps growing under 2x the log's size (it fetched the
whole log on every poll). The cluster is the OpenPAI double of the tests (tests/openpai_server: the REST server held
to its recordings, the log-manager stand-in serving Range as nginx does), on 127.0.0.1, reached directly (paictl
routes `/log-manager/HOST:PORT/` as pylon would).

- RSS: `paictl logs JOB --target openpai > /dev/null` and `curl -sS LINK > /dev/null`, each a child process whose
  peak resident set GNU time reports (`/usr/bin/time -f %M`), alternated for `--rounds` rounds; medians are
  printed, beside what Python with paictl's CLI imported costs before reading any log.
- Follow: `paictl logs JOB --follow` while the task writes `--grow` bytes a second for `--seconds` seconds onto a
  10 MB log, at the default poll interval (1 s); the bytes are counted where they are served (the log-manager
  stand-in's `sent`), and compared with the log's final size, which is what one `curl` of the whole log fetches.

    python benchmarks/logs_streaming.py [--size-mb 40] [--follow-mb 10] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from openpai_server import OpenPaiServer  # noqa: E402
from openpai_server.harness import TOKEN_ENV, Harness  # noqa: E402

LINE = "step {n:08d} loss 0.{n:08d} " + "x" * 60 + "\n"


def lines(first: int, size: int) -> tuple[bytes, int]:
    """About `size` bytes of numbered log lines starting at line `first`, and the next line's number."""
    out, n, total = [], first, 0
    while total < size:
        line = LINE.format(n=n).encode()
        out.append(line)
        total += len(line)
        n += 1
    return b"".join(out), n


TIME = "/usr/bin/time"


def child_rss(argv: list[str], env: dict[str, str], scratch: Path) -> tuple[int, float]:
    """(peak RSS in bytes, seconds) of a child writing to /dev/null, as GNU time reports it (%M: its child's
    ru_maxrss). Not os.wait4 on our own child: Linux carries the forking process's high-water mark into the child's
    ru_maxrss across exec, and this process holds the double and its logs."""
    report = scratch / "rss"
    started = time.monotonic()
    with open(os.devnull, "wb") as null:
        code = subprocess.run([TIME, "-f", "%M", "-o", str(report), *argv], stdout=null,
                              stderr=subprocess.DEVNULL, env=env).returncode
    if code != 0:
        sys.exit(f"{argv[:4]} exited {code}")
    return int(report.read_text().split()[-1]) * 1024, time.monotonic() - started


def started_job(user: Harness, name: str) -> tuple[object, Path]:
    result = user.paictl("submit", str(user.write_job(name, instances=1)), "--target", "openpai")
    if result.returncode != 0:
        sys.exit(result.stderr)
    job = user.job(name)
    with user.server.lock:
        job.fc_run("worker", 0)
    pod = job.attempt.tasks["worker"][0].current.pod
    return job, user.server.log_manager.folder(user.user, job.framework, "worker", pod) / "user.pai.all"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=40)
    parser.add_argument("--follow-mb", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--grow", type=int, default=200_000, help="bytes the log grows per second while followed")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    curl = shutil.which("curl")
    if curl is None:
        sys.exit("curl is not on PATH: it is the peer this benchmark compares against")
    if not os.access(TIME, os.X_OK):
        sys.exit(f"{TIME} (GNU time) is needed to read a child's peak RSS")
    with tempfile.TemporaryDirectory() as scratch, OpenPaiServer() as server:
        user = Harness(server, Path(scratch), server.accounts.login("alice"), alias="bench", url=server.url)
        from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

        save_clusters({"bench": ClusterEntry(alias="bench", url=server.url, user="alice", token_env=TOKEN_ENV)},
                      user.clusters_file)   # the default poll interval (1 s), not the tests' fast one
        env = user.env

        # -- peak RSS on a big log ---------------------------------------------------------------------------
        job, path = started_job(user, "big")
        data, _ = lines(0, int(args.size_mb * 1024 * 1024))
        path.write_bytes(data)
        manager = server.log_manager
        query = (f"?username=alice&framework-name={job.framework}&pod-uid={path.parent.name}&taskrole=worker"
                 f"&token={manager.token()}")
        link = f"http://127.0.0.1:{manager.port}/api/v1/logs/user.pai.all{query}"
        paictl_rss, curl_rss, paictl_s, curl_s = [], [], [], []
        for _ in range(args.rounds):
            rss, seconds = child_rss([sys.executable, "-m", "paictl", "logs", "big", "--target", "openpai"], env,
                                     Path(scratch))
            paictl_rss.append(rss)
            paictl_s.append(seconds)
            rss, seconds = child_rss([curl, "-sS", link], env, Path(scratch))
            curl_rss.append(rss)
            curl_s.append(seconds)
        baseline, _ = child_rss([sys.executable, "-c", "import httpx, typer, paictl.cli.app"], env,
                                Path(scratch))
        size = len(data)
        del data

        # -- bytes fetched while following a growing log -----------------------------------------------------
        follow_job, follow_path = started_job(user, "grow")
        first, next_line = lines(0, int(args.follow_mb * 1024 * 1024))
        follow_path.write_bytes(first)
        done = threading.Event()

        def grow() -> None:
            nonlocal next_line
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline:
                time.sleep(0.5)
                chunk, next_line = lines(next_line, args.grow // 2)
                with open(follow_path, "ab") as log:
                    log.write(chunk)
            with server.lock:
                follow_job.fc_succeed()
            done.set()

        sent_before = manager.sent
        writer = threading.Thread(target=grow, daemon=True)
        writer.start()
        with open(os.devnull, "wb") as null:
            follower = subprocess.run([sys.executable, "-m", "paictl", "logs", "grow", "--target", "openpai",
                                       "--follow"], stdout=subprocess.PIPE, stderr=null, env=env, timeout=300)
        writer.join()
        fetched = manager.sent - sent_before
        final_size = follow_path.stat().st_size
        complete = follower.stdout == follow_path.read_bytes()

    mb = 1024 * 1024
    rss, peer = statistics.median(paictl_rss), statistics.median(curl_rss)
    print(f"logs of a {size / mb:.1f} MB OpenPAI log ({args.rounds} rounds, medians)")
    print(f"  paictl logs   peak RSS {rss / mb:6.1f} MB  goal < 60 MB  {'met' if rss < 60 * mb else 'NOT met'}"
          f"  ({statistics.median(paictl_s):.2f} s)")
    print(f"  curl          peak RSS {peer / mb:6.1f} MB  ({statistics.median(curl_s):.2f} s)")
    print(f"  python + httpx + paictl's CLI imported, nothing run: {baseline / mb:.1f} MB")
    print(f"  ratio paictl/curl: {rss / peer:.1f}x RSS, {statistics.median(paictl_s) / statistics.median(curl_s):.1f}x"
          " time")
    print(f"follow for {args.seconds:.0f} s of a {args.follow_mb:.0f} MB log growing {args.grow / 1000:.0f} kB/s "
          f"(final size {final_size / mb:.2f} MB)")
    print(f"  paictl logs --follow fetched {fetched / mb:6.2f} MB  goal < 2x the log  "
          f"{'met' if fetched < 2 * final_size else 'NOT met'}; every byte shown once: {complete}")
    print(f"  curl of the whole log once   {final_size / mb:6.2f} MB")
    print(f"  ratio paictl/curl: {fetched / final_size:.2f}x bytes")
    return 0 if rss < 60 * mb and fetched < 2 * final_size and complete else 1


if __name__ == "__main__":
    sys.exit(main())
