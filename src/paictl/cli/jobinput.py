"""Reading, validating and compiling a job for a command: shared by `compile` and `submit`.

Warnings go to standard error here, so that standard output stays clean for the objects or the live view.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from paictl.errors import InvalidJobError, UsageError

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job


# The options every command that compiles a job shares (`compile`, `submit`), declared once.
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
STRICT_OPTION = typer.Option(False, "--strict", help="Warnings fail (exit 1), the target's too: e.g. what a "
                                                      "JobSet cannot express (W901-W903).")
STDIN_NAME_OPTION = typer.Option("<stdin>", "--stdin-name", metavar="NAME",
                                 help="File name to report for a job read from '-'.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CompiledJob:
    """A valid job and what a target made of it; `objects` may hold Secrets, so it is never printed as is."""

    path: str
    job: Job
    profile: Profile
    document: Document
    target: str
    parameters: dict[str, Any]
    objects: list[dict[str, Any]]


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


def compile_job(*, job_path: str, target: str, profile: str, user: Optional[str], namespace: Optional[str],
                parameter: List[str], parameter_files: List[Path], secrets_from: Optional[str],
                stdin_name: str, strict: bool = False) -> CompiledJob:
    """Validate (warnings to stderr), build the model, compile for `target` and check the output.

    Raises InvalidJobError (exit 1) for an invalid job, UsageError/InputError (exit 2), InternalError (exit 70).
    """
    from paictl.compiler.profiles import load_profile
    from paictl.protocol import job_from_data, read_source, validate_bytes
    from paictl.protocol.loading import decode_source, load_located
    from paictl.targets import TARGETS, get_target
    from paictl.targets.output_check import check_objects

    from .report import text_report

    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
    overrides = parse_parameters(parameter, parameter_files)
    chosen = load_profile(profile)
    if user is not None:
        chosen = chosen.with_user(user)
    if namespace is not None:
        chosen = dataclasses.replace(chosen, namespace=namespace)
    name = stdin_name if job_path == "-" else job_path
    raw = sys.stdin.buffer.read() if job_path == "-" else read_source(job_path)
    result = validate_bytes(raw, name)
    if result.warnings and not strict:
        typer.echo(text_report([dataclasses.replace(result, diagnostics=result.warnings)]), err=True)
    if not result.ok:
        raise InvalidJobError(list(result.diagnostics))
    job = job_from_data(result.data)
    # The located document lets compile-time errors point at file:line:col and keeps the stored config
    # annotation the user's own text (masked), as OpenPAI stores it.
    document = load_located(decode_source(raw, name), name)
    module = get_target(target)
    # A target may accept a job with reservations (e.g. the Mars target's W701): shown like validation warnings.
    notes = module.compile_warnings(job, chosen, document) if hasattr(module, "compile_warnings") else []
    if strict and (notes or result.warnings):
        from paictl.protocol.diagnostics import Severity

        # --strict: every warning, the validator's and the target's, is reported as an error (as validate --strict).
        raise InvalidJobError([dataclasses.replace(d, severity=Severity.ERROR) for d in (*result.warnings, *notes)])
    if notes:
        typer.echo(text_report([dataclasses.replace(result, diagnostics=notes)]), err=True)
    objects = module.compile(job, chosen, parameters=overrides or None, secrets_from=secrets_from,
                             document=document)
    check_objects(objects)  # InternalError (exit 70): a compiled object that fails its schema is paictl's bug
    return CompiledJob(path=name, job=job, profile=chosen, document=document, target=target,
                       parameters=overrides, objects=objects)
