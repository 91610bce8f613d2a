"""`paictl compile`: validate a job, compile it for a target, print or write the objects."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import List, Optional

import typer

from paictl.errors import InvalidJobError, PaictlError


class CompileFormat(str, enum.Enum):
    yaml = "yaml"
    json = "json"


def compile_command(
    job_path: str = typer.Argument(..., metavar="JOB", help="The job file, or - for standard input."),
    target: str = typer.Option("framework", "--target", "-t", help="What to compile to: framework, mars, local."),
    profile: str = typer.Option("default", "--profile", metavar="FILE_OR_NAME",
                                help="Cluster profile: a built-in name (default, openpai) or a YAML file."),
    user: Optional[str] = typer.Option(None, "--user", help="OpenPAI user name (overrides the profile's)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace (overrides the profile's)."),
    parameter: List[str] = typer.Option([], "--parameter", "-p", metavar="KEY=VALUE",
                                        help="Override a job parameter (repeatable)."),
    parameter_files: List[Path] = typer.Option([], "--parameters", metavar="FILE",
                                               help="A YAML mapping of parameters to override (repeatable)."),
    secrets_from: Optional[str] = typer.Option(None, "--secrets-from", metavar="NAME",
                                               help="Use this existing Secret for the job's secrets."),
    output_format: CompileFormat = typer.Option(CompileFormat.yaml, "--format",
                                                help="yaml: multi-document YAML; json: one v1 List."),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", metavar="DIR",
                                              help="Write one file per object into DIR instead of printing."),
    stdin_name: str = typer.Option("<stdin>", "--stdin-name", metavar="NAME",
                                   help="File name to report for a job read from '-'."),
) -> None:
    """Compile a job into the Kubernetes objects that run it (validates first; invalid jobs exit 1).

    Output is deterministic: the same job and profile give byte-identical output.
    Pipe it to kubectl: paictl compile job.yaml --profile openpai | kubectl apply -f -
    """
    from paictl.compiler import emit

    from .app import _fail, _report_invalid
    from .jobinput import compile_job

    try:
        compiled = compile_job(job_path=job_path, target=target, profile=profile, user=user, namespace=namespace,
                               parameter=parameter, parameter_files=parameter_files, secrets_from=secrets_from,
                               stdin_name=stdin_name)
    except InvalidJobError as error:
        _report_invalid(error)
    except PaictlError as error:
        _fail(error)
    objects = compiled.objects
    if output_dir is not None:
        for path in emit.write_files(objects, output_dir):
            typer.echo(str(path))
    elif output_format is CompileFormat.json:
        typer.echo(emit.to_json_list(objects))
    else:
        typer.echo(emit.to_yaml(objects), nl=False)
