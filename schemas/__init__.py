"""The JSON Schemas shipped with paictl, read from this package's data files.

`job.schema.json` describes an OpenPAI job (protocol v2) and accepts and rejects exactly what the upstream
rest-server's schema check does. Editors can use it for completion and hover help through yaml-language-server
(`# yaml-language-server: $schema=<path or URL of job.schema.json>` at the top of a job file).
"""

from __future__ import annotations

import functools
import json
import os

#: The schemas are plain files beside this module (setuptools package data). Read directly rather than through
#: importlib.resources, whose import (zipfile, threading...) was a tenth of `paictl validate`'s start-up.
_FOLDER = os.path.dirname(os.path.abspath(__file__))

_SUFFIX = ".schema.json"

__all__ = ["fast_validator", "load_schema", "schema_names"]


def load_schema(name: str = "job") -> dict:
    """The parsed schema `<name>.schema.json`, read once and shared: treat the result as read-only."""
    return _load(name)


@functools.lru_cache(maxsize=None)
def _load(name: str) -> dict:
    if name not in schema_names():
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(schema_names())}")
    with open(os.path.join(_FOLDER, name + _SUFFIX), encoding="utf-8") as file:
        return json.load(file)


def schema_names() -> list[str]:
    """Names of the schemas in this package, sorted (e.g. `["job"]`)."""
    return sorted(entry[: -len(_SUFFIX)] for entry in os.listdir(_FOLDER) if entry.endswith(_SUFFIX))


@functools.lru_cache(maxsize=None)
def fast_validator(name: str = "job"):
    """A jsonschema-rs validator for `<name>`: decides valid/invalid in microseconds.

    The Python jsonschema package explains failures (located, all errors) but costs ~50-100 ms to import, so it is
    imported only once this says a document is invalid.
    """
    import jsonschema_rs

    return jsonschema_rs.validator_for(load_schema(name))
