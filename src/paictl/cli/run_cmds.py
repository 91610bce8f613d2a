"""`paictl submit`, `status`, `stop` and `logs`: one set of commands over every backend.

These functions parse options, open the backend that runs the chosen target (`paictl.targets.open_backend`), call
it, and render what it returns (`live.py` draws job views). They know no backend: a new place to run jobs needs
no change here beyond the options it takes. `submit`'s body is `submit_run.run_submit`, which entry.py also
runs without typer. Exit statuses: 0 submitted / succeeded, 1 failed, 3 cluster error or
not found (or still pending at --pending-timeout), 4 stopped, 130 interrupted.
"""

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from paictl.errors import NotFoundError, PaictlError, UsageError

from .completion import complete_cluster, complete_job, complete_target
from .jobinput import (JOB_ARGUMENT, PARAMETER_OPTION, PARAMETERS_OPTION, PROFILE_OPTION, PULL_OPTION,
                       RUNTIME_OPTION, SECRETS_FROM_OPTION, STDIN_NAME_OPTION, STRICT_OPTION, USER_OPTION)
from .submit_run import (backend_options, check_format, check_target, echo_record, follow_to_verdict,
                         open_target, run_submit, show_excerpt)

if TYPE_CHECKING:
    from paictl.targets.backend import Backend, BackendOptions
    from paictl.targets.states import JobView


def _target_option(help_text: str):
    return typer.Option(None, "--target", "-t", metavar="TARGET", help=help_text, autocompletion=complete_target)


def _name_argument(help_text: str, required: bool = True):
    return typer.Argument(... if required else None, metavar="NAME" if required else "[NAME]", help=help_text,
                          autocompletion=complete_job)


_CONTEXT = typer.Option(None, "--context", help="The kubeconfig context to use (as kubectl --context).")
_NAMESPACE = typer.Option(None, "--namespace", "-n", help="Namespace (default: the context's, else the profile's).")
_KUBECONFIG = typer.Option(None, "--kubeconfig", metavar="FILE", help="Path to the kubeconfig file (as kubectl).")
_CLUSTER = typer.Option(None, "--cluster", metavar="FILE_OR_ALIAS", autocompletion=complete_cluster,
                        help="grass: the cluster file (repeatable: MARO's create file and node-join files); "
                             "openpai: the cluster alias (see `paictl openpai clusters`; default: the only one).")
_RUN_DIR = typer.Option(None, "--run-dir", metavar="DIR",
                        help="Where local runs keep state and logs (default: $XDG_STATE_HOME/paictl/runs, i.e. "
                             "~/.local/state/paictl/runs; runs in ./.paictl/runs are found too).")
_FORMAT = typer.Option("text", "--output", "-o", "--format", metavar="FORMAT",
                       help="text: a live table while following (one line per change when not a terminal); json: "
                            "JSON lines; yaml: one document per record.")
_STOP_FORMAT = typer.Option("text", "--output", "-o", "--format", metavar="FORMAT",
                            help="text: one line; json or yaml: the record of what was done.")
_STATUS_FORMAT = typer.Option("text", "--output", "-o", "--format", metavar="FORMAT",
                              help="text, json or yaml; without NAME also wide (more columns) and name (names "
                                   "only), as kubectl get -o.")
_EXIT_SPEC = typer.Option(None, "--exit-spec", metavar="FILE",
                          help="Failure-analysis rules replacing the built-in ones (see `paictl schema exit-rules`).")
_TIMEOUT = typer.Option(None, "--pending-timeout", metavar="SECONDS",
                        help="Give up following (exit 3) when the job stays pending this long, e.g. an image "
                             "that cannot be pulled (default: wait forever).")


_SWEEP = typer.Option(None, "--sweep", metavar="ID", help="A sweep's trials (see `paictl sweep`).")


def _sweep_only(name: Optional[str], message: str) -> None:
    from .errors import fail

    if name is not None:
        fail(UsageError(message))


def _sweep_call(command, sweep: str, output_format: str) -> None:
    from .errors import fail

    try:
        command(sweep, output_format)
    except PaictlError as error:
        fail(error)


def _backend_for(name: str, target: Optional[str], options: "BackendOptions") -> tuple["Backend", list[str]]:
    """An explicit --target (checked against the target names) wins; otherwise the first backend in `LOOKUP_ORDER` that has a job of that name, else
    the last one. Returns the backend and what the ones passed over said ("no local run ...")."""
    from paictl.targets import LOOKUP_ORDER

    if target is not None:
        check_target(target)
        return open_target(target, options), []
    absent: list[str] = []
    for candidate in LOOKUP_ORDER[:-1]:
        backend = open_target(candidate, options)
        if backend.has_job(name):
            return backend, []
        absent.append(backend.not_found(name))
    return open_target(LOOKUP_ORDER[-1], options), absent


def _looked_everywhere(error: PaictlError, absent: list[str]) -> PaictlError:
    """Without --target, "not found" on the cluster also says where else paictl looked."""
    if absent and isinstance(error, NotFoundError):
        return NotFoundError(f"{'; '.join(absent)}; on the cluster: {error}")
    return error


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
    runtime: Optional[str] = RUNTIME_OPTION,
    pull: Optional[str] = PULL_OPTION,
) -> None:
    """Compile a job and run it: on this machine (local) or on Kubernetes (server-side apply).

    Exit status without --follow: 0 submitted. With --follow: 0 succeeded, 1 failed, 4 stopped, 130 interrupted
    (Ctrl-C). Always: 1 invalid job (or, locally in docker, resources the engine cannot give: E611), 2 usage
    error, 3 cluster error (locally: no engine for --runtime docker, an image absent that cannot be pulled).
    """
    code = run_submit(job_path=job_path, target=target, profile=profile, user=user, parameter=parameter,
                      parameter_files=parameter_files, secrets_from=secrets_from, context=context,
                      namespace=namespace, kubeconfig=kubeconfig, cluster=cluster, virtual_cluster=virtual_cluster,
                      dry_run=dry_run, replace=replace, follow=follow, output_format=output_format,
                      pending_timeout=pending_timeout, exit_spec=exit_spec, run_dir=run_dir, stdin_name=stdin_name,
                      strict=strict, echo=typer.echo, runtime=runtime, pull=pull)
    if code:
        raise typer.Exit(code)


def status_command(
    name: Optional[str] = _name_argument("The job name (a local run or a Framework/MarsJob/JobSet); omit it to "
                                         "list every job.", required=False),
    target: Optional[str] = _target_option("local, framework, mars or jobset. Default: a local run of that name "
                                           "if one exists, else the cluster (Framework, MarsJob, then JobSet)."),
    follow: bool = typer.Option(False, "--follow", "-f", "--watch", "-w",
                                help="Watch until the job finishes (exit 0/1/4); without NAME, print each job whose "
                                     "row changes until Ctrl-C (as kubectl get -w)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A",
                                        help="Kubernetes: list the jobs of every namespace (as kubectl -A); "
                                             "OpenPAI: every user's jobs the server shows, as user~job."),
    selector: Optional[str] = typer.Option(None, "--selector", "-l", metavar="SELECTOR",
                                           help="Kubernetes: only jobs whose labels match, e.g. userName=alice "
                                                "(as kubectl -l; local runs have no labels)."),
    cluster: Optional[List[str]] = _CLUSTER,
    output_format: str = _STATUS_FORMAT,
    pending_timeout: Optional[float] = _TIMEOUT,
    exit_spec: Optional[Path] = _EXIT_SPEC,
    run_dir: Optional[Path] = _RUN_DIR,
    sweep: Optional[str] = _SWEEP,
) -> None:
    """Show a job's state, its tasks, attempts and exit codes (and why a task failed); without NAME, list jobs.

    Without NAME: the local runs, then (when a kubeconfig is found, or with --target framework|mars|jobset) the
    Frameworks, MarsJobs and JobSets of the namespace, with their AGE, as kubectl get lists them.
    Exit status: 0 shown (without --follow); with --follow 0 succeeded, 1 failed, 4 stopped; 3 cluster error or
    not found.
    """
    from .errors import fail
    from .formats import LIST_FORMATS

    if sweep is not None:
        _sweep_only(name, "status --sweep ID shows a sweep's trials: give no NAME")
        from .sweep import show_sweep

        _sweep_call(show_sweep, sweep, output_format)
        return
    extra = {"selector": selector, "all_namespaces": all_namespaces}
    options = backend_options(context=context, namespace=namespace, kubeconfig=kubeconfig, run_dir=run_dir,
                              exit_spec=exit_spec, pending_timeout=pending_timeout, cluster=cluster, extra=extra)
    if name is None:
        try:
            check_format(output_format, LIST_FORMATS)
            _list_jobs(target=target, options=options, output_format=output_format, selector=selector,
                       watch=follow)
        except PaictlError as error:
            fail(error)
        return
    absent: list[str] = []
    backend = None
    try:
        check_format(output_format)
        if selector or all_namespaces:
            raise UsageError("-l/--selector and -A/--all-namespaces choose jobs to list: give no NAME")
        backend, absent = _backend_for(name, target, options)
        if follow:
            raise typer.Exit(follow_to_verdict(backend, name, backend.watch(name), output_format, typer.echo))
        view = backend.describe(name)
        if output_format != "text":
            from paictl.targets.states import view_to_data

            echo_record(view_to_data(view), output_format, typer.echo)
        else:
            from .live import follow as draw

            draw(iter([view]), output_format="text", live=False)
            show_excerpt(backend, view, typer.echo)
    except PaictlError as error:
        fail(_looked_everywhere(error, absent))
    finally:
        if backend is not None:
            backend.close()


def _list_jobs(*, target: Optional[str], options: "BackendOptions", output_format: str, selector: Optional[str],
               watch: bool) -> None:
    """Every backend the user has set up (or the one --target names), in `LOOKUP_ORDER`; with a label selector,
    the Kubernetes cluster only (nothing else has labels).

    What could be listed is printed before any error: an unreachable cluster never hides the local runs. The
    first backend error then ends the listing (the next backends are the same cluster) and becomes the exit status.
    """
    from paictl.targets import LOOKUP_ORDER, RUNS_ON

    from .live import job_list

    if target is not None:
        check_target(target)
        if selector and RUNS_ON[target] != "kube":
            raise UsageError(f"-l/--selector lists Kubernetes jobs (framework, mars, jobset); {target} jobs have no "
                             f"labels")
        if options.extra.get("all_namespaces") and RUNS_ON[target] in ("local", "grass"):
            from .output import plain_echo

            why = ("this machine's runs are all listed anyway" if RUNS_ON[target] == "local" else
                   "a Grass cluster has no users or namespaces: every job is listed anyway")
            plain_echo(f"paictl: note: -A changes nothing for --target {target}: {why}", err=True)
    names = [target] if target is not None else [name for name in LOOKUP_ORDER if not selector or name == "kube"]
    if watch:
        _watch_jobs(names, explicit=target is not None, options=options, output_format=output_format)
        return
    skipped: list[str] = []
    views, error = _collect(names, explicit=target is not None, options=options, skipped=skipped)
    if views or error is None or output_format in ("json", "yaml"):
        job_list(views, output_format=output_format)
    if skipped:  # on standard error: the listing itself stays what a pipe expects
        from .output import plain_echo

        shown = "; ".join(skipped[:3]) + (f"; and {len(skipped) - 3} more" if len(skipped) > 3 else "")
        plain_echo(f"paictl: skipped {len(skipped)} malformed record(s) the list could not show: {shown}", err=True)
    if error is not None:
        raise error


def _collect(names: list[str], *, explicit: bool, options: "BackendOptions",
             skipped: Optional[list[str]] = None) -> tuple[list["JobView"], Optional[PaictlError]]:
    """The jobs of each backend in turn, and the first error (which ends the listing). `skipped` gathers the
    records a backend met but could not list (`key: problem`), for the list's summary."""
    views: list[JobView] = []
    error: Optional[PaictlError] = None
    for name in names:
        backend = None
        try:
            backend = open_target(name, options)
            if explicit or backend.is_configured():
                views += backend.list()
                if skipped is not None:
                    skipped += getattr(backend, "skipped_records", [])
        except PaictlError as exc:
            error = exc
            break
        finally:
            if backend is not None:
                backend.close()
    return views, error


#: How often `status -w` without a NAME lists the jobs again (a list per kind; kubectl's -w uses a watch).
WATCH_INTERVAL = 2.0


def _watch_jobs(names: list[str], *, explicit: bool, options: "BackendOptions", output_format: str) -> None:
    """`status -w` without NAME, as `kubectl get -w`: the table, then every job whose row changed, until Ctrl-C
    (exit 130). JSON and YAML print each changed job's record. A backend error ends it (exit 3)."""
    import sys
    import time

    from paictl.targets.states import view_to_data

    from .formats import record_text
    from .live import job_rows, table_lines

    shown: dict[tuple[str, str], tuple] = {}
    widths_from: Optional[list[tuple[str, ...]]] = None
    while True:
        views, error = _collect(names, explicit=explicit, options=options)
        now = time.time()
        changed = [view for view in views if shown.get((view.where, view.name)) != _row_key(view)]
        if output_format in ("json", "yaml"):
            for view in changed:
                typer.echo(record_text(view_to_data(view), output_format))
        elif output_format == "name":
            for view in changed:
                typer.echo(view.name)
        elif changed or widths_from is None:
            rows = job_rows(views if widths_from is None else changed, wide=output_format == "wide", now=now)
            if widths_from is None:  # the first table sets the columns, as kubectl's does
                widths_from = rows
                lines = table_lines(rows) if views else []
            else:
                lines = table_lines(widths_from[:1] + rows[1:])[1:]
            for line in lines:
                typer.echo(line)
        for view in changed:
            shown[(view.where, view.name)] = _row_key(view)
        sys.stdout.flush()  # each round reaches a pipe as it happens, as kubectl's -w
        if error is not None:
            raise error
        time.sleep(WATCH_INTERVAL)


def _row_key(view: "JobView") -> tuple:
    return (view.state, view.attempt, view.completion_code, view.message, len(view.tasks))


def stop_command(
    name: Optional[str] = _name_argument("The job name (a local run or a Framework/MarsJob/JobSet).", required=False),
    target: Optional[str] = _target_option("local, framework, mars or jobset (default: as for status)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    cluster: Optional[List[str]] = _CLUSTER,
    output_format: str = _STOP_FORMAT,
    run_dir: Optional[Path] = _RUN_DIR,
    suspend: bool = typer.Option(False, "--suspend", help="JobSet: set spec.suspend instead of deleting it "
                                                          "(its pods go; resume it with suspend: false)."),
    sweep: Optional[str] = _SWEEP,
) -> None:
    """Stop a job: every task is terminated, then killed after a grace period. A Framework gets executionType Stop;
    a MarsJob or JobSet is deleted in the foreground (a JobSet is suspended instead with --suspend).

    Exit status: 0 stop requested (or already finished); 3 cluster error or not found.
    """
    from .errors import fail

    if sweep is not None:
        _sweep_only(name, "stop --sweep ID stops every trial of a sweep: give no NAME")
        from .sweep import stop_whole_sweep

        _sweep_call(stop_whole_sweep, sweep, output_format)
        return
    absent: list[str] = []
    backend = None
    try:
        if name is None:
            raise UsageError("give the NAME of the job to stop (or --sweep ID)")
        check_format(output_format)
        backend, absent = _backend_for(name, target, backend_options(context=context, namespace=namespace,
                                                               kubeconfig=kubeconfig, run_dir=run_dir,
                                                               cluster=cluster,
                                                               extra={"suspend": True} if suspend else {}))
        if suspend and "jobset" not in backend.targets:
            raise UsageError(f"--suspend stops JobSets only; {name!r} is not on a Kubernetes cluster")
        result = backend.stop(name)
        if output_format != "text":
            echo_record(result.data, output_format, typer.echo)
        else:
            typer.echo(result.line)
    except PaictlError as error:
        fail(_looked_everywhere(error, absent))
    finally:
        if backend is not None:
            backend.close()


def logs_command(
    name: Optional[str] = _name_argument("The job name (a local run or a Framework/MarsJob/JobSet).", required=False),
    role: Optional[str] = typer.Argument(None, metavar="[ROLE]", help="Task role (default: every role)."),
    index: Optional[int] = typer.Argument(None, metavar="[INDEX]", help="Task index (default: every index)."),
    target: Optional[str] = _target_option("local, framework, mars, jobset or openpai (default: as for status)."),
    follow: bool = typer.Option(False, "--follow", "-f",
                                help="Keep streaming until the tasks end; a log replaced meanwhile (a retry, a new "
                                     "task attempt, a rotated or truncated file) is announced on standard error "
                                     "and shown from its start."),
    attempt: Optional[int] = typer.Option(None, "--attempt", metavar="N",
                                          help="The job attempt to show (local runs and OpenPAI; default: the "
                                               "latest)."),
    task_attempt: Optional[int] = typer.Option(None, "--task-attempt", metavar="N",
                                               help="The task attempt inside that job attempt (a task retried by "
                                                    "taskRetryCount; Grass: the container's restart; default: "
                                                    "the latest)."),
    previous: bool = typer.Option(False, "--previous", "-p",
                                  help="The attempt before each task's latest, as kubectl logs -p: the previous "
                                       "task attempt when the task was retried, else the previous job attempt "
                                       "(Kubernetes: the previous instance of the container)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    cluster: Optional[List[str]] = _CLUSTER,
    run_dir: Optional[Path] = _RUN_DIR,
    output_format: str = typer.Option("text", "--output", "-o", "--format", metavar="FORMAT",
                                      help="text: the lines (prefixed ROLE-INDEX when several tasks are shown); "
                                           "json: one JSON object per line, with its task, role, index and stream."),
    sweep: Optional[str] = _SWEEP,
    trial: Optional[int] = typer.Option(None, "--trial", metavar="N", help="With --sweep: the trial whose logs to "
                                                                           "show."),
) -> None:
    """Print task logs as they arrive. With several tasks, each line is prefixed with ROLE-INDEX (as kubectl logs
    --prefix). Piped, a log's bytes are written as the task wrote them.

    Exit status: 0; 2 no such role or index, or options that cannot be combined; 3 cluster error, or not found (no
    such job or attempt, a log that is gone).
    """
    from .errors import fail

    absent: list[str] = []
    backend = None
    try:
        check_format(output_format, ("text", "json"))
        if previous and follow:
            raise UsageError("--previous and --follow cannot be combined: a previous attempt has ended")
        if previous and task_attempt is not None:
            raise UsageError("--previous and --task-attempt both choose the task attempt: give one")
        if task_attempt is not None and follow:
            raise UsageError("--task-attempt shows one task attempt as it is; --follow follows each task's latest "
                             "attempt (and the ones after it): give one")
        for option, value in (("--attempt", attempt), ("--task-attempt", task_attempt)):
            if value is not None and value < 0:
                raise UsageError(f"{option} counts from 0, not {value}")
        if sweep is not None:
            from .sweep import trial_for_logs

            if name is not None:  # `logs --sweep ID --trial N [ROLE [INDEX]]`: the arguments shift by one
                if role is not None and not role.isdigit():
                    raise UsageError(f"INDEX {role!r}: expected a number")
                name, role, index = None, name, int(role) if role is not None else None
            name, target, recorded = trial_for_logs(sweep, trial)
            context, namespace, kubeconfig = recorded.get("context"), recorded.get("namespace"), recorded.get(
                "kubeconfig")
            cluster = recorded.get("cluster")
            run_dir = Path(recorded["run_dir"]) if recorded.get("run_dir") else None
        elif name is None:
            raise UsageError("give the NAME of the job (or --sweep ID --trial N)")
        backend, absent = _backend_for(name, target, backend_options(context=context, namespace=namespace,
                                                               kubeconfig=kubeconfig, run_dir=run_dir,
                                                               cluster=cluster))
        selector = {"task_attempt": task_attempt} if task_attempt is not None else {}
        logs = backend.logs(name, role=role, index=index, attempt=attempt, follow=follow, previous=previous,
                            **selector)
        broken = _print_log_lines(logs, output_format, follow=follow)
        if broken:
            raise typer.Exit(broken)
    except PaictlError as error:
        fail(_looked_everywhere(error, absent))
    finally:
        if backend is not None:
            backend.close()


def _print_log_lines(logs, output_format: str, *, follow: bool) -> int:
    """Write each line as it comes: text lines as bytes (what the task wrote, surrogate-escaped bytes included), notes
    and broken streams on standard error. Returns 3 when a stream broke or a log was gone, else 0. Each line is flushed
    when following or on a terminal (so it shows as it comes); a whole log into a pipe goes out in buffer-sized
    writes."""
    import json
    import sys

    from paictl.errors import ClusterError

    prefixed = len(logs.tasks) > 1
    out = sys.stdout.buffer
    terminal = sys.stdout.isatty()
    status = 0
    for line in logs.lines:
        if line.stream in ("note", "error"):
            out.flush()
            typer.echo(line.text, err=True)
            if line.stream == "error":
                status = ClusterError.exit_code
            continue
        if output_format == "json":
            data = json.dumps({"task": f"{line.role}-{line.index}", "role": line.role, "index": line.index,
                               "stream": line.stream, "text": line.text.encode("utf-8", "surrogateescape")
                               .decode("utf-8", "replace")}, ensure_ascii=False).encode() + b"\n"
        else:
            data = ((f"[{line.role}-{line.index}] " if prefixed else "") + line.text).encode(
                "utf-8", "replace" if terminal else "surrogateescape") + b"\n"
        out.write(data)
        if terminal or follow:
            out.flush()
    out.flush()
    return status
