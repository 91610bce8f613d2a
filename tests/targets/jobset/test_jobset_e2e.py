"""`paictl submit/status/stop/logs --target jobset` end to end: the real CLI (a subprocess) against the Kubernetes
API emulator, whose scripted JobSet controller follows the reference's state sequences (tests/kube_emulator/
jobset_sim.py): failed (exit 1, with the reason and the task that failed, read from a log kwok cannot write),
restarted then succeeded (exit 0 at attempt 1, timed to be seen), suspended, stuck pending (exit 3).
A JobSet that succeeds and one stopped by a foreground delete run on the real JobSet controller
(tests/targets/kube/test_real_flows.py).
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl, wait_for

pytest.importorskip("kubernetes")

API = "jobset.x-k8s.io/v1alpha2"
JOB = str(JOBS / "kube" / "jobset-job.yaml")       # param_server x1, worker x2, jobRetryCount 1
HELLO = str(ROOT / "examples" / "hello-world.yaml")  # one role, no retries


def submit(emu, job: str = JOB, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    done = paictl(emu, "submit", job, "--target", "jobset", *args)
    assert "Traceback" not in done.stderr
    found = re.search(r"jobset\.jobset\.x-k8s\.io/([-a-z0-9]+)[ \"]", done.stdout)
    return done, found.group(1) if found else ""


def job_lines(out: str, name: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"{name}: ")]


def test_submit_follow_failed_says_why(emulator):
    emulator.scenario("JobSet", "*", "failed", exit_code=1, log="Traceback (most recent call last):\n"
                      "  File \"train.py\", line 3\nSyntaxError: invalid syntax\n")
    done, name = submit(emulator, HELLO, "--follow")
    assert done.returncode == 1, done.stderr
    assert job_lines(done.stdout, name)[-1] == (
        f"{name}: failed (attempt 0), code 1, decided by main-0: FailedJobs: jobset failed due to one or more job "
        f"failures (first failed job: {name}-main-0)")
    assert "main-0  Error  attempt 0  on node-0  exit 1  231 ContainerSyntaxError" in done.stdout
    assert "W903" in done.stderr  # hello-world is gang-allocated and the profile names no Kueue queue


def test_failed_after_every_restart_reached_max_restarts(emulator):
    # simulated seconds long enough (1 s each at speed 200) that a follower on a loaded machine sees every phase
    emulator.scenario("JobSet", "*", "failed", task_role="worker", task_index=1, exit_code=137,
                      preparing_seconds=200, run_seconds=200)
    done, name = submit(emulator, JOB, "--follow")
    assert done.returncode == 1, done.stderr
    lines = job_lines(done.stdout, name)
    assert any(line.startswith(f"{name}: restarting (attempt 1)") for line in lines)
    assert lines[-1] == (f"{name}: failed (attempt 1), code 137, decided by worker-1: ReachedMaxRestarts: jobset "
                         f"failed due to reaching max number of restarts (first failed job: {name}-worker-0)")
    assert emulator.get_object(API, "JobSet", "default", name)["status"]["restarts"] == 1


@pytest.mark.parametrize("version", ["v0.11", "v0.12"])
def test_restarted_then_succeeded(emulator, version):
    """v0.12 says a restart with the RestartingJobSet condition; v0.11 has none (kubernetes-sigs/jobset
    api/jobset/v1alpha2/jobset_types.go, added in v0.12), only status.restarts going up: both read as restarting."""
    # The failed pod stays 400 simulated seconds (2 s) before the restart, so the follower sees its exit code even
    # on a loaded machine (without it, the restart deleted the pod in the same instant and a follower could miss it).
    emulator.scenario("JobSet", "*", "restarted", task_role="worker", task_index=0, exit_code=137,
                      preparing_seconds=200, run_seconds=200, restart_delay_seconds=400, version=version)
    done, name = submit(emulator, JOB, "--follow", "--format", "json")
    assert done.returncode == 0, done.stderr
    views = [json.loads(line) for line in done.stdout.splitlines()[1:]]
    states = [(v["state"], v["attempt"]) for v in views]
    assert ("running", 0) in states and ("restarting", 1) in states
    assert states.index(("running", 0)) < states.index(("restarting", 1))
    assert states[-1] == ("succeeded", 1)
    failed_first = next(v for v in views if v["attempt"] == 0 and any(t["exit_code"] == 137 for t in v["tasks"]))
    assert {"role": "worker", "index": 0} in [{"role": t["role"], "index": t["index"]} for t in failed_first["tasks"]
                                              if t["exit_code"] == 137]
    assert [t["exit_code"] for t in views[-1]["tasks"]] == [0, 0, 0]  # attempt 1's pods only


def test_stop_suspend_keeps_the_jobset_suspended(emulator):
    emulator.scenario("JobSet", "*", "running")
    done, name = submit(emulator)
    assert done.returncode == 0, done.stderr
    assert f"paictl status {name} -n default --kubeconfig {emulator.kubeconfig} --follow" in done.stderr
    stopped = paictl(emulator, "stop", name, "--suspend", "--format", "json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"stopped": f"jobset.jobset.x-k8s.io/{name}", "name": name,
                                          "namespace": "default", "result": "suspended"}
    jobset = wait_for(lambda: next((j for j in [emulator.get_object(API, "JobSet", "default", name)]
                                    if any(c["type"] == "Suspended" for c in j["status"]["conditions"])), None))
    assert jobset["spec"]["suspend"] is True
    # the Job controller deleted the pods when the condition was written: each is terminating (its grace period
    # runs on the emulator's clock), then gone
    assert all(p["metadata"].get("deletionTimestamp") for p in emulator.list_objects("v1", "Pod", "default"))
    wait_for(lambda: emulator.list_objects("v1", "Pod", "default") == [])
    assert "paictl-stop" in {entry["manager"] for entry in jobset["metadata"]["managedFields"]}
    shown = paictl(emulator, "status", name, "--follow")
    assert shown.returncode == 4, shown.stderr
    assert job_lines(shown.stdout, name)[-1].startswith(f"{name}: stopped (attempt 0): suspended by paictl stop "
                                                        "--suspend")
    listed = json.loads(paictl(emulator, "status", "--target", "jobset", "--format", "json").stdout)
    assert [(v["name"], v["state"]) for v in listed] == [(name, "stopped")]
    # no Kueue here: the status of a suspended JobSet asks nothing of it
    assert not [r.path for r in emulator.requests if "/kueue.x-k8s.io/" in r.path]
    other = paictl(emulator, "stop", name, "--suspend", "--target", "framework")
    assert other.returncode == 3 and "no Framework named" in other.stderr


def test_stuck_pending_times_out(emulator):
    emulator.scenario("JobSet", "*", "stuck-pending")
    done, name = submit(emulator, HELLO, "--follow", "--pending-timeout", "1.5")
    assert done.returncode == 3, done.stderr
    assert re.search(rf"paictl: error: {name}: still pending after 1.5s: main-0: ImagePullBackOff: "
                     r"Back-off pulling image", done.stderr), done.stderr


def test_a_jobset_whose_pods_cannot_be_created_says_why(emulator):
    """A namespace's ResourceQuota (or an admission webhook) refuses the pods: the Jobs exist, no pod does, and the
    only word of it is the Job controller's FailedCreate event on each Job (kubernetes pkg/controller/
    controller_utils.go). The JobSet's status says only that its Jobs are active, so paictl read it as waiting for
    nothing in particular, and a follow timed out without a reason."""
    emulator.scenario("JobSet", "*", "forbidden")
    done, name = submit(emulator, JOB)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: len(emulator.list_objects("v1", "Event", "default")) == 2)
    shown = paictl(emulator, "status", name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert view["state"] == "pending"
    assert re.fullmatch(  # both Jobs' events are of the same second: either is the newest
        rf'param-server: 1 active; worker: 1 active \(event FailedCreate: Error creating: pods "{name}-'
        r'(param-server|worker)-0-0-x7k2p" is forbidden: exceeded quota: compute, requested: limits.cpu=1, used: '
        r"limits.cpu=4, limited: limits.cpu=4\)", view["message"]), view["message"]
    events = [r for r in emulator.requests if r.path.endswith("/events")]
    assert len(events) == 2  # the JobSet's, then its Jobs' (one request for every Job)
    followed = paictl(emulator, "status", name, "--follow", "--pending-timeout", "4")
    assert followed.returncode == 3
    assert f"still pending after 4s: param-server: 1 active; worker: 1 active (event FailedCreate" in followed.stderr


def test_logs_by_role_and_index(emulator):
    emulator.scenario("JobSet", "*", "succeeded", logs={})
    done, name = submit(emulator, JOB, "--follow")
    assert done.returncode == 0, done.stderr
    shown = paictl(emulator, "logs", name, "worker", "1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"[{name}-worker-0-1] started\n[{name}-worker-0-1] exiting\n"
    every = paictl(emulator, "logs", name)
    assert every.returncode == 0
    assert f"[param_server-0] [{name}-param-server-0-0] exiting" in every.stdout.splitlines()


def test_missing_jobset_crd_is_named(emulator):
    emulator.uninstall("jobsets")
    done = paictl(emulator, "submit", HELLO, "--target", "jobset")
    assert done.returncode == 3
    assert "paictl: error: JobSet is not installed in this cluster: no jobsets.jobset.x-k8s.io resource" \
        in done.stderr


def test_suspend_is_for_jobsets_only(emulator, tmp_path):
    emulator.scenario("Framework", "*", "running")
    framework = paictl(emulator, "submit", HELLO, "--target", "framework")
    assert framework.returncode == 0, framework.stderr
    name = re.search(r"framework\.frameworkcontroller\.microsoft\.com/(\w+) created", framework.stdout).group(1)
    refused = paictl(emulator, "stop", name, "--suspend")
    assert refused.returncode == 2
    assert refused.stderr == (f"paictl: error: --suspend stops JobSets only; framework.frameworkcontroller.microsoft."
                              f"com/{name} is a Framework\n")
    local = paictl(emulator, "stop", "nosuchrun", "--suspend", "--target", "local", "--run-dir", str(tmp_path))
    assert local.returncode == 2
    assert local.stderr == "paictl: error: --suspend stops JobSets only; 'nosuchrun' is not on a Kubernetes cluster\n"
