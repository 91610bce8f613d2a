"""The one interface every place that runs jobs implements: this machine, a Kubernetes cluster, and the others.

Modelled on TorchX's `Scheduler` (submit_dryrun/schedule/describe/log_iter/list/cancel): the CLI and the Python API
are thin layers over a `Backend`, so adding a place to run jobs is one package with a `backend.py` plus one line in
`paictl.targets.BACKENDS`, and no change to the commands beyond the options that place needs. A backend never
prints and never exits; it returns data (`Submission`, `JobView`, `StopResult`, `LogLine`) and raises
`paictl.errors.PaictlError` subclasses, which the CLI maps to exit codes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Protocol

if TYPE_CHECKING:
    from .compiled import CompiledJob
    from .states import JobView


@dataclasses.dataclass(frozen=True, kw_only=True)
class BackendOptions:
    """Where to connect and how to judge failures: what the CLI's shared flags say. None means the backend's own
    default (kubectl's current context and namespace, the default run folder, the built-in exit rules)."""

    context: Optional[str] = None          # Kubernetes: the kubeconfig context (kubectl --context)
    namespace: Optional[str] = None        # Kubernetes: the namespace (kubectl --namespace)
    kubeconfig: Optional[str] = None       # Kubernetes: the kubeconfig file (kubectl --kubeconfig)
    run_dir: Optional[Path] = None         # local: where runs keep their state and logs
    cluster: Optional[str] = None          # backends that name a cluster (a cluster file or an alias)
    exit_spec: Optional[Path] = None       # failure-analysis rules replacing the built-in ones
    pending_timeout: Optional[float] = None  # give up watching a job that stays pending this long (seconds)
    target: Optional[str] = None           # restrict the backend to one target's objects (e.g. framework or mars)
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # a backend's own options, by name


@dataclasses.dataclass(frozen=True, kw_only=True)
class Attached:
    """A job that runs inside this process (the local runner under `--follow`): iterating `views` drives it, and it
    ends with this process, so `interrupt` must be called on any exception while iterating."""

    views: Iterator[JobView]
    interrupt: Any              # (reason: str) -> None: stop every task now
    close: Any                  # () -> None: release what the run holds (idempotent)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Submission:
    """What `submit` did. `name` and `uid` identify this run for `watch`, so a follower never reports an older
    run of the same name. The text fields are what a user is told, one line each; `data` is the JSON form."""

    name: str
    where: str = ""
    uid: Optional[str] = None
    dry_run: bool = False
    notes: tuple[str, ...] = ()          # before anything ran: to standard error
    lines: tuple[str, ...] = ()          # what happened: to standard output (text format)
    data: tuple[dict[str, Any], ...] = ()  # what happened: JSON lines (json format)
    hints: tuple[str, ...] = ()          # how to go on when not following: to standard error
    attached: Optional[Attached] = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class StopResult:
    """What `stop` did: one line for text output, its JSON form, and the job as it was left."""
    line: str                   # one line for text output
    data: dict[str, Any]        # the JSON form
    view: Optional[JobView] = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class LogLine:
    """One line of a task's log, with the task it came from (lines of several tasks interleave)."""
    role: str
    index: int
    #: One line of the task's output, without its newline. Bytes that are not UTF-8 are kept as surrogates
    #: (`errors="surrogateescape"`), so `text.encode("utf-8", "surrogateescape")` gives back the bytes the task wrote.
    text: str
    #: "out": the task's output; "note": paictl's remark on standard error (e.g. no log yet, a log replaced),
    #: never prefixed; "error": a stream that broke or a log that is gone while others go on (standard error; the
    #: command then exits non-zero).
    stream: str = "out"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Logs:
    """The tasks chosen (known before any line is read, so a reader can decide on ROLE-INDEX prefixes) and their
    lines, lazily: with follow, the iterator ends when the tasks end."""

    tasks: tuple[tuple[str, int], ...]
    lines: Iterator[LogLine]


@dataclasses.dataclass(frozen=True, kw_only=True)
class FailureExcerpt:
    """The last lines of the task that failed a job, and where its whole log is."""

    label: str                  # e.g. "client-0 (.paictl/runs/demo/0/client-0.log)"
    lines: tuple[str, ...]


class Backend(Protocol):
    """A place that runs compiled jobs. Every method may raise `PaictlError`; none prints."""

    #: The targets whose compiled objects this backend runs (e.g. ("framework", "mars")).
    targets: tuple[str, ...]

    @property
    def namespace(self) -> Optional[str]:
        """The namespace a job is compiled for, when the backend decides it (kubectl's context namespace)."""
        ...

    def submit(self, compiled: CompiledJob, *, dry_run: bool = False, attach: bool = False) -> Submission:
        """Start the job (or, with dry_run, check it without starting anything). With attach, a backend that can
        run the job inside this process returns it in `Submission.attached`; the others ignore attach."""
        ...

    def is_configured(self) -> bool:
        """Whether the user has set this place up (e.g. a kubeconfig exists), so that listing every job may ask it
        and `submit` may choose it by default. Cheap: never connects."""
        ...

    def has_job(self, name: str) -> bool:
        """Whether a job of that name is known here, cheaply (used to pick a backend when --target is omitted)."""
        ...

    def not_found(self, name: str) -> str:
        """One phrase saying that no job of that name is here, naming where it looked (for "not found" errors)."""
        ...

    def describe(self, name: str) -> JobView:
        ...

    def watch(self, name: str, *, uid: Optional[str] = None) -> Iterator[JobView]:
        """Snapshots until a final one (or until the pending timeout, ending on a non-final view)."""
        ...

    def stop(self, name: str) -> StopResult:
        ...

    def logs(self, name: str, *, role: Optional[str] = None, index: Optional[int] = None,
             attempt: Optional[int] = None, follow: bool = False, previous: bool = False,
             task_attempt: Optional[int] = None) -> Logs:
        """A job's logs in one model: job attempt (`attempt`, default the latest), task (`role`, `index`), task
        attempt (`task_attempt`, default the task's latest in that job attempt) and the backend's preferred file.
        `previous` is `kubectl logs -p`: for each task, the attempt before its latest (the previous task attempt
        when the task was retried inside the job attempt, else its last attempt in the previous job attempt).
        Something that does not exist (an unknown attempt, a log that is gone) raises NotFoundError."""
        ...

    def list(self) -> list[JobView]:
        ...

    def failure_excerpt(self, view: JobView) -> Optional[FailureExcerpt]:
        """For a failed job: the end of the deciding task's output, when the backend can read it cheaply."""
        ...

    def close(self) -> None:
        ...
