"""`paictl submit`, `status`, `stop` and `logs`: one set of commands over every backend.

These functions parse options, open the backend that runs the chosen target (`paictl.targets.open_backend`), call
it, and render what it returns (`live.py` draws job views). They know no backend: a new place to run jobs needs
no change here beyond the options it takes. Exit statuses: 0 submitted / succeeded, 1 failed, 3 cluster error or
not found (or still pending at --pending-timeout), 4 stopped, 130 interrupted.
"""

import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, List, Optional

import typer

from paictl.errors import ClusterError, InvalidJobError, NotFoundError, PaictlError, UsageError

from .jobinput import (JOB_ARGUMENT, PARAMETER_OPTION, PARAMETERS_OPTION, PROFILE_OPTION, SECRETS_FROM_OPTION,
                       STDIN_NAME_OPTION, STRICT_OPTION, USER_OPTION)

if TYPE_CHECKING:
    from paictl.targets.backend import Backend, BackendOptions, Submission
    from paictl.targets.states import JobView

INTERRUPTED = 130
PENDING_TIMEOUT_EXIT = 3


def _target_names() -> tuple[str, ...]:
    from paictl.targets import RUNS_ON

    return tuple(RUNS_ON)


def _check_target(target: str) -> None:
    """A --target the user typed: a target name (not a backend's internal name such as "kube")."""
    if target not in _target_names():
        raise UsageError(f"unknown target {target!r}; available: {', '.join(_target_names())}")


def _options(*, cluster: Optional[List[str]] = None, **given) -> "BackendOptions":
    """The shared flags as BackendOptions; `--cluster` may name several files (MARO's create and node-join files),
    so the first is `cluster` and all of them are `extra["cluster_files"]`."""
    from paictl.targets.backend import BackendOptions

    extra = dict(given.pop("extra", None) or {})
    if cluster:
        given["cluster"] = cluster[0]
        extra["cluster_files"] = list(cluster)
    return BackendOptions(**given, extra=extra)


def _open(target: str, options: "BackendOptions") -> "Backend":
    from paictl.targets import BACKENDS, RUNS_ON, open_backend

    if target not in RUNS_ON and target not in BACKENDS:
        raise UsageError(f"unknown target {target!r}; available: {', '.join(RUNS_ON)}")
    return open_backend(target, options)


def default_submit_target(context: Optional[str], kubeconfig: Optional[str]) -> str:
    """A cluster when kubectl would find one, otherwise this machine: `paictl submit` always has somewhere to run."""
    kube = _open("framework", _options(context=context, kubeconfig=kubeconfig))
    return "framework" if kube.is_configured() else "local"


def _target_option(help_text: str):
    return typer.Option(None, "--target", "-t", metavar="TARGET", help=help_text)


_CONTEXT = typer.Option(None, "--context", help="The kubeconfig context to use (as kubectl --context).")
_NAMESPACE = typer.Option(None, "--namespace", "-n", help="Namespace (default: the context's, else the profile's).")
_KUBECONFIG = typer.Option(None, "--kubeconfig", metavar="FILE", help="Path to the kubeconfig file (as kubectl).")
_CLUSTER = typer.Option(None, "--cluster", metavar="FILE_OR_ALIAS",
                        help="grass: the cluster file (repeatable: MARO's create file and node-join files); "
                             "openpai: the cluster alias (see `paictl openpai clusters`; default: the only one).")
_RUN_DIR = typer.Option(None, "--run-dir", metavar="DIR",
                        help="Where local runs keep state and logs (default: $XDG_STATE_HOME/paictl/runs, i.e. "
                             "~/.local/state/paictl/runs; runs in ./.paictl/runs are found too).")
_FORMAT = typer.Option("text", "--output", "-o", "--format", metavar="FORMAT",
                       help="text: a live table (one line per change when not a terminal); json: JSON lines.")
_EXIT_SPEC = typer.Option(None, "--exit-spec", metavar="FILE",
                          help="Failure-analysis rules replacing the built-in ones (see `paictl schema exit-rules`).")
_TIMEOUT = typer.Option(None, "--pending-timeout", metavar="SECONDS",
                        help="Give up following (exit 3) when the job stays pending this long, e.g. an image "
                             "that cannot be pulled (default: wait forever).")


def _check_format(output_format: str) -> None:
    if output_format not in ("text", "json"):
        raise UsageError(f"-o/--format {output_format!r}: expected text or json")


def _backend_for(name: str, target: Optional[str], options: "BackendOptions") -> tuple["Backend", list[str]]:
    """An explicit --target (checked against the target names) wins; otherwise the first backend in `LOOKUP_ORDER` that has a job of that name, else
    the last one. Returns the backend and what the ones passed over said ("no local run ...")."""
    from paictl.targets import LOOKUP_ORDER

    if target is not None:
        _check_target(target)
        return _open(target, options), []
    absent: list[str] = []
    for candidate in LOOKUP_ORDER[:-1]:
        backend = _open(candidate, options)
        if backend.has_job(name):
            return backend, []
        absent.append(backend.not_found(name))
    return _open(LOOKUP_ORDER[-1], options), absent


def _looked_everywhere(error: PaictlError, absent: list[str]) -> PaictlError:
    """Without --target, "not found" on the cluster also says where else paictl looked."""
    if absent and isinstance(error, NotFoundError):
        return NotFoundError(f"{'; '.join(absent)}; on the cluster: {error}")
    return error


def _echo_json(data: dict) -> None:
    import json

    typer.echo(json.dumps(data, ensure_ascii=False))


def _finish(backend: "Backend", name: str, last: Optional["JobView"], output_format: str) -> None:
    """The last view becomes the exit status; a failed job's deciding task shows its last lines (text only)."""
    from paictl.targets.states import VERDICT_EXIT_CODES

    if last is None:
        raise ClusterError(f"{name}: nothing was reported about the job")
    if not last.state.is_final:
        typer.echo(f"paictl: error: {name}: {last.message}", err=True)
        raise typer.Exit(PENDING_TIMEOUT_EXIT)
    if output_format == "text":
        _show_excerpt(backend, last)
    raise typer.Exit(VERDICT_EXIT_CODES[last.state])


def _show_excerpt(backend: "Backend", view: "JobView") -> None:
    excerpt = backend.failure_excerpt(view)
    if excerpt is not None:
        typer.echo(f"last lines of {excerpt.label}:")
        for line in excerpt.lines:
            typer.echo(f"  {line}")


def _draw(views: Iterable["JobView"], output_format: str) -> Optional["JobView"]:
    from .live import follow

    with contextlib.closing(views) if hasattr(views, "close") else contextlib.nullcontext(views) as stream:
        return follow(stream, output_format=output_format)


def _interrupted(signum: int, frame: object) -> None:
    raise SystemExit(INTERRUPTED)


def _run_attached(backend: "Backend", submission: "Submission", output_format: str) -> None:
    """A job running inside this process: Ctrl-C, SIGTERM or a failure while drawing must stop every task."""
    from .live import follow

    attached = submission.attached
    assert attached is not None
    previous = signal.signal(signal.SIGTERM, _interrupted)
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
        typer.echo(f"paictl: {submission.name}: interrupted; every task was stopped", err=True)
        raise typer.Exit(INTERRUPTED)
    finally:
        attached.close()
        signal.signal(signal.SIGTERM, previous)
    if last is None or not last.state.is_final:
        raise typer.Exit(INTERRUPTED)
    _finish(backend, submission.name, last, output_format)


def submit_command(
    job_path: str = JOB_ARGUMENT,
    target: Optional[str] = _target_option(
        "local (this machine), framework, jobset or mars (Kubernetes), grass (a MARO Grass cluster, with --cluster), "
        "openpai (an OpenPAI REST server). Default: framework when a kubeconfig is found, else local."),
    profile: str = PROFILE_OPTION,
    user: Optional[str] = USER_OPTION,
    parameter: List[str] = PARAMETER_OPTION,
    parameter_files: List[Path] = PARAMETERS_OPTION,
    secrets_from: Optional[str] = SECRETS_FROM_OPTION,
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    cluster: Optional[List[str]] = _CLUSTER,
    virtual_cluster: Optional[str] = typer.Option(None, "--virtual-cluster", metavar="VC",
                                                  help="OpenPAI: the virtual cluster (default: the job's, else the "
                                                       "alias's, else default)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Kubernetes: ask the server to check, create nothing."),
    replace: bool = typer.Option(False, "--replace",
                                 help="Kubernetes: delete a job of that name first (wait until it is gone), then "
                                      "create it anew; without it, re-submitting a finished job is refused."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Follow the job to its verdict (exit 0/1/4)."),
    output_format: str = _FORMAT,
    pending_timeout: Optional[float] = _TIMEOUT,
    exit_spec: Optional[Path] = _EXIT_SPEC,
    run_dir: Optional[Path] = _RUN_DIR,
    stdin_name: str = STDIN_NAME_OPTION,
    strict: bool = STRICT_OPTION,
) -> None:
    """Compile a job and run it: on this machine (local) or on Kubernetes (server-side apply).

    Exit status without --follow: 0 submitted. With --follow: 0 succeeded, 1 failed, 4 stopped, 130 interrupted
    (Ctrl-C). Always: 1 invalid job, 2 usage error, 3 cluster error.
    """
    from .errors import fail, report_invalid
    from .compile_run import compile_for_command

    backend = None
    try:
        _check_format(output_format)
        if target is None:
            target = default_submit_target(context, kubeconfig)
            typer.echo(f"paictl: target {target} (choose with --target {'|'.join(_target_names())})", err=True)
        _check_target(target)
        backend = _open(target, _options(context=context, namespace=namespace, kubeconfig=kubeconfig,
                                         run_dir=run_dir, exit_spec=exit_spec, pending_timeout=pending_timeout,
                                         cluster=cluster,
                                         extra={"virtual_cluster": virtual_cluster, "replace": replace}))
        compiled = compile_for_command(job_path=job_path, target=target, profile=profile, user=user,
                                       namespace=backend.namespace, parameter=parameter,
                                       parameter_files=parameter_files, secrets_from=secrets_from,
                                       stdin_name=stdin_name, strict=strict)
        submission = backend.submit(compiled, dry_run=dry_run, attach=follow)
        for note in submission.notes:
            typer.echo(note, err=True)
        if output_format == "json":
            for record in submission.data:
                _echo_json(record)
        else:
            for line in submission.lines:
                typer.echo(line)
        if submission.dry_run:
            if follow:
                typer.echo("paictl: --follow ignored: a dry run creates nothing to follow", err=True)
            return
        if not follow:
            for hint in submission.hints:
                typer.echo(hint, err=True)
            return
        if submission.attached is not None:
            _run_attached(backend, submission, output_format)
        last = _draw(backend.watch(submission.name, uid=submission.uid), output_format)
        _finish(backend, submission.name, last, output_format)
    except InvalidJobError as error:
        report_invalid(error)
    except PaictlError as error:
        fail(error)
    finally:
        if backend is not None:
            backend.close()


def status_command(
    name: Optional[str] = typer.Argument(None, metavar="[NAME]",
                                         help="The job name (a local run or a Framework/MarsJob/JobSet); omit it to "
                                              "list every job."),
    target: Optional[str] = _target_option("local, framework, mars or jobset. Default: a local run of that name "
                                           "if one exists, else the cluster (Framework, MarsJob, then JobSet)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Watch until the job finishes (exit 0/1/4)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    cluster: Optional[List[str]] = _CLUSTER,
    output_format: str = _FORMAT,
    pending_timeout: Optional[float] = _TIMEOUT,
    exit_spec: Optional[Path] = _EXIT_SPEC,
    run_dir: Optional[Path] = _RUN_DIR,
) -> None:
    """Show a job's state, its tasks, attempts and exit codes (and why a task failed); without NAME, list jobs.

    Without NAME: the local runs, then (when a kubeconfig is found, or with --target framework|mars) the
    Frameworks and MarsJobs of the namespace.
    Exit status: 0 shown (without --follow); with --follow 0 succeeded, 1 failed, 4 stopped; 3 cluster error or
    not found.
    """
    from .errors import fail

    options = _options(context=context, namespace=namespace, kubeconfig=kubeconfig, run_dir=run_dir,
                       exit_spec=exit_spec, pending_timeout=pending_timeout, cluster=cluster)
    if name is None:
        try:
            _check_format(output_format)
            if follow:
                raise UsageError("--follow needs a job NAME")
            _list_jobs(target=target, options=options, output_format=output_format)
        except PaictlError as error:
            fail(error)
        return
    absent: list[str] = []
    backend = None
    try:
        _check_format(output_format)
        backend, absent = _backend_for(name, target, options)
        if follow:
            _finish(backend, name, _draw(backend.watch(name), output_format), output_format)
        view = backend.describe(name)
        if output_format == "json":
            from paictl.targets.states import view_to_data

            _echo_json(view_to_data(view))
        else:
            from .live import follow as draw

            draw(iter([view]), output_format="text", live=False)
            _show_excerpt(backend, view)
    except PaictlError as error:
        fail(_looked_everywhere(error, absent))
    finally:
        if backend is not None:
            backend.close()


def _list_jobs(*, target: Optional[str], options: "BackendOptions", output_format: str) -> None:
    """Every backend the user has set up (or the one --target names), in `LOOKUP_ORDER`.

    What could be listed is printed before any error: an unreachable cluster never hides the local runs. The
    first backend error then ends the listing (the next backends are the same cluster) and becomes the exit status.
    """
    from paictl.targets import LOOKUP_ORDER

    from .live import job_list

    if target is not None:
        _check_target(target)
    views: list[JobView] = []
    error: Optional[PaictlError] = None
    for name in [target] if target is not None else LOOKUP_ORDER:
        backend = None
        try:
            backend = _open(name, options)
            if target is not None or backend.is_configured():
                views += backend.list()
        except PaictlError as exc:
            error = exc
            break
        finally:
            if backend is not None:
                backend.close()
    if views or error is None or output_format == "json":
        job_list(views, output_format=output_format)
    if error is not None:
        raise error


def stop_command(
    name: str = typer.Argument(..., metavar="NAME", help="The job name (a local run or a Framework/MarsJob/JobSet)."),
    target: Optional[str] = _target_option("local, framework, mars or jobset (default: as for status)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    cluster: Optional[List[str]] = _CLUSTER,
    output_format: str = _FORMAT,
    run_dir: Optional[Path] = _RUN_DIR,
    suspend: bool = typer.Option(False, "--suspend", help="JobSet: set spec.suspend instead of deleting it "
                                                          "(its pods go; resume it with suspend: false)."),
) -> None:
    """Stop a job: every task is terminated, then killed after a grace period. A Framework gets executionType Stop;
    a MarsJob or JobSet is deleted in the foreground (a JobSet is suspended instead with --suspend).

    Exit status: 0 stop requested (or already finished); 3 cluster error or not found.
    """
    from .errors import fail

    absent: list[str] = []
    backend = None
    try:
        _check_format(output_format)
        backend, absent = _backend_for(name, target, _options(context=context, namespace=namespace,
                                                               kubeconfig=kubeconfig, run_dir=run_dir,
                                                               cluster=cluster,
                                                               extra={"suspend": True} if suspend else {}))
        if suspend and "jobset" not in backend.targets:
            raise UsageError(f"--suspend stops JobSets only; {name!r} is not on a Kubernetes cluster")
        result = backend.stop(name)
        if output_format == "json":
            _echo_json(result.data)
        else:
            typer.echo(result.line)
    except PaictlError as error:
        fail(_looked_everywhere(error, absent))
    finally:
        if backend is not None:
            backend.close()


def logs_command(
    name: str = typer.Argument(..., metavar="NAME", help="The job name (a local run or a Framework/MarsJob/JobSet)."),
    role: Optional[str] = typer.Argument(None, metavar="[ROLE]", help="Task role (default: every role)."),
    index: Optional[int] = typer.Argument(None, metavar="[INDEX]", help="Task index (default: every index)."),
    target: Optional[str] = _target_option("local, framework, mars or jobset (default: as for status)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until the tasks end."),
    attempt: Optional[int] = typer.Option(None, "--attempt", metavar="N",
                                          help="Local runs: the job attempt to show (default: the latest)."),
    previous: bool = typer.Option(False, "--previous", "-p",
                                  help="Kubernetes: the previous instance of each task's container (after a "
                                       "restart), as kubectl logs -p."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    cluster: Optional[List[str]] = _CLUSTER,
    run_dir: Optional[Path] = _RUN_DIR,
) -> None:
    """Print task logs. With several tasks, each line is prefixed with ROLE-INDEX (as kubectl logs --prefix).

    Exit status: 0; 2 no such role or index; 3 cluster error or not found.
    """
    from .errors import fail

    absent: list[str] = []
    backend = None
    try:
        backend, absent = _backend_for(name, target, _options(context=context, namespace=namespace,
                                                               kubeconfig=kubeconfig, run_dir=run_dir,
                                                               cluster=cluster))
        if previous and follow:
            raise UsageError("--previous and --follow cannot be combined: a previous container has ended")
        logs = backend.logs(name, role=role, index=index, attempt=attempt, follow=follow, previous=previous)
        prefixed = len(logs.tasks) > 1
        for line in logs.lines:
            if line.stream == "note":
                typer.echo(line.text, err=True)
            else:
                typer.echo((f"[{line.role}-{line.index}] " if prefixed else "") + line.text)
    except PaictlError as error:
        fail(_looked_everywhere(error, absent))
    finally:
        if backend is not None:
            backend.close()
