"""A Kubernetes cluster as a `Backend`: every workload kind in `workloads.WORKLOADS` (Framework, MarsJob, ...)
through one implementation, so that `submit`, `status`, `stop` and `logs` behave the same whichever kind runs a job.

The connection is opened on first use (kubectl's flags: context, namespace, kubeconfig) and kept until `close()`.
Nothing returned here comes from a Secret: applied objects are reported by kind, name and outcome only.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from paictl.errors import ClusterError, NotFoundError, UsageError
from paictl.targets.backend import BackendOptions, FailureExcerpt, Logs, StopResult, Submission
from paictl.targets.states import JobState, JobView

from .workloads import WORKLOADS, target_of, workload

if TYPE_CHECKING:
    from paictl.targets.compiled import CompiledJob

    from .client import Cluster
    from .kind import Workload


class KubeBackend:
    """Runs the Kubernetes targets (see the module docstring). `options.target` narrows lookups to one kind;
    "kube" in `options.extra["reachable"]`: the caller has just run `check_reachable` with these options (the CLI
    does before typer loads), so connecting does not probe the cluster again."""

    targets = tuple(WORKLOADS)

    def __init__(self, options: BackendOptions = BackendOptions()):
        self.options = options
        self._connection: Optional[Cluster] = None
        self._diagnose: Optional[Callable[[int, str], str]] = None
        self._submitted: dict[str, tuple[str, str]] = {}  # job name -> (target, apiVersion), for a watch after submit
        self._namespace = options.namespace

    @property
    def namespace(self) -> Optional[str]:
        """kubectl's choice: --namespace, else the kubeconfig context's namespace (None: the profile decides)."""
        if self._namespace is None:
            from .connection import context_namespace

            self._namespace = context_namespace(context=self.options.context, kubeconfig=self.options.kubeconfig)
        return self._namespace

    def _cluster(self) -> Cluster:
        if self._connection is None:
            from .connection import connect

            self._connection = connect(context=self.options.context, namespace=self._namespace,
                                       kubeconfig=self.options.kubeconfig, notice=self.options.extra.get("notice"),
                                       probed="kube" in self.options.extra.get("reachable", ()))
        return self._connection

    def diagnoser(self) -> Callable[[int, str], str]:
        """Exit code + log tail -> "code Phrase" from the exit rules (the built-in ones, or --exit-spec)."""
        if self._diagnose is None:
            from paictl.compiler.exit_rules import analyse, load_rule_set

            rules = load_rule_set(self.options.exit_spec)

            def diagnose(exit_code: int, log: str) -> str:
                rule = analyse(exit_code, log, rules=rules).rule
                return f"{rule.code} {rule.phrase}"

            self._diagnose = diagnose
        return self._diagnose

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # -- submit -------------------------------------------------------------------------------------------------

    def submit(self, compiled: CompiledJob, *, dry_run: bool = False, attach: bool = False) -> Submission:
        from .apply import WORKLOAD_KINDS, apply_objects
        from .resubmit import make_room

        if attach:
            self.diagnoser()  # a bad --exit-spec fails before anything is applied
        job = next(obj for obj in compiled.objects if obj.get("kind") in WORKLOAD_KINDS)
        name, namespace = job["metadata"]["name"], job["metadata"].get("namespace") or "default"
        replaced, existing_uid, submitted = make_room(self._cluster(), job, namespace, compiled.objects,
                                                      dry_run=dry_run, replace=bool(self.options.extra.get("replace")))
        applied = apply_objects(self._cluster(), compiled.objects, dry_run=dry_run, owner_uid=existing_uid,
                                keep_workload=submitted)
        lines = [f"{item.label} {item.result}{' (server dry run)' if dry_run else ''}" for item in applied]
        if replaced:
            lines.insert(0, replaced)
        if all(item.result == "unchanged" for item in applied):
            lines.append(f"{name}: nothing changed, the job is already submitted")
        uid = next((item.uid for item in applied if item.kind == job["kind"]), None)
        data = tuple({"applied": item.label, "kind": item.kind, "name": item.name, "namespace": item.namespace,
                      "result": item.result, "dryRun": dry_run} for item in applied)
        if not dry_run:
            self._submitted[name] = (target_of(job["kind"]), job["apiVersion"])
        from .connection import cluster_flags

        flags = cluster_flags(kubeconfig=self.options.kubeconfig, context=self.options.context)
        return Submission(name=name, where=f"{namespace}/{job['kind']}", uid=None if dry_run else uid,
                          dry_run=dry_run, lines=tuple(lines), data=data,
                          hints=(f"paictl: follow it with: paictl status {name} -n {namespace}{flags} --follow",))

    # -- finding and reading jobs -------------------------------------------------------------------------------

    def _variants(self, kind: str) -> list[Workload]:
        """The workload of a target, then the same kind under another API group paictl knows: KubeDL serves MarsJob
        as training.kubedl.io/v1alpha1 or, before its 2021 rename, kubedl.io/v1alpha1 (what Mars's own client
        submits). Each is tried where the first is not installed."""
        import dataclasses

        from .client import KNOWN_RESOURCES

        chosen = workload(kind)
        return [chosen] + [dataclasses.replace(chosen, resource=resource) for resource in KNOWN_RESOURCES
                           if resource.kind == chosen.resource.kind and resource != chosen.resource]

    def _installed(self, kind: str) -> Optional[Workload]:
        """The first variant of the target's workload the cluster serves (None: none is installed)."""
        from .client import describe_failure, resource_installed

        connection = self._cluster()
        for variant in self._variants(kind):
            try:
                if resource_installed(connection, variant.resource):
                    return variant
            except Exception as exc:  # noqa: BLE001
                raise describe_failure(connection, exc, verb="list", resource=variant.resource) from None
        return None

    def _find(self, name: str) -> tuple[Workload, str]:
        """The workload named NAME (or whose annotation `jobName` is NAME), in `WORKLOADS` order."""
        from .client import ApiFailure, describe_failure

        connection = self._cluster()
        target = self.options.target
        kinds = [target] if target else list(WORKLOADS)
        missing = []
        for kind in kinds:
            chosen = workload(kind)
            resource = chosen.resource
            if _exists(connection, resource, name):
                return chosen, name
            installed = self._installed(kind)
            if installed is not None and installed.resource != resource:  # the older API group
                chosen, resource = installed, installed.resource
                if _exists(connection, resource, name):
                    return chosen, name
            try:
                listed = connection.list_all(resource.collection(connection.namespace)) if installed else {}
            except Exception as exc:  # noqa: BLE001
                raise describe_failure(connection, exc, verb="list", resource=resource) from None
            if not installed:
                if target:
                    raise describe_failure(connection, ApiFailure(404, "{}"), verb="get", resource=resource,
                                           name=name)
                continue
            named = sorted(item["metadata"]["name"] for item in listed.get("items") or []
                           if ((item["metadata"].get("annotations") or {}).get("jobName")) == name)
            if len(named) == 1:
                return chosen, named[0]
            if len(named) > 1:
                raise UsageError(f"several {resource.plural} run a job named {name!r}: {', '.join(named)}; "
                                 f"name one of them")
            missing.append(resource.kind)
        known = _either([workload(kind).resource.kind for kind in kinds])
        kinds_text = _either(missing) if missing else f"{known} (none is installed)"
        raise NotFoundError(f"no {kinds_text} named {name!r} in namespace {connection.namespace}")

    def is_configured(self) -> bool:
        """Named on the command line or in $KUBECONFIG, or kubectl's default file exists."""
        import os

        from .connection import in_cluster, kubeconfig_path  # stdlib only until it connects

        return (bool(self.options.context or self.options.kubeconfig or os.environ.get("KUBECONFIG"))
                or os.path.isfile(kubeconfig_path()) or in_cluster())

    def check_reachable(self) -> None:
        """Raise the one-line ClusterError when the cluster the kubeconfig names cannot be reached (refused, unknown
        host), without loading the official client: the CLI answers a stale kubeconfig with it before anything
        else. Nothing is checked in a pod without a kubeconfig, or when the kubeconfig is missing (then `connect`
        says so)."""
        import os

        from .connection import kubeconfig_path, probe

        config_file = kubeconfig_path(self.options.kubeconfig)
        if any(os.path.isfile(path) for path in config_file.split(os.pathsep) if path):
            probe(config_file, self.options.context)

    def has_job(self, name: str) -> bool:
        try:
            self._find(name)
        except NotFoundError:
            return False
        return True

    def not_found(self, name: str) -> str:
        kinds = [self.options.target] if self.options.target else list(WORKLOADS)
        return f"no {_either([workload(kind).resource.kind for kind in kinds])} named {name!r}"

    def describe(self, name: str) -> JobView:
        from .follow import snapshot

        chosen, found = self._find(name)
        connection = self._cluster()
        view = snapshot(connection, chosen, found, connection.namespace, diagnose=self.diagnoser())
        self._finished(chosen, found, view)
        return view

    def watch(self, name: str, *, uid: Optional[str] = None) -> Iterator[JobView]:
        from .follow import follow_job

        if name in self._submitted:
            kind, api_version = self._submitted[name]
            chosen = next(v for v in self._variants(kind) if v.resource.api_version == api_version)
            found = name
        else:
            chosen, found = self._find(name)
        connection = self._cluster()
        views = follow_job(connection, chosen, found, connection.namespace, uid=uid,
                           pending_timeout=self.options.pending_timeout, diagnose=self.diagnoser())
        return self._seen(chosen, found, views)

    def _seen(self, chosen: Workload, name: str, views: Iterator[JobView]) -> Iterator[JobView]:
        for view in views:
            self._finished(chosen, name, view)
            yield view

    def _finished(self, chosen: Workload, name: str, view: JobView) -> None:
        """A Framework that finished on its own no longer needs its PriorityClass: it is cluster-scoped, so no owner
        reference can take it away with the job (the garbage collector ignores a namespaced owner of a
        cluster-scoped object: kubernetes garbagecollector.go isDangling, "cluster-scoped dependent"), and stop
        deletes it only for a job that is stopped. Deleted here, the first time paictl sees the job final."""
        if chosen.resource.kind == "Framework" and view.state.is_final:
            try:
                self._delete_priority_class(f"{name}-priority")
            except Exception:  # noqa: BLE001 - a leftover PriorityClass must not turn a verdict into an error
                pass

    def list(self, *, label_selector: Optional[str] = None, all_namespaces: bool = False,
             page_size: Optional[int] = None) -> list[JobView]:
        """Every job of the known kinds (or the one kind asked for) in the namespace, as seen now (pods not read).
        `label_selector`: kubectl's -l; `all_namespaces`: kubectl's -A; `page_size`: items per list request
        (default `client.LIST_PAGE`). Keyword-only, so that more of kubectl's list options can join them; the CLI
        passes the first two through the backend's options (`extra`), which these default to."""
        import dataclasses

        from .client import ApiFailure, describe_failure, resource_installed

        connection = self._cluster()
        target = self.options.target
        label_selector = label_selector or self.options.extra.get("selector") or None
        all_namespaces = all_namespaces or bool(self.options.extra.get("all_namespaces"))
        views: list[JobView] = []
        query = [("labelSelector", label_selector)] if label_selector else []
        for kind in [target] if target else list(WORKLOADS):
            chosen = self._installed(kind) or workload(kind)
            try:
                if not target and not resource_installed(connection, chosen.resource):
                    continue
                path = (chosen.resource.every_namespace() if all_namespaces
                        else chosen.resource.collection(connection.namespace))
                listed = connection.list_all(path, query=query, limit=page_size)
            except ApiFailure as failure:
                raise describe_failure(connection, failure, verb="list", resource=chosen.resource) from None
            except Exception as exc:  # noqa: BLE001
                raise describe_failure(connection, exc, verb="list", resource=chosen.resource) from None
            views += [dataclasses.replace(chosen.view_on(connection, item, []),
                                          created=(item.get("metadata") or {}).get("creationTimestamp"))
                      for item in listed.get("items") or []]
        return sorted(views, key=lambda view: (view.where, view.name) if all_namespaces else view.name)

    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        return None  # the diagnosis in the task rows already quotes the failed container's message

    # -- acting on jobs -----------------------------------------------------------------------------------------

    def stop(self, name: str) -> StopResult:
        from .apply import delete_marsjob, stop_framework
        from .client import describe_failure

        chosen, found = self._find(name)
        connection = self._cluster()
        label = chosen.resource.label(found)
        suspend = bool(self.options.extra.get("suspend"))
        if suspend and chosen.resource.kind != "JobSet":
            raise UsageError(f"--suspend stops JobSets only; {label} is a {chosen.resource.kind}")
        try:
            current = connection.json("GET", chosen.resource.item(found, connection.namespace))
        except Exception as exc:  # noqa: BLE001
            raise describe_failure(connection, exc, verb="get", resource=chosen.resource, name=found) from None
        state = chosen.view_on(connection, current, []).state
        # A JobSet is "stopped" only while `stop --suspend` keeps it suspended: it has no verdict to keep, so a
        # plain stop deletes it like a running one; a second --suspend has nothing to do.
        paused = chosen.resource.kind == "JobSet" and state is JobState.STOPPED
        if paused and suspend:
            result = "already suspended"
        elif state.is_final and not paused:
            # Deleting a finished MarsJob or JobSet would lose its verdict and exit codes (status: "not found");
            # FrameworkController ignores a Stop of a completed Framework. All are kept.
            result = "already finished"
        elif chosen.resource.kind == "JobSet":
            from paictl.targets.jobset.kube import stop_jobset

            result = stop_jobset(connection, found, connection.namespace, suspend=suspend, current=current)
        elif chosen.resource.kind == "Framework":
            stop_framework(connection, found, connection.namespace)
            result = "stop requested"
        else:
            delete_marsjob(connection, found, connection.namespace, chosen.resource)
            result = "deleted (foreground)"
        if chosen.resource.kind == "Framework" and self._delete_priority_class(f"{found}-priority"):
            result += f"; priorityclass.scheduling.k8s.io/{found}-priority deleted"
        return StopResult(line=f"{label} {result}", data={"stopped": label, "name": found,
                                                          "namespace": connection.namespace, "result": result})

    def _delete_priority_class(self, name: str) -> bool:
        """A stopped job's PriorityClass, if paictl made it. A cluster-scoped object cannot have a namespaced owner,
        so Kubernetes' garbage collector never removes it: paictl does when it stops the job (no pod of the job is
        admitted from then on; pods already scheduled keep their priority). One made by someone else stays."""
        from .client import KNOWN_RESOURCES, FIELD_MANAGER, ApiFailure

        resource = next(r for r in KNOWN_RESOURCES if r.kind == "PriorityClass")
        connection = self._cluster()
        try:
            current = connection.json("GET", resource.item(name, None))
            managers = {entry.get("manager") for entry in (current.get("metadata") or {}).get("managedFields") or []}
            if managers != {FIELD_MANAGER}:
                return False
            connection.json("DELETE", resource.item(name, None))
        except ApiFailure:
            return False  # absent, or not ours to delete (RBAC): the stop itself succeeded
        return True

    def logs(self, name: str, *, role: Optional[str] = None, index: Optional[int] = None,
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False,
             task_attempt: Optional[int] = None) -> Logs:
        from .follow import list_pods
        from .logs import earlier_pods_note, merged, newest_per_task, pod_lines

        if task_attempt is not None:  # a task attempt is a pod, and the controllers delete a retried one's pod
            raise UsageError("--task-attempt applies to local runs, OpenPAI and Grass: on Kubernetes use --previous "
                             "for the previous instance of a task's container (as kubectl logs -p)")
        if attempt is not None:  # FrameworkController deletes an attempt's pods, and their logs with them
            raise UsageError("--attempt applies to local runs, OpenPAI and Grass: on Kubernetes, earlier attempts' "
                             "pods are deleted")
        chosen, found = self._find(name)
        connection = self._cluster()
        pods, earlier = newest_per_task(chosen, list_pods(connection, chosen, found, connection.namespace).values())
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
            view = self.describe(found) if role is None and index is None else None
            if view is not None and view.state.is_final:
                raise ClusterError(f"{found} {view.state.value} and its pods are gone (FrameworkController deletes "
                                    f"a finished task's pod, and its log with it); `paictl status {found}` shows "
                                    "each task's exit code and diagnosis")
            raise ClusterError(f"{found} has no pods yet")
        tasks = tuple(task for task, _ in pods)
        notes = [earlier_pods_note(connection, task, pod, earlier[task]) for task, pod in pods if earlier.get(task)]
        if follow and len(pods) > 1:
            return Logs(tasks=tasks, lines=itertools.chain(notes, merged(connection, pods)))
        return Logs(tasks=tasks, lines=itertools.chain(notes, (
            line for task, pod in pods for line in pod_lines(connection, task, pod, follow=follow,
                                                             previous=previous))))


def _exists(connection: Cluster, resource, name: str) -> bool:
    """Whether the connection's namespace has `name` of `resource` (a 404 is no; any other failure is raised)."""
    from .client import ApiFailure, describe_failure

    try:
        connection.json("GET", resource.item(name, connection.namespace))
        return True
    except ApiFailure as failure:
        if failure.status != 404:
            raise describe_failure(connection, failure, verb="get", resource=resource, name=name) from None
    except Exception as exc:  # noqa: BLE001
        raise describe_failure(connection, exc, verb="get", resource=resource, name=name) from None
    return False


def _either(kinds: list[str]) -> str:
    """`Framework, MarsJob or JobSet`."""
    return ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else "".join(kinds)
