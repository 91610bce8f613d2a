"""The follow view: what a user sees in a pipe, in JSON, and how the default submit target is chosen."""

from __future__ import annotations

import json

from paictl.cli import live
from paictl.cli.submit_run import default_submit_target
from paictl.targets.states import VERDICT_EXIT_CODES, JobState, JobView, TaskView


def _views():
    task = TaskView(role="worker", index=0, state="running", attempt=0, node="localhost")
    yield JobView(name="j", state=JobState.PENDING, where="/runs/j")
    yield JobView(name="j", state=JobState.RUNNING, tasks=(task,))
    yield JobView(name="j", state=JobState.RUNNING, tasks=(task,))  # unchanged: printed once
    failed = TaskView(role="worker", index=0, state="failed", attempt=1, node="localhost", exit_code=1,
                      diagnosis="231 ContainerSyntaxError")
    yield JobView(name="j", state=JobState.FAILED, tasks=(failed,), completion_code=231,
                  triggered_by=("worker", 0), message="worker-0 failed")


def test_text_lines_print_each_change_once(capsys):
    last = live.follow(_views(), output_format="text", live=False)
    out = capsys.readouterr().out.splitlines()
    assert last.state is JobState.FAILED
    assert out == [
        "j: /runs/j",
        "j: pending (attempt 0)",
        "j: running (attempt 0)",
        "  worker-0  running  attempt 0  on localhost",
        "j: failed (attempt 0), code 231, decided by worker-0: worker-0 failed",
        "  worker-0  failed  attempt 1  on localhost  exit 1  231 ContainerSyntaxError",
    ]


def test_json_lines_one_object_per_change(capsys):
    live.follow(_views(), output_format="json")
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["state"] for r in records] == ["pending", "running", "failed"]
    assert records[-1]["triggered_by"] == {"role": "worker", "index": 0}
    assert records[-1]["tasks"][0]["exit_code"] == 1


def test_live_table_draws_on_a_terminal(capsys):
    last = live.follow(_views(), output_format="text", live=True)
    out = capsys.readouterr().out
    assert last.completion_code == 231
    assert "ContainerSyntaxError" in out and "decided by worker-0" in out


def test_follow_of_nothing_is_none():
    assert live.follow(iter(()), output_format="text", live=False) is None


def test_verdicts_have_distinct_exit_codes():
    assert VERDICT_EXIT_CODES == {JobState.SUCCEEDED: 0, JobState.FAILED: 1, JobState.STOPPED: 4}
    assert all(state.is_final for state in VERDICT_EXIT_CODES)
    assert not JobState.RUNNING.is_final


def test_default_target_is_local_without_a_kubeconfig(monkeypatch, tmp_path):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_submit_target(None, None) == "local"
    assert default_submit_target("prod", None) == "framework"
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("apiVersion: v1\nkind: Config\n")
    assert default_submit_target(None, None) == "framework"
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "k"))
    assert default_submit_target(None, None) == "framework"
