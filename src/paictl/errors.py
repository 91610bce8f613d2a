"""One error hierarchy for the whole tool; the CLI catches it once and exits with `exit_code`.

Exit codes (the README documents them): 0 success, 1 an invalid job (or a failed job when following one),
2 usage or I/O errors, 3 cluster errors (and broken configuration files of the environment), 4 a job that was stopped, 70 (sysexits' EX_SOFTWARE) a bug in paictl caught by
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


class ConfigFileError(PaictlError):
    """A configuration file of the environment (a kubeconfig, the OpenPAI clusters file) cannot be read or parsed.

    Exit 3, as for the cluster it describes: the job is not at fault and the command line is not wrong; the file
    the environment points at is. The message is one located line (`file:line:col: ...`) and never quotes the
    file's text, which may hold a token or a password."""

    exit_code = 3


class NotFoundError(ClusterError):
    """No job of that name where paictl looked (or nowhere to look: no kubeconfig)."""


class InternalError(PaictlError):
    """paictl produced something it must never produce (e.g. a compiled object that fails its schema).

    Not the user's fault and not fixable by editing the job, so the message says so and asks for a report.
    """

    exit_code = 70


def display_url(url: str) -> str:
    """An address as paictl shows it, in any message or listing: without user:password, and with every query value
    and the fragment replaced by `***` (a kubeconfig's `server: https://admin:PW@host`, a clusters file's
    `?token=...`, a `DOCKER_HOST` with credentials). Lives beside the errors because every layer that names an
    address in an error uses it, and this module is the one they all may import."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an invalid URL)"
    if not (parts.username or parts.password or parts.query or parts.fragment or "@" in parts.netloc):
        return url  # nothing to hide: shown exactly as written
    netloc = ("***@" if parts.username or parts.password else "") + (f"[{host}]" if ":" in host else host) + port
    query = "&".join(f"{pair.partition('=')[0]}=***" for pair in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, "***" if parts.fragment else ""))


def mask_urls(text: str) -> str:
    """`text` with every URL that carries credentials (user:password@, a query, a fragment) shown as `display_url`
    shows it; other URLs are left exactly as written. The last guard before an error reaches the terminal: a URL
    a library quoted (an exception's text) is masked too."""
    if "://" not in text:
        return text
    import re

    def masked(found: "re.Match[str]") -> str:
        whole = found.group(0)
        url = whole.rstrip(".,;:!")  # the sentence's punctuation after a URL
        rest = url.split("://", 1)[1]
        authority = rest.split("/", 1)[0]
        return display_url(url) + whole[len(url):] if "@" in authority or "?" in rest or "#" in rest else whole

    return re.sub(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]]*(?:\[[^\s\]]*\][^\s'\"<>()]*)?", masked, text)
