"""Local runs through the real CLI in a subprocess: real bash, real process groups, real signals, real sockets.

Every run gets its own run folder (`--run-dir`) and working directory under tmp_path. "No process survives" is
checked by scanning /proc for the run's marker variable (PAICTL_RUN_ID, in every task's environment).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from paictl.targets.local.runtime import RUN_MARKER
from docker_engine import no_docker_engine  # noqa: F401 - autouse: these runs take the host runtime

EXAMPLES = ROOT / "examples"
TIMEOUT = 60

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")


def paictl(*args: str, cwd: Path, check_code: int | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "paictl", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=TIMEOUT)
    if check_code is not None:
        assert result.returncode == check_code, (result.stdout, result.stderr)
    return result


STARTED: list[subprocess.Popen] = []


def start(*args: str, cwd: Path) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "paictl", *args], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    STARTED.append(process)
    return process


@pytest.fixture(autouse=True)
def no_run_outlives_its_test(tmp_path):
    """Whatever a failing test left running is killed: its CLI, or the detached supervisor (the watchdog then
    kills the tasks). A passing test has nothing left to kill."""
    yield
    import os

    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()
    for path in tmp_path.glob("state/paictl/runs/*/state.json"):
        owner = json.loads(path.read_text()).get("owner") or {}
        from paictl.targets.local.store import owner_alive

        if owner_alive(owner):
            os.kill(owner["pid"], signal.SIGKILL)


def state(cwd: Path, name: str) -> dict:
    return json.loads((cwd / "state" / "paictl" / "runs" / name / "state.json").read_text())


def wait_for(condition, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (OSError, ValueError, KeyError):
            value = None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def wait_running(cwd: Path, name: str, tasks: int) -> dict:
    return wait_for(lambda: (s := state(cwd, name))["view"]["state"] == "running"
                    and sum(t["state"] == "running" for t in s["view"]["tasks"]) == tasks and s, f"{name} running")


def run_processes(run_id: str) -> list[int]:
    """Processes (not zombies) whose environment carries this run's marker."""
    marker = f"{RUN_MARKER}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def job_file(folder: Path, name: str, commands: list[str], *, instances: int = 1, extra: str = "") -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(f"protocolVersion: 2\nname: {name}\ntype: job\n{extra}"
                    "prerequisites: [{name: img, type: dockerimage, uri: 'ubuntu:22.04'}]\n"
                    f"taskRoles:\n  work:\n    instances: {instances}\n    dockerImage: img\n"
                    "    resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}\n    commands:\n"
                    + "".join(f"      - {json.dumps(c)}\n" for c in commands))
    return path


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def log(cwd: Path, name: str, task: str, attempt: int = 0) -> str:
    return (cwd / "state" / "paictl" / "runs" / name / str(attempt) / f"{task}.log").read_text()


# -- the examples ---------------------------------------------------------------------------------------------------

def test_two_roles_find_each_other_over_loopback(tmp_path):
    result = paictl("submit", str(EXAMPLES / "local-ping-pong.yaml"), "--target", "local", "--follow",
                    "--format", "json", cwd=tmp_path, check_code=0)
    view = last_json(result.stdout)
    assert view["state"] == "succeeded" and view["completion_code"] == 0
    assert view["triggered_by"] == {"role": "client", "index": 0}
    assert "client got: pong for ping from client-0" in log(tmp_path, "local-ping-pong", "client-0")
    assert "server got: ping from client-0" in log(tmp_path, "local-ping-pong", "server-0")
    assert "paictl: runtime host (no docker engine answers at " in result.stderr
    assert "image python:3.11-slim (task role server, client) is not used: tasks run as host processes" \
        in result.stderr


def test_syntax_error_is_231_and_never_retried(tmp_path):
    result = paictl("submit", str(EXAMPLES / "local-syntax-error-without-gang.yaml"), "--target", "local", "--follow",
                    cwd=tmp_path, check_code=1)
    assert "local-syntax-error: failed (attempt 0), code 231, decided by train-0" in result.stdout
    assert "train-0  failed  attempt 0  on localhost  exit 1  231 ContainerSyntaxError" in result.stdout
    # The last lines of the failed task, and where its log is.
    assert f"last lines of train-0 ({tmp_path}/state/paictl/runs/local-syntax-error/0/train-0.log):" in result.stdout
    assert "  SyntaxError: invalid syntax" in result.stdout
    # taskRetryCount 3 and jobRetryCount 2 were both left unused: one attempt of each.
    view = state(tmp_path, "local-syntax-error")["view"]
    assert (view["attempt"], view["tasks"][0]["attempt"], view["completion_code"]) == (0, 0, 231)
    assert sorted(p.name for p in (tmp_path / "state/paictl/runs/local-syntax-error").iterdir() if p.is_dir()) == ["0"]


def test_flaky_task_succeeds_on_retry(tmp_path):
    result = paictl("submit", str(EXAMPLES / "local-retry-without-gang.yaml"), "--target", "local", "--follow",
                    "--format", "json", cwd=tmp_path, check_code=0)
    view = last_json(result.stdout)
    assert (view["state"], view["attempt"], view["tasks"][0]["attempt"]) == ("succeeded", 0, 2)
    text = log(tmp_path, "local-retry", "worker-0")
    assert text.count("simulated flaky failure") == 2 and "worker done" in text
    assert "exited 1 (255 PAIRuntimeUnknownFailed); retried: retry 2 of 2" in text
    assert view["tasks"][0]["failed_attempts"] == [
        {"attempt": 0, "exit_code": 1, "diagnosis": "255 PAIRuntimeUnknownFailed"},
        {"attempt": 1, "exit_code": 1, "diagnosis": "255 PAIRuntimeUnknownFailed"}]
    # every task attempt of the one log is readable on its own: --task-attempt N, and -p as kubectl logs -p
    for args, number in ((("--task-attempt", "0"), 0), (("-p",), 1), (("--task-attempt", "2"), 2)):
        shown = paictl("logs", "local-retry", *args, cwd=tmp_path, check_code=0).stdout
        assert shown.splitlines()[0] == f"[paictl] worker-0: task attempt {number} of job attempt 0 starts"
        assert f"worker attempt {number}" in shown
        assert [n for n in range(3) if f"worker attempt {n}" in shown] == [number], shown
    unknown = paictl("logs", "local-retry", "--task-attempt", "7", cwd=tmp_path, check_code=3)
    assert unknown.stderr.count("\n") == 1 and "no task attempt 7" in unknown.stderr


def test_the_follow_view_shows_each_failed_attempt_that_was_retried(tmp_path):
    result = paictl("submit", str(EXAMPLES / "local-retry-without-gang.yaml"), "--target", "local", "--follow",
                    cwd=tmp_path, check_code=0)
    lines = [line.strip() for line in result.stdout.splitlines()]
    failed = [line for line in lines if line.startswith("worker-0  failed")]
    assert failed == [f"worker-0  failed  attempt {n}  on localhost  exit 1  255 PAIRuntimeUnknownFailed  retried"
                      for n in (0, 1)], result.stdout
    # each failure comes before the attempt that retried it
    assert lines.index(failed[1]) < lines.index("worker-0  succeeded  attempt 2  on localhost  exit 0")
    shown = paictl("status", "local-retry", cwd=tmp_path, check_code=0).stdout
    assert shown.count("retried") == 2


def test_job_retry_runs_a_new_attempt_with_new_logs_and_ports(tmp_path):
    job = job_file(tmp_path, "jobretry", ['echo "job attempt $FC_FRAMEWORK_ATTEMPT_ID"',
                                          '[ "$FC_FRAMEWORK_ATTEMPT_ID" = 1 ]'], extra="jobRetryCount: 1\n")
    result = paictl("submit", str(job), "--target", "local", "--follow", "--format", "json", cwd=tmp_path,
                    check_code=0)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    restarting = [r for r in records if r["state"] == "restarting"]
    assert restarting and restarting[0]["completion_code"] == 255 and restarting[0]["attempt"] == 0
    assert (records[-1]["state"], records[-1]["attempt"]) == ("succeeded", 1)
    assert "job attempt 0" in log(tmp_path, "jobretry", "work-0", 0)
    assert "job attempt 1" in log(tmp_path, "jobretry", "work-0", 1)
    for attempt in (0, 1):
        assert (tmp_path / f"state/paictl/runs/jobretry/{attempt}/ports.json").is_file()
    latest = paictl("logs", "jobretry", cwd=tmp_path, check_code=0).stdout
    earlier = paictl("logs", "jobretry", "--attempt", "0", cwd=tmp_path, check_code=0).stdout
    assert "job attempt 1" in latest and "job attempt 0" not in latest
    assert "job attempt 0" in earlier and "job attempt 1" not in earlier
    previous = paictl("logs", "jobretry", "-p", cwd=tmp_path, check_code=0).stdout
    assert "job attempt 0" in previous and "job attempt 1" not in previous
    missing = paictl("logs", "jobretry", "--attempt", "5", cwd=tmp_path, check_code=3)
    assert missing.stderr == "paictl: error: job 'jobretry' has no job attempt 5; its attempts: 0, 1\n"


def test_exit_spec_replaces_the_rules(tmp_path):
    rules = (ROOT / "compiler" / "exit_rules.yaml").read_text()
    assert "'(?i)syntaxerror: invalid syntax'" in rules
    spec = tmp_path / "rules.yaml"
    spec.write_text(rules.replace("'(?i)syntaxerror: invalid syntax'", "'never matches this'"))
    result = paictl("submit", str(EXAMPLES / "local-syntax-error-without-gang.yaml"), "-t", "local", "-f", "--format", "json",
                    "--exit-spec", str(spec), cwd=tmp_path, check_code=1)
    view = last_json(result.stdout)
    # Unrecognised now: 255, RETRY_TO_MAX, so taskRetryCount 3 is used up; then jobRetryCount 2.
    assert view["completion_code"] == 255 and view["tasks"][0]["attempt"] == 3 and view["attempt"] == 2


# -- signals and stop -----------------------------------------------------------------------------------------------

SLEEPER = ["trap 'echo got TERM; exit 143' TERM", "sleep 300 & sleep 300 & wait"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_every_task_and_exits_130(tmp_path, signum):
    job = job_file(tmp_path, "sleeper", SLEEPER, instances=2)
    cli = start("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    run = wait_running(tmp_path, "sleeper", 2)
    wait_for(lambda: len(run_processes(run["run_id"])) == 6, "two shells, each with two sleeps")
    cli.send_signal(signum)
    assert cli.wait(TIMEOUT) == 130, cli.communicate()
    assert run_processes(run["run_id"]) == []
    view = state(tmp_path, "sleeper")["view"]
    assert view["state"] == "stopped" and {t["exit_code"] for t in view["tasks"]} == {143}
    assert "got TERM" in log(tmp_path, "sleeper", "work-1")


def test_killing_the_cli_leaves_no_task(tmp_path):
    job = job_file(tmp_path, "orphans", SLEEPER, instances=2)
    cli = start("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    run = wait_running(tmp_path, "orphans", 2)
    assert run_processes(run["run_id"])
    cli.kill()  # SIGKILL: no handler runs; the watchdog sees its pipe close
    cli.wait(TIMEOUT)
    wait_for(lambda: run_processes(run["run_id"]) == [], "the watchdog to kill every task", timeout=10)
    status = paictl("status", "orphans", cwd=tmp_path, check_code=0)
    assert "orphans: stopped (attempt 0): abandoned" in status.stdout
    assert "work-0  killed" in status.stdout


# -- the runner's session: a followed run works in a session of its own (cli/own_session.py) -------------------

def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: state, ppid, pgrp, session, ..."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()


def test_a_followed_run_works_in_a_session_of_its_own(tmp_path):
    """The CLI stays in its caller's session and process group (the terminal's job, which Ctrl-C reaches); the
    runner is its child and leads a session of its own, as the detached supervisor does."""
    import os

    job = job_file(tmp_path, "session", ["cat /proc/$PPID/stat > runner.stat"])
    cli = start("submit", str(job), "--target", "local", "--follow", "--runtime", "host", cwd=tmp_path)
    assert cli.wait(TIMEOUT) == 0, cli.communicate()
    text = (tmp_path / "runner.stat").read_text()
    runner = int(text.split()[0])
    _, ppid, pgrp, session = text[text.rindex(")") + 2:].split()[:4]
    assert runner != cli.pid and int(ppid) == cli.pid
    assert int(session) == runner == int(pgrp)
    assert os.getsid(0) != runner
    assert state(tmp_path, "session")["owner"]["pid"] == runner


def test_ctrl_z_stops_the_runner_with_the_cli_and_fg_resumes_both(tmp_path):
    import os

    job = job_file(tmp_path, "pausing", ["sleep 2", "echo finished"])
    # its own process group, whose parent (this test) is in another: Ctrl-Z's stop is not discarded as it is for
    # an orphaned process group
    cli = subprocess.Popen([sys.executable, "-m", "paictl", "submit", str(job), "--target", "local", "--follow",
                            "--runtime", "host"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, process_group=0)
    STARTED.append(cli)
    run = wait_running(tmp_path, "pausing", 1)
    runner = run["owner"]["pid"]
    os.killpg(cli.pid, signal.SIGTSTP)  # what the terminal sends its foreground job on Ctrl-Z
    wait_for(lambda: stat_fields(cli.pid)[0] == "T" and stat_fields(runner)[0] == "T", "the CLI and the runner "
             "to stop")
    os.killpg(cli.pid, signal.SIGCONT)  # `fg`
    assert cli.wait(TIMEOUT) == 0, cli.communicate()
    assert "finished" in log(tmp_path, "pausing", "work-0")


def test_killing_the_runner_is_reported_by_the_cli_and_leaves_no_task(tmp_path):
    import os

    job = job_file(tmp_path, "runnerless", SLEEPER, instances=2)
    cli = start("submit", str(job), "--target", "local", "--follow", "--runtime", "host", cwd=tmp_path)
    run = wait_running(tmp_path, "runnerless", 2)
    os.kill(run["owner"]["pid"], signal.SIGKILL)
    assert cli.wait(TIMEOUT) == 128 + signal.SIGKILL
    _, err = cli.communicate()
    assert "paictl: the run's process ended by signal 9 (SIGKILL); its watchdog stops every task left" in err
    wait_for(lambda: run_processes(run["run_id"]) == [], "the watchdog to kill every task", timeout=10)


@pytest.mark.parametrize("follow", [True, False], ids=["followed", "detached"])
def test_a_failed_task_reads_as_failed_when_paictl_inherits_sigchld_ignored(tmp_path, follow):
    """A parent that ignores SIGCHLD passes that on across exec; the kernel then reaps children at once and no exit
    status can be read (Popen reports 0). paictl restores the default: the task's exit 3 is still a failure."""
    job = job_file(tmp_path, "ignored", ["exit 3"])
    result = subprocess.run([sys.executable, "-m", "paictl", "submit", str(job), "--target", "local",
                             *(["--follow"] if follow else [])], cwd=tmp_path, capture_output=True, text=True,
                            timeout=TIMEOUT, preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert result.returncode == (1 if follow else 0), result.stderr
    view = wait_for(lambda: (v := state(tmp_path, "ignored")["view"])["state"] == "failed" and v, "the verdict")
    assert view["tasks"][0]["exit_code"] == 3


def test_a_task_starts_with_no_signal_blocked_or_ignored_whatever_paictl_inherited(tmp_path):
    """As a container's first process: a parent that blocks SIGTERM (so `paictl stop` could not reach the task's
    trap) or ignores SIGINT and SIGQUIT (a script's background job) passes that on to paictl, not to its tasks."""
    job = job_file(tmp_path, "signals", ["grep -E '^Sig(Blk|Ign):' /proc/self/status"])

    def inherited() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGUSR1])
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    subprocess.run([sys.executable, "-m", "paictl", "submit", str(job), "--target", "local", "--follow"],
                   cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=inherited, check=True)
    fields = dict(line.split(":\t") for line in log(tmp_path, "signals", "work-0").splitlines() if line.startswith("Sig"))
    assert int(fields["SigBlk"], 16) == 0, fields
    # glibc's posix_spawn sets its own two internal signals (32, 33) to SIG_IGN in every child it spawns; the program
    # the task execs installs its own handlers for them, and no user signal is among them
    assert int(fields["SigIgn"], 16) & ~(1 << 31 | 1 << 32) == 0, fields


def test_sigint_inherited_ignored_stays_ignored_and_sigterm_still_stops(tmp_path):
    """A script's background job (`paictl submit ... --follow &`) ignores SIGINT, so that Ctrl-C at the terminal
    stops the script, not it: paictl keeps that, as Python does. SIGTERM still stops the run (130)."""
    job = job_file(tmp_path, "background", SLEEPER)
    cli = subprocess.Popen([sys.executable, "-m", "paictl", "submit", str(job), "--target", "local", "--follow"],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    STARTED.append(cli)
    run = wait_running(tmp_path, "background", 1)
    cli.send_signal(signal.SIGINT)
    time.sleep(1)
    assert cli.poll() is None and state(tmp_path, "background")["view"]["state"] == "running"
    cli.send_signal(signal.SIGTERM)
    assert cli.wait(TIMEOUT) == 130, cli.communicate()
    assert run_processes(run["run_id"]) == []


def test_the_cli_in_process_runs_the_job_itself(tmp_path, capsys):
    """Where the streams are not the process's own descriptors (a test runner's capture, typer's CliRunner), there
    is no second process to write them: the command does the work itself."""
    from paictl.cli.own_session import can_fork, run_in_own_session

    assert not can_fork()
    assert run_in_own_session(lambda: 7, say=print) == 7


def test_no_process_to_spare_the_cli_runs_the_job_itself(monkeypatch):
    import os

    from paictl.cli import own_session

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(own_session, "can_fork", lambda: True)
    monkeypatch.setattr(os, "fork", refused)
    assert own_session.run_in_own_session(lambda: 7, say=print) == 7


def test_detached_run_status_logs_and_stop_from_other_commands(tmp_path):
    job = job_file(tmp_path, "detached", ["echo ready $PAI_TASK_INDEX", *SLEEPER], instances=2)
    submitted = paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=0)
    assert "detached: started (supervisor pid" in submitted.stdout
    run = wait_running(tmp_path, "detached", 2)
    status = paictl("status", "detached", "--format", "json", cwd=tmp_path, check_code=0)
    assert json.loads(status.stdout)["state"] == "running"
    wait_for(lambda: "ready 1" in log(tmp_path, "detached", "work-1"), "the task's output")
    logs = paictl("logs", "detached", cwd=tmp_path, check_code=0).stdout
    assert "[work-0] ready 0" in logs and "[work-1] ready 1" in logs
    one = paictl("logs", "detached", "work", "1", cwd=tmp_path, check_code=0).stdout
    assert "ready 1" in one and "[work-1]" not in one and "ready 0" not in one
    assert "no task role 'nope'" in paictl("logs", "detached", "nope", cwd=tmp_path, check_code=2).stderr
    assert "instances 0 to 1, not 5" in paictl("logs", "detached", "work", "5", cwd=tmp_path, check_code=2).stderr
    # A running name cannot be submitted twice.
    again = paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=3)
    assert "already running locally" in again.stderr
    stopped = paictl("stop", "detached", cwd=tmp_path, check_code=0)
    assert "detached: stopped: stopped by `paictl stop`" in stopped.stdout
    assert run_processes(run["run_id"]) == []
    assert paictl("status", "detached", "--follow", cwd=tmp_path).returncode == 4
    # Once finished, the name can be used again: the old run folder is replaced.
    quick = job_file(tmp_path, "detached", ["echo second run"])
    paictl("submit", str(quick), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert "second run" in log(tmp_path, "detached", "work-0")


def test_stop_from_another_terminal_ends_follow_with_4(tmp_path):
    job = job_file(tmp_path, "followed", SLEEPER)
    cli = start("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    run = wait_running(tmp_path, "followed", 1)
    paictl("stop", "followed", "--format", "json", cwd=tmp_path, check_code=0)
    assert cli.wait(TIMEOUT) == 4
    assert "followed: stopped (attempt 0), code -210: stopped by `paictl stop`" in cli.stdout.read()
    assert run_processes(run["run_id"]) == []


def test_unknown_run_is_not_found(tmp_path):
    result = paictl("status", "nothing", "--target", "local", cwd=tmp_path, check_code=3)
    assert "no local run named 'nothing'" in result.stderr
    paictl("logs", "../etc", "--target", "local", cwd=tmp_path, check_code=3)


# -- secrets --------------------------------------------------------------------------------------------------------

SECRET = "canary-Secret-9d1e"


def test_no_secret_in_plan_status_or_paictl_log_lines(tmp_path):
    import hashlib

    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    commands = [f"""[ "$(printf %s '<% $secrets.token %>' | sha256sum | cut -c1-64)" = {digest} ]""",
                "echo secret matches", "sleep 300"]
    job = job_file(tmp_path, "secretive", commands, extra=f"secrets: {{token: {SECRET}}}\n")
    outputs = [paictl("compile", str(job), "--target", "local", "--format", "json", cwd=tmp_path, check_code=0)]
    outputs.append(paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=0))
    run = wait_running(tmp_path, "secretive", 1)
    wait_for(lambda: "secret matches" in log(tmp_path, "secretive", "work-0"), "the secret to be resolved")
    for pid in run_processes(run["run_id"]):  # not on any command line (ps shows those to every user)
        assert SECRET.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    for args in (["status", "secretive"], ["status", "secretive", "--format", "json"], ["logs", "secretive"],
                 ["stop", "secretive"], ["status", "secretive", "--follow"]):
        outputs.append(paictl(*args, cwd=tmp_path))
    for result in outputs:
        assert SECRET not in result.stdout + result.stderr
    for path in (tmp_path / ".paictl").rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_killing_the_detached_supervisor_leaves_no_task(tmp_path):
    import os

    job = job_file(tmp_path, "headless", SLEEPER, instances=2)
    paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=0)
    run = wait_running(tmp_path, "headless", 2)
    os.kill(run["owner"]["pid"], signal.SIGKILL)
    wait_for(lambda: run_processes(run["run_id"]) == [], "the watchdog to kill every task", timeout=10)
    assert "abandoned" in paictl("status", "headless", cwd=tmp_path, check_code=0).stdout


def test_the_failure_excerpt_reads_only_the_end_of_a_huge_log(tmp_path):
    """A task that wrote gigabytes: the verdict's last lines come from the log's end, read under an address-space
    limit the whole log would break (the excerpt read it all, holding the verdict back and the memory up)."""
    folder = tmp_path / "runs" / "big"
    (folder / "0").mkdir(parents=True)
    (folder / "plan.json").write_text("{}")
    with open(folder / "0" / "w-0.log", "wb") as log:
        log.truncate(3 << 30)  # sparse: no disk used
        log.seek(0, 2)
        log.write(b"x" * 70_000 + b"\n" + b"".join(b"line %d\n" % n for n in range(20)))
    script = f"""
import resource
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from paictl.targets.backend import BackendOptions
from paictl.targets.local.backend import LocalBackend
from paictl.targets.states import JobState, JobView
view = JobView(name="big", state=JobState.FAILED, triggered_by=("w", 0))
print("\\n".join(LocalBackend(BackendOptions(run_dir={str(tmp_path / "runs")!r})).failure_excerpt(view).lines))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [f"line {n}" for n in range(10, 20)]


FC_VARIABLES = ("FC_FRAMEWORK_NAMESPACE", "FC_FRAMEWORK_NAME", "FC_TASKROLE_NAME", "FC_TASK_INDEX", "FC_CONFIGMAP_NAME",
                "FC_POD_NAME", "FC_FRAMEWORK_UID", "FC_FRAMEWORK_ATTEMPT_ID", "FC_FRAMEWORK_ATTEMPT_INSTANCE_UID",
                "FC_CONFIGMAP_UID", "FC_TASKROLE_UID", "FC_TASK_UID", "FC_TASK_ATTEMPT_ID", "FC_POD_UID",
                "FC_TASK_ATTEMPT_INSTANCE_UID")


def test_every_frameworkcontroller_variable_is_set_and_renewed_as_its_object_is(tmp_path):
    """FrameworkController prepends all fifteen FC_* variables to every container (frameworkcontroller.md g): a
    command that reads $FC_POD_NAME or $FC_TASK_UID under nounset failed locally with "unbound variable". The UIDs
    are renewed as their objects are: the pod's every task attempt, the task's and the attempt ConfigMap's every
    job attempt, the Framework's never."""
    line = "echo FC " + " ".join(f"{name}=${name}" for name in FC_VARIABLES)
    # Every task fails its first attempt; job attempt 0 fails once work-1 has run its second (work-0's second fails).
    job = job_file(tmp_path, "fcvars", [
        line, '[ "$FC_TASK_ATTEMPT_ID" = 1 ]',
        '[ "$FC_FRAMEWORK_ATTEMPT_ID" = 1 ] || [ "$PAI_TASK_INDEX" = 0 ] || touch second-done',
        '[ "$FC_FRAMEWORK_ATTEMPT_ID" = 1 ] || [ "$PAI_TASK_INDEX" = 1 ] || '
        '{ until [ -e second-done ]; do sleep 0.05; done; exit 1; }'],
        instances=2, extra="jobRetryCount: 1\nextras: {gangAllocation: false}\n").read_text()
    (tmp_path / "fcvars.yaml").write_text(job.replace("    commands:", "    taskRetryCount: 1\n    commands:"))
    paictl("submit", str(tmp_path / "fcvars.yaml"), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    seen = {}  # (job attempt, index, task attempt) -> variables
    for attempt in (0, 1):
        for index in (0, 1):
            for text in log(tmp_path, "fcvars", f"work-{index}", attempt).splitlines():
                if text.startswith("FC "):
                    env = dict(item.split("=", 1) for item in text[3:].split(" "))
                    seen[(attempt, index, int(env["FC_TASK_ATTEMPT_ID"]))] = env
    assert sorted(seen) == [(a, i, t) for a in (0, 1) for i in (0, 1) for t in (0, 1)]
    for (attempt, index, task_attempt), env in seen.items():
        assert all(env[name] for name in FC_VARIABLES), env
        framework = env["FC_FRAMEWORK_NAME"]
        assert env["FC_FRAMEWORK_NAMESPACE"] == "default" and env["FC_CONFIGMAP_NAME"] == f"{framework}-attempt"
        assert env["FC_POD_NAME"] == f"{framework}-work-{index}"
        assert env["FC_FRAMEWORK_ATTEMPT_INSTANCE_UID"] == f"{attempt}_{env['FC_CONFIGMAP_UID']}"
        assert env["FC_TASK_ATTEMPT_INSTANCE_UID"] == f"{task_attempt}_{env['FC_POD_UID']}"

    def distinct(name: str, key) -> int:
        return len({tuple(key(k)) + (v[name],) for k, v in seen.items()})

    assert distinct("FC_FRAMEWORK_UID", lambda k: ()) == 1
    assert distinct("FC_CONFIGMAP_UID", lambda k: k[:1]) == 2 == len({v["FC_CONFIGMAP_UID"] for v in seen.values()})
    assert distinct("FC_TASKROLE_UID", lambda k: k[:1]) == 2
    assert distinct("FC_TASK_UID", lambda k: k[:2]) == 4 == len({v["FC_TASK_UID"] for v in seen.values()})
    assert len({v["FC_POD_UID"] for v in seen.values()}) == 8
