"""What every part of the YAML reading shares: libyaml's event parser, and LoadProblem, the one way a part says the
text is not one job mapping.

Why a module of its own: the event builder (yamlevents.py), the scalar rules (yamlscalars.py), the tag rules
(yamltags.py) and the position walk (yamlpositions.py) all raise LoadProblem and read marks; kept in any one of
them, the others would import it back and the four would import each other in a circle.
"""

from __future__ import annotations


class LoadProblem(Exception):
    """Why the text is not one job mapping: a code, a message and a 1-based position."""

    def __init__(self, code: str, message: str, line: int | None, column: int | None, hint: str | None = None):
        super().__init__(message)
        self.code, self.message, self.line, self.column, self.hint = code, message, line, column, hint


def position(mark) -> tuple[int, int]:
    """A libyaml mark as a 1-based (line, column); (1, 1) when there is none."""
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def event_parser(text: str):
    """libyaml's parser over `text` (PyYAML's C extension; its pure-Python parser, the same state machine, only
    slower, when built without libyaml). Scalars come unresolved: the callers resolve them by js-yaml's rules.
    Call `dispose()` when done."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
