"""MARO's create config (maro.md A.8) checked as untrusted input before a node runs anything: a node API request
that names no container, image or command, or holds labels, environments or resources of the wrong shape, is one
`RuntimeFailure` (the node API's 400) and never reaches docker or a shell.
"""

from __future__ import annotations

import re
from typing import Any


class RuntimeFailure(Exception):
    """A container could not be created, stopped or removed (the node API answers 400, as MARO's does)."""


PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}\Z")  # docker's container names, at most 255 characters
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}\Z")
_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
_MEMORY = re.compile(r"[0-9]{1,9}m?\Z")
_SCALARS = (str, int, float, bool)


def checked_config(config: dict[str, Any]) -> dict[str, Any]:
    """MARO's create config, checked before anything runs: names a container, an image and a command; labels and
    environments are maps of names to scalars; resources are numbers. RuntimeFailure (400) says what is wrong."""
    def fail(what: str) -> RuntimeFailure:
        return RuntimeFailure(f"create config: {what}")

    checked_name(config)
    if not isinstance(config.get("image_name"), str) or not config["image_name"] or len(config["image_name"]) > 1024:
        raise fail("image_name must be a non-empty string")
    if not isinstance(config.get("command", ""), str) or len(config.get("command", "")) > 512 * 1024:
        raise fail("command must be a string")
    for key, pattern in (("environments", _ENV_NAME), ("labels", _LABEL)):
        value = config.get(key) or {}
        if not isinstance(value, dict) or len(value) > 10_000:
            raise fail(f"{key} must be an object")
        for name, item in value.items():
            if not pattern.match(name) or not isinstance(item, _SCALARS) or len(str(item)) > 128 * 1024:
                raise fail(f"{key}: {name[:60]!r} must be a name with a string or number value")
    job_id = (config.get("labels") or {}).get("job_id", "unknown")
    if not isinstance(job_id, str) or not PLAIN_NAME.match(job_id):
        raise fail("labels.job_id must be a plain name")
    cpu = config.get("cpu", 1)
    if isinstance(cpu, bool) or not isinstance(cpu, (int, float, str)) or not _number_text(cpu):
        raise fail("cpu must be a number")
    if not _MEMORY.match(str(config.get("memory", "0m"))):
        raise fail("memory must be <MB>m")
    volumes = config.get("volumes") or []
    if not isinstance(volumes, list) or not all(isinstance(v, str) and ":" in v for v in volumes):
        raise fail("volumes must be a list of source:target strings")
    return config


def _number_text(value: Any) -> bool:
    try:
        return 0 < float(value) < 1e6
    except (TypeError, ValueError):
        return False


def checked_name(config: dict[str, Any]) -> str:
    name = config.get("container_name")
    if not isinstance(name, str) or not PLAIN_NAME.match(name):
        raise RuntimeFailure("create config: container_name must be a plain name of at most 255 characters "
                             "(letters, digits, _ . -)")
    return name
