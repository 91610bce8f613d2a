"""An OpenPAI cluster as a paictl backend: submit, follow, stop, logs and list through the REST server.

Everything goes through `GET/POST/PUT /api/v2/...` as the swagger describes it; the server has no watch, so
following is polling with backoff: never more often than `min_poll_interval` (1 s unless the clusters file or the
caller says otherwise), slowing down by half again each time nothing changed up to `max_poll_interval`, and back
to the minimum on a change. When the server sends an `ETag` (express does for every JSON body), the next poll is a
conditional request and an unchanged job costs a 304 with no body.

Before a job is sent, what the cluster can say beforehand is checked: the virtual cluster exists
(`GET /api/v2/virtual-clusters`) and the user may submit to it (`GET /api/v2/users/{user}`, `virtualCluster`), and
every storage the job names exists for the user (`GET /api/v2/storages`). Each problem is one line, exit 3.
"""

from __future__ import annotations

import time
from typing import Any, Iterator, Optional
from urllib.parse import quote

from paictl.errors import ClusterError, NotFoundError, PaictlError, UsageError
from paictl.targets.backend import BackendOptions, FailureExcerpt, LogLine, Logs, StopResult, Submission
from paictl.targets.states import JobState, JobView, view_to_data

from .clusters import ClusterEntry, display_url, get_cluster, resolve_token
from .status import job_view, summary_view
from .target import CONTENT_TYPE, protocol_document, protocol_text

DEFAULT_VIRTUAL_CLUSTER = "default"
MAX_POLL_INTERVAL = 10.0
POLL_SLOWDOWN = 1.5
#: Log locations in the order paictl prefers them (the swagger's example lists stderr, all, stdout).
LOG_PREFERENCE = ("all", "stdout", "stderr")
EXCERPT_LINES = 20
#: Rows asked for per job-list request: the server's own page when no limit is given (its maximum is 50,000).
LIST_PAGE = 5000


class OpenPaiBackend:
    """One alias of the clusters file. Options: `cluster` (the alias), `exit_spec`, `pending_timeout`, and in
    `extra`: `virtual_cluster`, `clusters_file`, `min_poll_interval`, `max_poll_interval`, `retry_backoff`, and
    `reachable` (with "openpai" in it, the caller has just run `check_reachable` for this alias: the client does
    not connect once more to check)."""

    targets = ("openpai",)

    def __init__(self, options: BackendOptions = BackendOptions(), *, entry: Optional[ClusterEntry] = None):
        extra = dict(options.extra)
        self.options, self._entry, self._client = options, entry, None
        self.clusters_file = extra.get("clusters_file")
        self.virtual_cluster: Optional[str] = extra.get("virtual_cluster")
        self._min_interval: Optional[float] = extra.get("min_poll_interval")
        self.max_interval = float(extra.get("max_poll_interval") or MAX_POLL_INTERVAL)
        self.retry_backoff = float(extra.get("retry_backoff", 0.5))
        self.pending_timeout = options.pending_timeout
        self.exit_spec = options.exit_spec
        self._rules: Any = None
        self.requests = 0   # how many job-detail requests `watch` made (the README's figure, and tests')
        self.sleep = time.sleep  # replaceable, so a test can check the polling schedule without waiting for it

    # Opening a backend never fails: the alias, its token and the connection are looked up on first use, so that
    # `is_configured` can be asked of a user who has no OpenPAI cluster at all.

    @property
    def entry(self) -> ClusterEntry:
        if self._entry is None:
            self._entry = get_cluster(self.options.cluster, self.clusters_file)
        return self._entry

    @property
    def user(self) -> str:
        return self.entry.user

    @property
    def client(self) -> Any:
        if self._client is None:
            from .client import OpenPaiClient

            self._client = OpenPaiClient(url=self.entry.url, token=resolve_token(self.entry),
                                         alias=self.entry.alias, backoff=self.retry_backoff,
                                         reachable="openpai" in self.options.extra.get("reachable", ()))
        return self._client

    @property
    def min_interval(self) -> float:
        return float(self._min_interval or self.entry.min_poll_interval)

    @min_interval.setter
    def min_interval(self, seconds: float) -> None:
        self._min_interval = seconds

    def is_configured(self) -> bool:
        """The clusters file names the alias asked for (or holds exactly one); never connects."""
        try:
            self.entry
        except PaictlError:
            return False
        return True

    def check_reachable(self) -> None:
        """Raise the one-line UnreachableError (exit 3) when the alias's REST server cannot be reached (refused,
        unknown host): the CLI asks this before typer is imported (cli/entry.py), and it is the line the first
        request of any command raises. A missing alias or token is raised first, as a command would."""
        self.client.check_reachable()

    def not_found(self, name: str) -> str:
        user, job = self._full_name(name)
        return f"no OpenPAI job {user}~{job} on {self.entry.alias}"

    @property
    def namespace(self) -> Optional[str]:
        return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    # -- names ------------------------------------------------------------------------------------------------

    def _full_name(self, name: str) -> tuple[str, str]:
        """`user~job` as OpenPAI names jobs; a bare name is the configured user's job."""
        user, sep, job = name.partition("~")
        return (user, job) if sep else (self.user, name)

    def _job_path(self, name: str) -> str:
        user, job = self._full_name(name)
        return f"/api/v2/jobs/{quote(user, safe='')}~{quote(job, safe='')}"

    def _where(self, virtual_cluster: Optional[str] = None) -> str:
        return f"OpenPAI {self.entry.alias} ({display_url(self.entry.url)})" + (
            f", virtual cluster {virtual_cluster}" if virtual_cluster else "")

    @property
    def rules(self) -> Any:
        if self._rules is None:
            from paictl.compiler.exit_rules import load_rule_set

            self._rules = load_rule_set(self.exit_spec)
        return self._rules

    # -- submit -----------------------------------------------------------------------------------------------

    def submit(self, compiled: Any, *, dry_run: bool = False, attach: bool = False) -> Submission:
        data = compiled.document.data
        virtual_cluster = (self.virtual_cluster or (data.get("defaults") or {}).get("virtualCluster")
                           or self.entry.virtual_cluster or DEFAULT_VIRTUAL_CLUSTER)
        self._check_virtual_cluster(virtual_cluster)
        self._check_storages(data)
        full = f"{self.user}~{compiled.job.name}"
        where = self._where(virtual_cluster)
        if dry_run:
            return Submission(name=compiled.job.name, where=where, dry_run=True,
                              lines=(f"job {full}: checked against {where}; not submitted (dry run)",),
                              data=({"job": full, "cluster": self.entry.alias, "virtualCluster": virtual_cluster,
                                     "result": "checked"},))
        document = protocol_document(data, parameters=compiled.parameters or None,
                                     virtual_cluster=virtual_cluster, masked=False)
        try:
            self.client.post("/api/v2/jobs", content=protocol_text(document), content_type=CONTENT_TYPE,
                             what=f"submit {full}")
        except ClusterError as error:
            if getattr(error, "status", None) == 409:
                raise ClusterError(
                    f"{str(error).rstrip('.')}; OpenPAI never reuses a job name, even after the job ended: rename "
                    f"the job (`name:` in the file), or follow the existing one with "
                    f"`paictl status {compiled.job.name} "
                    f"--target openpai --cluster {self.entry.alias} --follow`") from None
            raise
        return Submission(
            name=compiled.job.name, where=where,
            lines=(f"job {full} submitted to {where}",),
            data=({"job": full, "cluster": self.entry.alias, "virtualCluster": virtual_cluster,
                   "result": "submitted"},),
            hints=(f"follow it: paictl status {compiled.job.name} --target openpai --cluster {self.entry.alias} "
                   "--follow",))

    def _check_virtual_cluster(self, virtual_cluster: str) -> None:
        clusters = self.client.get("/api/v2/virtual-clusters", what="list virtual clusters").body
        names = sorted(clusters) if isinstance(clusters, dict) else []
        if virtual_cluster not in names:
            raise NotFoundError(f"{self._where()}: virtual cluster {virtual_cluster!r} does not exist; "
                                f"available: {', '.join(names) or 'none'} (choose with --virtual-cluster)")
        info = self.client.get(f"/api/v2/users/{quote(self.user, safe='')}", what=f"read user {self.user}").body
        if not isinstance(info, dict) or info.get("admin"):
            return
        allowed = [str(vc) for vc in info.get("virtualCluster") or []]
        if virtual_cluster not in allowed:
            raise ClusterError(f"{self._where()}: user {self.user} may not submit to virtual cluster "
                               f"{virtual_cluster!r}; theirs: {', '.join(allowed) or 'none'}")

    def _check_storages(self, data: Any) -> None:
        """Every storage the server will look up for the job exists for the user: `extras.storages`, or, when that
        is absent, the deprecated teamwise_storage plugin's storageConfigNames (read as the server reads them)."""
        from paictl.protocol.storage_checks import requested_storages, storage_name

        storages, pointer = requested_storages(data.get("extras"))
        if not isinstance(storages, list):
            return
        wanted = [str(name) for name in map(storage_name, storages) if name is not None]
        if not wanted:
            return
        reply = self.client.get("/api/v2/storages", what="list storages").body
        have = {str(item.get("name")) for item in (reply or {}).get("storages") or [] if isinstance(item, dict)}
        missing = [name for name in dict.fromkeys(wanted) if name not in have]
        if missing:
            where = ("extras.storages" if pointer[:2] == ("extras", "storages")
                     else "the teamwise_storage plugin's storageConfigNames")
            raise NotFoundError(f"{self._where()}: storage {', '.join(map(repr, missing))} named in {where} does "
                                f"not exist for user {self.user}; available: {', '.join(sorted(have)) or 'none'}")

    # -- state ------------------------------------------------------------------------------------------------

    def _detail(self, name: str) -> dict[str, Any]:
        return self.client.get(self._job_path(name), what=f"read job {'~'.join(self._full_name(name))}").body

    def has_job(self, name: str) -> bool:
        try:
            self._detail(name)
        except NotFoundError:
            return False
        return True

    def describe(self, name: str) -> JobView:
        return self._view(self._detail(name))

    def _view(self, detail: dict[str, Any]) -> JobView:
        virtual_cluster = (detail.get("jobStatus") or {}).get("virtualCluster")
        return job_view(detail, where=self._where(virtual_cluster), rules=self.rules)

    def watch(self, name: str, *, uid: Optional[str] = None) -> Iterator[JobView]:
        """Poll until a final view (or the pending timeout): conditional requests, backoff while unchanged."""
        path, what = self._job_path(name), f"read job {'~'.join(self._full_name(name))}"
        etag: Optional[str] = None
        detail: Optional[dict[str, Any]] = None
        last: Optional[JobView] = None
        interval = self.min_interval
        started = time.monotonic()
        while True:
            reply = self.client.get(path, etag=etag, what=what)
            self.requests += 1
            if reply.status != 304 or detail is None:
                detail, etag = reply.body, reply.etag
            view = self._view(detail)
            yield view
            if view.state.is_final:
                return
            if (self.pending_timeout is not None and view.state is JobState.PENDING
                    and time.monotonic() - started > self.pending_timeout):
                return
            ceiling = max(self.max_interval, self.min_interval)
            interval = self.min_interval if view != last else min(interval * POLL_SLOWDOWN, ceiling)
            last = view
            self.sleep(interval)

    def list(self) -> list[JobView]:
        """Every job of the user, page by page: without `limit` the server answers its first 5,000 rows and nothing
        in the answer says more exist (recordings/openpai job-list-5012), so paictl asks for pages until a short
        one."""
        every_user = bool(self.options.extra.get("all_namespaces"))  # -A: every user's jobs the server shows
        rows: list[Any] = []
        while True:
            params = {**({} if every_user else {"username": self.user}), "offset": len(rows), "limit": LIST_PAGE,
                      "order": "submissionTime,DESC"}  # a stable order, so pages neither skip nor repeat a job
            page = self.client.get("/api/v2/jobs", params=params, what="list jobs").body
            if isinstance(page, dict):  # withTotalCount form
                page = page.get("data") or []
            page = page if isinstance(page, list) else []
            rows += page
            if len(page) < LIST_PAGE:
                break
        return [summary_view(row, where=self._where(row.get("virtualCluster")), owner=every_user) for row in rows
                if isinstance(row, dict)]

    def stop(self, name: str) -> StopResult:
        full = "~".join(self._full_name(name))
        view = self.describe(name)
        if view.state.is_final:
            return StopResult(line=f"job {full} already {view.state.value}", view=view,
                              data={"job": full, "result": f"already {view.state.value}"})
        self.client.put_json(f"{self._job_path(name)}/executionType", {"value": "STOP"}, what=f"stop {full}")
        view = self.describe(name)
        return StopResult(line=f"job {full}: stop requested ({view.state.value})", view=view,
                          data={"job": full, "result": "stop requested", "view": view_to_data(view)})

    # -- logs -------------------------------------------------------------------------------------------------

    def logs(self, name: str, *, role: Optional[str] = None, index: Optional[int] = None,
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False) -> Logs:
        """Each chosen task's log locations (one note), then the preferred log's lines; with follow, new lines
        until the job ends. `attempt` is a job attempt: its tasks come from `GET .../attempts/{attempt}` (the
        server's history of that attempt). The tasks are chosen now, so an unknown role or index fails before any
        line."""
        if previous:
            raise UsageError("--previous is for Kubernetes containers; for an earlier OpenPAI attempt use --attempt N")
        detail = self._detail(name)
        latest = int((detail.get("jobStatus") or {}).get("attemptId") or 0)
        if attempt is not None and attempt != latest:
            if attempt < 0 or attempt > latest:
                raise UsageError(f"job {'~'.join(self._full_name(name))} has attempts 0 to {latest}, not {attempt}")
            detail = self.client.get(f"{self._job_path(name)}/attempts/{attempt}",
                                     what=f"read attempt {attempt} of {'~'.join(self._full_name(name))}").body
            follow = False  # an earlier attempt has ended
        tasks = self._select_tasks(detail, role, index)
        chosen = tuple((task_role, int(task.get("taskIndex") or 0)) for task_role, task in tasks)
        job_attempt = latest if attempt is None else attempt
        return Logs(tasks=chosen, lines=self._log_lines(name, detail, tasks, role, index, job_attempt, follow))

    def _log_lines(self, name: str, detail: dict[str, Any], tasks: list[tuple[str, dict[str, Any]]],
                   role: Optional[str], index: Optional[int], job_attempt: int,
                   follow: bool) -> Iterator[LogLine]:
        shown: dict[tuple[int, str, int, int], int] = {}
        while True:
            for task_role, task in tasks:
                key = (job_attempt, task_role, int(task.get("taskIndex") or 0), int(task.get("attemptId") or 0))
                yield from self._task_log(name, job_attempt, task_role, task, shown, announce=key not in shown)
            if not follow or self._view(detail).state.is_final:
                return
            self.sleep(self.min_interval)
            detail = self._detail(name)
            if int((detail.get("jobStatus") or {}).get("attemptId") or 0) != job_attempt:
                job_attempt = int((detail.get("jobStatus") or {}).get("attemptId") or 0)  # the job retried
            tasks = self._select_tasks(detail, role, index)

    def _select_tasks(self, detail: dict[str, Any], role: Optional[str],
                      index: Optional[int]) -> list[tuple[str, dict[str, Any]]]:
        roles = detail.get("taskRoles") or {}
        if not any((status or {}).get("taskStatuses") for status in roles.values()):
            # no attempt yet (`taskRoles: {}`), or one waiting to be created after a retry (`taskStatuses: []`):
            # no task exists to choose yet
            return []
        if role is not None and role not in roles:
            raise UsageError(f"job {detail.get('name')} has no task role {role!r}; it has {', '.join(roles)}")
        chosen = []
        for name, status in roles.items():
            if role is not None and name != role:
                continue
            for task in (status or {}).get("taskStatuses") or []:
                if index is None or int(task.get("taskIndex") or 0) == index:
                    chosen.append((name, task))
        if index is not None and not chosen:
            raise UsageError(f"task role {role!r} of job {detail.get('name')} has no task index {index}")
        return chosen

    def _task_log(self, name: str, job_attempt: int, role: str, task: dict[str, Any],
                  shown: dict[tuple[int, str, int, int], int], *, announce: bool) -> Iterator[LogLine]:
        task_index = int(task.get("taskIndex") or 0)
        task_attempt = int(task.get("attemptId") or 0)
        # a task's attempts count from 0 again in each job attempt (a retried job's attempt 1 runs task attempt 0)
        key = (job_attempt, role, task_index, task_attempt)
        path = (f"{self._job_path(name)}/attempts/{job_attempt}/taskRoles/{quote(role, safe='')}/taskIndex/"
                f"{task_index}/attempts/{task_attempt}/logs")
        if task.get("taskState") == "WAITING":
            # its container has not started: the node's log-manager has nothing, and the server answers 500
            # "Failed to get log list" for it, which is no error of the user's
            if announce:
                yield LogLine(role=role, index=task_index, text="no log yet", stream="note")
            shown.setdefault(key, 0)
            return
        try:
            locations = (self.client.get(path, what=f"log locations of {role}-{task_index}").body or {}) \
                .get("locations") or []
        except NotFoundError:  # NoTaskLogError: the task has not started, or its node keeps no log for it
            if announce:
                yield LogLine(role=role, index=task_index, text="no log yet", stream="note")
            shown.setdefault(key, 0)
            return
        by_name = {str(item.get("name")): str(item.get("uri")) for item in locations if isinstance(item, dict)}
        chosen = next((n for n in LOG_PREFERENCE if n in by_name), next(iter(by_name), None))
        if announce:
            listed = ", ".join(sorted(by_name)) or "none"
            yield LogLine(role=role, index=task_index, stream="note",
                          text=f"logs of attempt {job_attempt}.{task_attempt}: {listed}"
                               + (f"; showing {chosen}" if chosen else ""))
        if chosen is None:
            return
        try:
            text = self.client.get_link(by_name[chosen], what=f"{chosen} log of {role}-{task_index}").text
        except NotFoundError:  # the log-manager has no such file (yet)
            shown.setdefault(key, 0)
            return
        lines = text.splitlines()
        for line in lines[shown.get(key, 0):]:
            yield LogLine(role=role, index=task_index, text=line)
        shown[key] = len(lines)

    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        if view.state is not JobState.FAILED or view.triggered_by is None:
            return None
        role, index = view.triggered_by
        try:
            lines = [line.text for line in self.logs(view.name, role=role, index=index).lines
                     if line.stream == "out"]
        except PaictlError:
            return None
        return FailureExcerpt(label=f"{role}-{index} ({self._where()})", lines=tuple(lines[-EXCERPT_LINES:]))
