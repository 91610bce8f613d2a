"""`paictl status` without a name on OpenPAI, against the double (held to the recordings): every row has its AGE
from the server's submission time, a job whose stop is requested reads "stopping" (the web portal's "Stopping"),
`-A` lists every user's jobs as `user~job`, the pages are asked in a stable order, and job-supplied text never
reaches the terminal as control sequences."""

from __future__ import annotations

import dataclasses
import json
import re


def submit(pai_user, name: str, **options) -> None:
    path = pai_user.write_job(name, **options)
    done = pai_user.paictl("submit", str(path), "--target", "openpai", "--cluster", "lab")
    assert done.returncode == 0, done.stderr


def listing(pai_user, *args: str) -> list[dict]:
    done = pai_user.paictl("status", "--target", "openpai", "--cluster", "lab", "-o", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_row_has_its_age_and_a_requested_stop_reads_stopping(pai_user):
    running, stopped = pai_user.name("run"), pai_user.name("stop")
    for name in (running, stopped):
        submit(pai_user, name)
        with pai_user.server.lock:
            pai_user.job(name).fc_prepare()
            pai_user.job(name).fc_run()
    with pai_user.server.lock:
        pai_user.job(stopped).execution_type = "STOP"  # asked for; FrameworkController has not acted yet
    rows = {row["name"]: row for row in listing(pai_user)}
    assert rows[running]["state"] == "running" and rows[stopped]["state"] == "stopping"
    assert rows[stopped]["message"].startswith("stop requested")
    for row in rows.values():
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["created"]), row
    text = pai_user.paictl("status", "--target", "openpai", "--cluster", "lab")
    assert "<unknown>" not in text.stdout and re.search(rf"{stopped}\s.*stopping", text.stdout)
    detail = pai_user.paictl("status", stopped, "--target", "openpai", "--cluster", "lab", "-o", "json")
    assert json.loads(detail.stdout)["state"] == "stopping"


def test_all_users_lists_every_users_jobs_by_their_full_names(pai_user):
    mine, theirs = pai_user.name("mine"), pai_user.name("theirs")
    submit(pai_user, mine)
    bob = pai_user.other("bob")
    path = bob.write_job(theirs)
    done = bob.paictl("submit", str(path), "--target", "openpai", "--cluster", "lab")
    assert done.returncode == 0, done.stderr
    assert [row["name"] for row in listing(pai_user)] == [mine]
    assert {row["name"] for row in listing(pai_user, "-A")} == {f"alice~{mine}", f"bob~{theirs}"}


def test_pages_are_asked_for_in_a_stable_order(pai_user):
    submit(pai_user, pai_user.name("one"))
    listing(pai_user)
    asked = [r.path.partition("?")[2] for r in pai_user.server.requests
             if r.method == "GET" and r.path.partition("?")[0] == "/api/v2/jobs"]
    assert asked and all("order=submissionTime%2CDESC" in query or "order=submissionTime,DESC" in query
                         for query in asked), asked


def test_control_sequences_in_a_jobs_message_are_escaped_in_the_table(pai_user):
    name = pai_user.name("osc")
    submit(pai_user, name)
    with pai_user.server.lock:
        job = pai_user.job(name)
        job.fc_prepare()
        job.fc_run()
        job.fc_fail("worker", 0, 1)
        # what the server passes on from the job's own side (here FrameworkController's trigger message)
        attempt = job.attempts[-1]
        role, index, _ = attempt.completion.trigger
        attempt.completion = dataclasses.replace(
            attempt.completion, trigger=(role, index, "\x1b]52;c;cGF5bG9hZA==\x07\x1b]0;pwned\x07\x9b2J\x1bc"))
    done = pai_user.paictl("status", name, "--target", "openpai", "--cluster", "lab")
    shown = done.stdout + done.stderr
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "\\x1b]52;c;" in shown


def test_a_job_submitted_between_two_pages_lists_no_job_twice(pai_user, monkeypatch):
    """51 jobs are two pages of 50; a submission after the first page pushes its last row onto the second."""
    from paictl.targets.openpai import backend as openpai_backend

    monkeypatch.setattr(openpai_backend, "LIST_PAGE", 50)
    pai_user.server.cluster.bulk_insert("alice", 51)
    backend = pai_user.backend()
    asked = backend.client.get

    def get_then_submit(path, **options):
        reply = asked(path, **options)
        if path == "/api/v2/jobs" and (options.get("params") or {}).get("offset") == 0:
            pai_user.server.add_job("alice", {"name": "newcomer", "taskRoles": {"main": {"instances": 1}}})
        return reply

    monkeypatch.setattr(backend.client, "get", get_then_submit)
    names = [view.name for view in backend.list()]
    assert len(names) == len(set(names)) == 51 and "newcomer" not in names
