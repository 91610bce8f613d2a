"""Deterministic YAML text for packed items and for jobs given inline: readable and unambiguous to any reader.

Multi-line strings (a description, a job's commands, the protocol text itself) are written as literal blocks so a
packed item stays readable; strings a YAML 1.1 reader would take for a boolean or a number (`yes`, `on`, `1:30`)
are quoted, because the marketplace's readers are not all YAML 1.2. The text is read back and compared before it is
returned, so a style choice can never change a value.
"""

from __future__ import annotations

import io
import re
from typing import Any

from paictl.errors import InternalError

_YAML11_LOOKALIKE = re.compile(
    r"(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~|=|<<"
    r"|[-+]?(?:\.[0-9]+|[0-9][0-9_:.]*)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?)")


def _literal_safe(text: str) -> bool:
    """A literal block keeps `text` exactly only without tabs/control characters, trailing or leading blanks."""
    if "\n" not in text.rstrip("\n") or text.startswith((" ", "\n")):
        return False
    return all(ch == "\n" or (ch.isprintable() and ch != "\t") for ch in text) and not any(
        line != line.rstrip() for line in text.split("\n"))


def _styled(value: Any) -> Any:
    from ruamel.yaml.scalarstring import LiteralScalarString, SingleQuotedScalarString

    if isinstance(value, dict):
        return {k: _styled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_styled(v) for v in value]
    if isinstance(value, str):
        if _literal_safe(value):
            return LiteralScalarString(value)
        if _YAML11_LOOKALIKE.fullmatch(value):
            return SingleQuotedScalarString(value)
    return value


def dump_yaml(data: dict[str, Any] | list[Any]) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    yaml.dump(_styled(data), out)
    text = out.getvalue()
    if _plain(YAML(typ="safe", pure=True).load(text)) != data:
        raise InternalError("paictl wrote YAML that does not read back as the same data; please report this")
    return text


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


#: Records (publish's, list's) are written the same way.
dump_any = dump_yaml
