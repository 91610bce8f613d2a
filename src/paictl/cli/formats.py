"""`-o/--output`, as kubectl's: the format of what a command prints on standard output, never a file name.

Files are written by options of their own (`compile --output-dir`, `marketplace pull --output-file`...).
`--format` is accepted as an alias of `-o` by every command that takes `-o`. Typer-free: the fast paths use it.
"""

from __future__ import annotations

from typing import Any, Sequence

from paictl.errors import UsageError

#: A job's state, a stop, a submission: text for people, the same records as JSON lines or YAML documents.
RECORD_FORMATS = ("text", "json", "yaml")
#: A list of jobs, as `kubectl get`: a table, a wider table, one name per line, or the records.
LIST_FORMATS = ("text", "wide", "name", "json", "yaml")


def check_output(value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise UsageError(f"-o/--output {value!r}: expected {', '.join(allowed[:-1])} or {allowed[-1]}")


def record_text(data: Any, output_format: str) -> str:
    """One record: a JSON line, or a YAML document that begins with `---` (so a stream of them is valid YAML)."""
    if output_format == "yaml":
        from paictl.compiler.emit import to_yaml

        return to_yaml([data]).rstrip("\n")
    from paictl.compiler.emit import strict_json

    return strict_json(data, ensure_ascii=False)


def records_text(records: list, output_format: str) -> str:
    """Several records at once (a list): one JSON array, or a YAML stream of one document per record."""
    if output_format == "yaml":
        from paictl.compiler.emit import to_yaml

        return to_yaml(records).rstrip("\n")
    from paictl.compiler.emit import strict_json

    return strict_json(records, ensure_ascii=False)


def age(created: str | None, now: float) -> str:
    """kubectl's AGE column (apimachinery's `duration.HumanDuration`): two units while they help, one after."""
    if not created:
        return "<unknown>"
    from datetime import datetime, timezone

    # RFC 3339 as the API server, OpenPAI and the run folders write it, read by hand: `time.strptime` imports
    # _strptime and calendar, a fortieth of a `status` listing
    stamp = created[:19]
    digits = stamp[0:4] + stamp[5:7] + stamp[8:10] + stamp[11:13] + stamp[14:16] + stamp[17:19]
    if len(stamp) != 19 or stamp[4::3] != "--T::" or not (digits.isascii() and digits.isdigit()):
        return "<unknown>"
    try:
        made = datetime(int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10]), int(stamp[11:13]), int(stamp[14:16]),
                        int(stamp[17:19]), tzinfo=timezone.utc).timestamp()
    except ValueError:
        return "<unknown>"
    seconds = int(now - made)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, hours // 24 % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"
