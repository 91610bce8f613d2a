"""`paictl submit/status/stop/logs` end to end: the real CLI (a subprocess) against the Kubernetes API emulator.

Verdicts the emulator's scripted FrameworkController drives where kwok cannot (a log the exit rules read, exact
timing): failed with the exit rules' diagnosis (exit 1), stopped while following (exit 4), stuck pending past
--pending-timeout (exit 3). Submit-follow to success, stop then follow, and a server dry run run on the real
control plane (tests/targets/kube/test_real_flows.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl, start, wait_for

pytest.importorskip("kubernetes")

FC = "frameworkcontroller.microsoft.com/v1"
HELLO = str(ROOT / "examples" / "hello-world.yaml")
TWO_ROLES = str(JOBS / "kube" / "two-roles.yaml")
CANARY_JOB = str(JOBS / "kube" / "secret-job.yaml")
CANARIES = ("canary-token-5d2e81", "canary-user-9b7c40", "canary-password-e13f6a")


def applied_name(stdout: str) -> str:
    return re.search(r"framework\.frameworkcontroller\.microsoft\.com/(\w+)[ \"]", stdout).group(1)


def last_job_line(out: str, name: str) -> str:
    """The job's last state line (text output prints changed task lines after it)."""
    return [line for line in out.splitlines() if line.startswith(f"{name}: ")][-1]


def submit(emu, job: str = HELLO, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    done = paictl(emu, "submit", job, "--target", "framework", *args)
    assert "Traceback" not in done.stderr
    return done, applied_name(done.stdout) if "framework." in done.stdout else ""


def test_submit_follow_failed_says_why(emulator):
    emulator.scenario("Framework", "*", "failed", exit_code=1, task_role="worker", task_index=1,
                      log="loading data\ntensorflow.ResourceExhaustedError: OOM when allocating tensor\n")
    done, name = submit(emulator, TWO_ROLES, "--follow")
    assert done.returncode == 1, done.stderr
    assert "worker-1  Completed  attempt 0  on node-0  exit 1  221 ContainerTensorflowOOMKilled" in done.stdout
    assert f"{name}: failed (attempt 0), code 1, decided by worker-1" in done.stdout
    # the other tasks were stopped because the attempt completed, which is not their failure
    assert "server-0  Completed  attempt 0  on node-0  -220 FrameworkAttemptCompletion" in done.stdout


def test_submit_follow_json_lines(emulator):
    emulator.scenario("Framework", "*", "failed", exit_code=127, log="bash: trainer: command not found\n",
                      preparing_seconds=200)
    done, name = submit(emulator, HELLO, "--follow", "--format", "json")
    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0] == {"applied": f"framework.frameworkcontroller.microsoft.com/{name}", "kind": "Framework",
                        "name": name, "namespace": "default", "result": "created", "dryRun": False}
    views = lines[1:]
    assert [v["state"] for v in views][0] == "pending" and views[-1]["state"] == "failed"
    assert views[-1]["tasks"][0]["exit_code"] == 127
    assert views[-1]["tasks"][0]["diagnosis"] == "220 UserCommandExitWithError"
    assert views[-1]["triggered_by"] == {"role": "main", "index": 0}
    assert len(views) == len({json.dumps(v, sort_keys=True) for v in views}), "only changes are printed"


def test_stuck_pending_times_out_with_exit_3(emulator):
    emulator.scenario("Framework", "*", "stuck-pending")
    started = time.monotonic()
    done, name = submit(emulator, HELLO, "--follow", "--pending-timeout", "1.5")
    assert done.returncode == 3, done.stderr
    assert time.monotonic() - started < 30
    assert re.search(rf"paictl: error: {name}: still pending after 1.5s: main-0: ImagePullBackOff: "
                     r"Back-off pulling image \"python:3.11-slim\"", done.stderr), done.stderr
    assert "pending (attempt 0)" in done.stdout


def test_stop_while_following(emulator):
    emulator.scenario("Framework", "*", "running", seconds=100000)
    follower = start(emulator, "submit", HELLO, "--target", "framework", "--follow")
    name = wait_for(lambda: next((f["metadata"]["name"] for f in emulator.list_objects(FC, "Framework")
                                  if (f.get("status") or {}).get("state") == "AttemptRunning"), None))
    assert paictl(emulator, "stop", name).returncode == 0
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 4, err
    assert last_job_line(out, name).startswith(f"{name}: stopped (attempt 0), code -210")


def test_resubmit_is_a_no_op_and_says_so(emulator, tmp_path):
    done, name = submit(emulator, CANARY_JOB)
    assert done.returncode == 0, done.stderr
    before = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
              for kind, version in (("Secret", "v1"), ("Framework", FC))
              for o in emulator.list_objects(version, kind, "default")}
    assert len(before) == 3
    again, _ = submit(emulator, CANARY_JOB)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [f"secret/{name}-configcred unchanged", f"secret/{name}-regcred unchanged",
                                         f"framework.frameworkcontroller.microsoft.com/{name} unchanged",
                                         f"{name}: nothing changed, the job is already submitted"]
    after = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
             for kind, version in (("Secret", "v1"), ("Framework", FC))
             for o in emulator.list_objects(version, kind, "default")}
    assert after == before
    dry, _ = submit(emulator, CANARY_JOB, "--dry-run")
    assert dry.stdout.splitlines()[2] == \
        f"framework.frameworkcontroller.microsoft.com/{name} unchanged (server dry run)"
    edited = tmp_path / "secret-job.yaml"  # the same job with another description: only the Framework changes
    edited.write_text(open(CANARY_JOB).read().replace("type: job", "type: job\ndescription: edited"))
    changed, _ = submit(emulator, str(edited))
    assert changed.stdout.splitlines() == [f"secret/{name}-configcred unchanged", f"secret/{name}-regcred unchanged",
                                           f"framework.frameworkcontroller.microsoft.com/{name} configured"]
    dry_changed, _ = submit(emulator, CANARY_JOB, "--dry-run")
    assert dry_changed.stdout.splitlines()[2].endswith(" configured (server dry run)")


def test_cleanup_keeps_secrets_that_existed_before(emulator):
    first, name = submit(emulator, CANARY_JOB)
    assert first.returncode == 0
    emulator.delete_object(FC, "Framework", "default", name, propagation="Orphan")  # the Secrets it owned stay
    emulator.fail_next(5, status=500, method="PATCH", path_contains="/frameworks/")  # the apply and its 4 retries
    done, _ = submit(emulator, CANARY_JOB)
    assert done.returncode == 3 and "the cluster answered 500" in done.stderr
    assert len(emulator.list_objects("v1", "Secret", "default")) == 2


def test_missing_crd_is_named(emulator):
    emulator.uninstall("frameworks")
    done = paictl(emulator, "submit", CANARY_JOB, "--target", "framework")
    assert done.returncode == 3
    assert done.stderr == ("paictl: error: FrameworkController is not installed in this cluster: no "
                           "frameworks.frameworkcontroller.microsoft.com resource (removed what this submit had "
                           "created: secret/kubecanaryae986b08-configcred, secret/kubecanaryae986b08-regcred)\n")
    assert emulator.list_objects("v1", "Secret", "default") == []
    status = paictl(emulator, "status", "whatever", "--target", "framework")
    assert status.returncode == 3 and "FrameworkController is not installed" in status.stderr


def test_conflict_with_another_field_manager(emulator):
    done, name = submit(emulator, HELLO, "--dry-run", "--format", "json")
    compiled = json.loads(subprocess.run([sys.executable, "-m", "paictl", "compile", HELLO, "--format", "json"],
                                         capture_output=True, text=True, cwd=ROOT, check=True).stdout)
    framework = next(o for o in compiled["items"] if o["kind"] == "Framework")
    framework["spec"]["retryPolicy"]["maxRetryCount"] = 5
    emulator.create_object(framework, manager="kubectl-edit")
    done = paictl(emulator, "submit", HELLO, "--target", "framework")
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1
    assert ".spec.retryPolicy.maxRetryCount managed by 'kubectl-edit'" in done.stderr


def test_logs(emulator):
    emulator.scenario("Framework", "*", "running", seconds=100000,
                      logs={"kubetworoles648f6afc-worker-1": "epoch 1\nepoch 2\n"})
    done, name = submit(emulator, TWO_ROLES)
    assert name == "kubetworoles648f6afc"
    wait_for(lambda: (emulator.get_object(FC, "Framework", "default", name).get("status") or {})
             .get("state") == "AttemptRunning")
    one = paictl(emulator, "logs", name, "worker", "1")
    assert one.returncode == 0, one.stderr
    assert one.stdout == "epoch 1\n"  # a running task's log so far (half of the scripted text)
    every = paictl(emulator, "logs", name)
    assert every.returncode == 0, every.stderr
    prefixes = [line.split(" ", 1)[0] for line in every.stdout.splitlines()]
    assert sorted(set(prefixes)) == ["[server-0]", "[worker-0]", "[worker-1]"]
    assert "[worker-1] epoch 1" in every.stdout.splitlines()
    bad_role = paictl(emulator, "logs", name, "chief")
    assert bad_role.returncode == 2 and "roles: server, worker" in bad_role.stderr
    bad_index = paictl(emulator, "logs", name, "worker", "7")
    assert bad_index.returncode == 2


def test_logs_follow_streams_until_the_task_ends(emulator):
    """Load-independent: the task runs until the test stops the job, once the follower is streaming (a job with a
    fixed run time could end, and its pod be deleted, before a slow machine started the follower)."""
    emulator.scenario("Framework", "*", "stopped")
    done, name = submit(emulator, HELLO)
    wait_for(lambda: (emulator.get_object(FC, "Framework", "default", name).get("status") or {})
             .get("state") == "AttemptRunning")
    follower = start(emulator, "logs", name, "--follow")
    assert follower.stdout.readline() == f"[{name}-main-0] step 1\n"  # streaming
    assert follower.poll() is None
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    # The pod is deleted: its log stream ends, and so does logs. (Read through the same buffered file as the first
    # line: communicate() would read the pipe beneath it and miss what the buffer already holds.)
    out, err = follower.stdout.read(), follower.stderr.read()
    assert follower.wait(timeout=60) == 0, err
    assert out.splitlines()[-1] == f"[{name}-main-0] step 2"


def test_no_secret_is_ever_printed(emulator):
    emulator.scenario("Framework", "*", "failed", exit_code=1)
    outputs = []
    for args in (("--dry-run",), ("--follow",), ("--follow", "--format", "json")):
        emulator.delete_object(FC, "Framework", "default", "kubecanaryae986b08") \
            if emulator.get_object(FC, "Framework", "default", "kubecanaryae986b08") else None
        done, name = submit(emulator, CANARY_JOB, *args)
        outputs += [done.stdout, done.stderr]
    for args in (("status", name), ("status", name, "--format", "json"), ("status", name, "--follow"),
                 ("stop", name)):
        done = paictl(emulator, *args)
        outputs += [done.stdout, done.stderr]
    text = "\n".join(outputs)
    assert "secret/kubecanaryae986b08-configcred" in text
    for canary in CANARIES:
        assert canary not in text
    # and the values did reach the cluster, inside the Secrets
    secret = emulator.get_object("v1", "Secret", "default", "kubecanaryae986b08-configcred")
    assert secret is not None and secret["data"]


def test_a_retried_job_shows_each_attempt_for_itself(emulator):
    """137 is transient: the Framework runs a second attempt, whose task must not inherit the first one's death."""
    emulator.scenario("Framework", "*", "failed", exit_code=137, failures=1)
    done, name = submit(emulator, HELLO, "--follow", "--format", "json")
    assert done.returncode == 0, done.stderr
    views = [json.loads(line) for line in done.stdout.splitlines()[1:]]
    first = [v for v in views if v["attempt"] == 0 and v["tasks"] and v["tasks"][0]["exit_code"] == 137]
    assert first and first[-1]["tasks"][0]["diagnosis"] == "137 ContainerSigKillReceived"
    last = views[-1]
    assert (last["state"], last["attempt"]) == ("succeeded", 1)
    assert last["tasks"][0]["exit_code"] == 0 and last["tasks"][0]["diagnosis"] is None
    assert all(v["tasks"][0]["exit_code"] in (None, 0) for v in views if v["attempt"] == 1 and v["tasks"])


@pytest.mark.skipif(not Path("/usr/bin/kubectl").exists(), reason="kubectl is not installed")
def test_kubectl_sees_what_paictl_applied_and_its_edits_conflict(emulator):
    done, name = submit(emulator, HELLO)
    kubectl = ["/usr/bin/kubectl", "--kubeconfig", str(emulator.kubeconfig)]
    got = subprocess.run([*kubectl, "get", "framework", name, "-o", "json", "--show-managed-fields"],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["metadata"]["managedFields"][0]["manager"] == "paictl"
    patched = subprocess.run([*kubectl, "patch", "framework", name, "--type", "merge", "-p",
                              '{"spec": {"retryPolicy": {"maxRetryCount": 3}}}'], capture_output=True, text=True,
                             timeout=60)
    assert patched.returncode == 0, patched.stderr
    again, _ = submit(emulator, HELLO)
    assert again.returncode == 3
    assert ".spec.retryPolicy.maxRetryCount managed by 'kubectl-patch'" in again.stderr


def test_status_without_a_name_lists_local_runs_and_cluster_jobs(emulator, tmp_path):
    emulator.scenario("Framework", "*", "succeeded")
    done, name = submit(emulator, HELLO, "--follow")
    assert done.returncode == 0, done.stderr
    mars = paictl(emulator, "submit", str(JOBS / "kube" / "mars-job.yaml"), "--target", "mars")
    assert mars.returncode == 0, mars.stderr
    local = subprocess.run([sys.executable, "-m", "paictl", "submit", str(ROOT / "examples" / "local-ping-pong.yaml"),
                            "--target", "local", "--follow", "--run-dir", str(tmp_path / "runs")],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert local.returncode == 0, local.stderr
    listed = paictl(emulator, "status", "--run-dir", str(tmp_path / "runs"))
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[0] == ["NAME", "WHERE", "STATE", "ATTEMPT", "CODE", "AGE"]
    assert rows[1][:5] == ["local-ping-pong", str(tmp_path / "runs" / "local-ping-pong"), "succeeded", "0", "0"]
    assert rows[2][:6] == [name, "Framework", f"default/{name}", "succeeded", "0", "0"]
    assert rows[3][:4] == ["kube-mars-51819241", "MarsJob", "default/kube-mars-51819241", "pending"]
    # AGE as kubectl prints it: the local run was made seconds ago; the emulator's clock starts a day back
    assert re.fullmatch(r"\d+s", rows[1][-1]) and all(re.fullmatch(r"\d+h", row[-1]) for row in rows[2:]), \
        listed.stdout
    as_json = json.loads(paictl(emulator, "status", "--target", "mars", "--format", "json").stdout)
    assert [(v["name"], v["state"]) for v in as_json] == [("kube-mars-51819241", "pending")]
    assert as_json[0]["created"].endswith("Z")


@pytest.mark.parametrize("target", ["framework", "jobset"])
def test_a_context_namespace_no_object_can_carry_is_the_kubeconfig_s_error(emulator, tmp_path, target):
    """Without -n the objects go to the namespace the context names; one that cannot be a namespace is the
    kubeconfig's fault, said as such (exit 3, as a kubeconfig of the wrong shape), not `-n`'s and not a bug (70)."""
    emulator.write_kubeconfig(tmp_path / "kubeconfig", namespace="Team_A")
    done = paictl(emulator, "submit", HELLO, "--target", target)
    assert done.returncode == 3 and done.stdout == "", done.stderr
    assert done.stderr.splitlines()[-1].startswith("paictl: error: the kubeconfig's context names the namespace "
                                                   "'Team_A': a Kubernetes namespace is")
    assert emulator.count(method="PATCH") == 0 and emulator.count(method="POST") == 0  # nothing was applied
