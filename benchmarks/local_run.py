"""Cost of `paictl submit --target local --follow` over running the same commands bare, at a given machine load.

Two figures: one task running `true`, from the command line to the verdict, against `true` run directly; and 200
instances of `true`, against a shell starting 200 `/bin/true` in the background and waiting for them, per
instance. Both pairs run interleaved (A B A B); each paictl run gets its own run folder in a scratch directory.
Beside wall time, each row gives the CPU time (user + system) of both sides, the tasks included: on a shared
machine CPU time moves less with the load than wall time does.

`--load N` holds the machine's run queue at N or more processes besides the benchmark's own: before every round
it counts the runnable processes that are not its own (/proc/stat `procs_running`, sampled for half a second) and
starts or stops busy processes (Python loops in user space, killed with this script) to make up the
difference, and waits first until the 1-minute load average has reached N. The load average of every round is
printed beside the figures: a machine already busier than N cannot be made quieter, and the printed load says so.
The per-instance goal is judged only when every round ran at a load average between 3.5 and 5.

paictl is run from an installed, non-editable package, as users run it: the `paictl` next to this interpreter
(`python -m venv V && V/bin/pip install '.[test]' && V/bin/python benchmarks/local_run.py`). Before measuring, that
install is checked: its `direct_url.json` does not say editable, its package lies outside this checkout, and its
sources are byte for byte this checkout's (else: "reinstall"). An editable install reads every module from the
checkout and measures a different start-up.

For context (no goal), the 200 instances are also compared with
- the same shells started bare the way paictl starts them: a Python process that `posix_spawn`s 200
  `bash -o errexit -o nounset -o pipefail -c true` with the environment a task of that job gets (captured from a
  paictl run; about 1,000 `PAI_*` variables at 200 instances) and waits for them. bash 5 builds its export list at
  start-up with a linear duplicate check per variable (quadratic), so that environment alone costs each bash about
  4 ms of CPU (23.6 M instructions against 1.2 M); this row shows what paictl adds to it (its start-up, the
  compile, the run folder, logs, verdict);
- 200 subshells of one bash that already holds that environment, each setting its own task's variables and log
  (a "zygote"): what running tasks that way would cost. paictl does not (docs/explanation/performance.md, "Where
  the time goes": a subshell's `$$` is the zygote's, so `kill $$` or `/tmp/x.$$` in one task reaches the others).
Both context rows start their process in a session of its own, as paictl's runner works (cli/own_session.py), so
that they compare like with like under the autogroup scheduler; the bare commands of the goals run as a user types
them, in the benchmark's session, beside the busy processes of `--load`.

    V/bin/python benchmarks/local_run.py [--rounds 7] [--load 4] [--syscalls]

`--syscalls` also counts, once and untimed, the system calls of each side with `strace -f -c` (per instance).

Goals (issue 19, issue 43): one `true` <= +0.25 s over the bare command; 200 instances <= 3 ms per instance over
the bare commands, at load average 4.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from interleave import ROOT, Report, run_once, tool

ONE_GOAL_S = 0.25
PER_INSTANCE_GOAL_MS = 3.0
#: The load average the per-instance goal holds at; rounds at a lower one do not judge it.
GOAL_LOAD = 4.0
MANY = 200
#: The installed package's folders and the checkout's folders they come from (pyproject.toml's package-dir).
PACKAGE_SOURCES = {"": "src/paictl", "protocol": "protocol", "compiler": "compiler", "schemas": "schemas",
                   "targets": "targets", "marketplace": "marketplace"}


def job(name: str, instances: int, command: str = "true") -> str:
    return (f"protocolVersion: 2\nname: {name}\ntype: job\n"
            "prerequisites:\n  - {name: img, type: dockerimage, uri: 'python:3.11'}\n"
            f"taskRoles:\n  worker:\n    instances: {instances}\n    dockerImage: img\n"
            f"    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 0}}\n    commands:\n      - '{command}'\n")


# -- the installed package ------------------------------------------------------------------------------------------

#: Run by the install's own interpreter: where its paictl package is and whether pip installed it editable.
WHERE_INSTALLED = """
import importlib.metadata, json, os, paictl
url = importlib.metadata.distribution("paictl").read_text("direct_url.json") or "{}"
print(json.dumps({"package": os.path.dirname(os.path.abspath(paictl.__file__)),
                  "editable": bool(json.loads(url).get("dir_info", {}).get("editable"))}))
"""


def installed_paictl() -> tuple[str, str]:
    """The `paictl` script of a non-editable install of this very checkout, and a line saying how that was checked;
    exits with the reason when it is not one."""
    script = tool("paictl")
    with open(script, "rb") as head:
        first = head.readline().decode().strip()
    interpreter = first[2:].strip() if first.startswith("#!") else sys.executable
    found = json.loads(subprocess.run([interpreter, "-I", "-c", WHERE_INSTALLED], check=True, capture_output=True,
                                      text=True).stdout)
    package = Path(found["package"])
    if found["editable"] or package.resolve().is_relative_to(ROOT.resolve()):
        sys.exit(f"{script} is an editable install (its modules are read from {package}); measure a regular one: "
                 f"python -m venv V && V/bin/pip install '{ROOT}[test]' && V/bin/python {sys.argv[0]}")
    compared, stale = 0, []
    for inside, source in PACKAGE_SOURCES.items():
        for path in sorted((ROOT / source).rglob("*.py")):
            relative = path.relative_to(ROOT / source)
            if inside == "" and relative.parts[0] in PACKAGE_SOURCES:
                continue
            copy = package / inside / relative
            compared += 1
            if not copy.is_file() or copy.read_bytes() != path.read_bytes():
                stale.append(str(path.relative_to(ROOT)))
    if stale:
        sys.exit(f"{script} was installed from other sources than this checkout's ({', '.join(stale[:5])}"
                 f"{' ...' if len(stale) > 5 else ''} differ): reinstall it (pip install '{ROOT}[test]')")
    return script, (f"paictl: {script}, a regular install (not editable) in {package}; its {compared} modules are "
                    "this checkout's, byte for byte")


# -- the load -------------------------------------------------------------------------------------------------------

def procs_running() -> int:
    with open("/proc/stat", "rb") as stat:
        for line in stat:
            if line.startswith(b"procs_running "):
                return int(line.split()[1])
    return 0


#: A busy process: user-space work only, killed with its parent (PR_SET_PDEATHSIG), so none outlives a benchmark
#: that is killed. (A first version, `sh` spinning on `kill -0 $PPID`, made a system call per turn: 2 min 49 s of
#: system time in one benchmark run.) Busy processes are always runnable, so they take a steadier share of the two
#: CPUs than other sessions' tests at the same load average: 200 instances measured 11.5 ms each at load 5-7 with
#: them, 6.0 ms at load 8-9.5 without.
SPIN = """
import ctypes, os, sys
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
if os.getppid() != int(sys.argv[1]):
    sys.exit()
while True:
    pass
"""


class BusyLoad:
    """Busy processes that keep `target` runnable processes on the machine besides this benchmark's own work."""

    def __init__(self, target: float) -> None:
        self.target = target
        self.busy: list[int] = []

    def others(self) -> float:
        """Runnable processes that are neither this script (the sampler) nor its busy ones, averaged over 0.5 s."""
        samples = []
        for _ in range(25):
            samples.append(procs_running() - 1 - len(self.busy))
            time.sleep(0.02)
        return max(0.0, statistics.mean(samples))

    def adjust(self) -> None:
        wanted = max(0, round(self.target - self.others()))
        while len(self.busy) < wanted:
            self.busy.append(os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", SPIN,
                                                             str(os.getpid())], os.environ))
        while len(self.busy) > wanted:
            self._stop(self.busy.pop())

    def settle(self, timeout: float = 150.0) -> None:
        """Adjust until the 1-minute load average has reached the target (it trails the run queue by a minute)."""
        deadline = time.monotonic() + timeout
        while os.getloadavg()[0] < self.target - 0.3 and time.monotonic() < deadline:
            self.adjust()
            print(f"  settling: load average {os.getloadavg()[0]:.2f}, target {self.target:g}, "
                  f"{len(self.busy)} busy process(es)", flush=True)
            time.sleep(5)

    def close(self) -> None:
        while self.busy:
            self._stop(self.busy.pop())

    @staticmethod
    def _stop(pid: int) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)


# -- measuring ------------------------------------------------------------------------------------------------------

def timed(argv: list[str], env: dict[str, str] | None = None, own_session: bool = False) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and every descendant it waited for) of one successful run.
    `own_session`: started in a session of its own, as paictl's runner works (cli/own_session.py)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if env is None and not own_session:
        wall, _, code = run_once(argv)
    else:
        started = time.perf_counter()
        code = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=own_session).returncode
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert code == 0, f"{argv[:3]}: exit {code}"
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def task_environment(paictl: str, folder: Path) -> dict[str, str]:
    """The environment of task 0 of the 200-instance job, from a real run."""
    dump = folder / "env0"
    (folder / "dump.yaml").write_text(job("bench-many", MANY, f"[ $PAI_TASK_INDEX != 0 ] || env -0 > {dump}"))
    timed([paictl, "submit", str(folder / "dump.yaml"), "--target", "local", "--follow", "--runtime", "host",
           "--run-dir", str(folder / "runs-env")])
    return dict(item.split("=", 1) for item in dump.read_text().split("\0") if item)


#: Starts the task shells as the runner does (posix_spawn, a new session each) and waits for them.
SPAWN_SHELLS = """
import os, sys
argv = ["/bin/bash", "-o", "errexit", "-o", "nounset", "-o", "pipefail", "-c", "true", "paictl-task"]
pids = [os.posix_spawn(argv[0], argv, os.environ, setsid=True) for _ in range(int(sys.argv[1]))]
sys.exit(max(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids))
"""

#: One bash holding the tasks' environment runs each task as a subshell with its own variables and log.
ZYGOTE = """
for ((i = 0; i < $2; i++)); do
  (export PAI_TASK_INDEX=$i PAI_CURRENT_CONTAINER_PORT=$i FC_TASK_ATTEMPT_ID=0 PAICTL_RUN_ID_TASK=worker-$i
   set -o errexit -o nounset -o pipefail; eval true) </dev/null >>"$1/worker-$i.log" 2>&1 &
done
wait
"""


def syscalls(argv: list[str], env: dict[str, str] | None = None) -> int:
    """System calls made by `argv` and every process it starts (strace -f -c), untimed."""
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run(["strace", "-f", "-c", "-o", out.name, *argv], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        total = [line for line in out.read().splitlines() if line.rstrip().endswith("total")]
    return int(total[0].split()[3]) if total else 0


def load_text(loads: list[float]) -> str:
    return f"load average {min(loads):.1f}-{max(loads):.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--load", type=float, default=None, help="hold the run queue at this many busy processes")
    parser.add_argument("--syscalls", action="store_true", help="also count system calls with strace -f -c")
    args = parser.parse_args()
    paictl, how = installed_paictl()
    print(how, flush=True)
    busy = BusyLoad(args.load) if args.load else None
    report = Report(f"local runs (median of per-round differences, A B A B; "
                    f"{'busy processes added up to load ' + format(args.load, 'g') if busy else 'load as found'})")
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            (folder / "one.yaml").write_text(job("bench-one", 1))
            (folder / "many.yaml").write_text(job("bench-many", MANY))

            def submit(name: str, run: str) -> list[str]:
                # A run folder per round: replacing the previous run's folder (200 logs) is not part of running.
                # host processes: this compares with bare commands (benchmarks/local_docker.py measures containers)
                return [paictl, "submit", str(folder / f"{name}.yaml"), "--target", "local", "--follow",
                        "--runtime", "host", "--run-dir", str(folder / f"runs-{run}")]

            environment = task_environment(paictl, folder)
            bare = {"one": (["/bin/true"], None),
                    "many": (["bash", "-c", f"for i in $(seq {MANY}); do /bin/true & done; wait"], None),
                    "shells": ([sys.executable, "-c", SPAWN_SHELLS, str(MANY)], environment)}
            samples: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in [*bare, "zygote"]}
            loads: list[float] = []
            if busy is not None:
                busy.adjust()
                busy.settle()
            for round_ in range(args.rounds + 1):  # the first round warms up
                if busy is not None:
                    busy.adjust()
                for name, (argv, env) in bare.items():
                    mine = timed(submit("many" if name == "shells" else name, f"{name}-{round_}"))
                    theirs = timed(argv, env, own_session=name == "shells")
                    if round_:
                        samples[name].append((*mine, *theirs))
                logs = folder / f"zygote-{round_}"
                logs.mkdir()
                zygote = timed(["bash", "-c", ZYGOTE, "zygote", str(logs), str(MANY)], environment, own_session=True)
                theirs = timed(bare["many"][0])
                if round_:
                    samples["zygote"].append((*zygote, *theirs))
                    loads.append(os.getloadavg()[0])
                    print(f"  round {round_}: load average {loads[-1]:.2f}"
                          + (f", {len(busy.busy)} busy process(es)" if busy else ""), flush=True)
            counts = {}
            if args.syscalls and shutil.which("strace"):
                counts = {"paictl": syscalls(submit("many", "strace")), "bare": syscalls(bare["many"][0])}
    finally:
        if busy is not None:
            busy.close()

    def median(name: str, column: int) -> float:
        return statistics.median(sample[column] for sample in samples[name])

    def per_instance(name: str) -> float:
        return statistics.median(sample[0] - sample[2] for sample in samples[name]) / MANY * 1000

    def cpu_per_instance(name: str) -> float:
        return statistics.median(sample[1] - sample[3] for sample in samples[name]) / MANY * 1000

    load = load_text(loads)
    one = statistics.median(sample[0] - sample[2] for sample in samples["one"])
    report.add(f"local run of one `true` to its verdict - the bare command ({load})",
               f"+{one:.3f} s ({median('one', 0):.3f} s / {median('one', 2):.3f} s)", f"<= +{ONE_GOAL_S} s",
               one <= ONE_GOAL_S)
    judged = GOAL_LOAD - 0.5 <= min(loads) and max(loads) <= GOAL_LOAD + 1
    per = per_instance("many")
    report.add(f"local run of {MANY} instances, per instance over the bare commands ({load})",
               f"{per:.2f} ms ({median('many', 0):.3f} s / {median('many', 2):.3f} s)",
               f"<= {PER_INSTANCE_GOAL_MS} ms at load {GOAL_LOAD:g}", per <= PER_INSTANCE_GOAL_MS if judged else None)
    report.add("  the same in CPU time (user + system, tasks included), per instance over the bare commands",
               f"{cpu_per_instance('many'):.2f} ms ({median('many', 1):.3f} s / {median('many', 3):.3f} s)",
               "none", None)
    report.add(f"  context: {MANY} instances, per instance over their shells started bare (Python posix_spawn)",
               f"{per_instance('shells'):.2f} ms ({median('shells', 0):.3f} s / {median('shells', 2):.3f} s); "
               f"CPU {cpu_per_instance('shells'):.2f} ms", "none", None)
    report.add(f"  context: {MANY} subshells of one bash holding the environment (not used), per instance over "
               "the bare commands",
               f"{per_instance('zygote'):.2f} ms ({median('zygote', 0):.3f} s / {median('zygote', 2):.3f} s); "
               f"CPU {cpu_per_instance('zygote'):.2f} ms", "none", None)
    if counts:
        report.add("  context: system calls per instance, paictl run / bare commands (strace -f, once)",
                   f"{counts['paictl'] / MANY:.0f} / {counts['bare'] / MANY:.0f}", "none", None)
    if not judged:
        print(f"  the per-instance goal is not judged: the load average left {GOAL_LOAD - 0.5:g}-{GOAL_LOAD + 1:g} "
              f"in some round (--load {GOAL_LOAD:g} adds busy processes up to it; it cannot remove other work)")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
