"""Jobs on the OpenPAI double (tests/openpai_server, held to the real server's recordings): submit, follow through
the states the server derives from what FrameworkController writes, stop, logs through pylon and the log-manager.

FrameworkController's moves are the double's `fc_*` methods: made by the test itself, or scripted so that each of
the follower's reads of the job sees the next state (the double's scripted clock), which a fast or a loaded machine
sees alike."""

from __future__ import annotations

import json
import threading
import time

from openpai_server.jobs import Step


def in_a_while(pai_user, *moves, pause: float = 1.0) -> threading.Thread:
    """FrameworkController's moves, made one per `pause` seconds in the background while the CLI runs."""
    def run():
        for move in moves:
            time.sleep(pause)
            with pai_user.server.lock:
                move()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_submit_and_follow_through_every_state_to_success(pai_user):
    job = pai_user.name("ok")
    path = pai_user.write_job(job)
    pai_user.server.scenarios[job] = [
        Step(None, 2),                                                   # no attempt yet: WAITING
        Step(lambda j: j.fc_prepare(), 2),                               # AttemptPreparing: WAITING
        Step(lambda j: j.fc_run("worker", 0, log="epoch 1\nepoch 2\n"), 2),  # one task runs: RUNNING
        Step(lambda j: j.fc_run(), 2),                                   # both run
        Step(lambda j: j.fc_succeed())]
    result = pai_user.paictl("submit", str(path), "--target", "openpai", "--cluster", "lab", "--follow")
    assert result.returncode == 0, result.stderr + result.stdout
    out = result.stdout
    assert f"job alice~{job} submitted to OpenPAI lab ({pai_user.server.api_url}), virtual cluster default" in out
    assert f"{job}: pending (attempt 0)" in out
    assert f"{job}: running (attempt 0): AttemptRunning" in out
    assert f"{job}: succeeded (attempt 0)" in out
    assert out.index("pending") < out.index("running") < out.index("succeeded")
    assert pai_user.token not in result.stdout + result.stderr


def test_a_failure_is_diagnosed_with_the_last_lines_of_the_failed_task(pai_user):
    job = pai_user.name("bad")
    path = pai_user.write_job(job)
    log = "starting\n  File \"train.py\", line 3\nSyntaxError: invalid syntax\n"

    def start(j):
        j.fc_run("worker", 0, log=log)
        j.fc_run("worker", 1, log="fine\n")

    pai_user.server.scenarios[job] = [Step(start, 2), Step(lambda j: j.fc_fail("worker", 0, 231))]
    result = pai_user.paictl("submit", str(path), "--target", "openpai", "--cluster", "lab", "--follow")
    assert result.returncode == 1, result.stderr + result.stdout
    out = result.stdout
    assert f"{job}: failed (attempt 0), code 231, decided by worker-0: 231 ContainerSyntaxError" in out
    # the server calls a task ended by the attempt's completion (-220) STOPPED, not FAILED
    assert "worker-1  STOPPED  attempt 0  on node1  exit -220  -220 FrameworkAttemptCompletion" in out
    assert "last lines of worker-0" in out
    assert "SyntaxError: invalid syntax" in out
    assert pai_user.token not in out + result.stderr


def test_stop_asks_the_server_and_the_job_ends_stopped(pai_user):
    job = pai_user.name("long")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    with pai_user.server.lock:
        pai_user.job(job).fc_run()
    stopped = pai_user.paictl("stop", job, "--target", "openpai")
    assert stopped.returncode == 0, stopped.stderr
    assert f"job alice~{job}: stop requested" in stopped.stdout
    double = pai_user.job(job)
    assert double.execution_type == "STOP"
    with pai_user.server.lock:  # FrameworkController's answer to executionType Stop
        double.fc_stop()
        double.fc_finish()
    status = pai_user.paictl("status", job, "--target", "openpai", "-o", "json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout.splitlines()[-1])["state"] == "stopped"
    again = pai_user.paictl("stop", job, "--target", "openpai")
    assert again.returncode == 0 and "already stopped" in again.stdout


def test_logs_all_one_task_follow_and_an_earlier_attempt(pai_user):
    job = pai_user.name("logs")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    double = pai_user.job(job)
    with pai_user.server.lock:  # attempt 0 fails, the Framework retries (attempt 1), whose logs differ
        double.fc_run("worker", 0, log="first try 0\n")
        double.fc_run("worker", 1, log="first try 1\n")
        double.fc_fail("worker", 0, 137, retry=True)
        double.fc_run("worker", 0, log="second try 0\n")
        double.fc_run("worker", 1, log="second try 1\n")

    everything = pai_user.paictl("logs", job, "--target", "openpai")
    assert everything.returncode == 0, everything.stderr
    assert "second try 0" in everything.stdout and "second try 1" in everything.stdout
    assert "first try" not in everything.stdout

    one = pai_user.paictl("logs", job, "worker", "1", "--target", "openpai")
    assert one.returncode == 0, one.stderr
    assert "second try 1" in one.stdout and "second try 0" not in one.stdout

    earlier = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai", "--attempt", "0")
    assert earlier.returncode == 0, earlier.stderr
    assert "first try 0" in earlier.stdout and "second try" not in earlier.stdout

    background = in_a_while(pai_user, lambda: double.write_log("worker", 0, "third line\n"), double.fc_succeed)
    followed = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai", "--follow")
    background.join(30)
    assert followed.returncode == 0, followed.stderr
    lines = [line for line in followed.stdout.splitlines() if "try" in line or "third" in line]
    assert len(lines) == 2 and "second try 0" in lines[0] and "third line" in lines[1]
    for result in (everything, one, earlier, followed):
        assert pai_user.token not in result.stdout + result.stderr
        assert "token=" not in result.stdout + result.stderr


def test_the_rest_token_goes_only_to_the_rest_server(pai_user):
    server = pai_user.server
    job = pai_user.name("confined")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    with server.lock:
        pai_user.job(job).fc_run("worker", 0, log="hello\n")
    seen_pylon, seen_logs = len(server.pylon.requests), len(server.log_manager.requests)
    result = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai")
    assert result.returncode == 0 and "hello" in result.stdout, result.stderr
    through = server.pylon.requests[seen_pylon:]
    log_requests = [r for r in through if r[1].startswith("/log-manager/")]
    rest_requests = [r for r in through if r[1].startswith("/rest-server/")]
    assert log_requests and rest_requests
    assert all(r[2].get("Authorization") == f"Bearer {pai_user.token}" for r in rest_requests)
    assert not any("Authorization" in r[2] or pai_user.token in json.dumps(r) for r in log_requests)
    assert not any("Authorization" in r[2] for r in server.log_manager.requests[seen_logs:] if r[0] == "GET"
                   and "token=" in r[1] and "username=alice" in r[1])


def test_a_direct_rest_address_reaches_the_log_manager_as_pylon_would(pai_user):
    """An alias naming the REST server itself (no proxy in front): paictl routes /log-manager/HOST:PORT/ itself."""
    from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

    server = pai_user.server
    save_clusters({"lab": ClusterEntry(alias="lab", url=server.url, user="alice",
                                       token_env="PAICTL_TEST_OPENPAI_TOKEN", min_poll_interval=0.05)},
                  pai_user.clusters_file)
    job = pai_user.name("direct")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    with server.lock:
        pai_user.job(job).fc_run("worker", 0, log="straight\n")
    seen, seen_pylon = len(server.log_manager.requests), len(server.pylon.requests)
    result = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai")
    assert result.returncode == 0 and "straight" in result.stdout, result.stderr
    assert len(server.log_manager.requests) > seen and len(server.pylon.requests) == seen_pylon
    assert not any("Authorization" in headers for _, _, headers in server.log_manager.requests[seen:])


def test_follow_through_a_retry_and_a_stop(pai_user):
    """The states the other follows do not reach: a retried job restarting, then stopping and stopped (exit 4)."""
    job = pai_user.name("retry")
    path = pai_user.write_job(job)
    pai_user.server.scenarios[job] = [
        Step(lambda j: j.fc_run(), 2),
        Step(lambda j: j.fc_fail("worker", 0, 137, retry=True), 2),     # attempt 1 waits: restarting
        Step(lambda j: j.fc_run(), 2),
        Step(lambda j: j.request_stop())]                               # STOP: stopping for two reads, then stopped
    result = pai_user.paictl("submit", str(path), "--target", "openpai", "--follow")
    assert result.returncode == 4, result.stderr + result.stdout
    out = result.stdout
    steps = [f"{job}: running (attempt 0)", f"{job}: restarting (attempt 1): retry 1", f"{job}: running (attempt 1)",
             f"{job}: stopping (attempt 1)", f"{job}: stopped (attempt 1), code -210"]
    positions = [out.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), out


def test_logs_of_tasks_not_started_yet_say_so_and_follow_waits_for_them(pai_user):
    """Before a task's container starts, the server cannot list its logs (500 "Failed to get log list", as recorded
    for a job with no pod yet): paictl says "no log yet" for it without asking, and a follower shows its lines once
    it runs."""
    job = pai_user.name("early")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    double = pai_user.job(job)
    with pai_user.server.lock:
        double.fc_prepare()
    early = pai_user.paictl("logs", job, "--target", "openpai")
    assert early.returncode == 0, early.stderr
    assert early.stderr.count("no log yet") == 2
    assert not [r for r in pai_user.server.requests if r.path.endswith("/logs")]
    with pai_user.server.lock:  # from now on: two more reads preparing, two running, then succeeded
        double.script = [Step(None, 2), Step(lambda j: j.fc_run("worker", 0, log="at last\n"), 2),
                         Step(lambda j: j.fc_succeed())]
        double.reads_in_step = 0
    followed = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai", "--follow")
    assert followed.returncode == 0, followed.stderr
    assert "no log yet" in followed.stderr and "at last" in followed.stdout


def test_following_one_task_s_log_through_a_retry(pai_user):
    """While the retried attempt waits to be created its tasks do not exist yet (`taskStatuses: []`, as recorded):
    the follower waits for them instead of calling the task unknown, then shows the new attempt's lines."""
    job = pai_user.name("relog")
    pai_user.server.scenarios[job] = [
        Step(lambda j: j.fc_run(log="first attempt\n"), 3),
        Step(lambda j: j.fc_fail("worker", 0, 137, retry=True), 3),
        Step(lambda j: j.fc_run(log="second attempt\n"), 3),
        Step(lambda j: j.fc_succeed())]
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    followed = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai", "--follow")
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.index("first attempt") < followed.stdout.index("second attempt"), followed.stdout + followed.stderr


def test_a_name_is_one_path_segment_whatever_its_characters(pai_user):
    """`/`, `?`, `#`, `%` and spaces in a name (or in the user part of `user~job`) are escaped into the one path
    segment the server's route decodes: the answer is about that job (NoJobError naming it), not another route."""
    from paictl.errors import NotFoundError

    backend = pai_user.backend()
    for name, full in (("a/b", "alice~a/b"), ("x?y#z", "alice~x?y#z"), ("50%2F", "alice~50%2F"),
                       ("b o/b~j", "b o/b~j")):
        try:
            backend.describe(name)
        except NotFoundError as error:
            assert str(error).endswith(f"HTTP 404 NoJobError: Job {full} is not found."), error
        else:
            raise AssertionError(f"{name} was found")
    sent = [r.path for r in pai_user.server.requests if r.path.startswith("/api/v2/jobs/")]
    assert sent == ["/api/v2/jobs/alice~a%2Fb", "/api/v2/jobs/alice~x%3Fy%23z", "/api/v2/jobs/alice~50%252F",
                    "/api/v2/jobs/b%20o%2Fb~j"]
