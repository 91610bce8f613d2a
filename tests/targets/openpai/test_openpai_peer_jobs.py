"""Jobs on the unchanged OpenPAI REST server (tests/openpai_peer): submit, follow through the states the server
derives from Framework status as FrameworkController writes it, stop, logs through pylon and the log-manager."""

from __future__ import annotations

import json
import time

from openpai_peer.frameworks import ATTEMPT_COMPLETION



def wait_state(stack, user: str, job: str, state: str, timeout: float = 30, attempt=None) -> dict:
    """Until the REST server says `state` (the watcher → write-merger → database path takes a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = stack.rest("GET", f"/api/v2/jobs/{user}~{job}", user=user)
        if reply.status_code == 200:
            status = reply.json()["jobStatus"]
            if status["state"] == state and (attempt is None or status["attemptId"] == attempt):
                return reply.json()
        if time.monotonic() > deadline:
            raise AssertionError(f"{user}~{job} never reached {state}: {reply.status_code} {reply.text[:300]}")
        time.sleep(0.05)


def settle(stack, user, job, state, attempt=None) -> dict:
    """The server shows `state`, and a follower polling every 50 ms (backing off while unchanged) has seen it."""
    detail = wait_state(stack, user, job, state, attempt=attempt)
    time.sleep(0.8)
    return detail


def test_submit_and_follow_through_every_state_to_success(pai_user):
    stack, fc = pai_user.stack, pai_user.stack.fc
    job = pai_user.name("ok")
    path = pai_user.write_job(job)
    fw = pai_user.framework(job)

    def controller():
        fc.wait_created(fw)
        fc.create_attempt(fw)
        settle(stack, "alice", job, "WAITING")
        fc.framework_state(fw, "AttemptPreparing")
        fc.task_state(fw, "AttemptPreparing")
        fc.task_state(fw, "AttemptRunning", index=0)
        obj = fc.framework_state(fw, "AttemptRunning")
        fc.write_log(obj, "worker", 0, "epoch 1\nepoch 2\n", user="alice")
        settle(stack, "alice", job, "RUNNING")
        fc.task_state(fw, "AttemptRunning", index=1)
        settle(stack, "alice", job, "RUNNING")
        return fc.succeed(fw)

    background = pai_user.in_background(controller)
    result = pai_user.paictl("submit", str(path), "--target", "openpai", "--cluster", "lab", "--follow")
    background.result()
    assert result.returncode == 0, result.stderr + result.stdout
    out = result.stdout
    assert f"job alice~{job} submitted to OpenPAI lab ({pai_user.server.api_url}), virtual cluster default" in out
    assert f"{job}: pending (attempt 0)" in out
    assert f"{job}: running (attempt 0): AttemptRunning" in out
    assert f"{job}: succeeded (attempt 0)" in out
    assert out.index("pending") < out.index("running") < out.index("succeeded")
    assert pai_user.token not in result.stdout + result.stderr


def test_a_failure_is_diagnosed_with_the_last_lines_of_the_failed_task(pai_user):
    stack, fc = pai_user.stack, pai_user.stack.fc
    job = pai_user.name("bad")
    path = pai_user.write_job(job)
    fw = pai_user.framework(job)
    log = "starting\n  File \"train.py\", line 3\nSyntaxError: invalid syntax\n"

    def controller():
        fc.start(fw, logs={("worker", 0): log, ("worker", 1): "fine\n"}, user="alice")
        settle(stack, "alice", job, "RUNNING")
        return fc.fail(fw, "worker", 0, 231, "ContainerSyntaxError")

    background = pai_user.in_background(controller)
    result = pai_user.paictl("submit", str(path), "--target", "openpai", "--cluster", "lab", "--follow")
    background.result()
    assert result.returncode == 1, result.stderr + result.stdout
    out = result.stdout
    assert f"{job}: failed (attempt 0), code 231, decided by worker-0: 231 ContainerSyntaxError" in out
    # the server calls a task ended by the attempt's completion (-220) STOPPED, not FAILED
    assert "worker-1  STOPPED  attempt 0  on node-0  exit -220  -220 FrameworkAttemptCompletion" in out
    assert "last lines of worker-0" in out
    assert "SyntaxError: invalid syntax" in out
    assert pai_user.token not in out + result.stderr


def test_stop_asks_the_server_and_the_job_ends_stopped(pai_user):
    stack, fc = pai_user.stack, pai_user.stack.fc
    job = pai_user.name("long")
    path = pai_user.write_job(job)
    fw = pai_user.framework(job)
    assert pai_user.paictl("submit", str(path), "--target", "openpai").returncode == 0
    fc.start(fw, user="alice")
    wait_state(stack, "alice", job, "RUNNING")
    background = pai_user.in_background(lambda: fc.stop_when_asked(fw))
    stopped = pai_user.paictl("stop", job, "--target", "openpai")
    assert stopped.returncode == 0, stopped.stderr
    assert f"job alice~{job}: stop requested" in stopped.stdout
    background.result()
    wait_state(stack, "alice", job, "STOPPED")
    status = pai_user.paictl("status", job, "--target", "openpai", "-o", "json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout.splitlines()[-1])["state"] == "stopped"
    again = pai_user.paictl("stop", job, "--target", "openpai")
    assert again.returncode == 0 and "already stopped" in again.stdout


def test_logs_all_one_task_follow_and_an_earlier_attempt(pai_user):
    stack, fc = pai_user.stack, pai_user.stack.fc
    job = pai_user.name("logs")
    path = pai_user.write_job(job)
    fw = pai_user.framework(job)
    assert pai_user.paictl("submit", str(path), "--target", "openpai").returncode == 0
    # attempt 0 fails, the Framework retries (attempt 1), whose logs differ
    obj = fc.start(fw, logs={("worker", 0): "first try 0\n", ("worker", 1): "first try 1\n"}, user="alice")
    fc.fail(fw, "worker", 0, 137, "ContainerSigKillReceived", final=False)
    fc.next_attempt(fw)
    obj = fc.start(fw, logs={("worker", 0): "second try 0\n", ("worker", 1): "second try 1\n"}, user="alice")
    wait_state(stack, "alice", job, "RUNNING", attempt=1)

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

    def more():
        time.sleep(1.0)
        fc.write_log(obj, "worker", 0, "third line\n", user="alice")
        time.sleep(1.0)
        fc.succeed(fw)

    background = pai_user.in_background(more)
    followed = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai", "--follow")
    background.result()
    assert followed.returncode == 0, followed.stderr
    lines = [line for line in followed.stdout.splitlines() if "try" in line or "third" in line]
    assert len(lines) == 2 and "second try 0" in lines[0] and "third line" in lines[1]
    for result in (everything, one, earlier, followed):
        assert pai_user.token not in result.stdout + result.stderr
        assert "token=" not in result.stdout + result.stderr


def test_the_rest_token_goes_only_to_the_rest_server(pai_user):
    stack, fc = pai_user.stack, pai_user.stack.fc
    job = pai_user.name("confined")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    fw = pai_user.framework(job)
    fc.start(fw, logs={("worker", 0): "hello\n"}, user="alice")
    wait_state(stack, "alice", job, "RUNNING")
    seen_pylon, seen_logs = len(pai_user.server.pylon.requests), len(stack.logs.requests)
    result = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai")
    assert result.returncode == 0 and "hello" in result.stdout, result.stderr
    through = pai_user.server.pylon.requests[seen_pylon:]
    log_requests = [r for r in through if r[1].startswith("/log-manager/")]
    rest_requests = [r for r in through if r[1].startswith("/rest-server/")]
    assert log_requests and rest_requests
    assert all(r[2].get("Authorization") == f"Bearer {pai_user.token}" for r in rest_requests)
    assert not any("Authorization" in r[2] or pai_user.token in json.dumps(r) for r in log_requests)
    assert not any("Authorization" in r[2] for r in stack.logs.requests[seen_logs:] if r[0] == "GET"
                   and "token=" in r[1] and "username=alice" in r[1])


def test_a_direct_rest_address_reaches_the_log_manager_as_pylon_would(pai_user):
    """An alias naming the REST server itself (no proxy in front): paictl routes /log-manager/HOST:PORT/ itself."""
    from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

    stack, fc = pai_user.stack, pai_user.stack.fc
    save_clusters({"lab": ClusterEntry(alias="lab", url=stack.rest_url, user="alice",
                                       token_env="PAICTL_TEST_OPENPAI_TOKEN", min_poll_interval=0.05)},
                  pai_user.clusters_file)
    job = pai_user.name("direct")
    assert pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai").returncode == 0
    fw = pai_user.framework(job)
    fc.start(fw, logs={("worker", 0): "straight\n"}, user="alice")
    wait_state(stack, "alice", job, "RUNNING")
    seen = len(stack.logs.requests)
    result = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai")
    assert result.returncode == 0 and "straight" in result.stdout, result.stderr
    assert not any("Authorization" in headers for _, _, headers in stack.logs.requests[seen:])


def test_follow_through_a_retry_and_a_stop(pai_user):
    """The states the other follows do not reach: a retried job restarting, then stopping and stopped (exit 4)."""
    stack, fc = pai_user.stack, pai_user.stack.fc
    job = pai_user.name("retry")
    path = pai_user.write_job(job)
    fw = pai_user.framework(job)

    def controller():
        fc.start(fw, user="alice")
        settle(stack, "alice", job, "RUNNING")
        fc.fail(fw, "worker", 0, 137, "ContainerSigKillReceived", final=False)
        fc.next_attempt(fw)
        settle(stack, "alice", job, "WAITING", attempt=1)
        fc.start(fw, user="alice")
        settle(stack, "alice", job, "RUNNING", attempt=1)
        assert stack.rest("PUT", f"/api/v2/jobs/alice~{job}/executionType", user="alice",
                          json={"value": "STOP"}).status_code == 202
        fc.wait(fw, lambda obj: obj["spec"].get("executionType") == "Stop")
        fc.complete_attempt(fw, -210, "StopFrameworkRequested", ["Permanent"],
                            diagnostics="User has requested to stop the Framework")
        settle(stack, "alice", job, "STOPPING")
        fc.complete_tasks(fw, *ATTEMPT_COMPLETION)
        return fc.finish(fw)

    background = pai_user.in_background(controller)
    result = pai_user.paictl("submit", str(path), "--target", "openpai", "--follow")
    background.result()
    assert result.returncode == 4, result.stderr + result.stdout
    out = result.stdout
    steps = [f"{job}: running (attempt 0)", f"{job}: restarting (attempt 1): retry 1", f"{job}: running (attempt 1)",
             f"{job}: stopping (attempt 1)", f"{job}: stopped (attempt 1), code -210"]
    positions = [out.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), out
