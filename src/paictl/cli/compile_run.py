"""`paictl compile` without typer: the command's whole behaviour, shared by the typer command (compile_cmd.py) and
the start-up fast path in entry.py, so both print the same bytes and exit with the same codes.

Compiling one job is a start-up-bound command (a pipe into kubectl, a CI step per job): importing typer and every
other command's module cost as much as the compile itself. This module imports neither.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from paictl.errors import PaictlError

if TYPE_CHECKING:
    from paictl.targets.compiled import CompiledJob

    from .validate_cmd import Echo

#: `--output`/`-o`/`--format` values.
COMPILE_FORMATS = ("yaml", "json")


def compile_for_command(*, job_path: str, target: str, profile: str, user: Optional[str], namespace: Optional[str],
                        parameter: List[str], parameter_files: List[Path], secrets_from: Optional[str],
                        stdin_name: str, cluster: Optional[List[str]] = None, strict: bool = False,
                        barrier_rbac: bool = False) -> CompiledJob:
    """`compile_job` with the command line's spelling of its inputs; warnings printed on standard error."""
    from paictl.errors import UsageError
    from paictl.targets import TARGETS
    from paictl.targets.compiled import compile_job, parse_parameters

    from .errors import report_warnings

    if target not in TARGETS:  # before the parameters are read, as before the move into the library
        raise UsageError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
    overrides = parse_parameters(parameter, parameter_files)
    return compile_job(job_path, target=target, profile=profile, user=user, namespace=namespace,
                       parameters=overrides, secrets_from=secrets_from,
                       name=stdin_name if job_path == "-" else None, cluster=cluster, on_warnings=report_warnings,
                       strict=strict, barrier_rbac=barrier_rbac)


def run_compile(*, job_path: str, target: str, profile: str, user: Optional[str], namespace: Optional[str],
                parameter: List[str], parameter_files: List[Path], secrets_from: Optional[str], output_format: str,
                output_dir: Optional[Path], stdin_name: str, cluster: Optional[List[str]], strict: bool,
                echo: Echo, barrier_rbac: bool = False, space: Optional[List[str]] = None,
                strategy: Optional[str] = None, seed: Optional[int] = None, max_trials: Optional[int] = None) -> int:
    """Compile, then print the objects (or write them into `output_dir`); return the exit status. With `space`,
    every trial of the sweep (sweep.py)."""
    from paictl.compiler import emit
    from paictl.protocol.diagnostics import one_line

    from .errors import print_error

    if space:
        from .sweep import run_compile_space

        if parameter or parameter_files or barrier_rbac:
            from paictl.errors import UsageError

            return print_error(UsageError("-p/--parameters and --barrier-rbac are not taken with --space: fixed "
                                          "values belong in the job (or as a one-value choice, --space key=value), "
                                          "the service account in a compile of its own"), echo)
        return run_compile_space(job_path=job_path, specs=space, target=target, strategy=strategy, seed=seed,
                                 max_trials=max_trials, output_format=output_format, output_dir=output_dir,
                                 stdin_name=stdin_name, profile=profile, user=user, namespace=namespace,
                                 secrets_from=secrets_from, cluster=cluster, strict=strict)
    if strategy is not None or seed is not None or max_trials is not None:
        from paictl.errors import UsageError

        return print_error(UsageError("--strategy, --seed and --max-trials shape a sweep: give --space too"), echo)

    try:
        compiled = compile_for_command(job_path=job_path, target=target, profile=profile, user=user,
                                       namespace=namespace, parameter=parameter, parameter_files=parameter_files,
                                       secrets_from=secrets_from, stdin_name=stdin_name, cluster=cluster,
                                       strict=strict, barrier_rbac=barrier_rbac)
        if output_dir is not None:
            written = emit.write_files(compiled.objects, output_dir)
    except PaictlError as error:
        return print_error(error, echo)
    if output_dir is not None:
        for path in written:
            echo(one_line(str(path)))
    elif output_format == "json":
        echo(emit.to_json_list(compiled.objects))
    else:
        emit.write_yaml(compiled.objects, sys.stdout.write)  # streamed: a 700 MB Framework is never one string
    return 0
