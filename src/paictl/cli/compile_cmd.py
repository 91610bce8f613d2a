"""`paictl compile`: validate a job, compile it for a target, print or write the objects."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, List, Optional

import typer

from paictl.errors import InvalidJobError, PaictlError, UsageError


class CompileFormat(str, enum.Enum):
    yaml = "yaml"
    json = "json"


def parse_parameters(pairs: List[str], files: List[Path]) -> dict[str, Any]:
    """`--parameters FILE` mappings first, then `-p key=value` pairs; values are YAML scalars (`-p n=2` is 2)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    yaml = YAML(typ="safe", pure=True)
    merged: dict[str, Any] = {}
    for path in files:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"))
        except (OSError, YAMLError) as exc:
            raise UsageError(f"--parameters {path}: {' '.join(str(exc).split())}") from None
        if not isinstance(data, dict):
            raise UsageError(f"--parameters {path}: the file must hold a YAML mapping of parameter names to values")
        merged.update(data)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"-p {pair!r}: expected key=value")
        try:
            merged[key] = yaml.load(value) if value else ""
        except YAMLError:
            merged[key] = value
    return merged


def compile_command(
    job_path: str = typer.Argument(..., metavar="JOB", help="The job file, or - for standard input."),
    target: str = typer.Option("framework", "--target", "-t", help="What to compile to: framework."),
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
    import dataclasses
    import sys

    from paictl.compiler import emit
    from paictl.compiler.profiles import load_profile
    from paictl.protocol import job_from_data, read_source, validate_bytes
    from paictl.protocol.loading import decode_source, load_located
    from paictl.targets import TARGETS, get_target
    from paictl.targets.output_check import check_objects

    from .app import _fail, _report_invalid
    from .report import text_report

    if target not in TARGETS:
        _fail(UsageError(f"unknown target {target!r}; available: {', '.join(TARGETS)}"))
    try:
        overrides = parse_parameters(parameter, parameter_files)
        chosen = load_profile(profile)
        if user is not None:
            chosen = chosen.with_user(user)
        if namespace is not None:
            chosen = dataclasses.replace(chosen, namespace=namespace)
        name = stdin_name if job_path == "-" else job_path
        raw = sys.stdin.buffer.read() if job_path == "-" else read_source(job_path)
        result = validate_bytes(raw, name)
        if result.warnings:  # standard output is for the objects only
            typer.echo(text_report([dataclasses.replace(result, diagnostics=result.warnings)]), err=True)
        if not result.ok:
            raise InvalidJobError(list(result.diagnostics))
        job = job_from_data(result.data)
        # The located document lets compile-time errors point at file:line:col and keeps the stored config
        # annotation the user's own text (masked), as OpenPAI stores it.
        document = load_located(decode_source(raw, name), name)
        objects = get_target(target).compile(job, chosen, parameters=overrides or None, secrets_from=secrets_from,
                                             document=document)
        check_objects(objects)  # InternalError (exit 70): a compiled object that fails its schema is paictl's bug
    except InvalidJobError as error:
        _report_invalid(error)
    except PaictlError as error:
        _fail(error)
    if output_dir is not None:
        for path in emit.write_files(objects, output_dir):
            typer.echo(str(path))
    elif output_format is CompileFormat.json:
        typer.echo(emit.to_json_list(objects))
    else:
        typer.echo(emit.to_yaml(objects), nl=False)
