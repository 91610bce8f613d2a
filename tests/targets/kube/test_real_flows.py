"""`paictl submit/status/stop/logs` end to end on the real control plane (tests/kube_real): kube-apiserver,
the controller manager (garbage collector, Job controller), the scheduler, kwok's nodes, FrameworkController and
the JobSet controller with its webhooks. Nothing is scripted: the controllers decide every state, and kwok moves the
pods (tests/kube_real/stages.yaml: a pod ends 2 s after it starts, with exit code 1 when its commands say `exit 1`,
and runs until deleted when they say `sleep infinity`).

What a real server cannot be made to do on demand (a 429, a 5xx, a lost answer, exact timing) stays with the
emulator's tests (test_kube_retries.py, test_kube_follow.py); tests/kube_emulator/test_parity.py holds the emulator
to this server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl, start, wait_for
from kube_real.jobs import with_commands

pytest.importorskip("kubernetes")

FC = "frameworkcontroller.microsoft.com/v1"
JOBSET = "jobset.x-k8s.io/v1alpha2"
HELLO = ROOT / "examples" / "hello-world.yaml"
TWO_ROLES = JOBS / "kube" / "two-roles.yaml"
SECRET_JOB = JOBS / "kube" / "secret-job.yaml"


def _job(tmp_path, source, command: str):
    return with_commands(source, command, tmp_path / "job.yaml")


def _framework_name(stdout: str) -> str:
    return re.search(r"framework\.frameworkcontroller\.microsoft\.com/(\w+)[ \"]", stdout).group(1)


def _state(cluster, name: str) -> str:
    done = paictl(cluster, "status", name, "--format", "json")
    return json.loads(done.stdout)["state"] if done.returncode == 0 else ""


def test_submit_follow_succeeded(real_cluster, tmp_path):
    """To success, into the namespace the kubeconfig's context names; then found by the job's own name, and not
    run again by a re-submit."""
    real_cluster.require("frameworkcontroller")
    namespace = real_cluster.namespace
    done = paictl(real_cluster, "submit", str(TWO_ROLES), "--target", "framework", "--follow", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    name = _framework_name(done.stdout)
    assert f"framework.frameworkcontroller.microsoft.com/{name} created" in done.stdout
    assert re.search(rf"{name}: succeeded \(attempt 0\), code 0", done.stdout), done.stdout
    assert re.search(r"worker-1  Completed  attempt 0  on kwok-node-\d", done.stdout), done.stdout
    framework = real_cluster.get_object(FC, "Framework", name)  # in the context's namespace
    assert framework["status"]["state"] == "Completed"
    managers = {entry["manager"]: entry["operation"] for entry in framework["metadata"]["managedFields"]}
    assert managers["paictl"] == "Apply" and "frameworkcontroller" in managers
    trigger = framework["status"]["attemptStatus"]["completionStatus"]["trigger"]  # the task FC says decided it
    why = f"{trigger['taskRoleName']}-{trigger['taskIndex']}: Succeeded; {trigger['message']}"
    shown = paictl(real_cluster, "status", "kube-two-roles")  # the job's name, found by the jobName annotation
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:2] == [f"{name}: Framework {namespace}/{name}",
                                             f"{name}: succeeded (attempt 0), code 0, decided by " + why], shown.stdout
    again = paictl(real_cluster, "submit", str(TWO_ROLES), "--target", "framework", "--follow")
    assert again.returncode == 3 and again.stdout == ""
    assert again.stderr == (f"paictl: error: framework.frameworkcontroller.microsoft.com/{name} already ran and "
                            f"succeeded ({why.split(': ', 1)[1]}); applying it again would not run it again: "
                            "`paictl submit --replace` deletes it and runs the job anew\n"), again.stderr
    missing = paictl(real_cluster, "status", "nosuchjob")
    assert missing.returncode == 3
    assert missing.stderr == (f"paictl: error: no local run 'nosuchjob' in {tmp_path / 'state/paictl/runs'}; on the "
                              f"cluster: no Framework, MarsJob or JobSet named 'nosuchjob' in namespace {namespace}\n")
    explicit = paictl(real_cluster, "status", "nosuchjob", "--target", "framework")
    assert explicit.returncode == 3
    assert explicit.stderr == f"paictl: error: no Framework named 'nosuchjob' in namespace {namespace}\n"
    nowhere = paictl(real_cluster, "submit", str(TWO_ROLES), "--target", "framework", "-n", "nowhere")
    create = f"kubectl --kubeconfig {real_cluster.kubeconfig} create namespace nowhere"
    assert nowhere.returncode == 3 and f"namespace 'nowhere' does not exist ({create})" in nowhere.stderr, \
        nowhere.stderr
    # the advice runs as printed (no KUBECONFIG in its shell): the namespace is there, and the submit goes through
    real_cluster.cluster_scoped.append("/api/v1/namespaces/nowhere")
    created = subprocess.run(["sh", "-c", create], capture_output=True, text=True, timeout=60,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
    assert created.returncode == 0 and created.stdout == "namespace/nowhere created\n", created.stderr
    assert paictl(real_cluster, "submit", str(TWO_ROLES), "--target", "framework", "--dry-run", "-n",
                  "nowhere").returncode == 0


def test_submit_follow_failed_says_why(real_cluster, tmp_path):
    real_cluster.require("frameworkcontroller")
    job = _job(tmp_path, HELLO, "exit 1")
    done = paictl(real_cluster, "submit", str(job), "--target", "framework", "--follow", timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    name = _framework_name(done.stdout)
    assert re.search(rf"{name}: failed \(attempt 0\), code 1", done.stdout), done.stdout
    # kwok keeps no log, so the exit rules see exit code 1 alone: OpenPAI's catch-all
    assert "main-0  Completed  attempt 0" in done.stdout and "exit 1  255 PAIRuntimeUnknownFailed" in done.stdout
    assert "decided by main-0: ContainerUnrecognizedFailed" in done.stdout, done.stdout


def test_stop_then_follow_reports_stopped_and_a_resubmit_is_refused(real_cluster, tmp_path):
    real_cluster.require("frameworkcontroller")
    job = _job(tmp_path, HELLO, "sleep infinity")
    done = paictl(real_cluster, "submit", str(job), "--target", "framework")
    assert done.returncode == 0, done.stderr
    name = _framework_name(done.stdout)
    assert f"paictl status {name} -n {real_cluster.namespace} --kubeconfig {real_cluster.kubeconfig} --follow" \
        in done.stderr, done.stderr
    wait_for(lambda: _state(real_cluster, name) == "running", seconds=60)
    stopped = paictl(real_cluster, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"framework.frameworkcontroller.microsoft.com/{name} stop requested\n"
    framework = real_cluster.get_object(FC, "Framework", name)
    assert framework["spec"]["executionType"] == "Stop"
    owners = {entry["manager"]: entry for entry in framework["metadata"]["managedFields"]}
    assert "f:executionType" in json.dumps(owners["paictl-stop"]["fieldsV1"])
    followed = paictl(real_cluster, "status", name, "--follow", timeout=120)
    assert followed.returncode == 4, followed.stdout + followed.stderr
    assert re.search(rf"{name}: stopped \(attempt 0\), code -210", followed.stdout), followed.stdout
    assert "-220 FrameworkAttemptCompletion" in followed.stdout, followed.stdout
    again = paictl(real_cluster, "stop", name, "--format", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["result"] == "already finished"
    resubmitted = paictl(real_cluster, "submit", str(job), "--target", "framework")
    assert resubmitted.returncode == 3
    assert resubmitted.stderr == (f"paictl: error: framework.frameworkcontroller.microsoft.com/{name} already ran "
                                  "and stopped (StopFrameworkRequested); applying it again would not run it again: "
                                  "`paictl submit --replace` deletes it and runs the job anew\n")
    replaced = paictl(real_cluster, "submit", str(job), "--target", "framework", "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert f"framework.frameworkcontroller.microsoft.com/{name} deleted (--replace; it was stopped)" in \
        replaced.stdout
    assert real_cluster.get_object(FC, "Framework", name)["spec"]["executionType"] == "Start"


def test_dry_run_creates_nothing(real_cluster):
    real_cluster.require("frameworkcontroller")
    done = paictl(real_cluster, "submit", str(SECRET_JOB), "--target", "framework", "--dry-run", "--follow")
    assert done.returncode == 0, done.stderr
    name = _framework_name(done.stdout)
    assert done.stdout.splitlines() == [f"secret/{name}-configcred created (server dry run)",
                                        f"secret/{name}-regcred created (server dry run)",
                                        f"framework.frameworkcontroller.microsoft.com/{name} created (server dry run)"]
    assert "--follow ignored" in done.stderr
    assert real_cluster.list_objects(FC, "Framework") == []
    assert [s for s in real_cluster.list_objects("v1", "Secret") if s["metadata"]["name"].startswith(name)] == []


def test_companions_are_owned_by_the_workload_and_the_garbage_collector_takes_them(real_cluster, tmp_path):
    """The real garbage collector (kube-controller-manager) deletes the Secrets with their Framework."""
    real_cluster.require("frameworkcontroller")
    job = _job(tmp_path, SECRET_JOB, "sleep infinity")  # still running when it is submitted again
    done = paictl(real_cluster, "submit", str(job), "--target", "framework")
    assert done.returncode == 0, done.stderr
    name = _framework_name(done.stdout)
    uid = real_cluster.get_object(FC, "Framework", name)["metadata"]["uid"]
    secrets = [s for s in real_cluster.list_objects("v1", "Secret") if s["metadata"]["name"].startswith(name)]
    assert len(secrets) == 2
    for secret in secrets:
        (reference,) = secret["metadata"]["ownerReferences"]
        assert reference == {"apiVersion": FC, "kind": "Framework", "name": name, "uid": uid, "controller": False,
                             "blockOwnerDeletion": False}
    again = paictl(real_cluster, "submit", str(job), "--target", "framework")  # the same references again
    assert again.returncode == 0, again.stderr
    assert again.stdout.endswith("nothing changed, the job is already submitted\n"), again.stdout
    real_cluster.plane.request("DELETE", f"/apis/{FC}/namespaces/{real_cluster.namespace}/frameworks/{name}")
    wait_for(lambda: not [s for s in real_cluster.list_objects("v1", "Secret")
                          if s["metadata"]["name"].startswith(name)], seconds=60)


def test_a_jobset_runs_to_success_through_its_jobs_and_pods(real_cluster):
    real_cluster.require("jobset")
    done = paictl(real_cluster, "submit", str(JOBS / "kube" / "jobset-job.yaml"), "--target", "jobset", "--follow",
                  timeout=150)
    assert done.returncode == 0, done.stdout + done.stderr
    (jobset,) = real_cluster.list_objects(JOBSET, "JobSet")
    name = jobset["metadata"]["name"]
    assert f"jobset.jobset.x-k8s.io/{name} created" in done.stdout
    assert jobset["status"].get("terminalState") == "Completed"
    job_lines = [line for line in done.stdout.splitlines() if line.startswith(f"{name}: ")]
    assert job_lines[-1] == f"{name}: succeeded (attempt 0), code 0: AllJobsCompleted: jobset completed successfully"
    # each task under its role's own name (param_server, which a Kubernetes name cannot hold), on a kwok node
    assert re.search(r"\n  param_server-0  Completed  attempt 0  on kwok-node-\d  exit 0", done.stdout), done.stdout
    assert re.search(r"\n  worker-1  Completed  attempt 0  on kwok-node-\d  exit 0", done.stdout), done.stdout
    assert {e["manager"]: e["operation"] for e in jobset["metadata"]["managedFields"]}["paictl"] == "Apply"
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 1, "restartStrategy": "BlockingRecreate"}
    # the JobSet controller's headless Service and child Jobs, owned by the JobSet
    assert real_cluster.get_object("v1", "Service", name)["spec"]["clusterIP"] == "None"
    # (which of them are left once the JobSet has completed is its controller's business: under successPolicy Any
    # one run found the worker Job already gone; the emulator's scripted controller always kept both)
    jobs = real_cluster.list_objects("batch/v1", "Job")
    assert jobs and {j["metadata"]["name"] for j in jobs} <= {f"{name}-param-server-0", f"{name}-worker-0"}
    assert all(j["metadata"]["ownerReferences"][0]["uid"] == jobset["metadata"]["uid"] for j in jobs)


def _sleeping_jobset(real_cluster, tmp_path) -> str:
    """Submit a JobSet whose tasks sleep for ever; its name."""
    real_cluster.require("jobset")
    job = _job(tmp_path, JOBS / "kube" / "jobset-job.yaml", "sleep infinity")
    done = paictl(real_cluster, "submit", str(job), "--target", "jobset")
    assert done.returncode == 0, done.stderr
    (jobset,) = real_cluster.list_objects(JOBSET, "JobSet")
    return jobset["metadata"]["name"]


def test_stopping_a_running_jobset_deletes_it_and_its_pods(real_cluster, tmp_path):
    name = _sleeping_jobset(real_cluster, tmp_path)
    wait_for(lambda: _state(real_cluster, name) == "running", seconds=60)
    follower = start(real_cluster, "status", name, "--follow")
    first = follower.stdout.readline()  # following (a follower that starts after the deletion finds no job)
    assert first.startswith(f"{name}: "), first + follower.stderr.read()
    stopped = paictl(real_cluster, "stop", "kube-jobset", timeout=120)  # the job's name, by its jobName annotation
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"jobset.jobset.x-k8s.io/{name} deleted (foreground)\n"
    out, err = follower.communicate(timeout=120)
    assert follower.returncode == 4, out + err
    assert [line for line in (first + out).splitlines() if line.startswith(f"{name}: ")][-1] == \
        f"{name}: stopped (attempt 0): the JobSet was deleted"
    wait_for(lambda: real_cluster.get_object(JOBSET, "JobSet", name) is None, seconds=60)
    wait_for(lambda: not real_cluster.list_objects("v1", "Pod") and not real_cluster.list_objects("batch/v1", "Job"),
             seconds=60)


def test_the_resume_a_suspended_jobset_is_told_runs_as_printed_with_the_users_flags(real_cluster, tmp_path):
    """`paictl stop --suspend` of a JobSet no Kueue manages, then `status`: the resume it prints is a command that
    runs as printed, in a shell with no KUBECONFIG, against the cluster, context and namespace the user named
    (here none of them kubectl's defaults: the kubeconfig's current context is a cluster that does not answer, and
    the chosen context's namespace is not the job's). It runs the JobSet again and takes paictl's mark off."""
    import shutil
    from types import SimpleNamespace

    import yaml

    real_cluster.require("jobset")
    if shutil.which("kubectl") is None:
        from kube_real.fixtures import unavailable

        unavailable("kubectl is not installed")
    config = yaml.safe_load(real_cluster.kubeconfig.read_text())
    config["contexts"][0]["context"]["namespace"] = "default"
    config["clusters"].append({"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}})
    config["contexts"].append({"name": "elsewhere", "context": {"cluster": "nowhere", "user": "user"}})
    config["current-context"] = "elsewhere"
    (tmp_path / "my config").mkdir()
    kubeconfig = tmp_path / "my config" / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    user = SimpleNamespace(kubeconfig=kubeconfig)  # kube_cli.paictl adds --kubeconfig
    flags = ("--context", "real", "-n", real_cluster.namespace)
    job = _job(tmp_path, JOBS / "kube" / "jobset-job.yaml", "sleep infinity")
    done = paictl(user, "submit", str(job), "--target", "jobset", *flags)
    assert done.returncode == 0, done.stderr
    (jobset,) = real_cluster.list_objects(JOBSET, "JobSet")
    name = jobset["metadata"]["name"]
    assert (f"paictl: follow it with: paictl status {name} -n {real_cluster.namespace} --kubeconfig '{kubeconfig}' "
            "--context real --follow") in done.stderr, done.stderr

    def state() -> str:
        shown = paictl(user, "status", name, "--format", "json", *flags)
        return json.loads(shown.stdout)["state"] if shown.returncode == 0 else ""

    def running_pods() -> list:
        return [p for p in real_cluster.list_objects("v1", "Pod") if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]

    wait_for(lambda: state() == "running" and len(running_pods()) == 3, seconds=60)
    stopped = paictl(user, "stop", name, "--suspend", *flags)
    assert stopped.returncode == 0, stopped.stderr
    wait_for(lambda: not real_cluster.list_objects("v1", "Pod"), seconds=60)
    shown = json.loads(paictl(user, "status", name, "--format", "json", *flags).stdout)
    assert shown["state"] == "stopped"
    resume = re.fullmatch(r"suspended by paictl stop --suspend \(resume: (.*)\)", shown["message"]).group(1)
    assert resume == (f"kubectl --kubeconfig '{kubeconfig}' --context real patch jobset {name} "
                      f"-n {real_cluster.namespace} --type merge -p "
                      """'{"metadata":{"annotations":{"paictl.dev/suspended-by":null}},"spec":{"suspend":false}}'""")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}  # no KUBECONFIG, no ~/.kube
    ran = subprocess.run(["sh", "-c", resume], capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"jobset.jobset.x-k8s.io/{name} patched\n"
    jobset = real_cluster.get_object(JOBSET, "JobSet", name)
    assert jobset["spec"]["suspend"] is False and "paictl.dev/suspended-by" not in jobset["metadata"]["annotations"]
    wait_for(lambda: state() == "running" and len(running_pods()) == 3, seconds=60)


def test_a_suspended_jobset_is_deleted_by_a_plain_stop_and_not_suspended_twice(real_cluster, tmp_path):
    """A JobSet `stop --suspend` keeps suspended reads "stopped", but it has no verdict to keep: a second
    `--suspend` has nothing to do, and a plain `stop` deletes it, as it deletes a running one."""
    name = _sleeping_jobset(real_cluster, tmp_path)
    suspended = paictl(real_cluster, "stop", name, "--suspend", "--format", "json")
    assert suspended.returncode == 0 and json.loads(suspended.stdout)["result"] == "suspended", suspended.stderr
    again = paictl(real_cluster, "stop", name, "--suspend", "--format", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["result"] == "already suspended", again.stderr
    stopped = paictl(real_cluster, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"jobset.jobset.x-k8s.io/{name} deleted (foreground)\n"
    wait_for(lambda: not real_cluster.list_objects(JOBSET, "JobSet"), seconds=60)


def test_logs_without_a_kubelet_are_one_line(real_cluster, tmp_path):
    """kwok runs no container: the API server answers a log request for a running pod by failing to reach the
    node's kubelet, which paictl reports in one line (exit 3); a pod that is gone is named as such."""
    real_cluster.require("frameworkcontroller")
    job = _job(tmp_path, HELLO, "sleep infinity")
    done = paictl(real_cluster, "submit", str(job), "--target", "framework")
    name = _framework_name(done.stdout)
    wait_for(lambda: _state(real_cluster, name) == "running", seconds=60)
    logs = paictl(real_cluster, "logs", name, "main", "0")
    assert logs.returncode == 3, logs.stdout + logs.stderr
    assert logs.stderr.count("\n") == 1 and "Traceback" not in logs.stderr, logs.stderr
    assert f"{name}-main-0" in logs.stderr


def test_logs_of_a_pod_on_no_node_say_there_is_none_yet(real_cluster, tmp_path):
    """A pod the scheduler cannot place (more GPUs than any node has): the API server answers its log with 204 and
    no body (the emulator answered 400); paictl says there is no log yet instead of printing nothing."""
    real_cluster.require("frameworkcontroller")
    job = tmp_path / "pending.yaml"
    job.write_text(HELLO.read_text().replace("gpu: 0", "gpu: 100"))
    done = paictl(real_cluster, "submit", str(job), "--target", "framework")
    assert done.returncode == 0, done.stderr
    name = _framework_name(done.stdout)
    wait_for(lambda: [p for p in real_cluster.list_objects("v1", "Pod")
                      if p["metadata"]["name"] == f"{name}-main-0"], seconds=60)
    raw = real_cluster.plane.raw("GET", f"/api/v1/namespaces/{real_cluster.namespace}/pods/{name}-main-0/log")
    assert raw[0] == 204 and raw[2] == b""
    logs = paictl(real_cluster, "logs", name)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == ""
    assert logs.stderr == f"paictl: {name}-main-0: no log yet: the pod is pending and on no node\n"


def test_forbidden_is_one_line_naming_the_verb(real_cluster, tmp_path):
    """A user RBAC gives nothing: the real authorizer's 403 names the user and the verb."""
    real_cluster.require("frameworkcontroller")
    kubeconfig = real_cluster.user_kubeconfig(tmp_path / "alice.kubeconfig", "alice")
    done = subprocess_paictl(kubeconfig, "submit", str(HELLO), "--target", "framework")
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.startswith("paictl: error: forbidden: you may not "), done.stderr
    assert 'User "alice" cannot' in done.stderr and done.stderr.count("\n") == 1
    status = subprocess_paictl(kubeconfig, "status", "whatever", "--target", "framework")
    assert status.returncode == 3 and "forbidden: you may not get" in status.stderr, status.stderr


def test_what_rbac_refuses_midway_is_one_line_and_a_refused_apply_leaves_nothing(real_cluster, tmp_path):
    """A user whose Role lets them manage Secrets and read Frameworks and pods, but neither apply a Framework nor
    watch pods: their submit removes the Secrets it had created and says so in one line; their follow of a job
    someone else submitted is refused its watch of the pods, in one line (exit 3 both)."""
    real_cluster.require("frameworkcontroller")
    namespace = real_cluster.namespace
    rbac = "rbac.authorization.k8s.io"
    real_cluster.plane.apply({"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": {
        "name": "partial", "namespace": namespace}, "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["pods", "pods/log", "events"], "verbs": ["get", "list"]},
            {"apiGroups": ["frameworkcontroller.microsoft.com"], "resources": ["frameworks"],
             "verbs": ["get", "list", "watch"]}]})
    real_cluster.plane.apply({"apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": {
        "name": "partial", "namespace": namespace}, "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "partial"},
        "subjects": [{"apiGroup": rbac, "kind": "User", "name": "bob"}]})
    kubeconfig = real_cluster.user_kubeconfig(tmp_path / "bob.kubeconfig", "bob")
    refused = subprocess_paictl(kubeconfig, "submit", str(SECRET_JOB), "--target", "framework")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert ("forbidden: you may not patch (server-side apply) frameworks.frameworkcontroller.microsoft.com in "
            f"namespace {namespace} (RBAC): ") in refused.stderr, refused.stderr
    assert "removed what this submit had created: secret/" in refused.stderr
    assert real_cluster.list_objects("v1", "Secret") == []
    done = paictl(real_cluster, "submit", str(_job(tmp_path, HELLO, "sleep infinity")), "--target", "framework")
    assert done.returncode == 0, done.stderr
    followed = subprocess_paictl(kubeconfig, "status", _framework_name(done.stdout), "--follow")
    assert followed.returncode == 3, followed.stdout + followed.stderr
    assert followed.stderr.startswith(f"paictl: error: forbidden: you may not watch pods in namespace {namespace} "
                                      "(RBAC)"), followed.stderr
    assert followed.stderr.count("\n") == 1


def subprocess_paictl(kubeconfig, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "paictl", *args, "--kubeconfig", str(kubeconfig)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_a_collection_is_listed_in_pages(real_cluster):
    """More objects than one page (paictl lists in chunks, following the server's `continue` tokens): every one is
    listed."""
    real_cluster.require("frameworkcontroller")
    from paictl.targets.kube.connection import connect

    cluster = connect(kubeconfig=str(real_cluster.kubeconfig))
    for index in range(7):
        real_cluster.plane.request("POST", f"/api/v1/namespaces/{real_cluster.namespace}/configmaps",
                                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"page-{index}"}})
    listed = cluster.list_all(f"/api/v1/namespaces/{real_cluster.namespace}/configmaps", limit=3)
    names = sorted(item["metadata"]["name"] for item in listed["items"])
    assert [n for n in names if n.startswith("page-")] == [f"page-{i}" for i in range(7)]


def test_a_follower_survives_an_apiserver_restart(real_cluster, tmp_path):
    """kube-apiserver restarts under a follower: its watches end, and the new server's watch cache starts over
    (an older resourceVersion is answered 410 Gone: the follower then lists again); it goes on to the verdict."""
    real_cluster.require("frameworkcontroller")
    job = _job(tmp_path, HELLO, "sleep infinity")
    done = paictl(real_cluster, "submit", str(job), "--target", "framework")
    name = _framework_name(done.stdout)
    wait_for(lambda: _state(real_cluster, name) == "running", seconds=60)
    follower = start(real_cluster, "status", name, "--follow", "--format", "json")
    # following once it has printed the job (a fixed pause lost the race on a loaded machine: the follower was
    # still starting, met the stopped server and rightly exited 3)
    first = follower.stdout.readline()
    assert json.loads(first)["state"] == "running", first + follower.stderr.read()
    real_cluster.plane.restart_apiserver()
    stopped = paictl(real_cluster, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    out, err = follower.communicate(timeout=120)
    assert follower.returncode == 4, out + err
    assert json.loads((first + out).splitlines()[-1])["state"] == "stopped"


def test_the_readme_quick_start_runs_to_success_with_kubectl(real_cluster, tmp_path):
    """The README's `paictl compile --barrier-rbac ... | kubectl apply -f -` (into the namespace the compiled
    objects name, `default`), then `paictl status`: FrameworkController runs the pods on kwok's nodes."""
    import os
    import shutil
    import subprocess
    import sys

    real_cluster.require("frameworkcontroller")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is required in CI", pytrace=False)
        pytest.skip("kubectl is not installed")
    from test_quick_start_kubectl import readme_pipe

    command, shown = readme_pipe()
    env = {"PATH": f"{os.path.dirname(sys.executable)}:{os.path.dirname(kubectl)}:/usr/bin:/bin",
           "HOME": str(tmp_path), "KUBECONFIG": str(real_cluster.kubeconfig)}
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == shown  # exactly what the README shows
    name = next(line.split("/")[1].split()[0] for line in shown if line.startswith("framework."))
    try:
        framework = real_cluster.get_object(FC, "Framework", name, "default")
        accounts = {role["task"]["pod"]["spec"].get("serviceAccountName") for role in framework["spec"]["taskRoles"]}
        assert accounts == {"frameworkbarrier"}  # every pod runs as the account the output created
        rbac = "rbac.authorization.k8s.io"
        binding = real_cluster.get_object(f"{rbac}/v1", "RoleBinding", "frameworkbarrier", "default")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "frameworkbarrier", "namespace": "default"}]
        assert binding["roleRef"] == {"apiGroup": rbac, "kind": "Role", "name": "frameworkbarrier"}
        # FrameworkController's example ([PREREQUISITE] in example/framework/extension/frameworkbarrier.yaml) grants
        # `kubectl create clusterrole frameworkbarrier --verb=get,list,watch --resource=frameworks`: kubectl itself
        # says which rules that is; the Role grants the same, in the job's namespace.
        upstream = subprocess.run([kubectl, "create", "clusterrole", "frameworkbarrier", "--verb=get,list,watch",
                                   "--resource=frameworks", "--dry-run=client", "-o", "json"], env=env,
                                  capture_output=True, text=True, timeout=60)
        assert upstream.returncode == 0, upstream.stderr
        role = real_cluster.get_object(f"{rbac}/v1", "Role", "frameworkbarrier", "default")
        assert role["rules"] == json.loads(upstream.stdout)["rules"]
        followed = paictl(real_cluster, "status", name, "-n", "default", "--follow", timeout=120)
        assert followed.returncode == 0, followed.stdout + followed.stderr
        assert re.search(rf"{name}: succeeded", followed.stdout), followed.stdout
    finally:
        real_cluster.plane.raw("DELETE", f"/apis/{FC}/namespaces/default/frameworks/{name}")


def test_a_marsjob_is_accepted_by_kubedls_crd(real_cluster):
    """KubeDL's controller is not run (its dependencies are Kubernetes 0.22's), but its MarsJob CRD is installed:
    the real API server checks paictl's MarsJob against the CRD's schema in a server dry run."""
    real_cluster.require("kubedl-crd")
    done = paictl(real_cluster, "submit", str(JOBS / "kube" / "mars-job.yaml"), "--target", "mars", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert re.search(r"marsjob\.training\.kubedl\.io/\S+ created \(server dry run\)", done.stdout), done.stdout
    assert real_cluster.list_objects("training.kubedl.io/v1alpha1", "MarsJob") == []
