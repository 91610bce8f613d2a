"""From a job and a search space to compiled trials: the space read and checked against the job, the parameter sets
drawn, and each trial compiled as a job of its own named `<job>-<sweep id>-<n>`.

A trial is the job with its `name` rewritten in the text (one exact edit of the name's scalar, so everything else is
the user's text, as the config annotation and OpenPAI keep it) and the trial's parameters as overrides: it goes
through `compile_job` like any submission, so every backend names it by its own rules (a Framework's hashed name, a
JobSet's DNS label, a local run folder). Kubernetes objects also carry the labels `paictl.io/sweep` and
`paictl.io/trial`, so `kubectl get -l paictl.io/sweep=<id>` lists a sweep.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from paictl.errors import InvalidJobError, UsageError

if TYPE_CHECKING:
    from paictl.protocol.diagnostics import Diagnostic
    from paictl.protocol.searchspace import SearchSpace
    from paictl.targets.compiled import CompiledJob

SWEEP_LABEL = "paictl.io/sweep"
TRIAL_LABEL = "paictl.io/trial"
KUBE_TARGETS = ("framework", "jobset", "mars")
#: A trial name stays well inside the job schema's 255 characters and a file name's (the local run's lock file adds
#: six characters to it): the job's name is cut to leave room for `-<id>-<n>`.
MAX_TRIAL_NAME = 200
SWEEP_ID = re.compile(r"[a-z0-9]{4,16}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Trial:
    index: int
    name: str
    parameters: dict[str, Any]


@dataclasses.dataclass(frozen=True, kw_only=True)
class PreparedSweep:
    """Everything decided before a trial is submitted. `compiled[i]` runs `trials[i]`; `job_digest` lets a resumed
    sweep check that the job file is still the one its trials were made from."""

    sweep_id: str
    job_path: str
    job_name: str
    job_digest: str
    target: str
    strategy: str
    seed: Optional[int]
    trials: tuple[Trial, ...]
    compiled: tuple[CompiledJob, ...]
    warnings: tuple[Diagnostic, ...] = ()


def new_sweep_id() -> str:
    import secrets

    return "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6))


def derived_sweep_id(raw: bytes, trials: Sequence[Mapping[str, Any]]) -> str:
    """`compile --space`'s id: from the job and the trials, so its output is deterministic."""
    digest = hashlib.sha256(raw + json.dumps(list(trials), sort_keys=True, default=str).encode())
    return digest.hexdigest()[:6]


def check_sweep_id(sweep_id: str) -> str:
    if not SWEEP_ID.fullmatch(sweep_id):
        raise UsageError(f"sweep id {sweep_id!r}: 4 to 16 lowercase letters and digits")
    return sweep_id


def trial_name(job_name: str, sweep_id: str, index: int) -> str:
    suffix = f"-{sweep_id}-{index}"
    return job_name[:MAX_TRIAL_NAME - len(suffix)] + suffix


# ------------------------------------------------------------------------------------------------------------------
# The space

def read_space(specs: Sequence[str] | Mapping[str, Any], *, parameters: Mapping[str, Any],
               used: Optional[frozenset[str]], strategy: Optional[str]) -> tuple[SearchSpace, list[Diagnostic]]:
    """The space the `--space` values make (a file, `key=v1,v2` choices, or both: a choice replaces the file's
    parameter of that name), or a mapping of NNI's format (the Python API), checked against the job. Raises
    InvalidJobError with every diagnostic on an error."""
    import os

    from paictl.protocol import read_source
    from paictl.protocol.loading import DocumentError, decode_source
    from paictl.protocol.searchspace import (ROWS_KEY, check_space_data, check_space_text,
                                             choices_data)

    if isinstance(specs, Mapping):
        given, problems = check_space_data(specs, "<space>", parameters=parameters, used=used, strategy=strategy)
        if given is None:
            raise InvalidJobError(problems)
        return given, problems
    if not specs:
        raise UsageError("--space is required: a search-space file (NNI's format) or key=v1,v2")
    files = [spec for spec in specs if "=" not in spec or os.path.exists(spec)]
    pairs = [spec for spec in specs if spec not in files]
    if len(files) > 1:
        raise UsageError(f"--space names {len(files)} files ({', '.join(files)}); give one file, and key=v1,v2 "
                         "for more parameters")
    diagnostics: list[Diagnostic] = []
    found: Optional[SearchSpace] = None
    if files:
        path = files[0]
        try:  # bytes that are not a text file (not UTF-8, too large) are the file's located error, as a job's are
            text = decode_source(read_source(path), path)
        except DocumentError as error:
            raise InvalidJobError(list(error.diagnostics)) from None
        found, diagnostics = check_space_text(text, path, parameters=parameters, used=used, strategy=strategy)
    choices = choices_data(_choice(pair) for pair in pairs)
    if choices:
        extra, more = check_space_data(choices, "--space", parameters=parameters, used=used, strategy=strategy)
        diagnostics += more
        if found is not None and found.rows is not None:
            raise UsageError(f"--space key=v1,v2 adds choices to distributions; {files[0]} holds explicit rows "
                             f"(`{ROWS_KEY}`)")
        if found is not None and extra is not None:
            replaced = {d.name for d in extra.dimensions}
            found = dataclasses.replace(found, dimensions=tuple(d for d in found.dimensions
                                                                if d.name not in replaced) + extra.dimensions)
        elif not files:
            found = extra
    if found is None or any(d.is_error for d in diagnostics):
        raise InvalidJobError(diagnostics)
    return found, diagnostics


def _choice(pair: str) -> tuple[str, list[Any]]:
    from paictl.targets.compiled import parse_parameters

    key, _, values = pair.partition("=")
    if not key or not values:
        raise UsageError(f"--space {pair!r}: expected a file or key=v1,v2")
    return key, [parse_parameters([f"{key}={value}"])[key] for value in values.split(",")]


# ------------------------------------------------------------------------------------------------------------------
# The trials

def prepare_sweep(job: str, specs: Sequence[str] | Mapping[str, Any], *, target: str, strategy: Optional[str] = None,
                  seed: Optional[int] = None, max_trials: Optional[int] = None, sweep_id: Optional[str] = None,
                  profile: str = "default", user: Optional[str] = None, namespace: Optional[str] = None,
                  secrets_from: Optional[str] = None, cluster: Optional[Sequence[str]] = None,
                  strict: bool = False, stdin_name: str = "<stdin>", derive_id: bool = False,
                  on_warnings: Optional[Callable[[list[Diagnostic]], None]] = None) -> PreparedSweep:
    """Check the job and the space, draw the trials and compile every one; raises before anything is submitted.

    `sweep_id` None draws a new one, or with `derive_id` makes one of the job and the trials (`compile --space`:
    the same input gives the same names)."""
    from paictl.compiler.trials import check_max_trials, parameters_used, trials as draw
    from paictl.protocol import read_source, read_stdin
    from paictl.targets.compiled import compile_job

    check_max_trials(max_trials)  # before the job is read
    path = stdin_name if job == "-" else str(job)
    raw = read_stdin() if job == "-" else read_source(job)
    base = compile_job(raw, name=path, target=target, profile=profile, user=user, namespace=namespace,
                       secrets_from=secrets_from, cluster=cluster, on_warnings=on_warnings, strict=strict)
    space, space_warnings = read_space(specs, parameters=base.job.parameters, used=parameters_used(base.job),
                                       strategy=strategy)
    if strict and space_warnings:
        from paictl.protocol.diagnostics import Severity

        raise InvalidJobError([d._replace(severity=Severity.ERROR) for d in space_warnings])
    if space_warnings and on_warnings is not None:
        on_warnings(space_warnings)
    chosen = strategy or ("list" if space.rows is not None else "grid")
    if chosen != "random":
        seed = None  # only random draws
    elif seed is None:
        import secrets

        seed = secrets.randbelow(2 ** 31)
    parameter_sets = draw(space, strategy=chosen, seed=seed, max_trials=max_trials)
    if sweep_id:
        sweep_id = check_sweep_id(sweep_id)
    else:
        sweep_id = derived_sweep_id(raw, parameter_sets) if derive_id else new_sweep_id()
    trials = tuple(Trial(index=index, name=trial_name(base.job.name, sweep_id, index), parameters=values)
                   for index, values in enumerate(parameter_sets))
    compiled = tuple(compile_trial(raw, path, base, trial, sweep_id, profile=profile, user=user,
                                   namespace=namespace, secrets_from=secrets_from, cluster=cluster)
                     for trial in trials)
    return PreparedSweep(sweep_id=sweep_id, job_path=path, job_name=base.job.name, job_digest=job_digest(raw),
                         target=target, strategy=chosen, seed=seed, trials=trials, compiled=compiled,
                         warnings=(*base.warnings, *space_warnings))


def compile_recorded(definition: Mapping[str, Any], indexes: Sequence[int], *, namespace: Optional[str],
                     on_warnings: Optional[Callable[[list[Diagnostic]], None]] = None) -> dict[int, CompiledJob]:
    """The trials of a recorded sweep (`sweep.json`) compiled again, for `--resume`: from the same job file, which
    must not have changed (its digest), with the same options."""
    from paictl.protocol import read_source
    from paictl.targets.compiled import compile_job

    job = definition["job"]
    raw = read_source(job["path"]) if indexes else b""
    if indexes and job_digest(raw) != job["digest"]:
        raise UsageError(f"{job['path']} changed since sweep {definition['id']} started; its remaining trials would "
                         "not be the ones it planned: restore the file, or start a new sweep")
    options = definition.get("compile") or {}
    common = {"profile": options.get("profile", "default"), "user": options.get("user"), "namespace": namespace,
              "secrets_from": options.get("secrets_from"), "cluster": options.get("cluster")}
    compiled: dict[int, CompiledJob] = {}
    if not indexes:
        return compiled
    base = compile_job(raw, name=job["path"], target=definition["target"], on_warnings=on_warnings, **common)
    trials = {trial["index"]: trial for trial in definition["trials"]}
    for index in indexes:
        trial = Trial(index=index, name=trials[index]["name"], parameters=trials[index]["parameters"])
        compiled[index] = compile_trial(raw, job["path"], base, trial, definition["id"], **common)
    return compiled


def job_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def compile_trial(raw: bytes, path: str, base: CompiledJob, trial: Trial, sweep_id: str, *, profile: str,
                  user: Optional[str], namespace: Optional[str], secrets_from: Optional[str],
                  cluster: Optional[Sequence[str]]) -> CompiledJob:
    """One trial as a job of its own (its warnings are the base job's, already reported)."""
    from paictl.targets.compiled import compile_job

    compiled = compile_job(renamed(raw, path, base, trial.name), name=path, target=base.target, profile=profile,
                           user=user, namespace=namespace, parameters=trial.parameters, secrets_from=secrets_from,
                           cluster=cluster)
    if base.target not in KUBE_TARGETS:
        return compiled
    labels = {SWEEP_LABEL: sweep_id, TRIAL_LABEL: str(trial.index)}
    objects = [{**obj, "metadata": {**obj["metadata"], "labels": {**(obj["metadata"].get("labels") or {}),
                                                                  **labels}}}
               if isinstance(obj.get("metadata"), dict) else obj for obj in compiled.objects]
    return dataclasses.replace(compiled, objects=objects)


def renamed(raw: bytes, path: str, base: CompiledJob, name: str) -> bytes:
    """The job's bytes with its `name` scalar replaced by `name` (plain or simply quoted, as written)."""
    from paictl.protocol.loading import decode_source, load_located

    text = decode_source(raw, path)
    document = load_located(text, path)
    position = (document.positions or {}).get("/name")
    if position is None:
        raise UsageError(f"{path}: the job's name could not be located to name its trials")
    line, column = position[2], position[3]
    starts = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]
    offset = starts[line - 1] + column - 1
    old = base.job.name
    for quote in ("", "'", '"'):
        written = f"{quote}{old}{quote}"
        if text.startswith(written, offset):
            return (text[:offset] + f"{quote}{name}{quote}" + text[offset + len(written):]).encode("utf-8")
    raise UsageError(f"{path}:{line}:{column}: write the job's name as a plain or quoted scalar, so that its trials "
                     "can be named after it")
