"""Cost of a local run's task in docker (`paictl submit --target local --follow`, the docker runtime) over a bare
`docker run` of the same image and command.

Starts its own engine on a private socket (tests/docker_engine.py; root and Debian's docker.io needed) and imports
the tests' base image. Figures, each pair interleaved (A B A B), medians of the per-round figures:
- one task running `true`, from the command line to the verdict, against `docker run --rm IMAGE true`; and what the
  docker runtime adds beyond paictl's own cost: that difference minus, in the same round, the difference between
  the same job run by the host runtime and `true` run bare (paictl's start-up, compile, run folder and verdict);
- 8 instances, against 8 `docker run --rm IMAGE true` started together by a shell that waits for them;
- for context, the control calls that chose how paictl talks to the engine: a call over the HTTP API on the
  socket (`GET /_ping`, `GET /images/<ref>/json`) against the docker CLI doing the same (`docker version`,
  `docker image inspect`). Containers themselves are run by the CLI (targets/docker_runtime.py says why).

    sudo python benchmarks/local_docker.py [--rounds 5]

Goals: the docker runtime adds <= 0.1 s to a task beyond paictl's own cost (its engine calls: ping, image check,
inspect, removal, and the watchdog); 8 instances <= 1.5x the bare runs. The one-task ratio and difference are
printed for context: on a loaded machine paictl's own start-up grows with the load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from interleave import ENV, ROOT, Report, prepare, run_once, tool

DOCKER_EXTRA_GOAL_S = 0.1
MANY_GOAL_RATIO = 1.5
MANY = 8


def job(name: str, image: str, instances: int) -> str:
    return (f"protocolVersion: 2\nname: {name}\ntype: job\n"
            f"prerequisites:\n  - {{name: img, type: dockerimage, uri: '{image}'}}\n"
            f"taskRoles:\n  worker:\n    instances: {instances}\n    dockerImage: img\n"
            "    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}\n    commands:\n      - 'true'\n")


def timed(call, rounds: int = 50) -> float:
    """Median milliseconds of `call()`."""
    walls = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        walls.append(time.perf_counter() - started)
    return statistics.median(walls) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from docker_engine import DockerEngine, _missing

    missing = _missing()
    if missing is not None:
        sys.exit(f"benchmarks/local_docker.py: {missing}")
    prepare()
    paictl = tool("paictl")
    engine = DockerEngine(Path(tempfile.mkdtemp(prefix="pdk-", dir="/tmp")))
    engine.start()
    try:
        image = engine.base_image()
        ENV["DOCKER_HOST"] = os.environ["DOCKER_HOST"] = engine.host
        ENV.pop("DOCKER_CONTEXT", None)
        report = Report(f"local runs in docker (engine {engine.host}; median of per-round figures, A B A B)")
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            (folder / "one.yaml").write_text(job("bench-docker-one", image, 1))
            (folder / "many.yaml").write_text(job("bench-docker-many", image, MANY))
            bare = {"one": ["docker", "run", "--rm", image, "true"],
                    "many": ["bash", "-c", f"for i in $(seq {MANY}); do docker run --rm {image} true & done; wait"],
                    "host": ["true"]}
            walls: dict[str, list[tuple[float, float]]] = {name: [] for name in bare}
            for round_ in range(args.rounds + 1):  # the first round warms up (page cache, overlay, paictl's .pyc)
                for name in bare:
                    runtime = "host" if name == "host" else "docker"
                    mine, _, code = run_once([paictl, "submit", str(folder / f"{'one' if runtime == 'host' else name}"
                                                                         ".yaml"), "--target", "local",
                                              "--follow", "--runtime", runtime, "--run-dir",
                                              str(folder / f"runs-{name}-{round_}")])
                    theirs, _, bare_code = run_once(bare[name])
                    assert code == 0 and bare_code == 0, f"{name}: exit {code} / {bare_code}"
                    if round_:
                        walls[name].append((mine, theirs))
        left = engine.leftovers()["containers"]
        assert not left, f"containers left behind: {left}"
        extra = statistics.median((d - b) - (h - t) for (d, b), (h, t) in zip(walls["one"], walls["host"]))
        report.add("what the docker runtime adds to a task beyond paictl's own cost",
                   f"+{extra:.3f} s", f"<= +{DOCKER_EXTRA_GOAL_S} s", extra <= DOCKER_EXTRA_GOAL_S)
        one = statistics.median(m - t for m, t in walls["one"])
        report.add("  context: one task `true` to its verdict / a bare `docker run --rm IMAGE true`",
                   f"ratio {statistics.median(m / t for m, t in walls['one']):.2f}, +{one:.3f} s "
                   f"({statistics.median(w[0] for w in walls['one']):.3f} s / "
                   f"{statistics.median(w[1] for w in walls['one']):.3f} s)", "none", None)
        host = statistics.median(m - t for m, t in walls["host"])
        report.add("  context: the same job with --runtime host - `true` run bare (paictl's own cost now)",
                   f"+{host:.3f} s", "none", None)
        many = statistics.median(m / t for m, t in walls["many"])
        report.add(f"{MANY} instances to the verdict / {MANY} bare `docker run`s at once",
                   f"ratio {many:.2f} ({statistics.median(w[0] for w in walls['many']):.3f} s / "
                   f"{statistics.median(w[1] for w in walls['many']):.3f} s)", f"<= {MANY_GOAL_RATIO}x",
                   many <= MANY_GOAL_RATIO)
        from paictl.targets.docker_runtime import Engine

        api = Engine()
        cli_env = engine.env()
        ping_api = timed(api.ping)
        ping_cli = timed(lambda: subprocess.run(["docker", "version"], capture_output=True, env=cli_env), 20)
        image_api = timed(lambda: api.image(image))
        image_cli = timed(lambda: subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                                                 env=cli_env), 20)
        report.add("  context: engine answers? HTTP API GET /_ping / docker version",
                   f"{ping_api:.2f} ms / {ping_cli:.1f} ms, ratio {ping_cli / ping_api:.0f}x", "none", None)
        report.add("  context: image present? HTTP API GET /images/<ref>/json / docker image inspect",
                   f"{image_api:.2f} ms / {image_cli:.1f} ms, ratio {image_cli / image_api:.0f}x", "none", None)
        return report.finish()
    finally:
        engine.stop()


if __name__ == "__main__":
    sys.exit(main())
