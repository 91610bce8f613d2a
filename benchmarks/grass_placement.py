"""Cost of Grass placement (MARO's heaps) against MARO's own ResourceController, and of one master pass.

Targets: placing 2,000 containers on 200 nodes takes <= 0.2 s in each allocation mode (shown at 1x, 10x and 100x:
20 containers on 2 nodes, 200 on 20, 2,000 on 200) and at most 0.5x the CPU time of MARO's own
`ResourceController` (PyPI's pymaro in its cached environment, tests/maro_peer/package.py, imported into this
process and run on the same workload, interleaved),
with identical placements (the "crossing" workload is shown without a target); a master pass over 100 pending jobs
takes <= 1 s (real redis-server on loopback, two real node agents serving MARO's node API over HTTP, containers
recorded by a runtime that starts nothing, so the pass itself is what is measured).

    python benchmarks/grass_placement.py [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paictl.targets.grass.placement import Demand, Free, place

PLACEMENT_TARGET_S = 0.2
MARO_RATIO_TARGET = 0.5
PASS_TARGET_S = 1.0
MODES = ("single-metric-balanced", "single-metric-compacted")


#: Container sizes (cpu, MB, gpu) of each workload, used in turn. "mixed" fragments nodes (half-core containers
#: last, GPU containers first), the hard case for compacted placement: every container pops every node left too
#: full for it, as MARO's loop does. "uniform" is a MARO-shaped job: many equal actors, a few learners.
#: "crossing" (shown, not a target) gives nodes of one cpu count more memory or more GPUs, so tied nodes are
#: incomparable, each "less" than the other in MARO's ordering: those comparisons stay in Python (targets/grass/
#: placement.py says why).
WORKLOADS = {
    "mixed": [(1, 1024, 0), (2, 4096, 0), (4, 8192, 1), (0.5, 512, 0)],
    "uniform": [(2, 4096, 0)] * 199 + [(4, 8192, 0)],
    "crossing": [(1, 1024, 0), (2, 4096, 0), (4, 8192, 1), (0.5, 512, 0)],
}
NODE_SHAPES = {"crossing": [(32, 131072, 2), (32, 65536, 6), (32, 98304, 4)]}
TARGETED = ("mixed", "uniform")


def workload(scale: int, name: str = "mixed") -> tuple[list[Demand], list[Free]]:
    """20*scale containers, 2*scale nodes of three sizes (so ties between nodes are common)."""
    sizes = WORKLOADS[name]
    demands = [Demand(name=f"c{i}", component=f"k{i % len(sizes)}", index=i // len(sizes), cpu=sizes[i % len(sizes)][0],
                      memory=sizes[i % len(sizes)][1], gpu=sizes[i % len(sizes)][2]) for i in range(20 * scale)]
    shapes = NODE_SHAPES.get(name, [(32, 65536, 4), (24, 49152, 2), (32, 65536, 4)])
    nodes = [Free(node=f"n{i}", cpu=shapes[i % 3][0], memory=shapes[i % 3][1], gpu=shapes[i % 3][2])
             for i in range(2 * scale)]
    return demands, nodes


def maro_controller():
    """MARO's ResourceController and resource classes from the installed pymaro (its environment is built when not
    cached); None when it cannot be installed here."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the package's environment is test code
    from maro_peer import package

    try:
        venv = package.ensure_venv()
    except package.Unavailable as exc:
        print(f"MARO comparison: skipped, {exc}")
        return None
    print(f"MARO: {package.MARO} from PyPI, {package.grass_lib(venv)}")
    return package.resource_controller(venv)


def compare_with_maro(runs: int) -> bool:
    """paictl's `place` against MARO's get_allocation_plan on 2,000 containers / 200 nodes, both modes: identical
    plans, and CPU time (best of at least `runs` rounds, interleaved A B A B, and of at least 0.5 s of both sides'
    time, so a 3 ms case is sampled as often as a 200 ms one) at most MARO_RATIO_TARGET of MARO's. The target is
    on the cpu metric (the issue's); the memory metric is shown too."""
    import logging

    found = maro_controller()
    if found is None:
        return True
    controller, container_resource, node_resource = found
    logging.getLogger("services.master_agent.agent").setLevel(logging.ERROR)
    ok = True
    for metric in ("cpu", "memory"):
        for name in WORKLOADS:
            demands, nodes = workload(100, name)
            for mode in MODES:
                ours, theirs = [], []
                while len(ours) < runs or (sum(ours) + sum(theirs) < 0.5 and len(ours) < 100):
                    required = [container_resource(container_name=d.name, cpu=d.cpu, memory=d.memory, gpu=d.gpu)
                                for d in demands]
                    free = [node_resource(node_name=n.node, cpu=n.cpu, memory=n.memory, gpu=n.gpu) for n in nodes]
                    started = time.process_time()
                    maro_plan = controller.get_allocation_plan({"mode": mode, "metric": metric}, required, free)
                    theirs.append(time.process_time() - started)
                    started = time.process_time()
                    plan = place(demands, nodes, mode=mode, metric=metric)
                    ours.append(time.process_time() - started)
                    assert plan == maro_plan, f"{name} {mode} {metric}: placements differ from MARO's"
                ratio = min(ours) / min(theirs)
                targeted = name in TARGETED and metric == "cpu"
                if targeted:
                    ok &= ratio <= MARO_RATIO_TARGET
                target = f"target <= {MARO_RATIO_TARGET}x" if targeted else "no target"
                print(f"{name:8} {mode:24} {metric:6} 2,000 on 200: paictl {min(ours) * 1000:6.1f} ms cpu, MARO "
                      f"{min(theirs) * 1000:6.1f} ms cpu: {ratio:.2f}x ({target}), placements identical")
    return ok


def time_placement(runs: int) -> bool:
    """Best of `runs`, wall and CPU time (the CPU time is what a shared, loaded machine cannot inflate much)."""
    ok = True
    for name in WORKLOADS:
        for mode in MODES:
            for scale in (1, 10, 100):
                demands, nodes = workload(scale, name)
                walls, cpus = [], []
                for _ in range(runs):
                    started, started_cpu = time.perf_counter(), time.process_time()
                    plan = place(demands, nodes, mode=mode, metric="cpu")
                    walls.append(time.perf_counter() - started)
                    cpus.append(time.process_time() - started_cpu)
                assert len(plan) == len(demands)
                line = (f"{name:8} {mode:24} {scale:>3}x: {len(demands):>5} containers on {len(nodes):>3} nodes  "
                        f"{min(walls) * 1000:8.2f} ms wall {min(cpus) * 1000:8.2f} ms cpu")
                if scale == 100:
                    ok &= min(cpus) <= PLACEMENT_TARGET_S
                    line += f"  (target <= {PLACEMENT_TARGET_S * 1000:.0f} ms)"
                print(line)
    return ok


class RecordingRuntime:
    """Accepts every container and reports it running; starts nothing."""

    kind = "none"

    def __init__(self) -> None:
        self.configs: dict[str, dict] = {}

    def create(self, config: dict) -> dict:
        self.configs[config["container_name"]] = config
        return self.inspect(config["container_name"])

    def inspect(self, name: str) -> dict:
        state = {"Status": "running", "Running": True, "ExitCode": 0, "Pid": 1}
        return {"Name": name, "State": state, "Config": {"Labels": dict(self.configs[name]["labels"])}}

    def names(self) -> list[str]:
        return list(self.configs)

    def inspect_all(self) -> list[dict]:
        return [self.inspect(name) for name in self.configs]

    def stop(self, name: str) -> None: ...
    def remove(self, name: str) -> None: ...
    def logs(self, name: str) -> bytes: return b""
    def stop_all(self) -> None: ...


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def time_master_pass(jobs: int) -> bool:
    import redis

    from paictl.targets.grass.cluster import cluster_from_data
    from paictl.targets.grass.master import MasterAgent
    from paictl.targets.grass.node import NodeAgent
    from paictl.targets.grass.redis_records import Records, standardise

    if shutil.which("redis-server") is None:
        print("master pass: skipped, redis-server is not installed")
        return True
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--dir", folder], stdout=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port, decode_responses=True)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            cluster = cluster_from_data({
                "name": "bench", "master": {"hostname": "127.0.0.1", "redis": {"port": port}},
                "nodes": [{"name": f"n{i}", "hostname": "127.0.0.1", "api_server": {"port": free_port()},
                           "resources": {"cpu": 1000, "memory": 10 ** 7, "gpu": 0}} for i in range(2)]})
            agents = [NodeAgent(cluster, node.name, work_dir=Path(folder), interval=3600, runtime=RecordingRuntime())
                      for node in cluster.nodes]
            for agent in agents:
                agent.start()
            records = Records(cluster)
            job_file = {"mode": "grass/on-premises", "name": "", "allocation": {"mode": MODES[0], "metric": "cpu"},
                        "components": {"a": {"image": "img", "resources": {"cpu": 1, "memory": "512m", "gpu": 0},
                                             "num": 1, "mount": {"target": "/mnt/data"}, "command": "true"},
                                       "b": {"image": "img", "resources": {"cpu": 2, "memory": "1024m", "gpu": 0},
                                             "num": 1, "mount": {"target": "/mnt/data"}, "command": "true"}}}
            for number in range(jobs):
                records.submit(standardise({**job_file, "name": f"job-{number}"}, seed=str(number)))
            master = MasterAgent(cluster, interval=3600)
            started = time.perf_counter()
            master.run_pass()
            elapsed = time.perf_counter() - started
            statuses = {job["status"] for job in records.jobs().values()}
            assert statuses == {"running"}, statuses
            print(f"master pass: {jobs} pending jobs ({2 * jobs} containers created over HTTP) in "
                  f"{elapsed * 1000:.0f} ms (target <= {PASS_TARGET_S * 1000:.0f} ms)")
            for agent in agents:
                agent.close()
            return elapsed <= PASS_TARGET_S
        finally:
            server.terminate()
            server.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ok = time_placement(args.runs)
    ok &= compare_with_maro(args.runs)
    ok &= time_master_pass(100)
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
