"""`paictl submit` without typer: the command's whole behaviour, shared by the typer command (run_cmds.py) and the
start-up fast path in entry.py, so both print the same bytes and exit with the same codes.

A local run is often a short job, and a big one starts a process per task: typer and every other command's module
took a third of a one-task run before its task started. Following a job to its verdict (`follow_to_verdict`) is
shared with `paictl status --follow`. This module imports neither typer nor click.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, List, Optional

from paictl.errors import ClusterError, PaictlError, UsageError

from .process_exit import INTERRUPTED, interrupt_on

if TYPE_CHECKING:
    from paictl.targets.backend import Backend, BackendOptions, Submission
    from paictl.targets.states import JobView

    from .validate_cmd import Echo

PENDING_TIMEOUT_EXIT = 3
OUTPUT_FORMATS = ("text", "json", "yaml")  # formats.RECORD_FORMATS (not imported here: see check_format)


def target_names() -> tuple[str, ...]:
    from paictl.targets import RUNS_ON

    return tuple(RUNS_ON)


def check_target(target: str) -> None:
    """A --target the user typed: a target name (not a backend's internal name such as "kube")."""
    if target not in target_names():
        raise UsageError(f"unknown target {target!r}; available: {', '.join(target_names())}")


def check_format(output_format: str, allowed: tuple[str, ...] = OUTPUT_FORMATS) -> None:
    from .formats import check_output

    check_output(output_format, allowed)


#: The clusters this invocation found reachable a moment ago: (backend, kubeconfig, context, cluster). entry.py
#: checks a cluster before typer is imported (`unreachable_cluster`); the command then opens its own backend with
#: the same flags, and `backend_options` tells it the check is done (`extra["reachable"]`), so one invocation
#: probes a cluster once: one TCP connect and one read of the kubeconfig for it, not two.
_REACHED: set[tuple[str, Optional[str], Optional[str], Optional[str]]] = set()


def _connection_flags(kubeconfig: object, context: object, cluster: Optional[List[str]]) -> tuple:
    return (None if kubeconfig is None else str(kubeconfig), context, cluster[0] if cluster else None)


def note_reachable(backend: str, *, kubeconfig: Optional[str], context: Optional[str],
                   cluster: Optional[List[str]]) -> None:
    """Record that `backend` (a `BACKENDS` name) answered for these flags: see `_REACHED`."""
    _REACHED.add((backend, *_connection_flags(kubeconfig, context, cluster)))


def backend_options(*, cluster: Optional[List[str]] = None, **given) -> "BackendOptions":
    """The shared flags as BackendOptions; `--cluster` may name several files (MARO's create and node-join files),
    so the first is `cluster` and all of them are `extra["cluster_files"]`. `extra["reachable"]`: the backends
    whose cluster for these flags this invocation already found reachable (`_REACHED`)."""
    from paictl.targets.backend import BackendOptions

    extra = dict(given.pop("extra", None) or {})
    extra.setdefault("notice", _notice)  # a backend's word while it waits (a retry the user would otherwise wonder at)
    flags = _connection_flags(given.get("kubeconfig"), given.get("context"), cluster)
    reached = frozenset(backend for backend, *checked in _REACHED if tuple(checked) == flags)
    if reached:
        extra["reachable"] = reached
    if cluster:
        given["cluster"] = cluster[0]
        extra["cluster_files"] = list(cluster)
    return BackendOptions(**given, extra=extra)


def ensure_reachable(target: str, *, kubeconfig: Optional[str], context: Optional[str],
                     cluster: Optional[List[str]]) -> None:
    """Raise the one-line error (exit 3) of the backend running `target` when its cluster cannot be reached, once
    per invocation (`_REACHED`), before anything is asked of it: a backend without `check_reachable` (this machine)
    has nothing to check."""
    from paictl.targets import RUNS_ON, backend_class

    backend = RUNS_ON.get(target, target)
    flags = {"kubeconfig": kubeconfig, "context": context, "cluster": cluster}
    if (backend in backend_options(**flags).extra.get("reachable", ())
            or not hasattr(backend_class(target), "check_reachable")):
        return
    probe = open_target(target, backend_options(**flags))
    try:
        probe.check_reachable()
        note_reachable(backend, **flags)
    finally:
        probe.close()


def _notice(message: str) -> None:
    from .output import plain_echo

    plain_echo(f"paictl: {message}", err=True)


def open_target(target: str, options: "BackendOptions") -> "Backend":
    from paictl.targets import BACKENDS, RUNS_ON, open_backend

    if target not in RUNS_ON and target not in BACKENDS:
        raise UsageError(f"unknown target {target!r}; available: {', '.join(RUNS_ON)}")
    return open_backend(target, options)


def default_submit_target(context: Optional[str], kubeconfig: Optional[str]) -> str:
    """A cluster when kubectl would find one, otherwise this machine: `paictl submit` always has somewhere to run."""
    kube = open_target("framework", backend_options(context=context, kubeconfig=kubeconfig))
    return "framework" if kube.is_configured() else "local"


def echo_record(data: dict, output_format: str, echo: "Echo") -> None:
    """One record as `-o json` (a JSON line) or `-o yaml` (a `---` document) prints it."""
    from .formats import record_text

    echo(record_text(data, output_format))


def show_excerpt(backend: "Backend", view: "JobView", echo: "Echo") -> None:
    """A failed job's last lines under paictl's verdict. They are the job's own output, so their control characters
    are escaped as `status` escapes a job's messages: a task's last words cannot set the terminal's title or
    clipboard, ring its bell or clear the verdict off the screen (`paictl logs` prints the output as it is)."""
    excerpt = backend.failure_excerpt(view)
    if excerpt is not None and excerpt.lines:
        from paictl.protocol.diagnostics import one_line, one_line_keeping_tabs

        echo(f"last lines of {one_line(excerpt.label)}:")
        for line in excerpt.lines:
            echo(f"  {one_line_keeping_tabs(line)}")


def verdict_status(backend: "Backend", name: str, last: Optional["JobView"], output_format: str,
                   echo: "Echo") -> int:
    """The last view becomes the exit status; a failed job's deciding task shows its last lines (text only)."""
    from paictl.targets.states import VERDICT_EXIT_CODES

    from .errors import error_line

    if last is None:
        raise ClusterError(f"{name}: nothing was reported about the job")
    if not last.state.is_final:
        echo(error_line(f"{name}: {last.message}"), err=True)
        return PENDING_TIMEOUT_EXIT
    if output_format == "text":
        show_excerpt(backend, last, echo)
    return VERDICT_EXIT_CODES[last.state]


def follow_to_verdict(backend: "Backend", name: str, views: Iterable["JobView"], output_format: str,
                      echo: "Echo") -> int:
    """Draw a job followed from outside (a cluster, a detached local run) until its verdict; its exit status."""
    from .live import follow

    with contextlib.closing(views) if hasattr(views, "close") else contextlib.nullcontext(views) as stream:
        last = follow(stream, output_format=output_format)
    return verdict_status(backend, name, last, output_format, echo)


class Reporter:
    """What a backend shows while `submit` works (the runtime chosen, an image's pull progress): lines to standard
    error; a transient line (progress) is drawn in place on a terminal, and not at all elsewhere."""

    def __init__(self, echo: "Echo"):
        import sys

        self.echo = echo
        self.stream = sys.stderr
        self.live = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.shown = False

    def __call__(self, line: str, transient: bool = False) -> None:
        if self.shown:  # clear the progress line first
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False
        if transient:
            if self.live and line:
                self.stream.write(line[:200])
                self.stream.flush()
                self.shown = True
        elif line:
            self.echo(line, err=True)


def _run_attached(backend: "Backend", submission: "Submission", output_format: str, echo: "Echo") -> int:
    """A job running inside this process: Ctrl-C, SIGTERM or a failure while drawing must stop every task."""
    from .live import follow

    attached = submission.attached
    assert attached is not None
    previous = interrupt_on(signal.SIGTERM)
    try:
        last = follow(attached.views, output_format=output_format)
    except BaseException as exc:  # Ctrl-C, SIGTERM, or a failure such as a closed stdout: no task may outlive it
        interrupted = isinstance(exc, (SystemExit, KeyboardInterrupt))
        try:
            attached.interrupt("interrupted: paictl received Ctrl-C or SIGTERM" if interrupted else
                               f"stopped: paictl failed while following ({type(exc).__name__})")
        finally:
            attached.close()
        if not interrupted:
            raise
        echo(f"paictl: {submission.name}: interrupted; every task was stopped", err=True)
        return INTERRUPTED
    finally:
        attached.close()
        signal.signal(signal.SIGTERM, previous)
    if last is None or not last.state.is_final:
        return INTERRUPTED
    return verdict_status(backend, submission.name, last, output_format, echo)


def _check_context_namespace(namespace: str) -> None:
    """The namespace the kubeconfig's context names (no -n given), held to the rule `-n` is held to; a value no
    namespace can have is the configuration's fault, not the command line's: exit 3, as for a kubeconfig of the
    wrong shape (docs/reference/exit-codes.md), saying where it came from."""
    from paictl.compiler.profiles import check_override

    try:
        check_override("namespace", namespace, "-n")
    except UsageError as error:
        reason = str(error).partition(": ")[2]
        raise ClusterError(f"the kubeconfig's context names the namespace {namespace!r}: {reason}; give one with "
                           "-n/--namespace") from None


def run_submit(*, job_path: str, target: Optional[str], profile: str, user: Optional[str], parameter: List[str],
               parameter_files: List[Path], secrets_from: Optional[str], context: Optional[str],
               namespace: Optional[str], kubeconfig: Optional[str], cluster: Optional[List[str]],
               virtual_cluster: Optional[str], dry_run: bool, replace: bool, follow: bool, output_format: str,
               pending_timeout: Optional[float], exit_spec: Optional[Path], run_dir: Optional[Path],
               stdin_name: str, strict: bool, echo: "Echo", runtime: Optional[str] = None,
               pull: Optional[str] = None) -> int:
    """Compile the job, submit it, and (with `follow`) draw it to its verdict; return the exit status.

    A followed local run is this command's work in a session of its own (own_session.py): it runs its tasks, and
    the terminal's session may be busy with other work."""
    options = dict(locals())  # the parameters as given, for _submit
    from .errors import check_seconds, print_error

    try:
        check_format(output_format)
        check_seconds(pending_timeout, "--pending-timeout")
        if target is None:
            target = default_submit_target(context, kubeconfig)
            echo(f"paictl: target {target} (choose with --target {'|'.join(target_names())})", err=True)
        check_target(target)
        if target != "local" and (runtime is not None or pull is not None):
            raise UsageError(f"--runtime and --pull choose how a local run runs its tasks; --target {target} runs "
                             "them elsewhere")
    except PaictlError as error:
        return print_error(error, echo)
    options["target"] = target
    if target == "local" and follow and not dry_run:
        from .own_session import run_in_own_session

        return run_in_own_session(lambda: _submit(**options), say=lambda line: echo(line, err=True))
    return _submit(**options)


def _submit(*, job_path: str, target: str, profile: str, user: Optional[str], parameter: List[str],
            parameter_files: List[Path], secrets_from: Optional[str], context: Optional[str],
            namespace: Optional[str], kubeconfig: Optional[str], cluster: Optional[List[str]],
            virtual_cluster: Optional[str], dry_run: bool, replace: bool, follow: bool, output_format: str,
            pending_timeout: Optional[float], exit_spec: Optional[Path], run_dir: Optional[Path],
            stdin_name: str, strict: bool, echo: "Echo", runtime: Optional[str], pull: Optional[str]) -> int:
    from .compile_run import compile_for_command
    from .errors import print_error

    backend = None
    try:
        # before the job is read: a cluster that is not there is the answer whatever the job holds (and the
        # early answer, entry.py, needs neither the job nor the compiler)
        ensure_reachable(target, kubeconfig=kubeconfig, context=context, cluster=cluster)
        backend = open_target(target, backend_options(context=context, namespace=namespace, kubeconfig=kubeconfig,
                                                      run_dir=run_dir, exit_spec=exit_spec,
                                                      pending_timeout=pending_timeout, cluster=cluster,
                                                      extra={"virtual_cluster": virtual_cluster,
                                                             "replace": replace, "runtime": runtime,
                                                             "pull": pull, "report": Reporter(echo)}))
        if namespace is None and backend.namespace is not None:
            _check_context_namespace(backend.namespace)
        compiled = compile_for_command(job_path=job_path, target=target, profile=profile, user=user,
                                       namespace=backend.namespace, parameter=parameter,
                                       parameter_files=parameter_files, secrets_from=secrets_from,
                                       stdin_name=stdin_name, strict=strict)
        submission = backend.submit(compiled, dry_run=dry_run, attach=follow)
        for note in submission.notes:
            echo(note, err=True)
        if output_format != "text":
            for record in submission.data:
                echo_record(record, output_format, echo)
        else:
            for line in submission.lines:
                echo(line)
        if submission.dry_run:
            if follow:
                echo("paictl: --follow ignored: a dry run creates nothing to follow", err=True)
            return 0
        if not follow:
            for hint in submission.hints:
                echo(hint, err=True)
            return 0
        if submission.attached is not None:
            return _run_attached(backend, submission, output_format, echo)
        return follow_to_verdict(backend, submission.name, backend.watch(submission.name, uid=submission.uid),
                                 output_format, echo)
    except PaictlError as error:
        return print_error(error, echo)
    finally:
        if backend is not None:
            backend.close()
