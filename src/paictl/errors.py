"""One error hierarchy for the whole tool; the CLI catches it once and exits with `exit_code`.

Exit codes (the README documents them): 0 success, 1 an invalid job (or a failed job when following one),
2 usage or I/O errors, 3 cluster errors, 4 a job that was stopped, 70 (sysexits' EX_SOFTWARE) a bug in paictl caught by
its own checks, kept apart from 1 so that scripts never mistake one for an invalid job.
"""

from __future__ import annotations

from typing import Protocol, Sequence


class Reported(Protocol):
    """What an error needs of a diagnostic (protocol.diagnostics.Diagnostic is one). Declared here, not imported:
    this module is the ground every layer stands on, so it imports none of them."""

    @property
    def is_error(self) -> bool: ...

    file: str
    message: str


class PaictlError(Exception):
    """Base of every error paictl reports to the user; the message already says what to do."""

    exit_code = 1


class InvalidJobError(PaictlError):
    """The job (or another input document) has error diagnostics."""

    exit_code = 1

    def __init__(self, diagnostics: Sequence[Reported]):
        errors = [d for d in diagnostics if d.is_error]
        first = errors[0] if errors else None
        summary = f"{first.file}: {first.message}" if first else "invalid job"
        super().__init__(f"{len(errors)} error(s); first: {summary}")
        self.diagnostics = diagnostics


class UsageError(PaictlError):
    exit_code = 2


class InputError(PaictlError):
    """A file could not be read (missing, unreadable, a directory with no YAML files...)."""

    exit_code = 2


class ClusterError(PaictlError):
    exit_code = 3


class NotFoundError(ClusterError):
    """No job of that name where paictl looked (or nowhere to look: no kubeconfig)."""


class InternalError(PaictlError):
    """paictl produced something it must never produce (e.g. a compiled object that fails its schema).

    Not the user's fault and not fixable by editing the job, so the message says so and asks for a report.
    """

    exit_code = 70
