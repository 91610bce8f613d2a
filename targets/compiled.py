"""The heart of the product as one library call: read a job, validate it, build the model, compile it for a target
and check the output. `paictl compile`, `paictl submit` and the Python API (`paictl.compile_job`) all go through
`compile_job`, so they accept and refuse exactly the same jobs.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

from paictl.errors import InvalidJobError, UsageError

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Diagnostic
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job


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
    #: Validation warnings, then the target's own reservations (e.g. the Mars target's W701).
    warnings: tuple[Diagnostic, ...] = ()

    @property
    def name(self) -> str:
        return self.job.name


def parse_parameters(pairs: Sequence[str] = (), files: Sequence[Path] = ()) -> dict[str, Any]:
    """`--parameters FILE` mappings first, then `-p key=value` pairs; values are YAML scalars (`-p n=2` is 2).

    Both go through the job's own reader and loader, so the size, depth and alias limits hold for them too.
    """
    if not pairs and not files:
        return {}
    from paictl.protocol import read_source
    from paictl.protocol.loading import DocumentError, decode_source, load_located
    from paictl.protocol.yamlevents import load_events

    merged: dict[str, Any] = {}
    for path in files:
        try:
            data = load_located(decode_source(read_source(path), str(path)), str(path)).data
        except DocumentError as exc:
            first = exc.diagnostics[0]
            where = f"{path}:{first.line}:{first.column}" if first.line else str(path)
            if first.code == "E104":
                raise UsageError(f"--parameters {path}: the file must hold a YAML mapping of parameter names to "
                                 "values") from None
            raise UsageError(f"--parameters {where}: {first.message}") from None
        merged.update(data)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"-p {pair!r}: expected key=value")
        try:
            merged[key] = load_events(value)[0] if value else ""
        except Exception:  # noqa: BLE001 - anything that does not read as YAML (LoadProblem, syntax) is the text itself
            merged[key] = value
    return merged


def cluster_option(module: Any, target: str, cluster: Optional[Sequence[str]]) -> dict[str, Any]:
    """`--cluster FILE...` for the targets that read one (their module has `load_cluster`); the others never see
    the keyword."""
    if not cluster:
        return {}
    if not hasattr(module, "load_cluster"):
        raise UsageError(f"--cluster is not used by --target {target}")
    return {"cluster": module.load_cluster(list(cluster))}


#: A Secret's name (Kubernetes' DNS-1123 subdomain): what `--secrets-from` must be for the pods that mount it to be
#: created; anything else passed the output check and failed only when the controller made the pods.
_SECRET_NAME = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def compile_job(job: Union[str, Path, bytes], *, target: str = "framework", profile: str = "default",
                user: Optional[str] = None, namespace: Optional[str] = None,
                parameters: Optional[Mapping[str, Any]] = None, secrets_from: Optional[str] = None,
                name: Optional[str] = None, cluster: Optional[Sequence[str]] = None,
                on_warnings: Optional[Callable[[list[Diagnostic]], None]] = None, strict: bool = False,
                barrier_rbac: bool = False) -> CompiledJob:
    """Validate, build the model, compile for `target` and check the output.

    `job` is a file path, "-" for standard input, or the job's bytes (`name` is then the file name reported).
    Warnings are returned in `CompiledJob.warnings`; `on_warnings`, when given, also receives each batch as soon as
    it is known (the CLI prints them before a later error; a job refused before any warning was passed on raises
    InvalidJobError with the warnings too, in the file's order, as `validate` reports them). Raises
    InvalidJobError (exit 1) for an invalid job,
    UsageError/InputError (exit 2), InternalError (exit 70) for an object that fails its own schema.
    With `strict`, any warning (the validator's, or the target's: e.g. what a JobSet cannot express) is raised as
    an error instead, and `on_warnings` is not called.
    """
    from paictl.compiler.profiles import load_profile
    from paictl.protocol import job_from_data, read_source, read_stdin, validate_bytes
    from paictl.protocol.loading import Document, decode_source

    from . import TARGETS, get_target
    from .output_check import check_objects

    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
    if secrets_from is not None and not _SECRET_NAME.fullmatch(secrets_from):
        raise UsageError(f"--secrets-from {secrets_from!r}: a Secret's name is at most 253 lowercase letters, digits, "
                         "'-' and '.', beginning and ending with a letter or digit")
    overrides = dict(parameters or {})
    chosen = load_profile(profile)
    chosen = chosen.overridden(user=user, namespace=namespace)
    if barrier_rbac:  # the service account, Role and RoleBinding the FrameworkBarrier needs (framework target)
        chosen = dataclasses.replace(chosen, barrier_rbac=True)
    if isinstance(job, bytes):
        raw, path = job, name or "<bytes>"
    elif str(job) == "-":
        raw, path = read_stdin(), name or "<stdin>"
    else:
        raw, path = read_source(str(job)), str(job)
    result = validate_bytes(raw, path)
    warnings: list[Diagnostic] = list(result.warnings)
    if not result.ok:  # every diagnostic, warnings too, in the order `validate` prints them
        raise InvalidJobError(list(result.diagnostics))
    # The job's text and data, unindexed: the config annotation keeps the user's own text (masked), as OpenPAI
    # stores it, and positions (libyaml's event stream, a few ms and PyYAML's import) are built only when a
    # compile-time finding must be located (targets/findings.py `with_positions`).
    document = Document(path=path, text=decode_source(raw, path), data=result.data)
    # validate_bytes has also run the checks every target needs (protocol/compile_checks.py): what it accepts, every
    # target compiles or refuses below with a located error (never a traceback or exit 70).
    if chosen.hived.enabled:
        # A HiveD cluster refuses what OpenPAI's HiveD checks refuse; validate alone only warns (W306/W307).
        from paictl.protocol.hived_checks import hived_findings

        from .findings import raise_if_any

        try:
            raise_if_any(hived_findings(result.data, enforced=True), document, path)
        except InvalidJobError as error:  # refused before any warning was shown: all of them, in the file's order
            raise InvalidJobError(sorted([*warnings, *error.diagnostics], key=_text_order)) from None
    if warnings and on_warnings is not None and not strict:
        on_warnings(list(warnings))
    model = job_from_data(result.data)  # after the checks: they refuse the shapes the model cannot hold
    unknown = _unknown_overrides(overrides, model, document)
    if unknown:
        warnings += unknown
        if on_warnings is not None:
            on_warnings(unknown)
    module = get_target(target)
    # A target may accept a job with reservations (e.g. the Mars target's W701): reported like validation warnings.
    notes = module.compile_warnings(model, chosen, document) if hasattr(module, "compile_warnings") else []
    if strict and (notes or warnings):
        from paictl.protocol.diagnostics import Severity

        raise InvalidJobError([d._replace(severity=Severity.ERROR) for d in (*warnings, *notes)])
    if notes:
        warnings += notes
        if on_warnings is not None:
            on_warnings(list(notes))
    objects = module.compile(model, chosen, parameters=overrides or None, secrets_from=secrets_from,
                             document=document, **cluster_option(module, target, cluster))
    check_objects(objects)  # InternalError (exit 70): a compiled object that fails its schema is paictl's bug
    return CompiledJob(path=path, job=model, profile=chosen, document=document, target=target,
                       parameters=overrides, objects=objects, warnings=tuple(warnings))


def _text_order(diagnostic: Diagnostic) -> tuple:
    return (diagnostic.line or 0, diagnostic.column or 0)


def _unknown_overrides(overrides: Mapping[str, Any], model: Job, document: Document) -> list[Diagnostic]:
    """W510 for each override the job has no parameter for (a typo would otherwise be silently ignored), located
    at the job's `parameters` mapping (or its first line when it has none)."""
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor
    from paictl.protocol.suggest import did_you_mean

    from .findings import located_all

    missing = [key for key in overrides if key not in model.parameters]
    defined = ", ".join(map(str, model.parameters)) or "none"
    pointer = "/parameters" if "parameters" in document.data else ""
    return located_all((finding("W510", pointer, f"parameter override {key!r} (-p/--parameters) names no parameter "
                                                 f"of the job (its parameters: {defined}); it changes nothing",
                                hint=(f"did you mean {guess!r}?" if (guess := did_you_mean(str(key), model.parameters))
                                      else "add it to the job's `parameters` or drop the override"),
                                anchor=Anchor.KEY) for key in missing), document, document.path)
