"""The options every command that compiles a job shares (`compile`, `submit`), declared once, and the call that
turns them into `paictl.targets.compiled.compile_job`'s arguments. Warnings go to standard error as soon as they are
known, so that standard output stays clean for the objects or the live view.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

if TYPE_CHECKING:
    from paictl.targets.compiled import CompiledJob


JOB_ARGUMENT = typer.Argument(..., metavar="JOB", help="The job file, or - for standard input.")
PROFILE_OPTION = typer.Option("default", "--profile", metavar="FILE_OR_NAME",
                              help="Cluster profile: a built-in name (default, openpai) or a YAML file.")
USER_OPTION = typer.Option(None, "--user", help="OpenPAI user name (overrides the profile's).")
PARAMETER_OPTION = typer.Option([], "--parameter", "-p", metavar="KEY=VALUE",
                                help="Override a job parameter (repeatable).")
PARAMETERS_OPTION = typer.Option([], "--parameters", metavar="FILE",
                                 help="A YAML mapping of parameters to override (repeatable).")
SECRETS_FROM_OPTION = typer.Option(None, "--secrets-from", metavar="NAME",
                                   help="Use this existing Secret for the job's secrets (Kubernetes targets).")
STDIN_NAME_OPTION = typer.Option("<stdin>", "--stdin-name", metavar="NAME",
                                 help="File name to report for a job read from '-'.")


def compile_for_command(*, job_path: str, target: str, profile: str, user: Optional[str], namespace: Optional[str],
                        parameter: List[str], parameter_files: List[Path], secrets_from: Optional[str],
                        stdin_name: str) -> CompiledJob:
    """`compile_job` with the command line's spelling of its inputs; warnings printed on standard error."""
    from paictl.targets.compiled import compile_job, parse_parameters

    from .errors import report_warnings

    from paictl.targets import TARGETS
    from paictl.errors import UsageError

    if target not in TARGETS:  # before the parameters are read, as before the move into the library
        raise UsageError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
    overrides = parse_parameters(parameter, parameter_files)
    return compile_job(job_path, target=target, profile=profile, user=user, namespace=namespace,
                       parameters=overrides, secrets_from=secrets_from,
                       name=stdin_name if job_path == "-" else None, on_warnings=report_warnings)
