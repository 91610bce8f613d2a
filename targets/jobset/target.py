"""Compile a job into a Kubernetes JobSet (`jobset.x-k8s.io/v1alpha2`), the maintained multi-role job API.

A pure function like the Framework and Mars targets (same inputs, same objects, in apply order: the Secrets, then
the JobSet). The mapping follows the reference (/work/shared/reference/jobset.md 2), whose semantics are
FrameworkController's as OpenPAI configures it (`minFailedInstances` default 1, `minSucceededInstances` default
`instances`):

    OpenPAI                            | JobSet / batch/v1 Job                                   | fidelity
    -----------------------------------+---------------------------------------------------------+------------------
    task role                          | replicatedJob (`replicas: 1`), name a DNS label (names) | exact, renamed
    instances                          | Indexed Job, `completions = parallelism = instances`    | exact
    taskRetryCount r (no gang)         | `backoffLimitPerIndex: r`, pod `restartPolicy: Never`   | exact
    taskRetryCount under gang          | `backoffLimitPerIndex: 0` (OpenPAI ignores it, W405)    | exact
    transient pod failures (preempted, | `podFailurePolicy` Ignore on the pod condition          | the outcome
     evicted, node lost): not counted  | DisruptionTarget: the pod is replaced, not counted      |
    minFailedInstances k >= 1          | `maxFailedIndexes: k - 1` (at most `instances`)         | exact for k = 1;
                                       |                                                         | W901 for k > 1
    minFailedInstances -1              | no limit; a failed index still fails the Job at its end | W901
    minSucceededInstances s < inst.    | Job `successPolicy.rules: [{succeededCount: s}]`        | exact per role
    "any role reaching its count ends  | JobSet `successPolicy: {operator: Any,                  | exact
     the job succeeded" (OR of roles)  |   targetReplicatedJobs: roles whose s is not -1}`       |
    every role s = -1 (or > instances) | `successPolicy: {operator: All}`                        | exact; W902
    "all tasks finished -> succeeded"  | the targeted Jobs (or all) complete: the same, unless   | when a role
                                       | a tolerated failure (W901) kept a role from its count   | tolerates failures
    jobRetryCount n > 0                | `failurePolicy: {maxRestarts: n, BlockingRecreate}`:    | exact
                                       | a failed Job recreates all of them, the old ones gone   |
                                       | first, as a new FrameworkAttempt                        |
    jobRetryCount 0                    | no failurePolicy: the first failed Job fails the JobSet | exact
    gang allocation                    | Kueue admits the JobSet as one Workload when the        | W903 without a
                                       | profile names a queue (`jobset.queueName`)              | queue
    extras.hivedScheduler              | none: resources as resourcePerInstance states them      | W904
    peers                              | DNS hostnames on: `<js>-<rjob>-0-<i>.<subdomain>`       | names, not IPs

Each inexpressible semantic is a located warning (`compile_warnings`) saying what will differ on a JobSet cluster;
`paictl compile/submit --strict` makes it an error. Secrets go to the same Secret objects as for the Framework
(framework/secrets.py); pods run the native runtime's prelude (pod.py). The status side is status.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from paictl.targets.findings import located_all, raise_if_any
from paictl.targets.kube.limits import size_findings
from paictl.targets.framework.env import min_failed, min_succeeded
from paictl.targets.framework.secrets import native_secret_objects
from paictl.targets.jobset.names import jobset_name, name_findings, replicated_job_names
from paictl.targets.jobset.status import QUEUE_LABEL

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Diagnostic, Finding
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job, TaskRole

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"


def compile_jobset(job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
                   secrets_from: str | None = None, document: Document | None = None) -> list[dict[str, Any]]:
    """The objects to apply: the secrets Secret, the registry Secret (if the job has credentials), the JobSet.

    Arguments as for the Framework target (framework.target.compile_framework). Raises InvalidJobError listing every
    reason the job cannot be a JobSet (E901 names, E601 storages, E607 ports), located when `document` is given.
    """
    from paictl.compiler.render import render_entrypoint

    from paictl.targets.framework.native import allocate_ports, runtime_commands
    from paictl.targets.framework.target import mounted_storages
    from paictl.targets.jobset.pod import PodParts, pod_template

    errors = name_findings(job)
    ports, problems = allocate_ports(job, profile)
    errors += problems
    storages = mounted_storages(job, profile, errors)  # E601 for a storage the profile does not have
    raise_if_any(errors, document, _path(document))

    name = jobset_name(job, profile)
    rjobs = replicated_job_names(job)
    entrypoints = {role.name: render_entrypoint(job, role.name, parameters) for role in job.task_roles}
    objects, secrets_secret, regcred = native_secret_objects(name, job, profile, entrypoints.values(), secrets_from)

    parts = PodParts(job=job, profile=profile, jobset=name, subdomain=name, rjobs=rjobs, ports=ports,
                     secrets_secret=secrets_secret, regcred=regcred, storages=storages)
    replicated_jobs = []
    for role in job.task_roles:
        commands, substitutions = runtime_commands(entrypoints[role.name], secrets_secret is not None)
        replicated_jobs.append({"name": rjobs[role.name], "replicas": 1, "template": {
            "spec": job_spec(job, role, pod_template(parts, role, commands, substitutions))}})
    spec: dict[str, Any] = {
        "network": {"enableDNSHostnames": True, "subdomain": name, "publishNotReadyAddresses": True},
        "successPolicy": success_policy(job, rjobs),
    }
    if job.job_retry_count > 0:
        spec["failurePolicy"] = {"maxRestarts": job.job_retry_count, "restartStrategy": "BlockingRecreate"}
    spec["replicatedJobs"] = replicated_jobs
    labels = {"userName": profile.user, "virtualCluster": job.defaults.virtual_cluster or profile.virtual_cluster}
    if profile.jobset_queue_name:
        labels[QUEUE_LABEL] = profile.jobset_queue_name
    objects.append({"apiVersion": API_VERSION, "kind": KIND,
                    "metadata": {"name": name, "namespace": profile.namespace, "labels": labels,
                                 "annotations": {"jobName": job.name}},
                    "spec": spec})
    raise_if_any(size_findings(objects, document.data if document is not None else None), document,
                 _path(document))
    return objects


def job_spec(job: Job, role: TaskRole, pod: dict[str, Any]) -> dict[str, Any]:
    """The batch/v1 JobSpec of a task role: Indexed, one pod per instance, OpenPAI's retry and completion rules."""
    instances = role.instances
    retries = 0 if job.gang_allocation else max(role.task_retry_count, 0)
    spec: dict[str, Any] = {"completionMode": "Indexed", "completions": instances, "parallelism": instances,
                            "backoffLimitPerIndex": retries}
    failed = min_failed(role)
    if failed >= 1:
        # k failed indexes fail the Job at once (Kubernetes: more than maxFailedIndexes). A k above the instances
        # can never be reached, as in FrameworkController: no limit then.
        spec["maxFailedIndexes"] = min(failed - 1, instances)
    succeeded = min_succeeded(role)
    if 1 <= succeeded < instances:
        spec["successPolicy"] = {"rules": [{"succeededCount": succeeded}]}
    spec["podFailurePolicy"] = _disruptions_ignored()
    spec["template"] = pod
    return spec


def _disruptions_ignored() -> dict[str, Any]:
    """A pod the cluster took away (preempted, evicted, its node drained or lost: the pod condition DisruptionTarget,
    kubernetes pkg/apis/core/types.go) is replaced without counting as a failure of its index.

    FrameworkController calls these failures transient (PodEvicted, PodNodeLost, PodPreemptedForCriticalPod) and
    OpenPAI's fancyRetryPolicy retries them without counting; a Job counts them against backoffLimitPerIndex unless
    a podFailurePolicy ignores them, so with taskRetryCount 0 one preemption would fail the task's index, its Job and
    the JobSet. podFailurePolicy needs restartPolicy Never, which the pods have, and makes a replacement wait until
    the old pod is gone (podReplacementPolicy Failed), as FrameworkController waits for a task's old pod.
    """
    return {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}


def success_policy(job: Job, rjobs: Mapping[str, str]) -> dict[str, Any]:
    """OR of the roles' success triggers: Any over the roles that can trigger; All when none can (W902)."""
    targets = [rjobs[role.name] for role in job.task_roles if _can_trigger_success(role)]
    if not targets:
        return {"operator": "All"}
    return {"operator": "Any", "targetReplicatedJobs": targets}


def _can_trigger_success(role: TaskRole) -> bool:
    """FrameworkController ends the attempt succeeded when `succeeded >= minSucceeded` for this role; -1 never, and a
    count above the instances never either."""
    succeeded = min_succeeded(role)
    return 1 <= succeeded <= role.instances


def _tolerates_failures(role: TaskRole) -> bool:
    """FrameworkController goes on past a failed task of this role: minFailedInstances -1, or above 1."""
    failed = min_failed(role)
    return failed == -1 or failed > 1


def compile_warnings(job: Job, profile: Profile, document: Document | None = None) -> list[Diagnostic]:
    """What a JobSet cluster will do differently from OpenPAI (W901-W904), located; raised under --strict."""
    return located_all(semantic_findings(job, profile), document, _path(document))


def semantic_findings(job: Job, profile: Profile) -> list[Finding]:
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor

    findings: list[Finding] = []
    targeted = [role for role in job.task_roles if _can_trigger_success(role)]
    tolerating = [role for role in job.task_roles if _tolerates_failures(role)]
    for role in job.task_roles:
        pointer = "/taskRoles/" + role.name.replace("~", "~0").replace("/", "~1")
        failed = min_failed(role)
        if _tolerates_failures(role):
            tolerated = "every failed instance" if failed == -1 else f"up to {failed - 1} failed instance(s)"
            findings.append(finding(
                "W901", pointer + ("/completion/minFailedInstances" if role.completion.min_failed_instances
                                   is not None else ""),
                f"minFailedInstances {failed} of task role '{role.name}' tolerates {tolerated}; on JobSet a task "
                "that fails (after its retries) makes the role's Job end Failed (FailedIndexes) once the other "
                "instances finish, and the JobSet then "
                + ("restarts" if job.job_retry_count > 0 else "fails") + " where OpenPAI would go on"
                + (f" (the Job still fails at once at {failed} failures, as OpenPAI)" if failed > 1 else ""),
                hint="make failures fatal (minFailedInstances: 1), or make the commands exit 0 on a failure the job "
                     "can live with"))
        if not _can_trigger_success(role) and tolerating:
            # Without a tolerated failure, "every task finished" means every task succeeded: then a targeted role's
            # Job completed too (Any), or every Job did (All), and the JobSet succeeds exactly when OpenPAI does.
            succeeded = min_succeeded(role)
            why = "-1" if succeeded == -1 else f"{succeeded}, above its {role.instances} instance(s),"
            if targeted:
                outcome = ("the JobSet succeeds only when one of " + ", ".join(f"'{r.name}'" for r in targeted)
                           + " completes")
            else:
                outcome = "the JobSet succeeds only when the Jobs of all task roles complete without a failure"
            findings.append(finding(
                "W902", pointer + "/completion/minSucceededInstances",
                f"minSucceededInstances {why} of task role '{role.name}' leaves the job to OpenPAI's fallback "
                f"(every task finished, so the job succeeded), which JobSet does not have: {outcome}",
                hint="give the role a minSucceededInstances it can reach, e.g. leave it out (all instances)"))
    if "hivedScheduler" in job.extras:
        findings.append(finding(
            "W904", "/extras/hivedScheduler",
            "HiveD scheduling (SKU types, pinned cells, job priority) has no JobSet equivalent: the pods ask for the "
            "resources the task roles state (resourcePerInstance), on any node the Kubernetes scheduler picks",
            hint="state the resources in resourcePerInstance; use node affinity in the profile to pick a node type",
            anchor=Anchor.KEY))
    if job.gang_allocation and not profile.jobset_queue_name:
        findings.append(finding(
            "W903", "/extras/gangAllocation" if "gangAllocation" in job.extras else "/taskRoles",
            "gang allocation is on (OpenPAI's default) but JobSet starts each pod as soon as it is scheduled: on a "
            "busy cluster some tasks may run while others wait, holding their resources",
            hint="name a Kueue LocalQueue in the profile (jobset.queueName) to have the JobSet admitted as one "
                 "unit, or set extras.gangAllocation: false",
            anchor=Anchor.KEY))
    return findings


def _path(document: Document | None) -> str:
    return document.path if document is not None else "<job>"


#: The `Target` protocol's entry point (paictl.targets.get_target("jobset").compile).
compile = compile_jobset  # noqa: A001 - the name every target module exports
