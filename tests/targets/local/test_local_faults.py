"""Fault injection into local runs, with real processes: after every fault, /proc is searched for survivors.

Tasks here escape their process group the ways real commands do (`timeout`, `set -m; cmd &`, `setsid`), some also
scrub their environment (`env -i`, so the run's marker is gone) and report their pid in a file, so that a survivor
is found either way. The faults: the verdict, `paictl stop`, SIGKILL of paictl and of the supervisor, concurrent
submits of one name, corrupt state files, a deleted run folder, a full disk, SIGTERM to a follower.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_local_run import job_file, last_json, paictl, run_processes, start, state, wait_for
from docker_engine import no_docker_engine  # noqa: F401 - autouse: these runs take the host runtime

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")

#: Four escapes from the task's process group; the last one also drops the run's marker variables.
ESCAPES = [
    "timeout 600 sleep 1001 &",
    "(set -m; sleep 1002 &)",
    "setsid sleep 1003 &",
    "setsid env -i sh -c \"echo \\$\\$ > $PIDS/$PAICTL_TASK.scrubbed; exec sleep 1004\" &",
]


def escaping_job(folder: Path, name: str, *, then: str = "sleep 600", instances: int = 1) -> Path:
    """A job whose every task starts the four escapes, says so, then runs `then`."""
    (folder / "pids").mkdir(exist_ok=True)
    commands = [f"export PIDS={folder / 'pids'} PAICTL_TASK=$PAI_TASK_INDEX", *ESCAPES,
                "while [ ! -s \"$PIDS/$PAICTL_TASK.scrubbed\" ]; do sleep 0.05; done", "echo escaped", then]
    return job_file(folder, name, commands, instances=instances)


def scrubbed_pids(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in (folder / "pids").glob("*.scrubbed") if p.read_text().strip()]


def alive(pid: int) -> bool:
    """A process (not a zombie) with that pid exists."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] not in ("Z", "X")


def survivors(folder: Path, run_id: str) -> list[int]:
    return sorted(set(run_processes(run_id)) | {pid for pid in scrubbed_pids(folder) if alive(pid)})


def escaped(folder: Path, name: str, instances: int = 1) -> dict:
    """Wait until every task has started its escapes; the run's state."""
    run = wait_for(lambda: (s := state(folder, name))["run_id"] and s, f"{name} started")
    wait_for(lambda: len(scrubbed_pids(folder)) == instances, "the escapes")
    # every escape, marked or not, is running (5 marked: the shell and three sleeps... per task, plus `timeout`)
    wait_for(lambda: len(run_processes(run["run_id"])) >= 5 * instances, "the marked escapes")
    return run


@pytest.fixture(autouse=True)
def no_escape_outlives_its_test(tmp_path):
    yield
    for pid in scrubbed_pids(tmp_path) if (tmp_path / "pids").is_dir() else []:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# -- every fault: nothing survives ----------------------------------------------------------------------------------


def test_the_verdict_kills_what_escaped_the_task_group(tmp_path):
    job = escaping_job(tmp_path, "verdict", then="true")
    result = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert "verdict: succeeded" in result.stdout
    assert scrubbed_pids(tmp_path), "the scrubbed escape ran"
    assert survivors(tmp_path, state(tmp_path, "verdict")["run_id"]) == []


def test_a_failed_task_takes_every_escape_of_every_task_with_it(tmp_path):
    job = escaping_job(tmp_path, "failing", then="sleep 0.5; exit 3", instances=2)
    paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=1)
    assert len(scrubbed_pids(tmp_path)) == 2
    assert survivors(tmp_path, state(tmp_path, "failing")["run_id"]) == []


def test_stop_kills_what_escaped(tmp_path):
    job = escaping_job(tmp_path, "stopped")
    paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=0)
    run = escaped(tmp_path, "stopped")
    paictl("stop", "stopped", cwd=tmp_path, check_code=0)
    assert survivors(tmp_path, run["run_id"]) == []


def test_sigkill_of_paictl_kills_what_escaped(tmp_path):
    job = escaping_job(tmp_path, "killed")
    cli = start("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    run = escaped(tmp_path, "killed")
    time.sleep(1.5)  # the watchdog's snapshot of the runner's tree (every second) now holds the scrubbed escape
    cli.kill()
    cli.communicate()
    wait_for(lambda: survivors(tmp_path, run["run_id"]) == [], "the watchdog to kill every escape", timeout=15)
    status = paictl("status", "killed", cwd=tmp_path, check_code=0)
    assert "no process of the run is left" in status.stdout


def test_sigkill_of_the_supervisor_kills_what_escaped(tmp_path):
    job = escaping_job(tmp_path, "orphaned")
    paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=0)
    run = escaped(tmp_path, "orphaned")
    time.sleep(1.5)
    os.kill(run["owner"]["pid"], signal.SIGKILL)
    wait_for(lambda: survivors(tmp_path, run["run_id"]) == [], "the watchdog to kill every escape", timeout=15)


def test_status_says_what_it_finds_when_nothing_killed_the_tasks(tmp_path):
    """The runner and its watchdog both die at once: status must not claim the tasks were killed."""
    job = escaping_job(tmp_path, "unguarded")
    paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=0)
    run = escaped(tmp_path, "unguarded")
    supervisor = run["owner"]["pid"]
    watchdog = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(int(p.name)) == supervisor
                and b"watchdog" in _cmdline(int(p.name))]
    assert len(watchdog) == 1
    os.kill(watchdog[0], signal.SIGKILL)
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not alive(supervisor), "the supervisor to die")
    left = run_processes(run["run_id"])
    assert left
    status = paictl("status", "unguarded", cwd=tmp_path, check_code=0)
    assert "still live" in status.stdout and "no process of the run is left" not in status.stdout
    for pid in left + scrubbed_pids(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: run_processes(run["run_id"]) == [], "the test's own clean-up")
    assert "no process of the run is left" in paictl("status", "unguarded", cwd=tmp_path).stdout


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# -- one run per name -----------------------------------------------------------------------------------------------


def test_concurrent_submits_of_one_name_start_exactly_one_run(tmp_path):
    job = job_file(tmp_path, "twin", ["sleep 600"])
    clis = [subprocess.Popen([sys.executable, "-m", "paictl", "submit", str(job), "--target", "local"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outcomes = [(cli.wait(timeout=60), *cli.communicate()) for cli in clis]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 3, 3, 3], outcomes
    for code, out, err in outcomes:
        if code == 3:
            assert out == ""
            lines = err.splitlines()
            assert lines[-1].startswith("paictl: error: job 'twin' is already running locally"), err
            assert not any("Traceback" in line for line in lines)
    run = state(tmp_path, "twin")
    wait_for(lambda: run_processes(state(tmp_path, "twin")["run_id"]), "the task")
    assert len([p for p in Path("/proc").iterdir() if p.name.isdigit()
                and b"paictl.targets.local.supervisor" in _cmdline(int(p.name))
                and str(tmp_path).encode() in _cmdline(int(p.name))]) == 1
    paictl("stop", "twin", cwd=tmp_path, check_code=0)
    assert run_processes(state(tmp_path, "twin")["run_id"]) == [] and run["view"]["name"] == "twin"


def test_resubmitting_a_finished_run_replaces_it(tmp_path):
    job = job_file(tmp_path, "again", ["echo run"])
    paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    first = state(tmp_path, "again")["run_id"]
    paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert state(tmp_path, "again")["run_id"] != first
    runs = tmp_path / "state" / "paictl" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [".again.lock", "again"]


# -- state files validated on read ----------------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", '{"view": {"name": "x"', "[1, 2]", '{"view": {}, "attempt": "0"}',
                                     '{"view": {"name": "broken", "state": "nonsense", "tasks": []}, "owner": null, '
                                     '"attempt": 0, "work_dir": "/", "run_id": "x"}'])
def test_a_corrupt_state_is_shown_as_corrupt_and_never_breaks_anything(tmp_path, content):
    for name in ("broken", "fine"):
        paictl("submit", str(job_file(tmp_path, name, ["echo out"])), "--target", "local", "--follow", cwd=tmp_path,
               check_code=0)
    runs = tmp_path / "state" / "paictl" / "runs"
    (runs / "broken" / "state.json").write_text(content)
    listing = paictl("status", "--target", "local", "-o", "json", cwd=tmp_path, check_code=0)
    rows = {row["name"]: row for row in json.loads(listing.stdout)}
    assert rows["fine"]["state"] == "succeeded"
    assert rows["broken"]["state"] == "unknown" and "is corrupt" in rows["broken"]["message"]
    for command in (["status", "broken"], ["status", "broken", "--follow"]):
        result = subprocess.run([sys.executable, "-m", "paictl", *command], cwd=tmp_path, capture_output=True,
                                text=True, timeout=30)  # a follower must end: nobody will fix this state
        assert result.returncode == 3, result
        assert result.stderr.count("\n") == 1 and "local run 'broken' is corrupt" in result.stderr
    assert "\nout\n" in paictl("logs", "broken", cwd=tmp_path, check_code=0).stdout
    stop = paictl("stop", "broken", cwd=tmp_path)
    assert stop.returncode == 3 and stop.stderr.count("\n") == 1


def test_a_corrupt_plan_gives_one_line(tmp_path):
    paictl("submit", str(job_file(tmp_path, "badplan", ["echo out"])), "--target", "local", "--follow", cwd=tmp_path,
           check_code=0)
    (tmp_path / "state" / "paictl" / "runs" / "badplan" / "plan.json").write_text('{"spec": {"taskRoles": 7}}')
    result = paictl("logs", "badplan", cwd=tmp_path)
    assert result.returncode == 3 and result.stderr.count("\n") == 1 and "is corrupt" in result.stderr
    listing = json.loads(paictl("status", "-o", "json", cwd=tmp_path, check_code=0).stdout)
    assert [row["name"] for row in listing] == ["badplan"]


# -- the run folder vanishes or fills up ----------------------------------------------------------------------------


def test_a_deleted_run_folder_stops_the_run_with_one_line(tmp_path):
    job = escaping_job(tmp_path, "vanishing")
    cli = start("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    run = escaped(tmp_path, "vanishing")
    follower = start("status", "vanishing", "--follow", cwd=tmp_path)
    # the follower is following once it has printed the run (its start-up takes seconds on a loaded machine)
    assert follower.stdout is not None and "vanishing" in follower.stdout.readline()
    shutil.rmtree(tmp_path / "state" / "paictl" / "runs" / "vanishing")
    out, err = cli.communicate(timeout=30)
    assert cli.returncode == 3, (out, err)
    assert err.splitlines()[-1].startswith("paictl: error: the run folder ") and "vanished" in err
    assert "Traceback" not in err
    _, follower_err = follower.communicate(timeout=30)
    assert follower.returncode == 3 and "vanished" in follower_err and "Traceback" not in follower_err
    assert survivors(tmp_path, run["run_id"]) == []
    gone = paictl("status", "vanishing", cwd=tmp_path)
    assert gone.returncode == 3 and gone.stderr.count("\n") == 1


@pytest.fixture
def tiny_disk(tmp_path):
    """A 200 KiB tmpfs as the state folder (root only: skipped elsewhere)."""
    mount = tmp_path / "state"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_stops_the_run_with_one_line(tmp_path, tiny_disk):
    job = job_file(tmp_path, "filling", ["head -c 400000 /dev/zero | tr '\\0' x", "sleep 600"])
    result = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    assert result.returncode == 3, result
    assert result.stderr.splitlines()[-1] == (f"paictl: error: the run folder {tiny_disk}/paictl/runs/filling cannot be "
                                              "written: No space left on device")
    assert "Traceback" not in result.stderr
    assert run_processes(state(tmp_path, "filling")["run_id"]) == []
    # Nothing can even start now: one line again.
    again = paictl("submit", str(job_file(tmp_path, "other", ["true"])), "--target", "local", cwd=tmp_path)
    assert again.returncode == 3 and again.stderr.splitlines()[-1].startswith("paictl: error: the run folder ")


@pytest.mark.parametrize("where, why", [("a-file", "it is a file, not a folder"),
                                        ("a-file/runs", "Not a directory")])
def test_a_run_folder_that_cannot_be_made_says_so_not_that_it_vanished(tmp_path, where, why):
    """--run-dir (or $XDG_STATE_HOME) naming a file, or a folder under one: nothing was there to vanish."""
    (tmp_path / "a-file").write_text("")
    result = paictl("submit", str(job_file(tmp_path, "nowhere", ["true"])), "--target", "local",
                    "--run-dir", str(tmp_path / where), cwd=tmp_path)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == f"paictl: error: the run folder {tmp_path / where} cannot be made: {why}"


# -- where runs live; signals to followers -------------------------------------------------------------------------


def test_runs_are_found_from_any_directory_and_old_ones_in_the_current_one(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    paictl("submit", str(job_file(tmp_path, "anywhere", ["echo here"])), "--target", "local", "--follow",
           cwd=tmp_path / "a", check_code=0)
    assert "\nhere\n" in paictl("logs", "anywhere", cwd=tmp_path / "b", check_code=0).stdout
    # A run an older paictl left in ./.paictl/runs is still found and listed.
    shutil.copytree(tmp_path / "state" / "paictl" / "runs" / "anywhere", tmp_path / "b" / ".paictl" / "runs" / "old")
    listing = json.loads(paictl("status", "--target", "local", "-o", "json", cwd=tmp_path / "b", check_code=0).stdout)
    assert sorted(row["name"] for row in listing) == ["anywhere", "anywhere"]  # the copy keeps its recorded name
    assert "\nhere\n" in paictl("logs", "old", cwd=tmp_path / "b", check_code=0).stdout
    missing = paictl("logs", "old", "--target", "local", cwd=tmp_path / "a")
    assert missing.returncode == 3 and missing.stderr == (f"paictl: error: no local run named 'old' in "
                                                          f"{tmp_path / 'state/paictl/runs'}\n")


def test_sigterm_to_a_follower_exits_130_like_ctrl_c(tmp_path):
    paictl("submit", str(job_file(tmp_path, "followed", ["sleep 600"])), "--target", "local", cwd=tmp_path,
           check_code=0)
    follower = start("status", "followed", "--follow", cwd=tmp_path)
    assert follower.stdout.readline().startswith("followed: ")  # it is following (its handlers are in place)
    follower.send_signal(signal.SIGTERM)
    _, err = follower.communicate(timeout=30)
    assert follower.returncode == 130, err
    assert "Traceback" not in err
    paictl("stop", "followed", cwd=tmp_path, check_code=0)
    assert last_json(paictl("status", "followed", "-o", "json", cwd=tmp_path).stdout)["state"] == "stopped"


def test_what_a_task_leaves_behind_becomes_a_child_of_the_runner():
    """The fact the runner's shortcut (`_left_nothing`) relies on: once a task's shell has ended and its group is
    empty, a process that escaped the group is a direct child of the subreaper, so `procs.children` sees it."""
    from paictl.targets.local import procs

    if not procs.become_subreaper():
        pytest.skip("no child subreaper on this kernel")
    escape = None
    try:
        shell = subprocess.Popen(["bash", "-c", "setsid sleep 1005 & echo $!"], stdout=subprocess.PIPE,
                                 start_new_session=True)
        escape = int(shell.stdout.readline())
        shell.wait()
        # `setsid` leaves the group only once it runs (until then the runner's shortcut sees a group and searches)
        wait_for(lambda: os.getpgid(escape) != shell.pid, "the escape to leave the task's group")
        with pytest.raises(ProcessLookupError):
            os.killpg(shell.pid, 0)  # the task's group is empty: the escape made its own session
        listed = procs.children(os.getpid())
        if listed is None:
            pytest.skip("no /proc/<pid>/task/<tid>/children on this kernel")
        wait_for(lambda: escape in procs.children(os.getpid()), "the escape to be re-parented to the runner")
        assert shell.pid not in procs.children(os.getpid())  # reaped: not a child any more
    finally:
        procs.stop_subreaping()
        if escape is not None:
            os.kill(escape, signal.SIGKILL)
            os.waitpid(escape, 0)
