"""Serialising compiled objects the way kubectl reads and writes them.

Output must be byte-identical for identical input (it is diffed, reviewed and committed), so the YAML emitter is
configured once here: block style, keys in the order the compiler built them, no aliases, wide lines.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping


def _yaml():
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.representer.ignore_aliases = lambda data: True
    # Plain dicts keep insertion order and stay block-style mappings.
    yaml.representer.add_representer(dict, RoundTripRepresenter.represent_dict)
    yaml.representer.add_representer(str, _represent_str)
    return yaml


# Characters ruamel's emitter would write raw in plain or block scalars although a reader then changes them
# (control characters are refused, NEL/LS/PS become line breaks): such strings are written double-quoted, escaped.
_NEEDS_ESCAPES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


def _represent_str(representer, data: str):
    if _NEEDS_ESCAPES.search(data):
        return representer.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    # Multi-line values (commands, the stored job config) read best as literal blocks; the emitter falls back to a
    # quoted style by itself where a block cannot carry the text exactly (trailing spaces).
    if "\n" in data.rstrip("\n"):
        return representer.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return representer.represent_str(data)


def to_yaml(objects: Iterable[Mapping[str, Any]]) -> str:
    """Multi-document YAML, `---` before every object, ready for `kubectl apply -f -`."""
    yaml = _yaml()
    stream = io.StringIO()
    for obj in objects:
        stream.write("---\n")
        yaml.dump(obj, stream)
    return stream.getvalue()


def to_json_list(objects: Iterable[Mapping[str, Any]]) -> str:
    """One `v1` `List`, as `kubectl get -o json` prints several objects."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}, indent=2, ensure_ascii=False)


def file_name(obj: Mapping[str, Any]) -> str:
    """`<kind>-<name>.yaml`, lower case: one file per object, stable across runs."""
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def write_files(objects: Iterable[Mapping[str, Any]], directory: Path) -> list[Path]:
    """Write every object to its own file, or none: names are checked before anything is written."""
    objects = list(objects)
    names = [file_name(o) for o in objects]
    if len(set(names)) != len(names):
        raise ValueError("two objects would be written to the same file")
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for obj, name in zip(objects, names):
        path = directory / name
        path.write_text(to_yaml([obj]))
        written.append(path)
    return written
