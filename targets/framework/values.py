"""The model's frozen values as the plain dicts and lists YAML and JSON emitters take.

Below both the native runtime's commands (native.py) and the Secret objects (secrets.py), which each turn job values
into text and would otherwise need each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def plain(value: Any) -> Any:
    """Frozen model mappings and tuples back to the dicts and lists YAML and JSON emitters take."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    from paictl.protocol.timestamps import Timestamp

    if isinstance(value, Timestamp):  # an unquoted date: a Date upstream, which js-yaml writes as a timestamp
        return value.moment
    return value
