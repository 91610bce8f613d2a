"""The Kubernetes path under faults, against the emulator: re-submits of finished jobs, --replace, owner references,
clean-up after a failed apply, retried requests, a KUBECONFIG list merged as kubectl merges it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from test_kube_cli import CANARY_JOB, FC, HELLO, ROOT, paictl, submit, wait_for

pytest.importorskip("kubernetes")


def test_replace_deletes_waits_and_follows_the_new_run_only(emulator):
    emulator.scenario("Framework", "*", "failed", exit_code=1)
    first, name = submit(emulator, HELLO, "--follow")
    assert first.returncode == 1
    old_uid = emulator.get_object(FC, "Framework", "default", name)["metadata"]["uid"]
    emulator.scenario("Framework", "*", "succeeded", run_seconds=1)
    replaced = paictl(emulator, "submit", HELLO, "--target", "framework", "--replace", "--follow", "-o", "json")
    assert replaced.returncode == 0, replaced.stderr  # the old run failed: following it would have exited 1
    records = [json.loads(line) for line in replaced.stdout.splitlines()]
    assert [r["state"] for r in records if "state" in r][-1] == "succeeded"
    assert all(r.get("state") != "failed" for r in records)
    new = emulator.get_object(FC, "Framework", "default", name)
    assert new["metadata"]["uid"] != old_uid
    deletes = [r for r in emulator.requests if r.method == "DELETE" and f"/frameworks/{name}" in r.path]
    assert len(deletes) == 1
    text = paictl(emulator, "submit", HELLO, "--target", "framework", "--replace")
    assert text.returncode == 0 and text.stdout.startswith(
        f"framework.frameworkcontroller.microsoft.com/{name} deleted (--replace; it was succeeded)\n")


def test_companions_are_kept_when_the_workload_exists_after_a_failed_apply(emulator):
    """The apply of the workload failed, but a workload of that name is there (stored before the connection
    dropped, or made by someone else): the Secrets it may mount must stay."""
    compiled = json.loads(subprocess.run([sys.executable, "-m", "paictl", "compile", CANARY_JOB, "-o", "json"],
                                         capture_output=True, text=True, cwd=ROOT, check=True).stdout)
    framework = next(o for o in compiled["items"] if o["kind"] == "Framework")
    emulator.scenario("Framework", "*", "running", seconds=100000)
    emulator.create_object(framework, manager="someone")
    # the dry run that looks for an edited spec (sent once), then the apply's five attempts
    emulator.fail_next(6, status=503, method="PATCH", path_contains="/frameworks/")
    done, _ = submit(emulator, CANARY_JOB)
    assert done.returncode == 3
    *retries, error = done.stderr.splitlines()  # the retries that lasted past a second are shown as they happen
    assert "(the workload exists: kept secret/" in error and error.startswith("paictl: error: ")
    assert retries and all(line.startswith("paictl: the cluster answered 503") for line in retries)
    assert len(emulator.list_objects("v1", "Secret", "default")) == 2


def test_plain_requests_are_retried_on_server_errors(emulator):
    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    emulator.fail_next(3, status=503, method="GET", path_contains=f"/frameworks/{name}")
    shown = paictl(emulator, "status", name, "--target", "framework")
    assert shown.returncode == 0, shown.stderr
    statuses = [r.status for r in emulator.requests if r.method == "GET" and r.path.endswith(f"/frameworks/{name}")]
    assert statuses == [404, 404, 503, 503, 503, 200, 200]  # submit: 2 GETs; status: finds the job, then reads it
    # a stop is not idempotent in general (a merge patch): one failure is reported, not retried
    emulator.fail_next(1, status=503, method="PATCH", path_contains=f"/frameworks/{name}")
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 3 and "the cluster answered 503" in stopped.stderr


def test_a_kubeconfig_list_uses_the_first_files_current_context(emulator, tmp_path):
    """kubectl: the first file that sets current-context wins; named entries merge first-wins."""
    real = emulator.kubeconfig.read_text()
    unreachable = tmp_path / "other"
    unreachable.write_text("apiVersion: v1\nkind: Config\ncurrent-context: elsewhere\ncontexts: [{name: elsewhere, "
                           "context: {cluster: nowhere, user: nobody}}]\nclusters: [{name: nowhere, cluster: "
                           "{server: 'https://127.0.0.1:9'}}]\nusers: [{name: nobody, user: {token: x}}]\n")
    first = tmp_path / "first"
    first.write_text(real)
    env = {"KUBECONFIG": f"{first}:{unreachable}"}
    import os

    result = subprocess.run([sys.executable, "-m", "paictl", "status", "--target", "framework"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr  # the emulator (first file's context), not 127.0.0.1:9
    reversed_env = {"KUBECONFIG": f"{unreachable}:{first}"}
    result = subprocess.run([sys.executable, "-m", "paictl", "status", "--target", "framework"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, env={**os.environ, **reversed_env})
    assert result.returncode == 3 and "https://127.0.0.1:9 (context elsewhere)" in result.stderr


def test_logs_of_a_finished_framework_say_why_there_are_none(emulator):
    emulator.scenario("Framework", "*", "succeeded", run_seconds=1)
    done, name = submit(emulator, HELLO, "--follow")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: emulator.list_objects("v1", "Pod", "default") == [])
    shown = paictl(emulator, "logs", name)
    assert shown.returncode == 3 and shown.stderr.count("\n") == 1
    assert shown.stderr.startswith(f"paictl: error: {name} succeeded and its pods are gone (FrameworkController "
                                   "deletes a finished task's pod")


def test_logs_previous_asks_for_the_previous_container(emulator):
    emulator.scenario("Framework", "*", "stopped")
    done, name = submit(emulator, HELLO)
    wait_for(lambda: emulator.list_objects("v1", "Pod", "default"))
    shown = paictl(emulator, "logs", name, "--previous")
    assert shown.returncode == 0, shown.stderr
    (request,) = [r for r in emulator.requests if r.path.endswith("/log")]
    assert request.query.get("previous") == "true"
    both = paictl(emulator, "logs", name, "-p", "--follow")
    assert both.returncode == 2 and "cannot be combined" in both.stderr


def test_the_older_kubedl_group_works_end_to_end(emulator, tmp_path):
    """A cluster whose KubeDL serves MarsJob as kubedl.io/v1alpha1 (before the rename): submit, status, logs,
    stop all find it there, never saying KubeDL is not installed."""
    import dataclasses

    newer = emulator.registry.by_plural("marsjobs")
    emulator.uninstall("marsjobs")
    emulator.registry.install(dataclasses.replace(newer, group="kubedl.io"))
    profile = tmp_path / "older-kubedl.yaml"
    profile.write_text((ROOT / "compiler" / "profiles" / "default.yaml").read_text().replace(
        "  apiVersion: training.kubedl.io/v1alpha1", "  apiVersion: kubedl.io/v1alpha1"))
    name = "kube-mars-51819241"
    emulator.scenario("MarsJob", "*", "running", seconds=100000,
                      logs={f"{name}-worker-1": "ready\n"})
    done = paictl(emulator, "submit", str(ROOT / "tests" / "jobs" / "kube" / "mars-job.yaml"), "--target", "mars",
                  "--profile", str(profile))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"marsjob.kubedl.io/{name} created\n"
    wait_for(lambda: len(emulator.list_objects("v1", "Pod", "default")) == 4)
    shown = paictl(emulator, "status", name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["state"] == "running"
    listed = paictl(emulator, "status", "--target", "mars", "-o", "json")
    assert [row["name"] for row in json.loads(listed.stdout)] == [name]
    logs = paictl(emulator, "logs", name, "worker", "1")
    assert logs.returncode == 0 and logs.stdout == "ready\n", logs.stderr
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0 and stopped.stdout == f"marsjob.kubedl.io/{name} deleted (foreground)\n"
    wait_for(lambda: emulator.get_object("kubedl.io/v1alpha1", "MarsJob", "default", name) is None)


def test_events_of_a_pending_pod_are_shown_by_status_and_the_live_view(emulator):
    emulator.scenario("Framework", "*", "stuck-pending")
    done, name = submit(emulator, HELLO)
    wait_for(lambda: emulator.list_objects("v1", "Pod", "default"))
    shown = paictl(emulator, "status", name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    message = json.loads(shown.stdout)["message"]
    assert message.startswith('main-0: ImagePullBackOff: Back-off pulling image "python:3.11-slim" (event Failed: '
                              'Failed to pull image "python:3.11-slim": rpc error: code = NotFound'), message
    # following: the event is read once the pod has waited a few seconds (EVENTS_AFTER), not at every change
    followed = paictl(emulator, "status", name, "--follow", "--pending-timeout", "5")
    assert followed.returncode == 3
    assert "(event Failed: Failed to pull image" in followed.stderr
    event_lists = [r for r in emulator.requests if r.path.endswith("/events")]
    assert 2 <= len(event_lists) <= 3  # status's one, then the follower's (at most every 10 s)


def test_stop_deletes_the_priority_class_paictl_made_and_only_that(emulator):
    """A cluster-scoped PriorityClass cannot be owned by the namespaced Framework: paictl deletes it on stop."""
    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO, "--profile", "openpai")
    assert done.returncode == 0, done.stderr
    assert emulator.get_object("scheduling.k8s.io/v1", "PriorityClass", None, f"{name}-priority") is not None
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == (f"framework.frameworkcontroller.microsoft.com/{name} stop requested; "
                              f"priorityclass.scheduling.k8s.io/{name}-priority deleted\n")
    assert emulator.get_object("scheduling.k8s.io/v1", "PriorityClass", None, f"{name}-priority") is None
    # someone else's PriorityClass of that name is left alone
    emulator.create_object({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": f"{name}-priority"}, "value": 5}, manager="admin")
    again = paictl(emulator, "stop", name)
    assert again.returncode == 0 and "priorityclass" not in again.stdout
    assert emulator.get_object("scheduling.k8s.io/v1", "PriorityClass", None, f"{name}-priority") is not None


def test_a_priority_class_goes_when_its_job_finishes_on_its_own(emulator):
    """A cluster-scoped PriorityClass cannot be owned by the namespaced Framework (kubernetes garbagecollector.go
    ignores such a reference), so nothing removes it when the job ends by itself: paictl deletes it the first time
    it sees the job final, here at the end of the follow."""
    emulator.scenario("Framework", "*", "succeeded", run_seconds=1)
    done, name = submit(emulator, HELLO, "--profile", "openpai", "--follow")
    assert done.returncode == 0, done.stderr
    assert emulator.get_object("scheduling.k8s.io/v1", "PriorityClass", None, f"{name}-priority") is None
