"""The watchdog of a local run: if the process running the tasks dies, even by SIGKILL, no task survives it.

`python -I -S watchdog.py RUN_ID RUNNER_PID`, started by the runner in a session of its own (Ctrl-C
on the terminal does not reach it), with a pipe as standard input whose only writer is the runner. The runner
writes `<pgid>` when a task's process group starts, `-<pgid>` once it has killed what was left of it, and `done`
when it ended normally (it has killed everything itself). End of file without `done` means the runner is gone,
whatever the cause: every group still listed gets SIGKILL, then every process of the run (procs.py), found twice:
by its marker variables in /proc/<pid>/environ, from the trees of the task shells (still alive when the watchdog
acts), and from the runner's process tree, which the watchdog snapshots every second while the runner lives (these
catch a task's process that scrubbed its environment; a tree or snapshot entry is killed only if the same process,
by start time, still runs). SIGTERM (a session being torn down) does the same.

Every task runs in its own process group (`start_new_session`); what leaves it (`setsid`, `set -m`) is still found
by its marker variables or its ancestry.

With the docker runtime (`... RUN_ID RUNNER_PID ENGINE SECRETS_DIR`) it then removes every container labelled with
the run (through ../docker_runtime.py, loaded by path) and the run's secret files.

Deliberately small and stdlib-only (procs.py too): it runs as `python -I -S <this file> RUN_ID RUNNER_PID`, which
starts in a few milliseconds.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

try:
    from paictl.targets.local import procs
except ImportError:  # run as `python -I -S watchdog.py` (no site-packages): procs.py is beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import procs  # type: ignore[no-redef]

_SNAPSHOT_SECONDS = 1.0


def _kill_groups(groups: set[int]) -> None:
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _still_same(snapshot: dict[int, str]) -> set[int]:
    table = procs.process_table()
    return {pid for pid, start in snapshot.items() if pid in table and table[pid][2] == start
            and table[pid][1] not in ("Z", "X")}


def _load_docker_runtime():
    """../docker_runtime.py, loaded by path (this script runs without site-packages; it is stdlib-only)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docker_runtime.py")
    spec = importlib.util.spec_from_file_location("paictl_docker_runtime", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]  # dataclasses look their module up there
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _clean_docker(run_id: str, engine: str, secrets: str) -> None:
    """Remove the run's containers (killing them first) and its secret files: the docker runtime's leftovers."""
    if engine:
        try:
            docker = _load_docker_runtime()
            environ = {k: v for k, v in os.environ.items() if k.startswith("DOCKER_")}
            environ["DOCKER_HOST"] = engine
            docker.Engine(docker.engine_address(environ), timeout=60.0).remove_labelled({"paictl.run": run_id})
        except Exception:  # noqa: BLE001 - an engine that is gone took its containers with it; go on
            pass
    if secrets:
        import shutil

        shutil.rmtree(os.path.dirname(secrets), ignore_errors=True)


def main(argv: list[str]) -> None:
    run_id, runner = argv[0], int(argv[1])
    engine, secrets = (argv[2], argv[3]) if len(argv) >= 4 else ("", "")
    me = os.getpid()
    since = int(procs.process_table().get(me, (0, "", "0"))[2])
    groups: set[int] = set()
    snapshot: dict[int, str] = {}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def kill_everything() -> None:
        # The task shells (the group leaders) still live: their trees are intact, whatever the runner's fate.
        table = procs.process_table()
        trees = {pid: table[pid][2] for leader in groups if leader in table
                 for pid in procs.descendants(leader, table) | {leader}}
        snapshot.update(trees)
        _kill_groups(groups)
        procs.kill_until_gone(lambda: procs.marked(run_id) | _still_same(snapshot))
        _clean_docker(run_id, engine, secrets)

    def on_term(signum: int, frame: object) -> None:
        kill_everything()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    stdin = sys.stdin.buffer.raw  # unbuffered: select() and read() agree on what is pending
    pending = b""
    taken = 0.0
    while True:
        ready, _, _ = select.select([stdin], [], [], _SNAPSHOT_SECONDS)
        if time.monotonic() - taken >= _SNAPSHOT_SECONDS:
            table = procs.process_table()
            snapshot = {pid: table[pid][2] for pid in procs.descendants(runner, table)
                        if pid != me and int(table[pid][2]) >= since}
            taken = time.monotonic()
        if not ready:
            continue
        chunk = os.read(stdin.fileno(), 65536)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode().strip()
            if line == "done":
                return
            if line.startswith("-"):
                groups.discard(int(line[1:]))
            elif line:
                groups.add(int(line))
    kill_everything()


class Link:
    """The runner's end: starts the watchdog and tells it about the run's process groups.

    Lines are queued (`tell`) and sent in one write (`flush`, at every poll): each write wakes the watchdog, and
    with 200 tasks starting those wake-ups cost more than the tasks' own start. A group the watchdog has not heard
    of yet is still found if the runner dies: every task carries the run's marker variable, which it searches for.
    """

    #: Watchdogs told "done" that had not exited yet when their run was released.
    _released: list = []

    def __init__(self, run_id: str, runner_pid: int, docker: "tuple[str, ...] | list[str]" = ()) -> None:
        """`docker`: the docker runtime's engine address and secrets folder (containers.DockerTasks)."""
        import subprocess

        # Run as a script without site (-I -S): it is stdlib-only and starts in a few milliseconds.
        self._process = subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), run_id,
                                          str(runner_pid), *docker],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        self.pid = self._process.pid
        self._lines: list[str] = []

    def tell(self, line: str) -> None:
        self._lines.append(line)

    def flush(self) -> None:
        lines, self._lines = self._lines, []
        stdin = self._process.stdin
        if lines and stdin is not None:
            try:
                stdin.write("".join(f"{line}\n" for line in lines).encode())
                stdin.flush()
            except (OSError, ValueError):
                pass

    def release(self) -> None:
        """Say "done" and close the pipe. The watchdog exits as soon as it reads it; waiting for that held a short
        job's verdict for the watchdog's own start-up (20 ms). One that has not exited yet is reaped by a later
        release, or with this process."""
        self.tell("done")
        self.flush()
        if self._process.stdin is not None:
            try:
                self._process.stdin.close()
            except OSError:
                pass
        Link._released.append(self._process)
        Link._released[:] = [process for process in Link._released if process.poll() is None]


if __name__ == "__main__":
    main(sys.argv[1:])
