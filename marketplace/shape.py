"""Recognising a marketplace item by its shape, without importing anything.

`paictl validate` offers every document that is not a clean job to this test; it must cost nothing for jobs.
"""

from __future__ import annotations

from typing import Any

#: Keys only a job has at its root: a document with one of them is a job, however broken.
_JOB_KEYS = ("protocolVersion", "taskRoles", "prerequisites", "deployments")


def looks_like_item(data: Any) -> bool:
    """An item has a `protocol` (the job it shares) and an `author` or `name`, and none of a job's own keys."""
    return (isinstance(data, dict) and "protocol" in data and ("author" in data or "name" in data)
            and not any(key in data for key in _JOB_KEYS))
