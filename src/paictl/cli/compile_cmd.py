"""`paictl compile`: validate a job, compile it for a target, print or write the objects.

The typer declaration of the command (help, options, usage errors); what it does is `compile_run.run_compile`,
which the console script also runs directly for plain command lines (entry.py), without importing typer.
"""

import enum
from pathlib import Path
from typing import List, Optional

import typer

from .completion import complete_compile_target
from .jobinput import (JOB_ARGUMENT, MAX_TRIALS_OPTION, PARAMETER_OPTION, PARAMETERS_OPTION, PROFILE_OPTION,
                       SECRETS_FROM_OPTION, SEED_OPTION, SPACE_OPTION, STDIN_NAME_OPTION, STRATEGY_OPTION,
                       STRICT_OPTION, USER_OPTION)


class CompileFormat(str, enum.Enum):
    yaml = "yaml"
    json = "json"


def compile_command(
    job_path: str = JOB_ARGUMENT,
    target: str = typer.Option("framework", "--target", "-t", autocompletion=complete_compile_target,
                               help="What to compile to: framework, jobset, mars, local, grass, openpai."),
    profile: str = PROFILE_OPTION,
    user: Optional[str] = USER_OPTION,
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace (overrides the profile's)."),
    parameter: List[str] = PARAMETER_OPTION,
    parameter_files: List[Path] = PARAMETERS_OPTION,
    secrets_from: Optional[str] = SECRETS_FROM_OPTION,
    output_format: CompileFormat = typer.Option(CompileFormat.yaml, "--output", "-o", "--format", metavar="FORMAT",
                                                help="yaml: multi-document YAML; json: one v1 List (as kubectl "
                                                     "-o)."),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", metavar="DIR",
                                              help="Write one file per object into DIR instead of printing."),
    stdin_name: str = STDIN_NAME_OPTION,
    cluster: Optional[List[str]] = typer.Option(None, "--cluster", metavar="FILE",
                                                help="grass: the cluster file (repeatable: MARO's create file and "
                                                     "node-join files); adds the plan."),
    strict: bool = STRICT_OPTION,
    barrier_rbac: bool = typer.Option(False, "--barrier-rbac",
                                      help="framework: also emit the service account the FrameworkBarrier's pods run "
                                           "as, with a Role and RoleBinding to read frameworks (for a plain cluster "
                                           "where nobody created them)."),
    space: List[str] = SPACE_OPTION,
    strategy: Optional[str] = STRATEGY_OPTION,
    seed: Optional[int] = SEED_OPTION,
    max_trials: Optional[int] = MAX_TRIALS_OPTION,
) -> None:
    """Compile a job into the Kubernetes objects that run it (validates first; invalid jobs exit 1).

    Output is deterministic: the same job and profile give byte-identical output.
    Pipe it to kubectl: paictl compile job.yaml --barrier-rbac | kubectl apply -f -
    With --space: every trial of the sweep `paictl sweep` would run, as one stream.
    """
    from .compile_run import run_compile

    status = run_compile(job_path=job_path, target=target, profile=profile, user=user, namespace=namespace,
                         parameter=parameter, parameter_files=parameter_files, secrets_from=secrets_from,
                         output_format=output_format.value, output_dir=output_dir, stdin_name=stdin_name,
                         cluster=cluster, strict=strict, barrier_rbac=barrier_rbac, echo=typer.echo, space=space,
                         strategy=strategy, seed=seed, max_trials=max_trials)
    if status:
        raise typer.Exit(status)
