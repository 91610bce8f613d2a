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

import collections
import time
from typing import Any, Callable, Iterator, Optional, TypeVar
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
Answer = TypeVar("Answer")


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
        self._noted: set[tuple[int, str, int, int]] = set()  # task attempts already said to have no log yet
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
            reply = self._patiently(lambda: self.client.get(path, etag=etag, what=what))
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

    def _patiently(self, ask: Callable[[], Answer]) -> Answer:
        """`ask()` for a follower, waiting out the REST server's rate limit when it answers 429 with a Retry-After
        longer than the client's own retries (the API limiter counts per client address, so users behind one
        address share it): a follow polls for as long as the job runs, and a full minute's quota is no reason to
        stop. The wait is said on standard error (the client's logger, as its retries are)."""
        import logging

        from .client import LOGGER

        while True:
            try:
                return ask()
            except ClusterError as error:
                wait = getattr(error, "retry_after", 0.0)
                if getattr(error, "status", None) != 429 or not wait:
                    raise
                logging.getLogger(LOGGER).warning(f"paictl: {error}; following on then")
                self.sleep(wait)

    def list(self) -> list[JobView]:
        """Every job of the user, page by page: without `limit` the server answers its first 5,000 rows and nothing
        in the answer says more exist (recordings/openpai job-list-5012), so paictl asks for pages until a short
        one. Newest first: a job submitted while the pages are read pushes every row one place down, so the next
        page starts with a row already listed; each job is listed once (a job that new is on no page read)."""
        every_user = bool(self.options.extra.get("all_namespaces"))  # -A: every user's jobs the server shows
        rows: dict[tuple[str, str], Any] = {}
        offset = 0
        while True:
            params = {**({} if every_user else {"username": self.user}), "offset": offset, "limit": LIST_PAGE,
                      "order": "submissionTime,DESC"}  # a stable order, so pages neither skip nor repeat a job
            page = self.client.get("/api/v2/jobs", params=params, what="list jobs", expect=(list, dict)).body
            if isinstance(page, dict):  # withTotalCount form
                page = page.get("data") or []
            page = page if isinstance(page, list) else []
            offset += len(page)
            for row in page:
                if isinstance(row, dict):
                    rows.setdefault((str(row.get("username")), str(row.get("name"))), row)
            if len(page) < LIST_PAGE:
                break
        return [summary_view(row, where=self._where(row.get("virtualCluster")), owner=every_user)
                for row in rows.values()]

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
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False,
             task_attempt: Optional[int] = None) -> Logs:
        """Each chosen task's log locations (one note), then the preferred log's lines as they arrive; with follow,
        new lines until the job ends. A log's address is job attempt, task role, task index and task attempt
        (`.../attempts/J/taskRoles/R/taskIndex/I/attempts/T/logs`): `attempt` chooses J (its tasks come from
        `GET .../attempts/J`, the server's history of it), `task_attempt` chooses T, and `previous` the attempt
        before each task's latest (T-1 when the task was retried inside J, else the task's last attempt in J-1).
        The tasks are chosen now, so an unknown role, index or attempt fails before any line."""
        full = "~".join(self._full_name(name))
        detail = self._detail(name)
        latest = int((detail.get("jobStatus") or {}).get("attemptId") or 0)
        if attempt is not None and attempt != latest:
            if attempt > latest:
                raise NotFoundError(f"job {full} has no job attempt {attempt}: its attempts are 0 to {latest}")
            detail = self._attempt_detail(name, attempt)
            follow = False  # an earlier attempt has ended
        job_attempt = latest if attempt is None else attempt
        tasks = self._select_tasks(detail, role, index)
        chosen = tuple((task_role, int(task.get("taskIndex") or 0)) for task_role, task in tasks)
        if previous or task_attempt is not None:
            sources = [self._earlier(name, detail, job_attempt, task_role, task, task_attempt)
                       for task_role, task in tasks]
            return Logs(tasks=chosen, lines=self._fixed_lines(name, sources))
        return Logs(tasks=chosen, lines=self._log_lines(name, detail, tasks, role, index, job_attempt, follow))

    def _attempt_detail(self, name: str, attempt: int) -> dict[str, Any]:
        full = "~".join(self._full_name(name))
        try:
            return self.client.get(f"{self._job_path(name)}/attempts/{attempt}",
                                   what=f"read attempt {attempt} of {full}").body
        except NotFoundError:  # JOB_HISTORY=false keeps no earlier attempt
            raise NotFoundError(f"job {full}: the server keeps no record of job attempt {attempt} (its job "
                                "history is off)") from None

    def _earlier(self, name: str, detail: dict[str, Any], job_attempt: int, role: str, task: dict[str, Any],
                 task_attempt: Optional[int]) -> tuple[int, str, int, int]:
        """(job attempt, role, index, task attempt) of `--task-attempt N`, or of `--previous` when N is None."""
        index = int(task.get("taskIndex") or 0)
        current = int(task.get("attemptId") or 0)
        label = f"{role}-{index}"
        if task_attempt is not None:
            if task_attempt > current:
                raise NotFoundError(f"{label} has no task attempt {task_attempt} in job attempt {job_attempt}: its "
                                    f"attempts there are 0 to {current}")
            return job_attempt, role, index, task_attempt
        if current > 0:  # retried inside the job attempt (taskRetryCount): its previous task attempt
            return job_attempt, role, index, current - 1
        if job_attempt == 0:
            raise NotFoundError(f"{label} has no previous attempt: job attempt 0, task attempt 0 is its first")
        before = self._attempt_detail(name, job_attempt - 1)
        status = ((before.get("taskRoles") or {}).get(role) or {}).get("taskStatuses") or []
        found = next((t for t in status if int(t.get("taskIndex") or 0) == index), None)
        if found is None:
            raise NotFoundError(f"{label} did not run in job attempt {job_attempt - 1}: no previous attempt")
        return job_attempt - 1, role, index, int(found.get("attemptId") or 0)

    def _fixed_lines(self, name: str, sources: list[tuple[int, str, int, int]]) -> Iterator[LogLine]:
        """The whole log of each (job attempt, role, index, task attempt): an attempt that has ended. A log the
        server no longer has is NotFoundError when it is the only one asked for, else an error line."""
        for job_attempt, role, index, task_attempt in sources:
            yield from self._read_task(name, (job_attempt, role, index, task_attempt), {}, announce=True,
                                       done=True, missing="error" if len(sources) > 1 else "raise")

    def _log_lines(self, name: str, detail: dict[str, Any], tasks: list[tuple[str, dict[str, Any]]],
                   role: Optional[str], index: Optional[int], job_attempt: int,
                   follow: bool) -> Iterator[LogLine]:
        """Each task's log; with follow, only the bytes added since (see logstream.py), and a task whose attempt
        changed (a job retry, a task retry) has the rest of its old log read before the new one is shown."""
        cursors: dict[tuple[int, str, int, int], Any] = {}
        current: dict[tuple[str, int], tuple[int, str, int, int]] = {}
        while True:
            done = not follow or self._view(detail).state.is_final
            for task_role, task in tasks:
                task_index = int(task.get("taskIndex") or 0)
                key = (job_attempt, task_role, task_index, int(task.get("attemptId") or 0))
                old = current.get((task_role, task_index))
                if old is not None and old != key and old in cursors:
                    # the task's attempt changed: the old log's last lines first, then the new one from its start
                    yield from self._read_task(name, old, cursors, announce=False, done=True, missing="skip")
                current[(task_role, task_index)] = key
                if task.get("taskState") == "WAITING":
                    # its container has not started: the node's log-manager has nothing, and the server answers
                    # 500 "Failed to get log list" for it, which is no error of the user's
                    if key not in cursors and key not in self._noted:
                        self._noted.add(key)
                        yield LogLine(role=task_role, index=task_index, text="no log yet", stream="note")
                    continue
                yield from self._read_task(name, key, cursors, announce=key not in cursors, done=done,
                                           missing="skip" if follow else "error")
            if done:
                return
            self.sleep(self.min_interval)
            detail = self._patiently(lambda: self._detail(name))
            job_attempt = int((detail.get("jobStatus") or {}).get("attemptId") or 0)
            tasks = self._select_tasks(detail, role, index)

    def _locations(self, name: str, key: tuple[int, str, int, int],
                   tail: bool = False) -> Optional[dict[str, str]]:
        """The log files of a task attempt by name (all, stdout, stderr), or None when the server has none. With
        `tail`, links to the last 16 KB of each (the server adds `tail-mode=true` to them: recordings/openpai
        logs.jsonl)."""
        job_attempt, role, index, task_attempt = key
        path = (f"{self._job_path(name)}/attempts/{job_attempt}/taskRoles/{quote(role, safe='')}/taskIndex/"
                f"{index}/attempts/{task_attempt}/logs")
        try:
            locations = (self.client.get(path, params={"tail-mode": "true"} if tail else None,
                                         what=f"log locations of {role}-{index}").body or {}).get("locations") or []
        except NotFoundError:  # NoTaskLogError: no such task attempt, or its node keeps no log for it
            return None
        return {str(item.get("name")): str(item.get("uri")) for item in locations if isinstance(item, dict)}

    def _read_task(self, name: str, key: tuple[int, str, int, int], cursors: dict[Any, Any], *, announce: bool,
                   done: bool, missing: str) -> Iterator[LogLine]:
        """The lines of one task attempt's preferred log beyond its cursor. `missing` says what a log the server
        does not have is: "raise" (NotFoundError), "error" (an error line, and the command exits non-zero) or
        "skip" (not yet: a follower asks again)."""
        from .logstream import LogCursor, Replaced, read_new, rotated_rest

        job_attempt, role, index, task_attempt = key
        label = f"{role}-{index}"
        cursor = cursors.get(key)
        if cursor is None:
            by_name = self._locations(name, key)
            if by_name is None:
                message = (f"{label}: no log of job attempt {job_attempt}, task attempt {task_attempt} on "
                           f"{self.entry.alias} (the server has no such task attempt, or its node kept no log)")
                if missing == "raise":
                    raise NotFoundError(message)
                if missing == "error":
                    yield LogLine(role=role, index=index, text=f"paictl: {message}", stream="error")
                elif key not in self._noted:
                    self._noted.add(key)
                    yield LogLine(role=role, index=index, text="no log yet", stream="note")
                return
            chosen = next((n for n in LOG_PREFERENCE if n in by_name), next(iter(by_name), None))
            if announce:
                listed = ", ".join(sorted(by_name)) or "none"
                yield LogLine(role=role, index=index, stream="note",
                              text=f"logs of attempt {job_attempt}.{task_attempt}: {listed}"
                                   + (f"; showing {chosen}" if chosen else ""))
            if chosen is None:
                return
            cursor = cursors[key] = LogCursor(by_name[chosen], file=chosen)
        what = f"{cursor.file} log of {label}"
        try:
            for line in self._read_new(name, key, cursor, what=what):
                yield self._line(role, index, line)
        except Replaced:
            for line in rotated_rest(self.client.open_link, cursor, what=what):
                yield self._line(role, index, line)
            yield LogLine(role=role, index=index, stream="note",
                          text=f"paictl: {label}: {cursor.file} log of attempt {job_attempt}.{task_attempt} was "
                               "replaced (rotated or truncated); showing the new one from its start")
            cursors[key] = cursor = LogCursor(cursor.link, file=cursor.file)
            yield from (self._line(role, index, line) for line in read_new(self.client.open_link, cursor,
                                                                             what=what))
        except NotFoundError:
            message = (f"{label}: the {cursor.file} log of job attempt {job_attempt}, task attempt {task_attempt} "
                       f"is gone from its node's log-manager (HTTP 404)")
            if missing == "raise":
                raise NotFoundError(message) from None
            if missing == "error":
                yield LogLine(role=role, index=index, text=f"paictl: {message}", stream="error")
            return
        except ClusterError as error:
            if missing != "skip" or done or getattr(error, "status", None) is not None:
                raise
            # following, and the log-manager's connection broke off (or could not be made): the cursor holds every
            # byte that arrived, so the next poll reads on from there; an answer it gave (a status) is no such thing
            yield LogLine(role=role, index=index, stream="note",
                          text=f"paictl: {label}: reading the {cursor.file} log broke off; reading on at the next poll")
            return
        if done:
            for line in cursor.rest():
                yield self._line(role, index, line)

    def _read_new(self, name: str, key: tuple[int, str, int, int], cursor: Any, *, what: str) -> Iterator[bytes]:
        """`logstream.read_new`, with the link asked anew once when the log-manager refuses it (401/403: the
        log-manager token in the link expired during a long follow). Every request of a read comes before its
        first line, so nothing was shown when the refusal comes, and the cursor is where it was."""
        from .logstream import read_new

        try:
            yield from read_new(self.client.open_link, cursor, what=what)
        except ClusterError as error:
            if getattr(error, "status", None) not in (401, 403):
                raise
            fresh = (self._locations(name, key) or {}).get(cursor.file)
            if fresh is None:
                raise
            cursor.link = fresh
            yield from read_new(self.client.open_link, cursor, what=what)

    @staticmethod
    def _line(role: str, index: int, data: bytes) -> LogLine:
        return LogLine(role=role, index=index, text=data.decode("utf-8", "surrogateescape").rstrip("\r"))

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

    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        if view.state is not JobState.FAILED or view.triggered_by is None:
            return None
        role, index = view.triggered_by
        try:
            lines = self._log_tail(view.name, role, index)
        except PaictlError:
            return None
        return FailureExcerpt(label=f"{role}-{index} ({self._where()})", lines=lines) if lines else None

    def _log_tail(self, name: str, role: str, index: int) -> tuple[str, ...]:
        """The last lines of a task's latest log, from the log-manager's tail mode (its last 16 KB: a failure's
        traceback is at the end, and the log may be gigabytes); the first line is dropped when the tail cut it."""
        from .logstream import TAIL_BYTES, LogCursor

        detail = self._detail(name)
        tasks = self._select_tasks(detail, role, index)
        if not tasks:
            return ()
        task = tasks[0][1]
        key = (int((detail.get("jobStatus") or {}).get("attemptId") or 0), role, index,
               int(task.get("attemptId") or 0))
        by_name = self._locations(name, key, tail=True) or {}
        chosen = next((n for n in LOG_PREFERENCE if n in by_name), None)
        if chosen is None:
            return ()
        cursor = LogCursor(by_name[chosen], file=chosen)
        lines: collections.deque = collections.deque(maxlen=EXCERPT_LINES + 1)
        with self.client.open_link(cursor.link, what=f"{chosen} log of {role}-{index}") as response:
            for chunk in response.iter_bytes():
                lines.extend(cursor.lines(chunk))
        lines.extend(cursor.rest())
        if cursor.offset >= TAIL_BYTES and len(lines) > EXCERPT_LINES:
            lines.popleft()
        return tuple(self._line(role, index, line).text for line in list(lines)[-EXCERPT_LINES:])
