"""OpenPAI job protocol v2: loading, validation and the typed job model.

The library face of `paictl validate`:

    >>> from paictl.protocol import validate_file, load_job
    >>> result = validate_file("job.yaml")        # every diagnostic, located; never raises for a bad job
    >>> job = load_job("job.yaml")                # the typed model, or InvalidJobError with the diagnostics
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from paictl.errors import InputError, InvalidJobError

from .diagnostics import Diagnostic, Severity
from .source import MAX_FILE_BYTES, read_source, read_stdin

if TYPE_CHECKING:
    from .validate import ValidationResult, validate_bytes, validate_text
    from .model import (Completion, Defaults, Deployment, DeploymentTaskRole, DockerAuth, Job, Prerequisite,
                        Resources, TaskRole)

_MODEL_NAMES = {"Completion", "Defaults", "Deployment", "DeploymentTaskRole", "DockerAuth", "Job", "Prerequisite",
                "Resources", "TaskRole", "job_from_data"}


_VALIDATE_NAMES = {"ValidationResult", "validate_bytes", "validate_text"}


def __getattr__(name: str):
    # The validator too: a reader of another input (a profile, the OpenPAI clusters file) through `.source` imports
    # this package first, and an unreachable cluster's early answer (cli/entry.py) should not load the validator.
    if name in _VALIDATE_NAMES:
        from . import validate

        return getattr(validate, name)
    # The model is imported on first use: `paictl validate` never builds it, and creating its frozen dataclasses
    # is a measurable share of start-up.
    if name in _MODEL_NAMES:
        from . import model

        return getattr(model, name)
    raise AttributeError(name)


__all__ = [
    "Completion", "Defaults", "Deployment", "DeploymentTaskRole", "Diagnostic", "DockerAuth", "Job",
    "Prerequisite", "Resources", "Severity", "TaskRole", "ValidationResult", "job_from_data", "load_job", "load_job_text",
    "MAX_FILE_BYTES", "read_source", "read_stdin", "validate_bytes", "validate_file", "validate_text",
]


def validate_file(path: str | os.PathLike[str]) -> ValidationResult:
    from .validate import validate_bytes

    return validate_bytes(read_source(path), str(path))


def load_job_text(text: str, path: str = "<string>", *, strict: bool = False) -> Job:
    """The typed job for a document, or InvalidJobError carrying every diagnostic (warnings fail when strict)."""
    from .validate import validate_text

    result = validate_text(text, path)
    if not result.ok or (strict and result.diagnostics):
        raise InvalidJobError(list(result.diagnostics))
    from .model import job_from_data

    assert result.data is not None
    return job_from_data(result.data)


def load_job(path: str | os.PathLike[str], *, strict: bool = False) -> Job:
    result = validate_file(path)
    if not result.ok or (strict and result.diagnostics):
        raise InvalidJobError(list(result.diagnostics))
    from .model import job_from_data

    assert result.data is not None
    return job_from_data(result.data)
