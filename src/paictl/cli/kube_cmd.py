"""`submit`, `status`, `stop` and `logs` against a Kubernetes cluster (targets `framework` and `mars`).

The machinery is in `paictl.targets.kube_*`; this module connects, prints what kubectl would print, and turns the
last view into the documented exit status. Nothing printed here comes from a Secret: applied objects are reported
by kind, name and outcome only.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import typer

from paictl.errors import ClusterError, NotFoundError, UsageError

if TYPE_CHECKING:
    from paictl.targets.kube.client import Cluster
    from paictl.targets.kube.follow import Workload
    from paictl.targets.states import JobView

    from .jobinput import CompiledJob
    from .run_cmds import ClusterOptions

PENDING_TIMEOUT_EXIT = 3
#: The workload kinds looked for, in this order, when a command names a job without --target.
KUBE_KINDS = ("framework", "mars", "jobset")


def default_namespace(*, context: Optional[str], kubeconfig: Optional[str]) -> Optional[str]:
    """The kubeconfig context's namespace, which a kubectl user expects to win over the profile's."""
    from paictl.targets.kube.client import context_namespace

    return context_namespace(context=context, kubeconfig=kubeconfig)


def _connect(cluster: ClusterOptions) -> Cluster:
    from paictl.targets.kube.client import connect

    return connect(context=cluster.context, namespace=cluster.namespace, kubeconfig=cluster.kubeconfig)


def _diagnoser(exit_spec: Optional[Path]):
    """Exit code + log tail → "code Phrase" from the exit rules (the local runner's rules, or --exit-spec)."""
    from paictl.compiler.exit_rules import analyse, load_rule_set

    rules = load_rule_set(exit_spec)

    def diagnose(exit_code: int, log: str) -> str:
        rule = analyse(exit_code, log, rules=rules).rule
        return f"{rule.code} {rule.phrase}"

    return diagnose


def workload(kind: str) -> Workload:
    from paictl.targets.framework import status as framework_status
    from paictl.targets.mars import status as mars_status
    from paictl.targets.kube.client import FRAMEWORK, MARSJOB
    from paictl.targets.kube.follow import Workload

    if kind == "jobset":
        from paictl.targets.jobset.kube import workload as jobset_workload

        return jobset_workload()
    if kind == "framework":
        return Workload(resource=FRAMEWORK, pod_selector=lambda name: f"FC_FRAMEWORK_NAME={name}",
                        view=lambda job, pods: framework_status.job_view(job), pod_task=_framework_pod_task,
                        termination_message=framework_status.termination_message)
    return Workload(resource=MARSJOB, pod_selector=lambda name: f"job-name={name}",
                    view=mars_status.job_view, pod_task=_mars_pod_task)


def _framework_pod_task(pod: dict) -> Optional[tuple[str, int]]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    index = str(labels.get("FC_TASK_INDEX", ""))
    return (labels["FC_TASKROLE_NAME"], int(index)) if "FC_TASKROLE_NAME" in labels and index.isdigit() else None


def _mars_pod_task(pod: dict) -> Optional[tuple[str, int]]:
    from paictl.targets.mars.status import REPLICA_TYPES

    labels = (pod.get("metadata") or {}).get("labels") or {}
    role = {t.lower(): t for t in REPLICA_TYPES}.get(str(labels.get("replica-type", "")).lower())
    index = str(labels.get("replica-index", ""))
    return (role, int(index)) if role and index.isdigit() else None


def submit_kube(compiled: CompiledJob, *, cluster: ClusterOptions, dry_run: bool, follow: bool, output_format: str,
                pending_timeout: Optional[float], exit_spec: Optional[Path]) -> None:
    from paictl.targets.kube.apply import WORKLOAD_KINDS, apply_objects

    diagnose = _diagnoser(exit_spec) if follow else None  # a bad --exit-spec fails before anything is applied
    job = next(obj for obj in compiled.objects if obj.get("kind") in WORKLOAD_KINDS)
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace") or "default"
    connection = _connect(cluster)
    try:
        applied = apply_objects(connection, compiled.objects, dry_run=dry_run)
        for item in applied:
            if output_format == "json":
                typer.echo(json.dumps({"applied": item.label, "kind": item.kind, "name": item.name,
                                       "namespace": item.namespace, "result": item.result, "dryRun": dry_run}))
            else:
                typer.echo(f"{item.label} {item.result}{' (server dry run)' if dry_run else ''}")
        if output_format == "text" and all(item.result == "unchanged" for item in applied):
            typer.echo(f"{name}: nothing changed, the job is already submitted")
        if dry_run:
            if follow:
                typer.echo("paictl: --follow ignored: a dry run creates nothing to follow", err=True)
            return
        if not follow:
            typer.echo(f"paictl: follow it with: paictl status {name} -n {namespace} --follow", err=True)
            return
        kind = {"Framework": "framework", "JobSet": "jobset"}.get(job["kind"], "mars")
        _follow(connection, workload(kind), name, namespace, output_format=output_format,
                pending_timeout=pending_timeout, diagnose=diagnose)
    finally:
        connection.close()


def _follow(connection: Cluster, chosen: Workload, name: str, namespace: str, *, output_format: str,
            pending_timeout: Optional[float], diagnose) -> None:
    from paictl.targets.kube.follow import follow_job
    from paictl.targets.states import VERDICT_EXIT_CODES

    from .live import follow

    with contextlib.closing(follow_job(connection, chosen, name, namespace, pending_timeout=pending_timeout,
                                       diagnose=diagnose)) as views:
        last = follow(views, output_format=output_format)
    if last is None:
        raise ClusterError(f"{chosen.resource.full_name} {name!r}: the cluster sent nothing")
    if not last.state.is_final:
        typer.echo(f"paictl: error: {name}: {last.message}", err=True)
        raise typer.Exit(PENDING_TIMEOUT_EXIT)
    raise typer.Exit(VERDICT_EXIT_CODES[last.state])


def find_job(connection: Cluster, name: str, target: Optional[str]) -> tuple[Workload, str]:
    """The workload named NAME (or whose annotation `jobName` is NAME): a Framework first, then a MarsJob."""
    from paictl.targets.kube.client import ApiFailure, describe_failure, resource_installed

    kinds = [target] if target else list(KUBE_KINDS)
    missing = []
    for kind in kinds:
        chosen = workload(kind)
        resource = chosen.resource
        try:
            connection.json("GET", resource.item(name, connection.namespace))
            return chosen, name
        except ApiFailure as failure:
            if failure.status != 404:
                raise describe_failure(connection, failure, verb="get", resource=resource, name=name) from None
        except Exception as exc:  # noqa: BLE001
            raise describe_failure(connection, exc, verb="get", resource=resource, name=name) from None
        try:
            installed = resource_installed(connection, resource)
            listed = connection.json("GET", resource.collection(connection.namespace)) if installed else {}
        except Exception as exc:  # noqa: BLE001
            raise describe_failure(connection, exc, verb="list", resource=resource) from None
        if not installed:
            if target:
                raise describe_failure(connection, ApiFailure(404, "{}"), verb="get", resource=resource, name=name)
            continue
        named = sorted(item["metadata"]["name"] for item in listed.get("items") or []
                       if ((item["metadata"].get("annotations") or {}).get("jobName")) == name)
        if len(named) == 1:
            return chosen, named[0]
        if len(named) > 1:
            raise UsageError(f"several {resource.plural} run a job named {name!r}: {', '.join(named)}; "
                             f"name one of them")
        missing.append(resource.kind)
    kinds_text = (", ".join(missing[:-1]) + " or " + missing[-1] if len(missing) > 1 else "".join(missing)) \
        if missing else "Framework, MarsJob or JobSet (none is installed)"
    raise NotFoundError(f"no {kinds_text} named {name!r} in namespace {connection.namespace}")


def list_kube(*, target: Optional[str], cluster: ClusterOptions) -> list[JobView]:
    """Every Framework and MarsJob (or the one kind asked for) in the namespace, as seen now (pods not read)."""
    from paictl.targets.kube.client import ApiFailure, describe_failure, resource_installed

    connection = _connect(cluster)
    views: list[JobView] = []
    for kind in [target] if target else KUBE_KINDS:
        chosen = workload(kind)
        try:
            if not target and not resource_installed(connection, chosen.resource):
                continue
            listed = connection.json("GET", chosen.resource.collection(connection.namespace))
        except ApiFailure as failure:
            raise describe_failure(connection, failure, verb="list", resource=chosen.resource) from None
        except Exception as exc:  # noqa: BLE001
            raise describe_failure(connection, exc, verb="list", resource=chosen.resource) from None
        views += [chosen.view(item, []) for item in listed.get("items") or []]
    return sorted(views, key=lambda view: view.name)


def status_kube(name: str, *, target: Optional[str], cluster: ClusterOptions, follow: bool, output_format: str,
                pending_timeout: Optional[float], exit_spec: Optional[Path]) -> None:
    from paictl.targets.kube.follow import snapshot

    from .live import follow as draw

    diagnose = _diagnoser(exit_spec)
    connection = _connect(cluster)
    try:
        chosen, found = find_job(connection, name, target)
        if follow:
            _follow(connection, chosen, found, connection.namespace, output_format=output_format,
                    pending_timeout=pending_timeout, diagnose=diagnose)
            return
        draw([snapshot(connection, chosen, found, connection.namespace, diagnose=diagnose)],
             output_format=output_format)
    finally:
        connection.close()


def stop_kube(name: str, *, target: Optional[str], cluster: ClusterOptions, output_format: str,
              suspend: bool = False) -> None:
    from paictl.targets.framework.status import job_state
    from paictl.targets.kube.apply import delete_marsjob, stop_framework

    connection = _connect(cluster)
    try:
        chosen, found = find_job(connection, name, target)
        label = chosen.resource.label(found)
        if suspend and chosen.resource.kind != "JobSet":
            raise UsageError(f"--suspend stops JobSets only; {label} is a {chosen.resource.kind}")
        if chosen.resource.kind == "JobSet":
            from paictl.targets.jobset.kube import stop_jobset

            result = stop_jobset(connection, found, connection.namespace, suspend=suspend)
        elif chosen.resource.kind == "Framework":
            current = connection.json("GET", chosen.resource.item(found, connection.namespace))
            if job_state(current).is_final:
                result = "already finished"
            else:
                stop_framework(connection, found, connection.namespace)
                result = "stop requested"
        else:
            delete_marsjob(connection, found, connection.namespace)
            result = "deleted (foreground)"
        if output_format == "json":
            typer.echo(json.dumps({"stopped": label, "name": found, "namespace": connection.namespace,
                                   "result": result}))
        else:
            typer.echo(f"{label} {result}")
    finally:
        connection.close()


def logs_kube(name: str, role: Optional[str], index: Optional[int], *, target: Optional[str],
              cluster: ClusterOptions, follow: bool) -> None:
    from paictl.targets.kube.follow import list_pods

    connection = _connect(cluster)
    try:
        chosen, found = find_job(connection, name, target)
        pods = [(chosen.pod_task(pod), pod) for pod in list_pods(connection, chosen, found, connection.namespace)
                .values()]
        pods = sorted(((task, pod) for task, pod in pods if task is not None), key=lambda item: item[0])
        roles = sorted({task[0] for task, _ in pods})
        if role is not None:
            matching = [(t, p) for t, p in pods if t[0].lower() == role.lower()]
            if not matching:
                raise UsageError(f"{found} has no task role {role!r} with pods; roles: {', '.join(roles) or 'none'}")
            pods = matching
        if index is not None:
            pods = [(t, p) for t, p in pods if t[1] == index]
            if not pods:
                raise UsageError(f"{found} has no task {role or '*'}-{index}")
        if not pods:
            raise ClusterError(f"{found} has no pods yet")
        prefix = len(pods) > 1
        streams = [(f"[{task[0]}-{task[1]}] " if prefix else "", pod) for task, pod in pods]
        if follow and len(streams) > 1:
            _print_merged(connection, streams)
        else:
            for label, pod in streams:
                for line in _log_lines(connection, pod, follow=follow):
                    typer.echo(label + line)
    finally:
        connection.close()


def _log_lines(connection: Cluster, pod: dict, *, follow: bool) -> Iterator[str]:
    from paictl.targets.kube.client import POD, ApiFailure, close_stream, describe_failure, iter_lines

    name = pod["metadata"]["name"]
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    query: list[tuple[str, Any]] = [("container", containers[0].get("name", ""))]
    if follow:
        query.append(("follow", "true"))
    try:
        response = connection.request("GET", POD.item(name, connection.namespace) + "/log", query=query,
                                      stream=True)
    except ApiFailure as failure:
        if failure.status == 400:  # e.g. the container is still waiting to start
            typer.echo(f"paictl: {name}: no log yet: {failure.message}", err=True)
            return
        raise describe_failure(connection, failure, verb="get", resource=POD, name=f"{name}/log") from None
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(connection, exc, verb="get", resource=POD, name=f"{name}/log") from None
    try:
        for line in iter_lines(response):
            yield line.decode("utf-8", errors="replace").rstrip("\r")
    finally:
        close_stream(response)


def _print_merged(connection: Cluster, streams: list[tuple[str, dict]]) -> None:
    """Several pods followed at once: one thread per stream, lines printed as they come."""
    lines: "queue.Queue[Optional[str]]" = queue.Queue()

    def pump(label: str, pod: dict) -> None:
        try:
            for line in _log_lines(connection, pod, follow=True):
                lines.put(label + line)
        except ClusterError as error:
            lines.put(f"{label}paictl: {error}")
        finally:
            lines.put(None)

    for label, pod in streams:
        threading.Thread(target=pump, args=(label, pod), daemon=True).start()
    open_streams = len(streams)
    while open_streams:
        line = lines.get()
        if line is None:
            open_streams -= 1
        else:
            typer.echo(line)
