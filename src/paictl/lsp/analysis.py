"""One document's verdict for the editor: `paictl validate`'s diagnostics, the target's when one is chosen, and
the fixes their hints state. Pure: text in, records out; the server only converts and sends them."""

from __future__ import annotations

from typing import Any, NamedTuple

from paictl.protocol.diagnostics import Diagnostic
from paictl.protocol.fixes import Fix, fixes_for


class Settings(NamedTuple):
    """What the editor configures (initializationOptions, or workspace/didChangeConfiguration under `paictl`)."""

    #: With a target, its compile-time diagnostics show too (HiveD feasibility, JobSet's W901-W904...).
    target: str | None = None
    #: The cluster profile a target compiles against (`paictl compile --profile`).
    profile: str | None = None
    #: How long after the last change a document is checked again.
    debounce_ms: int = 30
    #: Check every YAML document, not only those that look like a job or a marketplace item.
    all_yaml: bool = False

    @classmethod
    def from_options(cls, options: Any, base: Settings | None = None) -> Settings:
        base = base or cls()
        if not isinstance(options, dict):
            return base
        options = options.get("paictl", options) if isinstance(options.get("paictl"), dict) else options
        changes: dict[str, Any] = {}
        for name, key, kind in (("target", "target", str), ("profile", "profile", str),
                                ("debounce_ms", "debounceMs", int), ("all_yaml", "allYaml", bool)):
            if key in options and (options[key] is None or isinstance(options[key], kind)):
                changes[name] = options[key]
        return base._replace(**changes)


class Analysis(NamedTuple):
    text: str
    diagnostics: tuple[Diagnostic, ...]
    #: The parsed document when it loaded (completion and definitions read it), else None.
    data: Any
    fixes: tuple[Fix, ...]
    #: A problem with the settings themselves (an unknown profile), to show to the user once.
    settings_error: str | None = None


def is_checkable(text: str, settings: Settings) -> bool:
    from paictl.protocol.fixes import looks_like_job_or_item

    return settings.all_yaml or looks_like_job_or_item(text)


def analyse(text: str, path: str, settings: Settings) -> Analysis:
    """Validate `text` as `paictl validate` does (a marketplace item as an item), then, for a valid job with a
    target configured, compile it as `paictl compile --target` would and keep what that adds."""
    result = validate_document(text, path)
    diagnostics = [d for d in result.diagnostics if d.file == path]
    settings_error = None
    if result.ok and settings.target and isinstance(result.data, dict) and "taskRoles" in result.data:
        extra, settings_error = _target_diagnostics(text, path, settings)
        known = {(d.code, d.line, d.column) for d in diagnostics}
        diagnostics += [d for d in extra if (d.code, d.line, d.column) not in known and d.file == path]
        diagnostics.sort(key=lambda d: (d.line or 0, d.column or 0, d.code))
    fixes = fixes_for(diagnostics, text, result.data)
    return Analysis(text=text, diagnostics=tuple(diagnostics), data=result.data, fixes=tuple(fixes),
                    settings_error=settings_error)


def validate_document(text: str, path: str):
    """`paictl validate`'s result for one text: a marketplace item is checked as one, anything else as a job."""
    from paictl.protocol.validate import validate_text

    return validate_text(text, path, other_kinds=_item_result)


def _item_result(data: dict[str, Any], text: str, path: str):
    from paictl.marketplace.shape import looks_like_item

    if not looks_like_item(data):
        return None
    from paictl.marketplace.checking import check_item_text

    return check_item_text(text, path).result


def _target_diagnostics(text: str, path: str, settings: Settings) -> tuple[list[Diagnostic], str | None]:
    from paictl.errors import InvalidJobError, PaictlError
    from paictl.targets.compiled import compile_job

    try:
        compiled = compile_job(text.encode("utf-8"), target=settings.target or "framework",
                               profile=settings.profile or "default", name=path)
    except InvalidJobError as error:
        return list(error.diagnostics), None
    except PaictlError as error:
        return [], f"paictl: {error}"
    return list(compiled.warnings), None
