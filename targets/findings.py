"""Compile-time errors reported like validation errors: a Finding at a JSON pointer, located when the text is known.

A compile target works on the typed Job, which has no positions. Rather than threading line numbers through the
model, targets emit pointer-located `Finding`s (exactly what the validator's checks emit) and the caller's
`Document` (the loaded text with its position index), when given, turns them into `file:line:col` diagnostics
through the validator's own `locate`. Without a document the diagnostics still carry the pointer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from paictl.errors import InvalidJobError

if TYPE_CHECKING:
    from paictl.protocol.diagnostics import Diagnostic, Finding
    from paictl.protocol.loading import Document


def raise_if_any(findings: Iterable[Finding], document: Document | None, path: str = "<job>") -> None:
    diagnostics = located_all(findings, document, path)
    if diagnostics:
        raise InvalidJobError(diagnostics)


def located_all(findings: Iterable[Finding], document: Document | None, path: str = "<job>") -> list[Diagnostic]:
    """Every finding located, the document indexed once (and only if there is a finding)."""
    findings = list(findings)
    if not findings:
        return []
    document = with_positions(document)
    return [located(f, document, path) for f in findings]


def with_positions(document: Document | None) -> Document | None:
    """The document with its position index, built now if it was loaded without one.

    `compile_job` passes the text unindexed: indexing means reading it again from libyaml's event stream, which
    only a job the target refuses (or warns about) needs.
    """
    if document is None or document.positions is not None:
        return document
    from paictl.protocol.loading import DocumentError, load_located

    try:
        return load_located(document.text, document.path)
    except DocumentError:  # pragma: no cover - the text was already validated
        return document


def located(finding: Finding, document: Document | None, path: str = "<job>") -> Diagnostic:
    from paictl.protocol.diagnostics import Diagnostic
    from paictl.protocol.validate import locate

    if document is not None:
        return locate(finding, with_positions(document))
    return Diagnostic(code=finding.code, severity=finding.severity, message=finding.message, file=path,
                      pointer=finding.pointer, hint=finding.hint)
