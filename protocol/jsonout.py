"""JSON as every `-o json` output and every JSON body paictl writes must be: strict (RFC 8259), dates as JavaScript
writes them. Here, below the compiler and the marketplace, so that both (and the CLI) print through one function."""

from __future__ import annotations

import datetime
import json
from typing import Any, Mapping


def js_timestamp(value: datetime.datetime) -> str:
    """An instant as js-yaml writes a Date (`toISOString`, UTC): a plain YAML timestamp, read back as an instant."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc)
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:"
            f"{value.second:02d}.{value.microsecond // 1000:03d}Z")


def strict_json(data: Any, **options: Any) -> str:
    """`json.dumps` that always prints JSON (RFC 8259): every `-o json` output goes through it.

    A non-finite number (YAML's `.nan`, `.inf`, `-.inf`; JSON has none) is written as `null`, as JavaScript's
    `JSON.stringify` writes it (the rest-server stores a job's numbers that way); a date (an unquoted YAML
    timestamp) as its ISO text, as `JSON.stringify` writes a `Date`. Python's default would print `NaN` and
    `Infinity`, which JSON readers refuse. The common case pays one `json.dumps`; only output holding a non-finite
    number is walked.
    """
    try:
        return json.dumps(data, allow_nan=False, default=_json_default, **options)
    except ValueError:
        return json.dumps(_finite(data), allow_nan=False, default=_json_default, **options)


def _json_default(value: Any) -> Any:
    moment = getattr(value, "moment", value)  # a protocol.timestamps.Timestamp is a str and never gets here
    if isinstance(moment, datetime.datetime):
        return js_timestamp(moment)
    if isinstance(moment, datetime.date):
        return moment.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
