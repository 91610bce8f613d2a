"""Shape guards for checks that read a job which may have failed the schema.

Semantic checks run on every loaded document, so a value may have any JSON type. A check reads each value through
these guards: a value of the wrong shape looks empty and the check skips it, since the schema phase already
reports it. On schema-valid data every guard is the identity, so the checks behave exactly as if unguarded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def as_mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def mappings_in(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """The mapping items of a list, with their index in it (so pointers stay right when other items are skipped)."""
    for index, item in enumerate(as_list(value)):
        if isinstance(item, dict):
            yield index, item


def strings_in(value: Any) -> Iterator[tuple[int, str]]:
    """The string items of a list, with their index in it."""
    for index, item in enumerate(as_list(value)):
        if isinstance(item, str):
            yield index, item


def is_int(value: Any) -> bool:
    """An integer as the JSON schema counts one: 2 and 2.0 are, True is not (Python's bool is an int)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
