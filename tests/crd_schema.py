"""Upstream CRD schemas as strict validators, for the tests that check compiled objects against them.

The API server prunes a field a CRD does not declare, silently; a test wants that to be an error, so every object
schema with declared properties (and no x-kubernetes-preserve-unknown-fields) gets `additionalProperties: false`.
"""

from __future__ import annotations

import copy
from pathlib import Path


def strict_validator(crd_path: Path, version: str | None = None):
    """A jsonschema validator for the openAPIV3Schema of the CRD's `version` (its first version by default)."""
    import jsonschema
    import yaml

    crd = yaml.safe_load(crd_path.read_text(encoding="utf-8"))
    versions = crd["spec"]["versions"]
    chosen = next(v for v in versions if v["name"] == version) if version else versions[0]
    return jsonschema.Draft7Validator(_pruning(copy.deepcopy(chosen["schema"]["openAPIV3Schema"])))


def _pruning(node):
    """Declared object properties become the only allowed ones, unless the CRD keeps unknown fields."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for value in node.values():
            _pruning(value)
    elif isinstance(node, list):
        for value in node:
            _pruning(value)
    return node
