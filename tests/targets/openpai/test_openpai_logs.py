"""`paictl logs` on the OpenPAI double (REST server held to recordings/openpai; log-manager stand-in serving Range
as nginx does): every attempt readable (`--previous`, `--attempt`, `--task-attempt`), a log that is gone, streaming
raw bytes, and `--follow` through a rotation, a truncation and a job retry, checked line by line."""

from __future__ import annotations

import threading
import time

import pytest


def submitted(pai_user, base: str, **options) -> str:
    job = pai_user.name(base)
    result = pai_user.paictl("submit", str(pai_user.write_job(job, **options)), "--target", "openpai")
    assert result.returncode == 0, result.stderr
    return job


def lines_of(word: str, first: int, last: int) -> str:
    return "".join(f"{word} {n}\n" for n in range(first, last + 1))


def running_with_lines(pai_user, base: str, word: str, last: int):
    """A one-task job running, its log `WORD 1` to `WORD LAST`: (job, its double, the log-manager)."""
    job = submitted(pai_user, base, instances=1)
    double = pai_user.job(job)
    with pai_user.server.lock:
        double.fc_run("worker", 0, log=lines_of(word, 1, last))
    return job, double, pai_user.server.log_manager


def pod_of(double, role: str = "worker", index: int = 0) -> str:
    return next(t for t in double.attempt.tasks[role] if t.index == index).current.pod


def reads_of(manager) -> int:
    return sum(1 for _, path, _ in manager.requests if "/api/v1/logs/" in path)


def after_reads(manager, more: int, timeout: float = 30) -> None:
    """Wait until the follower has made `more` further requests for log text (it has polled since)."""
    target, deadline = reads_of(manager) + more, time.monotonic() + timeout
    while reads_of(manager) < target and time.monotonic() < deadline:
        time.sleep(0.01)


def follow_while(pai_user, job: str, moves):
    """`paictl logs JOB --follow` while `moves` (FrameworkController's, the task's) run in a thread; it succeeded."""
    thread = threading.Thread(target=moves, daemon=True)
    thread.start()
    followed = pai_user.paictl("logs", job, "--target", "openpai", "--follow", timeout=60)
    thread.join(30)
    assert followed.returncode == 0, followed.stderr
    return followed


def test_a_task_retried_inside_its_job_attempt_has_every_attempt_readable(pai_user):
    """taskRetryCount with gang off (examples/retry-without-gang.yaml; recordings/openpai task-retried.jsonl): the
    task's attempt 0 failed and attempt 1 runs, both in job attempt 0."""
    job = submitted(pai_user, "tretry", instances=1)
    double = pai_user.job(job)
    with pai_user.server.lock:
        double.fc_run("worker", 0, log="try zero\n")
        double.fc_retry_task("worker", 0, 1)
        double.write_log("worker", 0, "try one\n")

    latest = pai_user.paictl("logs", job, "--target", "openpai")
    assert latest.returncode == 0, latest.stderr
    assert latest.stdout.splitlines() == ["try one"]

    for args in (("-p",), ("--previous",), ("--task-attempt", "0"), ("--attempt", "0", "--task-attempt", "0")):
        earlier = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai", *args)
        assert earlier.returncode == 0, (args, earlier.stderr)
        assert earlier.stdout.splitlines() == ["try zero"], args
        assert "logs of attempt 0.0" in earlier.stderr

    explicit = pai_user.paictl("logs", job, "--target", "openpai", "--task-attempt", "1")
    assert explicit.returncode == 0 and explicit.stdout.splitlines() == ["try one"], explicit.stderr

    for args in (("-p", "--follow"), ("-p", "--task-attempt", "0"), ("--task-attempt", "0", "-f"),
                 ("--task-attempt", "-1")):
        refused = pai_user.paictl("logs", job, "--target", "openpai", *args)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and refused.stdout == "", args

    unknown = pai_user.paictl("logs", job, "--target", "openpai", "--task-attempt", "5")
    assert unknown.returncode == 3 and unknown.stdout == ""
    assert unknown.stderr.count("\n") == 1 and "no task attempt 5" in unknown.stderr, unknown.stderr


def test_previous_after_a_job_retry_is_the_previous_job_attempt(pai_user):
    job = submitted(pai_user, "jretry", instances=1)
    double = pai_user.job(job)
    with pai_user.server.lock:
        double.fc_run("worker", 0, log="attempt zero\n")
        double.fc_fail("worker", 0, 137, retry=True)
        double.fc_run("worker", 0, log="attempt one\n")
    previous = pai_user.paictl("logs", job, "-p", "--target", "openpai")
    assert previous.returncode == 0, previous.stderr
    assert previous.stdout.splitlines() == ["attempt zero"]
    assert "logs of attempt 0.0" in previous.stderr

    first = submitted(pai_user, "first", instances=1)
    with pai_user.server.lock:
        pai_user.job(first).fc_run("worker", 0, log="only\n")
    none = pai_user.paictl("logs", first, "-p", "--target", "openpai")
    assert none.returncode == 3 and none.stdout == ""
    assert none.stderr.count("\n") == 1 and "no previous attempt" in none.stderr, none.stderr
    no_attempt = pai_user.paictl("logs", first, "--attempt", "4", "--target", "openpai")
    assert no_attempt.returncode == 3 and "no job attempt 4" in no_attempt.stderr
    assert no_attempt.stderr.count("\n") == 1


def test_a_log_that_is_gone_says_so_in_one_line_and_fails(pai_user):
    job = submitted(pai_user, "gone", instances=1)
    double = pai_user.job(job)
    with pai_user.server.lock:
        double.fc_run("worker", 0, log="soon gone\n")
    folder = pai_user.server.log_manager.folder("alice", double.framework, "worker", pod_of(double))
    (folder / "user.pai.all").unlink()
    result = pai_user.paictl("logs", job, "worker", "0", "--target", "openpai")
    assert result.returncode == 3, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("logs of attempt")]
    assert len(errors) == 1 and "is gone" in errors[0] and "404" in errors[0], result.stderr
    assert pai_user.token not in result.stderr and "token=" not in result.stderr


def test_logs_are_raw_bytes_when_piped(pai_user):
    job = submitted(pai_user, "raw", instances=1)
    double = pai_user.job(job)
    raw = b"caf\xc3\xa9 \xff\xfe not utf-8\r\n\x1b[31mred\x1b[0m\n"
    with pai_user.server.lock:
        double.fc_run("worker", 0)
    folder = pai_user.server.log_manager.folder("alice", double.framework, "worker", pod_of(double))
    (folder / "user.pai.all").write_bytes(raw)
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "paictl", "logs", job, "--target", "openpai"],
                            capture_output=True, env=pai_user.env, cwd=pai_user.folder, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == raw.replace(b"\r\n", b"\n")


def test_follow_fetches_only_new_bytes_and_survives_rotation_truncation_and_a_retry(pai_user):
    """Numbered lines written while a follower runs; the log is rotated (lines written just before are read from
    `all.1`), then truncated, then the job is retried: every line shows exactly once, in order, with one note per
    replacement on standard error."""
    job = submitted(pai_user, "follow", instances=1)
    double = pai_user.job(job)
    manager = pai_user.server.log_manager
    with pai_user.server.lock:
        double.fc_run("worker", 0, log="".join(f"line {n}\n" for n in range(1, 51)))

    def numbered(first: int, last: int) -> str:
        return "".join(f"line {n}\n" for n in range(first, last + 1))

    def moves():  # each once the follower has polled since the last (its polls are the log-manager's requests;
        # a request is counted as it arrives, so the second one says the first, the whole log, was answered)
        after_reads(manager, 2)
        with pai_user.server.lock:
            double.write_log("worker", 0, numbered(51, 60))
            manager.rotate("alice", double.framework, "worker", pod_of(double))
            double.write_log("worker", 0, numbered(61, 80))
        after_reads(manager, 6)
        with pai_user.server.lock:
            manager.truncate("alice", double.framework, "worker", pod_of(double), text=numbered(81, 85))
        after_reads(manager, 6)
        with pai_user.server.lock:
            double.write_log("worker", 0, numbered(86, 90))
            double.fc_fail("worker", 0, 137, retry=True)
        time.sleep(0.2)
        with pai_user.server.lock:
            double.fc_run("worker", 0, log=numbered(91, 100))
        after_reads(manager, 4)
        with pai_user.server.lock:
            double.fc_succeed()

    followed = follow_while(pai_user, job, moves)
    assert followed.stdout.splitlines() == [f"line {n}" for n in range(1, 101)], followed.stderr
    assert followed.stderr.count("was replaced") == 2, followed.stderr
    assert "logs of attempt 1.0" in followed.stderr
    ranged = [headers.get("Range") for _, path, headers in manager.requests if "/api/v1/logs/" in path]
    assert any(value and value.startswith("bytes=") and not value.startswith("bytes=0-") for value in ranged)


def test_follow_of_a_growing_log_fetches_about_its_size(pai_user):
    """Each poll asks for the bytes past those shown (Range), plus the first 64 to see the file is the same."""
    job = submitted(pai_user, "grow", instances=1)
    double = pai_user.job(job)
    manager = pai_user.server.log_manager
    block = "".join(f"growing line {n:06d} {'x' * 60}\n" for n in range(2000))  # ~160 KB
    with pai_user.server.lock:
        double.fc_run("worker", 0, log=block)

    def grow():
        for _ in range(5):
            time.sleep(0.2)
            with pai_user.server.lock:
                double.write_log("worker", 0, block)
        with pai_user.server.lock:
            double.fc_succeed()

    before = manager.sent
    followed = follow_while(pai_user, job, grow)
    assert followed.stdout == block * 6
    assert manager.sent - before < 1.2 * len(block) * 6, (manager.sent - before, len(block) * 6)


@pytest.mark.parametrize("header, expected", [
    ("bytes=2-", (206, b"cdef", "bytes 2-5/6")), ("bytes=1-2", (206, b"bc", "bytes 1-2/6")),
    ("bytes=-2", (206, b"ef", "bytes 4-5/6")), ("bytes=6-", (416, b"", "bytes */6")),
    ("bytes=9-", (416, b"", "bytes */6")),
    ("bytes=3-1", (200, b"abcdef", None)), ("items=1-2", (200, b"abcdef", None))])
def test_the_log_manager_stand_in_serves_range_as_nginx(pai_user, header, expected):
    import httpx

    job = submitted(pai_user, "range", instances=1)
    double = pai_user.job(job)
    with pai_user.server.lock:
        double.fc_run("worker", 0)
    manager = pai_user.server.log_manager
    folder = manager.folder("alice", double.framework, "worker", pod_of(double))
    (folder / "user.pai.all").write_bytes(b"abcdef")
    query = (f"?username=alice&framework-name={double.framework}&pod-uid={pod_of(double)}&taskrole=worker"
             f"&token={manager.token()}")
    reply = httpx.get(f"http://127.0.0.1:{manager.port}/api/v1/logs/user.pai.all{query}",
                      headers={"Range": header})
    assert (reply.status_code, reply.content, reply.headers.get("Content-Range")) == expected
    assert reply.headers["Accept-Ranges"] == "bytes"


def test_follow_without_range_support_skips_what_was_shown(pai_user):
    """A log server that ignores Range (200, the whole file): the bytes already shown are skipped as they stream
    past, and a truncation is still noticed."""
    job = submitted(pai_user, "norange", instances=1)
    double = pai_user.job(job)
    manager = pai_user.server.log_manager
    manager.ranges = False
    with pai_user.server.lock:
        double.fc_run("worker", 0, log="".join(f"row {n}\n" for n in range(1, 21)))

    def moves():
        after_reads(manager, 2)
        with pai_user.server.lock:
            double.write_log("worker", 0, "".join(f"row {n}\n" for n in range(21, 31)))
        after_reads(manager, 3)
        with pai_user.server.lock:
            manager.truncate("alice", double.framework, "worker", pod_of(double),
                             text="".join(f"row {n}\n" for n in range(31, 36)))
        after_reads(manager, 3)
        with pai_user.server.lock:
            double.fc_succeed()

    followed = follow_while(pai_user, job, moves)
    assert followed.stdout.splitlines() == [f"row {n}" for n in range(1, 36)], followed.stderr
    assert followed.stderr.count("was replaced") == 1


def test_previous_job_attempt_without_job_history_says_why(hived_user):
    """JOB_HISTORY=false (the HiveD server of the recordings): the server keeps no earlier job attempt."""
    job = submitted(hived_user, "nohist", instances=1)
    double = hived_user.job(job)
    with hived_user.server.lock:
        double.fc_run("worker", 0, log="attempt zero\n")
        double.fc_fail("worker", 0, 137, retry=True)
        double.fc_run("worker", 0, log="attempt one\n")
    latest = hived_user.paictl("logs", job, "--target", "openpai")
    assert latest.returncode == 0 and latest.stdout.splitlines() == ["attempt one"], latest.stderr
    previous = hived_user.paictl("logs", job, "-p", "--target", "openpai")
    assert previous.returncode == 3 and previous.stdout == ""
    assert previous.stderr.count("\n") == 1 and "job history is off" in previous.stderr, previous.stderr


def test_follow_through_a_task_retry_shows_the_old_attempt_to_its_end_then_the_new(pai_user):
    job, double, manager = running_with_lines(pai_user, "tfollow", "row", 10)

    def moves():
        after_reads(manager, 2)
        with pai_user.server.lock:  # the last lines of task attempt 0 land just before it fails and is retried
            double.write_log("worker", 0, lines_of("row", 11, 15))
            double.fc_retry_task("worker", 0, 1)
            double.write_log("worker", 0, lines_of("row", 16, 20))
        after_reads(manager, 4)
        with pai_user.server.lock:
            double.fc_succeed()

    followed = follow_while(pai_user, job, moves)
    assert followed.stdout.splitlines() == [f"row {n}" for n in range(1, 21)], followed.stderr
    notes = followed.stderr.splitlines()
    assert notes[0].startswith("logs of attempt 0.0") and notes[1].startswith("logs of attempt 0.1"), notes


def test_a_long_follow_outlives_the_log_manager_token_in_its_link(pai_user):
    """The link's log-manager token expires (here after 1 s): the follower asks the REST server for a new link and
    goes on where it was."""
    job = submitted(pai_user, "longfollow", instances=1)
    double = pai_user.job(job)
    manager = pai_user.server.log_manager
    manager.token_seconds = 1
    with pai_user.server.lock:
        double.fc_run("worker", 0, log="before\n")

    def moves():
        after_reads(manager, 2)
        time.sleep(2.2)
        with pai_user.server.lock:
            double.write_log("worker", 0, "after\n")
        after_reads(manager, 4)
        with pai_user.server.lock:
            double.fc_succeed()

    followed = follow_while(pai_user, job, moves)
    assert followed.stdout.splitlines() == ["before", "after"], followed.stderr
    refused = [r for r in manager.requests if "/api/v1/logs/" in r[1]]
    assert len({path.split("token=")[1].split("&")[0] for _, path, _ in refused}) > 1  # a new link was used


def test_a_failure_excerpt_reads_only_the_log_s_tail(pai_user):
    """`status` of a failed job shows the deciding task's last lines from the log-manager's tail mode (16 KB),
    not the whole log."""
    job = submitted(pai_user, "bigfail", instances=1)
    double = pai_user.job(job)
    manager = pai_user.server.log_manager
    with pai_user.server.lock:
        double.fc_run("worker", 0, log="".join(f"progress {n:06d} {'.' * 50}\n" for n in range(5000)))
        double.write_log("worker", 0, "Traceback (most recent call last):\nValueError: the last line\n")
        double.fc_fail("worker", 0, 1)
    before = manager.sent
    shown = pai_user.paictl("status", job, "--target", "openpai")
    assert shown.returncode == 0, shown.stderr
    assert "ValueError: the last line" in shown.stdout and "progress 004990" in shown.stdout
    assert "progress 000000" not in shown.stdout
    assert manager.sent - before <= 16384
    assert any("tail-mode=true" in path for _, path, _ in manager.requests)


def test_a_follow_reads_on_after_the_log_manager_breaks_off_mid_answer(pai_user):
    """The log-manager's connection drops halfway through two answers: the follower says so on standard error and
    reads on from the last byte that arrived at its next poll; every line shows once, in order, and it exits 0."""
    job, double, manager = running_with_lines(pai_user, "broken", "line", 40)

    def moves():
        after_reads(manager, 2)
        with pai_user.server.lock:
            manager.breaks = 2
            double.write_log("worker", 0, lines_of("line", 41, 80))
        after_reads(manager, 8)
        with pai_user.server.lock:
            double.fc_succeed()

    followed = follow_while(pai_user, job, moves)
    assert followed.stdout.splitlines() == [f"line {n}" for n in range(1, 81)], followed.stderr
    assert manager.breaks == 0
    assert followed.stderr.count("reading the all log broke off; reading on at the next poll") == 2, followed.stderr
