"""'Did you mean' for keys, names and placeholders: one matcher, so every check suggests the same way."""

from __future__ import annotations

from typing import Any, Iterable, Mapping


def did_you_mean(word: str, candidates: Iterable[Any], renames: Mapping[str, str] | None = None) -> str | None:
    """The candidate the user most probably meant: a known rename, a case-only difference, or a close spelling."""
    names = [c for c in candidates if isinstance(c, str)]
    renamed = (renames or {}).get(word.lower())
    if renamed in names:
        return renamed
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.lower(), name)
    if word.lower() in by_lower and by_lower[word.lower()] != word:
        return by_lower[word.lower()]
    import difflib  # only a file with a problem gets here

    match = difflib.get_close_matches(word.lower(), [n for n in by_lower if by_lower[n] != word], n=1, cutoff=0.6)
    return by_lower[match[0]] if match else None
