"""`paictl submit`, `status`, `stop` and `logs`: one set of commands over the local runner and Kubernetes.

This module only parses options and picks the backend; `local_cmd` drives the local runner, `kube_cmd` a
cluster. Each backend raises `typer.Exit` with the documented status (0 succeeded, 1 failed, 3 cluster error,
4 stopped, 130 interrupted).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import List, Optional

import typer

from paictl.errors import InvalidJobError, PaictlError, UsageError

from .jobinput import (JOB_ARGUMENT, PARAMETER_OPTION, PARAMETERS_OPTION, PROFILE_OPTION, SECRETS_FROM_OPTION,
                       STDIN_NAME_OPTION, STRICT_OPTION, USER_OPTION)

DEFAULT_RUN_DIR = Path(".paictl") / "runs"
KUBE_TARGETS = ("framework", "mars", "jobset")
SUBMIT_TARGETS = ("local",) + KUBE_TARGETS


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClusterOptions:
    """kubectl's connection flags; None means what kubectl would use (current context, its namespace)."""

    context: Optional[str] = None
    namespace: Optional[str] = None
    kubeconfig: Optional[str] = None


def _has_kubeconfig(context: Optional[str], kubeconfig: Optional[str]) -> bool:
    """Named on the command line or in $KUBECONFIG, or kubectl's default file exists."""
    from paictl.targets.kube.client import kubeconfig_path  # stdlib only until it connects

    return bool(context or kubeconfig or os.environ.get("KUBECONFIG")) or os.path.isfile(kubeconfig_path())


def default_submit_target(context: Optional[str], kubeconfig: Optional[str]) -> str:
    """A cluster when kubectl would find one, otherwise this machine: `paictl submit` always has somewhere to run."""
    return "framework" if _has_kubeconfig(context, kubeconfig) else "local"


def _target_option(help_text: str):
    return typer.Option(None, "--target", "-t", metavar="TARGET", help=help_text)


_CONTEXT = typer.Option(None, "--context", help="The kubeconfig context to use (as kubectl --context).")
_NAMESPACE = typer.Option(None, "--namespace", "-n", help="Namespace (default: the context's, else the profile's).")
_KUBECONFIG = typer.Option(None, "--kubeconfig", metavar="FILE", help="Path to the kubeconfig file (as kubectl).")
_RUN_DIR = typer.Option(DEFAULT_RUN_DIR, "--run-dir", metavar="DIR", help="Where local runs keep state and logs.")
_FORMAT = typer.Option("text", "--format", metavar="FORMAT",
                       help="text: a live table (one line per change when not a terminal); json: JSON lines.")
_EXIT_SPEC = typer.Option(None, "--exit-spec", metavar="FILE",
                          help="Failure-analysis rules replacing the built-in ones (see `paictl schema exit-rules`).")
_TIMEOUT = typer.Option(None, "--pending-timeout", metavar="SECONDS",
                        help="Give up following (exit 3) when the job stays pending this long, e.g. an image "
                             "that cannot be pulled (default: wait forever).")


def _check_format(output_format: str) -> None:
    if output_format not in ("text", "json"):
        raise UsageError(f"--format {output_format!r}: expected text or json")


def _resolve_target(name: str, target: Optional[str], run_dir: Path) -> str:
    """An explicit --target wins; otherwise a local run of that name, otherwise the cluster (Framework or MarsJob)."""
    if target is not None:
        if target not in SUBMIT_TARGETS:
            raise UsageError(f"unknown target {target!r}; available: {', '.join(SUBMIT_TARGETS)}")
        return target
    from .local_cmd import find_local_run

    return "local" if find_local_run(name, run_dir) else "kube"


def _looked_everywhere(error: PaictlError, name: str, target: Optional[str], run_dir: Path) -> PaictlError:
    """Without --target, "not found" on the cluster also says that no local run of that name exists (both were
    looked at)."""
    from paictl.errors import NotFoundError

    from .local_cmd import find_local_run

    if target is None and isinstance(error, NotFoundError) and not find_local_run(name, run_dir):
        return NotFoundError(f"no local run {name!r} in {run_dir}; on the cluster: {error}")
    return error


def submit_command(
    job_path: str = JOB_ARGUMENT,
    target: Optional[str] = _target_option(
        "local (this machine), framework, mars or jobset (Kubernetes). Default: framework when a kubeconfig is found, "
        "else local."),
    profile: str = PROFILE_OPTION,
    user: Optional[str] = USER_OPTION,
    parameter: List[str] = PARAMETER_OPTION,
    parameter_files: List[Path] = PARAMETERS_OPTION,
    secrets_from: Optional[str] = SECRETS_FROM_OPTION,
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    dry_run: bool = typer.Option(False, "--dry-run", help="Kubernetes: ask the server to check, create nothing."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Follow the job to its verdict (exit 0/1/4)."),
    output_format: str = _FORMAT,
    pending_timeout: Optional[float] = _TIMEOUT,
    exit_spec: Optional[Path] = _EXIT_SPEC,
    run_dir: Path = _RUN_DIR,
    stdin_name: str = STDIN_NAME_OPTION,
    strict: bool = STRICT_OPTION,
) -> None:
    """Compile a job and run it: on this machine (local) or on Kubernetes (server-side apply).

    Exit status without --follow: 0 submitted. With --follow: 0 succeeded, 1 failed, 4 stopped, 130 interrupted
    (Ctrl-C). Always: 1 invalid job, 2 usage error, 3 cluster error.
    """
    from .app import _fail, _report_invalid
    from .jobinput import compile_job

    try:
        _check_format(output_format)
        if target is None:
            target = default_submit_target(context, kubeconfig)
            typer.echo(f"paictl: target {target} (choose with --target {'|'.join(SUBMIT_TARGETS)})", err=True)
        if target not in SUBMIT_TARGETS:
            raise UsageError(f"unknown target {target!r}; available: {', '.join(SUBMIT_TARGETS)}")
        if target != "local" and namespace is None:
            from .kube_cmd import default_namespace

            namespace = default_namespace(context=context, kubeconfig=kubeconfig)  # kubectl's: the context's
        compiled = compile_job(job_path=job_path, target=target, profile=profile, user=user,
                               namespace=namespace, parameter=parameter, parameter_files=parameter_files,
                               secrets_from=secrets_from, stdin_name=stdin_name, strict=strict)
        if target == "local":
            from .local_cmd import submit_local

            submit_local(compiled, follow=follow, output_format=output_format, run_dir=run_dir,
                         exit_spec=exit_spec, dry_run=dry_run)
        else:
            from .kube_cmd import submit_kube

            submit_kube(compiled, cluster=ClusterOptions(context=context, namespace=namespace,
                                                         kubeconfig=kubeconfig),
                        dry_run=dry_run, follow=follow, output_format=output_format,
                        pending_timeout=pending_timeout, exit_spec=exit_spec)
    except InvalidJobError as error:
        _report_invalid(error)
    except PaictlError as error:
        _fail(error)


def status_command(
    name: Optional[str] = typer.Argument(None, metavar="[NAME]",
                                         help="The job name (a local run or a Framework/MarsJob); omit it to "
                                              "list every job."),
    target: Optional[str] = _target_option("local, framework or mars. Default: a local run of that name if one "
                                           "exists, else the cluster (Framework, then MarsJob)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Watch until the job finishes (exit 0/1/4)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    output_format: str = _FORMAT,
    pending_timeout: Optional[float] = _TIMEOUT,
    exit_spec: Optional[Path] = _EXIT_SPEC,
    run_dir: Path = _RUN_DIR,
) -> None:
    """Show a job's state, its tasks, attempts and exit codes (and why a task failed); without NAME, list jobs.

    Without NAME: the local runs, then (when a kubeconfig is found, or with --target framework|mars) the
    Frameworks and MarsJobs of the namespace.
    Exit status: 0 shown (without --follow); with --follow 0 succeeded, 1 failed, 4 stopped; 3 cluster error or
    not found.
    """
    from .app import _fail

    if name is None:
        try:
            _check_format(output_format)
            if follow:
                raise UsageError("--follow needs a job NAME")
            _list_jobs(target=target, cluster=ClusterOptions(context=context, namespace=namespace,
                                                             kubeconfig=kubeconfig),
                       run_dir=run_dir, output_format=output_format)
        except PaictlError as error:
            _fail(error)
        return
    try:
        _check_format(output_format)
        chosen = _resolve_target(name, target, run_dir)
        if chosen == "local":
            from .local_cmd import status_local

            status_local(name, run_dir=run_dir, follow=follow, output_format=output_format)
        else:
            from .kube_cmd import status_kube

            status_kube(name, target=None if chosen == "kube" else chosen,
                        cluster=ClusterOptions(context=context, namespace=namespace, kubeconfig=kubeconfig),
                        follow=follow, output_format=output_format, pending_timeout=pending_timeout,
                        exit_spec=exit_spec)
    except PaictlError as error:
        _fail(_looked_everywhere(error, name, target, run_dir))


def _list_jobs(*, target: Optional[str], cluster: ClusterOptions, run_dir: Path, output_format: str) -> None:
    from .live import job_list
    from .local_cmd import list_local

    if target is not None and target not in SUBMIT_TARGETS:
        raise UsageError(f"unknown target {target!r}; available: {', '.join(SUBMIT_TARGETS)}")
    views = list_local(run_dir) if target in (None, "local") else []
    if target in KUBE_TARGETS or (target is None and _has_kubeconfig(cluster.context, cluster.kubeconfig)):
        from .kube_cmd import list_kube

        views += list_kube(target=target, cluster=cluster)
    job_list(views, output_format=output_format)


def stop_command(
    name: str = typer.Argument(..., metavar="NAME", help="The job name (a local run or a Framework/MarsJob)."),
    target: Optional[str] = _target_option("local, framework or mars (default: as for status)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    output_format: str = _FORMAT,
    run_dir: Path = _RUN_DIR,
    suspend: bool = typer.Option(False, "--suspend", help="JobSet: set spec.suspend instead of deleting it "
                                                          "(its pods go; resume it by setting suspend: false)."),
) -> None:
    """Stop a job: every task is terminated, then killed after a grace period. A Framework gets executionType Stop.

    Exit status: 0 stop requested (or already finished); 3 cluster error or not found.
    """
    from .app import _fail

    try:
        _check_format(output_format)
        chosen = _resolve_target(name, target, run_dir)
        if chosen == "local":
            from .local_cmd import stop_local

            stop_local(name, run_dir=run_dir, output_format=output_format)
        else:
            from .kube_cmd import stop_kube

            stop_kube(name, target=None if chosen == "kube" else chosen,
                      cluster=ClusterOptions(context=context, namespace=namespace, kubeconfig=kubeconfig),
                      output_format=output_format, suspend=suspend)
    except PaictlError as error:
        _fail(_looked_everywhere(error, name, target, run_dir))


def logs_command(
    name: str = typer.Argument(..., metavar="NAME", help="The job name (a local run or a Framework/MarsJob)."),
    role: Optional[str] = typer.Argument(None, metavar="[ROLE]", help="Task role (default: every role)."),
    index: Optional[int] = typer.Argument(None, metavar="[INDEX]", help="Task index (default: every index)."),
    target: Optional[str] = _target_option("local, framework or mars (default: as for status)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep streaming until the tasks end."),
    attempt: Optional[int] = typer.Option(None, "--attempt", metavar="N",
                                          help="Local runs: the job attempt to show (default: the latest)."),
    context: Optional[str] = _CONTEXT,
    namespace: Optional[str] = _NAMESPACE,
    kubeconfig: Optional[str] = _KUBECONFIG,
    run_dir: Path = _RUN_DIR,
) -> None:
    """Print task logs. With several tasks, each line is prefixed with ROLE-INDEX (as kubectl logs --prefix).

    Exit status: 0; 2 no such role or index; 3 cluster error or not found.
    """
    from .app import _fail

    try:
        chosen = _resolve_target(name, target, run_dir)
        if chosen == "local":
            from .local_cmd import logs_local

            logs_local(name, role, index, run_dir=run_dir, follow=follow, attempt=attempt)
        else:
            if attempt is not None:  # FrameworkController deletes an attempt's pods, and their logs with them
                raise UsageError("--attempt applies to local runs only: on Kubernetes, earlier attempts' pods "
                                 "are deleted")
            from .kube_cmd import logs_kube

            logs_kube(name, role, index, target=None if chosen == "kube" else chosen,
                      cluster=ClusterOptions(context=context, namespace=namespace, kubeconfig=kubeconfig),
                      follow=follow)
    except PaictlError as error:
        _fail(_looked_everywhere(error, name, target, run_dir))
