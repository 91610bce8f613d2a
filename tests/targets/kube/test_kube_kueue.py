"""`paictl stop --suspend` of a JobSet Kueue manages (issue 28, D2), on the real control plane with Kueue v0.17
(tests/kube_real: a plane of its own, started only for these tests, with JobSet and Kueue; each test gets a
LocalQueue into a ClusterQueue that admits from its namespace only).

kubernetes-sigs/kueue pkg/controller/jobframework/reconciler.go ReconcileGenericJob: a suspended job whose Workload
is admitted is started again ("Job admitted, unsuspending"), so `spec.suspend: true` alone is undone and the pods
come back; a job whose Workload is not admitted is suspended again, so `spec.suspend: false` alone does not resume
it. Kueue's stop is the Workload's `spec.active: false` (apis/kueue workload_types.go: "Changing active from true to
false will evict any running workloads"): evicted, the job suspended, its quota freed, kept so until it is active
again.

The emulator serves only what the real plane cannot: an older Kueue's API (Workloads as v1beta1 alone).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import JOBS, ROOT
from kube_cli import paictl, wait_for
from kube_real.jobs import with_commands

pytest.importorskip("kubernetes")

API = "jobset.x-k8s.io/v1alpha2"
WORKLOAD_API = "kueue.x-k8s.io/v1beta2"
JOB = JOBS / "kube" / "jobset-job.yaml"  # three pods of 1 CPU and 512 MiB each
#: the ClusterQueue behind each test's LocalQueue `team-queue`: room for one such JobSet, not two
QUOTA = {"cpu": "4", "memory": "8Gi"}
#: Kueue reconciles within a second: a JobSet it would start again is running well before this
SETTLE_SECONDS = 6.0


@pytest.fixture(scope="session")
def kueue_control_plane(tmp_path_factory):
    """A real control plane with JobSet and Kueue (`KUEUE_CONTROLLERS`): the session's `kube_control_plane` runs
    without Kueue, whose webhooks would see every other test's JobSets and Jobs."""
    from kube_real.control_plane import KUEUE_CONTROLLERS, missing
    from kube_real.fixtures import running_control_plane, unavailable

    reason = missing(KUEUE_CONTROLLERS)
    if reason is not None:
        unavailable(reason)
    yield from running_control_plane(tmp_path_factory.mktemp("kube-kueue"), controllers=KUEUE_CONTROLLERS)


@pytest.fixture
def kueue_cluster(kueue_control_plane, request, tmp_path):
    """That plane from a namespace of this test's own, with the LocalQueue `team-queue` (QUOTA)."""
    from kube_real.fixtures import RealCluster, kueue_queue

    cluster = RealCluster(kueue_control_plane, request.node.name, tmp_path)
    try:
        cluster.require("jobset", "kueue")
        kueue_queue(cluster, "team-queue", QUOTA)
        yield cluster
    finally:
        cluster.cleanup()


def _submit(cluster, tmp_path, name: str = "kube-jobset", queue: str = "team-queue") -> str:
    """A JobSet of three pods that run until deleted, queued in `queue`; returns its name."""
    job = with_commands(JOB, "sleep infinity", tmp_path / f"{name}.yaml")
    job.write_text(job.read_text().replace("name: kube-jobset\n", f"name: {name}\n", 1))
    profile = tmp_path / "queued.yaml"
    profile.write_text((ROOT / "compiler" / "profiles" / "default.yaml").read_text()
                       + f"jobset:\n  queueName: {queue}\n")
    done = paictl(cluster, "submit", str(job), "--target", "jobset", "--profile", str(profile))
    assert done.returncode == 0, done.stderr
    return re.search(r"jobset\.jobset\.x-k8s\.io/(\S+) created", done.stdout).group(1)


def _pods(cluster, name: str, running: bool = True) -> list:
    return [p for p in cluster.list_objects("v1", "Pod")
            if p["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == name
            and not p["metadata"].get("deletionTimestamp")
            and (not running or (p.get("status") or {}).get("phase") == "Running")]


def _workloads(cluster, name: str) -> list[dict]:
    """The Workloads Kueue made for JobSet `name`: none until its controller has seen the JobSet."""
    jobset = cluster.get_object(API, "JobSet", name)
    return [w for w in cluster.list_objects(WORKLOAD_API, "Workload")
            if w["metadata"]["labels"].get("kueue.x-k8s.io/job-uid") == jobset["metadata"]["uid"]]


def _workload(cluster, name: str) -> dict:
    (workload,) = _workloads(cluster, name)
    return workload


def _workload_condition(cluster, name: str, kind: str) -> tuple[str, str] | None:
    """Condition `kind` of the JobSet's one Workload; None while Kueue has not made the Workload yet."""
    found = _workloads(cluster, name)
    if not found:
        return None
    (workload,) = found
    return _conditions(workload).get(kind)


def _conditions(obj: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in (obj.get("status") or {}).get("conditions") or []}


def _status(cluster, name: str) -> dict:
    shown = paictl(cluster, "status", name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def _admitted_and_running(cluster, name: str, queue: str = "team-queue") -> dict:
    wait_for(lambda: len(_pods(cluster, name)) == 3, seconds=60)
    workload = _workload(cluster, name)
    assert _conditions(workload)["Admitted"] == ("True", "Admitted")
    assert workload["status"]["admission"]["clusterQueue"] == f"{cluster.namespace}-{queue}"
    return workload


def test_kueue_reads_its_metrics_certificate_from_an_etc_of_its_own(kueue_cluster):
    """The certificate Kueue reads from /etc/kueue/metrics/certs is there for the kueue process alone: the
    machine's /etc has no such folder, and the folder under the overlay's tmpfs stays empty outside Kueue's mount
    namespace."""
    plane = kueue_cluster.plane
    seen = Path(f"/proc/{plane.processes['kueue'].pid}/root/etc/kueue/metrics/certs")
    assert (seen / "tls.crt").read_bytes() == (plane.dir / "kueue-metrics.crt").read_bytes()
    assert (seen / "tls.key").read_bytes() == (plane.dir / "kueue-metrics.key").read_bytes()
    assert not Path("/etc/kueue").exists()
    assert list((plane.dir / "kueue-etc").iterdir()) == []


def test_suspending_a_queued_jobset_deactivates_its_workload_and_it_stays_stopped(kueue_cluster, tmp_path):
    name = _submit(kueue_cluster, tmp_path)
    jobset = kueue_cluster.get_object(API, "JobSet", name)
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-queue"
    workload = _admitted_and_running(kueue_cluster, name)  # Kueue admitted it and unsuspended it
    assert workload["spec"]["queueName"] == "team-queue" and workload["spec"]["active"] is True
    assert [ref["uid"] for ref in workload["metadata"]["ownerReferences"]] == [jobset["metadata"]["uid"]]
    stopped = paictl(kueue_cluster, "stop", name, "--suspend")
    assert stopped.returncode == 0, stopped.stderr
    wait_for(lambda: not _pods(kueue_cluster, name, running=False), seconds=60)
    time.sleep(SETTLE_SECONDS)  # Kueue would have started it again by now
    assert not _pods(kueue_cluster, name, running=False)
    assert kueue_cluster.get_object(API, "JobSet", name)["spec"]["suspend"] is True
    wl = workload["metadata"]["name"]
    assert stopped.stdout == f"jobset.jobset.x-k8s.io/{name} suspended (Kueue workload {wl} deactivated)\n"
    workload = _workload(kueue_cluster, name)
    assert workload["spec"]["active"] is False
    conditions = _conditions(workload)
    assert conditions["Evicted"] == ("True", "Deactivated") and conditions["Admitted"][0] == "False"
    assert "admission" not in workload["status"]
    shown = _status(kueue_cluster, name)
    assert shown["state"] == "stopped"
    kubectl, where = f"kubectl --kubeconfig {kueue_cluster.kubeconfig}", f"-n {kueue_cluster.namespace}"
    assert shown["message"] == (
        f"suspended by paictl stop --suspend, Kueue workload {wl} deactivated (resume: {kubectl} patch "
        f"workloads.kueue.x-k8s.io {wl} {where} --type merge -p '{{\"spec\":{{\"active\":true}}}}' && {kubectl} "
        f"annotate jobset {name} {where} paictl.dev/suspended-by- paictl.dev/deactivated-kueue-workloads-)")


def test_resuming_as_the_status_says_runs_the_jobset_again(kueue_cluster, tmp_path):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        from kube_real.fixtures import unavailable

        unavailable("kubectl is not installed")
    name = _submit(kueue_cluster, tmp_path)
    _admitted_and_running(kueue_cluster, name)
    assert paictl(kueue_cluster, "stop", name, "--suspend").returncode == 0
    wait_for(lambda: not _pods(kueue_cluster, name, running=False), seconds=60)
    env = {**os.environ, "KUBECONFIG": str(kueue_cluster.kubeconfig)}

    def shell(command: str) -> None:
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr

    # what the status said before: the JobSet's own `spec.suspend: false`, which Kueue undoes (not admitted)
    shell(f"kubectl patch jobset {name} --type merge -p '{{\"spec\":{{\"suspend\":false}}}}'")
    time.sleep(SETTLE_SECONDS)
    assert not _pods(kueue_cluster, name, running=False)
    assert kueue_cluster.get_object(API, "JobSet", name)["spec"]["suspend"] is True
    resume = re.search(r"\(resume: (.*)\)$", _status(kueue_cluster, name)["message"]).group(1)
    shell(resume)
    workload = _admitted_and_running(kueue_cluster, name)
    assert workload["spec"]["active"] is True and _conditions(workload)["Requeued"] == ("True", "Reactivated")
    jobset = kueue_cluster.get_object(API, "JobSet", name)
    assert jobset["spec"]["suspend"] is False and "paictl.dev/suspended-by" not in jobset["metadata"]["annotations"]
    wait_for(lambda: _status(kueue_cluster, name)["state"] == "running", seconds=30)


def _urgent(cluster, name: str, queue: str, priority: str) -> str:
    """A JobSet of one pod of 2 CPUs that runs until deleted, in `queue` at the WorkloadPriorityClass `priority`
    (a label at creation: Kueue reads it when it makes the Workload; paictl's profiles set no priority)."""
    cluster.plane.apply({"apiVersion": API, "kind": "JobSet", "metadata": {
        "name": name, "namespace": cluster.namespace,
        "labels": {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": priority}},
        "spec": {"replicatedJobs": [{"name": "main", "replicas": 1, "template": {"spec": {
            "parallelism": 1, "completions": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [{
                "name": "main", "image": "busybox", "command": ["sh", "-c"], "args": ["sleep infinity"],
                "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}]}}}}}]}})
    return name


def test_status_after_a_resume_through_kueue_alone_says_what_kueue_did(kueue_cluster, tmp_path):
    """A user resumes by the first of the printed commands alone (the Workload active again) and leaves paictl's
    annotations on the JobSet: `status` reads the Workload they name and says what is true, still deactivated,
    queued, running, or preempted by Kueue, not "suspended by paictl" whenever the JobSet is suspended."""
    from kube_real.fixtures import KUEUE_API, kueue_queue
    from kube_real.control_plane import api_path

    plane = kueue_cluster.plane
    high = f"{kueue_cluster.namespace}-high"  # cluster-scoped: one per test
    plane.apply({"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": high},
                 "value": 1000})
    kueue_cluster.cluster_scoped.append(api_path(KUEUE_API, "WorkloadPriorityClass", None, high))
    queue = kueue_queue(kueue_cluster, "preempting", QUOTA, preemption={"withinClusterQueue": "LowerPriority"})
    env = {**os.environ, "KUBECONFIG": str(kueue_cluster.kubeconfig)}
    name = _submit(kueue_cluster, tmp_path, queue=queue)
    _admitted_and_running(kueue_cluster, name, queue)
    assert paictl(kueue_cluster, "stop", name, "--suspend").returncode == 0
    wait_for(lambda: not _pods(kueue_cluster, name, running=False), seconds=60)
    shown = _status(kueue_cluster, name)
    assert shown["state"] == "stopped" and shown["message"].startswith("suspended by paictl stop --suspend, Kueue "
                                                                       "workload "), shown
    activate = re.search(r"\(resume: (.*)\)$", shown["message"]).group(1).split(" && ")[0]
    assert " patch workloads.kueue.x-k8s.io " in activate

    # another JobSet takes 2 of the 4 CPUs the stopped one left free; then the user resumes through Kueue alone
    first = _urgent(kueue_cluster, "first-urgent", queue, high)
    wait_for(lambda: len(_pods(kueue_cluster, first)) == 1, seconds=60)
    done = subprocess.run(["sh", "-c", activate], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: _workload(kueue_cluster, name)["spec"]["active"] is True, seconds=10)
    time.sleep(SETTLE_SECONDS)  # Kueue has tried to admit it: 3 CPUs do not fit beside 2
    jobset = kueue_cluster.get_object(API, "JobSet", name)
    assert jobset["spec"]["suspend"] is True and "paictl.dev/suspended-by" in jobset["metadata"]["annotations"]
    assert _conditions(_workload(kueue_cluster, name)).get("Admitted", ("False",))[0] == "False"
    shown = _status(kueue_cluster, name)
    assert shown["state"] == "pending", shown
    assert shown["message"].startswith(f"resumed: queued in Kueue's LocalQueue {queue}, not admitted yet ("), shown

    # the other one gone, Kueue admits it and it runs, the annotations still on
    plane.request("DELETE", api_path(API, "JobSet", kueue_cluster.namespace, first))
    _admitted_and_running(kueue_cluster, name, queue)
    wait_for(lambda: _status(kueue_cluster, name)["state"] == "running", seconds=30)

    # a JobSet of a higher priority comes: Kueue preempts this one, whose JobSet is suspended again
    second = _urgent(kueue_cluster, "second-urgent", queue, high)
    wait_for(lambda: _conditions(_workload(kueue_cluster, name)).get("Evicted", ("", ""))[0] == "True", seconds=60)
    evicted = _conditions(_workload(kueue_cluster, name))["Evicted"]
    assert evicted[1] == "Preempted", evicted
    wait_for(lambda: kueue_cluster.get_object(API, "JobSet", name)["spec"]["suspend"] is True, seconds=30)
    wait_for(lambda: len(_pods(kueue_cluster, second)) == 1, seconds=60)
    shown = _status(kueue_cluster, name)
    assert shown["state"] == "pending", shown
    assert shown["message"].startswith(f"preempted by Kueue after a resume (workload "
                                       f"{_workload(kueue_cluster, name)['metadata']['name']}: Preempted: "), shown
    assert shown["message"].endswith("; queued to be admitted again"), shown
    # not finished, so a stop acts: suspended again, the Workload deactivated again
    again = paictl(kueue_cluster, "stop", name, "--suspend")
    assert again.returncode == 0, again.stderr
    workload = _workload(kueue_cluster, name)
    assert again.stdout == (f"jobset.jobset.x-k8s.io/{name} suspended (Kueue workload "
                            f"{workload['metadata']['name']} deactivated)\n")
    assert workload["spec"]["active"] is False and _status(kueue_cluster, name)["state"] == "stopped"


def test_a_suspend_that_leaves_the_workload_active_is_undone_by_kueue(kueue_cluster, tmp_path):
    """Why `stop --suspend` deactivates the Workload: the JobSet's `spec.suspend: true` alone (all paictl did before
    issue 28) is undone by Kueue while the Workload stays admitted, and the pods come back."""
    name = _submit(kueue_cluster, tmp_path)
    _admitted_and_running(kueue_cluster, name)
    before = {p["metadata"]["uid"] for p in _pods(kueue_cluster, name)}
    kueue_cluster.plane.request("PATCH", f"/apis/{API}/namespaces/{kueue_cluster.namespace}/jobsets/{name}",
                                {"spec": {"suspend": True}}, content_type="application/merge-patch+json")
    # its pods were deleted (suspended), and three new ones run (Kueue unsuspended it)
    wait_for(lambda: len(pods := _pods(kueue_cluster, name)) == 3
             and not {p["metadata"]["uid"] for p in pods} & before, seconds=60)
    assert kueue_cluster.get_object(API, "JobSet", name)["spec"]["suspend"] is False
    assert _workload(kueue_cluster, name)["spec"]["active"] is True


def test_a_jobset_over_the_quota_waits_queued_until_a_suspend_frees_it(kueue_cluster, tmp_path):
    first = _submit(kueue_cluster, tmp_path, "first")
    _admitted_and_running(kueue_cluster, first)
    second = _submit(kueue_cluster, tmp_path, "second")
    waiting = wait_for(lambda: _workload_condition(kueue_cluster, second, "QuotaReserved"), seconds=30)
    assert waiting == ("False", "Pending")
    time.sleep(SETTLE_SECONDS)
    assert not _pods(kueue_cluster, second, running=False)
    shown = _status(kueue_cluster, second)
    assert shown["state"] == "pending"
    assert shown["message"] == "queued in Kueue's LocalQueue team-queue, not admitted yet"
    assert paictl(kueue_cluster, "stop", first, "--suspend").returncode == 0
    _admitted_and_running(kueue_cluster, second)  # the quota the first one held is free
    assert _status(kueue_cluster, second)["state"] == "running"
    assert _status(kueue_cluster, first)["state"] == "stopped"


def test_a_kueue_serving_workloads_as_v1beta1_only_gets_them_deactivated(emulator, tmp_path):
    """Kueue before 0.15 serves Workloads as kueue.x-k8s.io/v1beta1 alone (v1beta2 answers 404), a release the real
    plane does not run: the emulator serves that API, and the Workload is seeded as Kueue would make it (no Kueue
    runs there: nothing unsuspends the JobSet)."""
    from kube_emulator.resources import ResourceType

    emulator.registry.install(ResourceType(group="kueue.x-k8s.io", version="v1beta1", kind="Workload",
                                           plural="workloads", custom=True, status_subresource=True))
    emulator.scenario("JobSet", "*", "running")
    name = _submit(emulator, tmp_path)
    jobset = emulator.get_object(API, "JobSet", "default", name)
    owner = {"apiVersion": API, "kind": "JobSet", "name": name, "uid": jobset["metadata"]["uid"], "controller": True,
             "blockOwnerDeletion": True}
    workload = f"jobset-{name}-0a1b2"
    for seeded, labels, owners in ((workload, {"kueue.x-k8s.io/job-uid": jobset["metadata"]["uid"]}, [owner]),
                                   ("another-jobs", {"kueue.x-k8s.io/job-uid": "another-uid"}, [])):
        emulator.create_object({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                                "metadata": {"name": seeded, "namespace": "default", "labels": labels,
                                             "ownerReferences": owners},
                                "spec": {"active": True, "queueName": "team-queue"}})
    stopped = paictl(emulator, "stop", name, "--suspend")
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"jobset.jobset.x-k8s.io/{name} suspended (Kueue workload {workload} deactivated)\n"
    active = {w["metadata"]["name"]: w["spec"]["active"]
              for w in emulator.list_objects("kueue.x-k8s.io/v1beta1", "Workload", "default")}
    assert active == {workload: False, "another-jobs": True}
    before = len(emulator.requests)
    shown = json.loads(paictl(emulator, "status", name, "-o", "json").stdout)
    assert shown["state"] == "stopped" and (f"kubectl --kubeconfig {emulator.kubeconfig} patch "
                                            f"workloads.kueue.x-k8s.io {workload} -n default") in shown["message"]
    # the annotation costs one list of the JobSet's Workloads (here two: v1beta2 is not served)
    assert [(r.method, r.path, r.status) for r in emulator.requests[before:] if "/kueue.x-k8s.io/" in r.path] == [
        ("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads", 404),
        ("GET", "/apis/kueue.x-k8s.io/v1beta1/namespaces/default/workloads", 200)]
