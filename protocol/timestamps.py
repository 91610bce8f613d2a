"""Unquoted YAML 1.1 timestamps, which OpenPAI's YAML reader (js-yaml 3) turns into JavaScript `Date`s.

`version: 2020-01-01` is a string to a YAML 1.2 reader, but js-yaml's default schema resolves a plain scalar that
looks like a date (`2020-01-01`) or a date and time (`2001-12-14t21:59:43.10-05:00`, `2001-12-14 21:59:43.10 -5`)
into a `Date`. The rest-server then sees no string there: its schema refuses a Date wherever it wants a string
(ajv counts a Date as an object with no properties), a Date rendered into a command prints as JavaScript prints it,
and the secrets Secret holds its ISO form.

The located loader (protocol/yamlevents.py) reads such a scalar as a `Timestamp`: a `str` holding the text as
written (so positions, masking and messages keep working), which knows the moment js-yaml computes. The checks
that care ask `is_timestamp`; the schema phase sees it as the empty object ajv sees (protocol/schema_check.py).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATE_TIME = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})"
                        r"(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9]{1,2})(?::([0-9]{2}))?))?")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class Timestamp(str):
    """A plain scalar js-yaml reads as a Date: the text as written, and `moment`, the UTC instant it denotes."""

    moment: _dt.datetime

    def __new__(cls, text: str, moment: _dt.datetime) -> Timestamp:
        made = super().__new__(cls, text)
        made.moment = moment
        return made

    def __reduce__(self):
        return Timestamp, (str(self), self.moment)


class TimestampRangeError(ValueError):
    """A timestamp whose moment lies outside years 1..9999 (JavaScript holds it; paictl cannot show it)."""


def read_timestamp(raw: str) -> Timestamp | None:
    """The Timestamp js-yaml makes of the plain scalar `raw`, or None when it is no timestamp."""
    found = _DATE.fullmatch(raw) or _DATE_TIME.fullmatch(raw)
    if found is None:
        return None
    parts = found.groups()
    year, month, day = int(parts[0]), int(parts[1]), int(parts[2])
    hour = minute = second = millis = offset = 0
    if len(parts) > 3 and parts[3] is not None:
        hour, minute, second = int(parts[3]), int(parts[4]), int(parts[5])
        millis = int((parts[6] or "")[:3].ljust(3, "0"))
        if parts[8]:  # a signed zone; `Z` is UTC
            offset = (int(parts[9]) * 60 + int(parts[10] or 0)) * (-1 if parts[8] == "-" else 1)
    if 0 <= year <= 99:  # Date.UTC reads years 0-99 as 1900-1999
        year += 1900
    # Date.UTC carries every field over (month 13 is January next year, day 0 the last of the month before).
    months = year * 12 + month - 1
    try:
        start = _dt.datetime(months // 12, months % 12 + 1, 1, tzinfo=_dt.timezone.utc)
        moment = start + _dt.timedelta(days=day - 1, hours=hour, minutes=minute - offset, seconds=second,
                                       milliseconds=millis)
    except (ValueError, OverflowError):
        raise TimestampRangeError(raw) from None
    return Timestamp(raw, moment)


def is_timestamp(value: Any) -> bool:
    return isinstance(value, Timestamp)


def js_date_string(value: Timestamp) -> str:
    """`String(date)`: JavaScript's Date.prototype.toString in UTC, the time zone of the rest-server's container."""
    m = value.moment
    return (f"{_DAYS[(m.weekday() + 1) % 7]} {_MONTHS[m.month - 1]} {m.day:02d} {m.year:04d} "
            f"{m.hour:02d}:{m.minute:02d}:{m.second:02d} GMT+0000 (Coordinated Universal Time)")


def iso_string(value: Timestamp) -> str:
    """`date.toISOString()`: what js-yaml writes for a Date (the secrets Secret) and JSON holds."""
    m = value.moment
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}." \
           f"{m.microsecond // 1000:03d}Z"


def epoch_millis(value: Timestamp) -> int:
    return (value.moment - _EPOCH) // _dt.timedelta(milliseconds=1)


def dates_as_objects(value: Any) -> Any:
    """`value` with every Timestamp replaced by a DateView: the data as ajv judges it (a Date is an object)."""
    if isinstance(value, Timestamp):
        return DateView(value)
    if isinstance(value, dict):
        return {k: dates_as_objects(v) for k, v in value.items()}
    if isinstance(value, list):
        return [dates_as_objects(v) for v in value]
    return value


class DateView(dict):
    """An empty mapping standing for a Date in the schema phase; `timestamp` is the value it stands for."""

    def __init__(self, timestamp: Timestamp):
        super().__init__()
        self.timestamp = timestamp


def contains_timestamp(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Timestamp):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
