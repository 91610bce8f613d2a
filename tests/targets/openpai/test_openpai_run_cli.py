"""`paictl submit|status|stop|logs --target openpai` as real processes against the test OpenPAI server.

The done-when of issue 17 as a user sees it: submit → follow → succeeded (0) / failed with the diagnosed exit code
(1) / stopped (4); a re-submit gives the 409 line; an unreachable server, a wrong token and an unknown virtual cluster
each give one line and exit 3; and the token appears in no output and no file.
"""

from __future__ import annotations

import socket

import pytest
import yaml
from openpai_server import OpenPaiServer
from openpai_server.harness import ALIAS, TOKEN, TOKEN_ENV, start, write_job

from paictl.targets.openpai.clusters import ClusterEntry, load_clusters, save_clusters

OPENPAI = ("--target", "openpai", "--cluster", ALIAS)


@pytest.fixture
def pai(tmp_path, monkeypatch):
    with OpenPaiServer() as server:
        yield start(tmp_path, monkeypatch, server)


def _one_error_line(done, code: int) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("paictl: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.strip()


def test_submit_and_follow_to_success(pai, tmp_path):
    done = pai.paictl("submit", str(write_job(tmp_path, "happy")), *OPENPAI, "--follow", "-p", "epochs=3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"job alice~happy submitted to OpenPAI {ALIAS} ({pai.server.url}), virtual cluster default"
    assert "happy: running (attempt 0): AttemptRunning" in lines
    assert lines[-3:] == ["happy: succeeded (attempt 0), code 0", "  worker-0  SUCCEEDED  attempt 0  on node1  exit 0",
                          "  worker-1  SUCCEEDED  attempt 0  on node2  exit 0"]
    assert yaml.safe_load(pai.server.jobs["alice~happy"].text)["parameters"] == {"epochs": 3}


def test_submit_and_follow_to_a_diagnosed_failure(pai, tmp_path):
    pai.server.scenarios["sad"] = "fail"
    done = pai.paictl("submit", str(write_job(tmp_path, "sad")), *OPENPAI, "--follow")
    assert done.returncode == 1, done.stderr
    assert ("sad: failed (attempt 0), code 231, decided by worker-0: 231 ContainerSyntaxError; TaskAttempt failed "
            "and the FailedTaskCount reached MinFailedTaskCount") in done.stdout
    assert "  worker-0  FAILED  attempt 0  on node1  exit 231  231 ContainerSyntaxError" in done.stdout
    assert done.stdout.rstrip().endswith("SyntaxError: invalid syntax")  # the deciding task's last lines
    as_json = pai.paictl("status", "sad", *OPENPAI, "--format", "json")
    assert as_json.returncode == 0
    assert yaml.safe_load(as_json.stdout)["tasks"][0]["diagnosis"] == "231 ContainerSyntaxError"


def test_stop_then_follow_ends_stopped(pai, tmp_path):
    pai.server.scenarios["forever"] = "long"
    submitted = pai.paictl("submit", str(write_job(tmp_path, "forever")), *OPENPAI)
    assert submitted.returncode == 0 and "paictl status forever --target openpai --cluster testpai --follow" in \
        submitted.stderr
    pai.server.jobs["alice~forever"].advance()  # running now
    stopped = pai.paictl("stop", "forever", *OPENPAI)
    assert (stopped.returncode, stopped.stdout) == (0, "job alice~forever: stop requested (stopping)\n")
    followed = pai.paictl("status", "forever", *OPENPAI, "--follow")
    assert followed.returncode == 4, followed.stderr
    assert "forever: stopped (attempt 0), code -210: -210 StopFrameworkRequested" in followed.stdout


def test_resubmit_is_the_409_line(pai, tmp_path):
    job = write_job(tmp_path, "again")
    assert pai.paictl("submit", str(job), *OPENPAI).returncode == 0
    line = _one_error_line(pai.paictl("submit", str(job), *OPENPAI), 3)
    assert line == (f"paictl: error: OpenPAI {ALIAS}: submit alice~again: HTTP 409 ConflictJobError: Job alice~again "
                    "already exists; OpenPAI never reuses a job name, even after the job ended: rename the job "
                    "(`name:` in the file), or follow the existing one with `paictl status again --target openpai "
                    f"--cluster {ALIAS} --follow`")


def test_unreachable_server_is_one_line(pai, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    entries = load_clusters(pai.clusters_file)
    entries["gone"] = ClusterEntry(alias="gone", url=f"http://127.0.0.1:{port}", user="alice", token_env=TOKEN_ENV)
    save_clusters(entries, pai.clusters_file)
    line = _one_error_line(pai.paictl("submit", str(write_job(tmp_path, "lost")), "--target", "openpai",
                                      "--cluster", "gone"), 3)
    assert line.startswith(f"paictl: error: cannot reach the OpenPAI REST server gone (http://127.0.0.1:{port}) "
                           "(tried 4 times): list virtual clusters: ")


def test_wrong_token_is_one_line(pai, tmp_path):
    line = _one_error_line(pai.paictl("submit", str(write_job(tmp_path, "denied")), *OPENPAI,
                                      env={TOKEN_ENV: "forged-token"}), 3)
    assert line == (f"paictl: error: OpenPAI {ALIAS}: list virtual clusters: HTTP 401 UnauthorizedUserError: Guest is "
                    f"not allowed to do this operation; the token is missing, wrong or expired: run `paictl openpai "
                    f"login {ALIAS}`")
    assert "forged-token" not in line


def test_unknown_virtual_cluster_is_one_line(pai, tmp_path):
    line = _one_error_line(pai.paictl("submit", str(write_job(tmp_path, "where")), *OPENPAI,
                                      "--virtual-cluster", "nowhere"), 3)
    assert line == (f"paictl: error: OpenPAI {ALIAS} ({pai.server.url}): virtual cluster 'nowhere' does not exist; "
                    "available: default, gpu, restricted (choose with --virtual-cluster)")
    assert not [r for r in pai.server.requests if r.method == "POST"]


def test_an_invalid_job_is_never_sent(pai, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("protocolVersion: 2\nname: bad\ntype: job\ntaskrole: {}\n")
    done = pai.paictl("submit", str(bad), *OPENPAI)
    assert done.returncode == 1 and "error[E201]" in done.stderr and "error[E202]" in done.stderr
    assert pai.server.requests == []


def test_status_lists_the_users_jobs_and_logs_print_lines(pai, tmp_path):
    for name in ("one", "two"):
        assert pai.paictl("submit", str(write_job(tmp_path, name)), *OPENPAI, "--follow").returncode == 0
    listed = pai.paictl("status", *OPENPAI)
    rows = [line.split()[0] for line in listed.stdout.splitlines()]
    assert listed.returncode == 0 and rows == ["NAME", "one", "two"]
    logs = pai.paictl("logs", "one", "worker", "1", *OPENPAI)
    assert logs.returncode == 0 and logs.stdout == "starting\nepoch 1 done\nepoch 2 done\n"
    assert logs.stderr.startswith("log locations: stderr ") and "token=***" in logs.stderr
    missing = pai.paictl("logs", "one", "ps", *OPENPAI)
    assert _one_error_line(missing, 2) == "paictl: error: job one has no task role 'ps'; it has worker"
    unknown = pai.paictl("status", "nothere", *OPENPAI)
    assert _one_error_line(unknown, 3).endswith("HTTP 404 NoJobError: Job alice~nothere is not found.")


def test_token_canary_across_every_command(pai, tmp_path):
    """Every command that talks to the server, successes and failures: the token is in no stream and no file."""
    pai.server.scenarios["c2"] = "fail"
    pai.server.scenarios["c3"] = "long"
    runs = [pai.paictl("submit", str(write_job(tmp_path, name)), *OPENPAI, *extra, cwd=tmp_path)
            for name, extra in (("c1", ("--follow",)), ("c2", ("--follow", "--format", "json")), ("c3", ()))]
    runs += [pai.paictl(*args, cwd=tmp_path) for args in (
        ("status", *OPENPAI), ("status", *OPENPAI, "--format", "json"), ("status", "c2", *OPENPAI),
        ("logs", "c2", *OPENPAI), ("stop", "c3", *OPENPAI), ("stop", "c3", *OPENPAI, "--format", "json"),
        ("submit", str(tmp_path / "c1.yaml"), *OPENPAI), ("status", "c9", *OPENPAI),
        ("submit", str(tmp_path / "c1.yaml"), *OPENPAI, "--virtual-cluster", "restricted"),
        ("openpai", "clusters", "--format", "json"))]
    assert [run.returncode for run in runs] == [0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 0]
    for run in runs:
        assert TOKEN not in run.stdout and TOKEN not in run.stderr
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert pai.clusters_file in written
    assert not [path for path in written if TOKEN.encode() in path.read_bytes()]
