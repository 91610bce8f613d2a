"""`paictl diagnose`: which failure rule a task's exit code and log fall under, and whether it is retried."""

import enum
from pathlib import Path
from typing import Any, Optional

import typer

from paictl.errors import InputError, InvalidJobError


class DiagnoseFormat(str, enum.Enum):
    text = "text"
    json = "json"


#: How each reaction reads to someone deciding whether to resubmit.
RETRIED = {
    "ALWAYS_RETRY": "yes",
    "ALWAYS_BACKOFF_RETRY": "yes, after a back-off",
    "RETRY_TO_MAX": "up to taskRetryCount",
    "NEVER_RETRY": "no",
}


def diagnose_command(
    exit_code: int = typer.Option(..., "--exit-code", metavar="N", help="The exit status of the task's command."),
    log: Optional[Path] = typer.Option(None, "--log", metavar="FILE",
                                       help="The task's own log (stdout/stderr), or - for standard input. Only its "
                                            "last 10 MiB is read, as OpenPAI does; a stream may be at most 256 MiB."),
    platform_log: Optional[Path] = typer.Option(None, "--platform-log", metavar="FILE",
                                                help="The runtime's log (plugins, SSH barrier), if you have it "
                                                     "(its last 10 MiB)."),
    exit_spec: Optional[Path] = typer.Option(None, "--exit-spec", metavar="FILE",
                                             help="Use these failure rules instead of the built-in ones."),
    output_format: DiagnoseFormat = typer.Option(DiagnoseFormat.text, "--output", "-o", "--format",
                                                  help="text or json."),
) -> None:
    """Explain a failed task: the matching rule's code, phrase, reason, solution, and whether it is retried.

    Rules follow OpenPAI's exit spec: the first rule whose pattern matches the exit status and the end of the logs
    wins; exit status 0 is success; anything unrecognised is 255 (PAIRuntimeUnknownFailed).
    """
    from paictl.compiler.exit_rules import analyse, load_rule_set

    from .errors import fail, report_invalid

    try:
        rules = load_rule_set(exit_spec)
        user_text, user_cut = _read_log(log, "--log")
        platform_text, platform_cut = _read_log(platform_log, "--platform-log")
    except InputError as exc:
        fail(exc)
    except InvalidJobError as exc:
        report_invalid(exc)
    verdict = analyse(exit_code, user_text, platform_text, rules)
    report = _report(verdict, cut=[name for name, cut in (("user", user_cut), ("platform", platform_cut)) if cut])
    report["hints"] = _hints(verdict, user_text, rules.default_code) if exit_code != 0 else []
    if output_format is DiagnoseFormat.json:
        from paictl.compiler.emit import strict_json

        typer.echo(strict_json(report, indent=2, ensure_ascii=False))
    else:
        typer.echo(_text(report))


def _read_log(path: Optional[Path], option: str) -> tuple[str, bool]:
    """The log's last LOG_TAIL bytes (what upstream's aggregator reads), and whether its start was left out; the cut
    line is dropped. Decoded leniently: a stray binary byte must not hide the error message next to it."""
    from paictl.compiler.exit_rules import LOG_TAIL
    from paictl.protocol.source import read_tail

    if path is None:
        return "", False
    try:
        raw, cut = read_tail(path, LOG_TAIL, "log")
    except InputError as exc:
        raise InputError(f"{option} {exc}") from None
    if cut:
        raw = raw[raw.find(b"\n") + 1:]
    return raw.decode("utf-8", errors="replace"), cut


def _report(verdict, cut: list[str]) -> dict[str, Any]:
    rule = verdict.rule
    return {
        "code": rule.code,
        "phrase": rule.phrase,
        "type": rule.type,
        "behavior": rule.behavior,
        "reaction": rule.reaction,
        "retried": RETRIED[rule.reaction],
        "reason": rule.reason,
        "solution": list(rule.solution),
        "matched": [{"log": m.log, "line": m.line, "text": m.text} for m in verdict.matched],
        # The logs whose start was not read: their line numbers count from the start of their last 10 MiB.
        "tail_only": cut,
    }


def _hints(verdict, log: str, unknown: int) -> list[dict[str, Any]]:
    """For a failure the rules leave unknown (their default, 255, as OpenPAI's own rules do): what the user's log
    points at."""
    from paictl.compiler.failure_hints import hints

    if verdict.rule.code != unknown:
        return []
    return [{"name": h.name, "log": "user", "line": h.line, "text": h.text, "advice": h.advice} for h in hints(log)]


def _text(report: dict[str, Any]) -> str:
    lines = [
        f"{report['code']} {report['phrase']}",
        f"  type:      {report['type']} ({report['behavior']})",
        f"  reaction:  {report['reaction']} (retried: {report['retried']})",
        f"  reason:    {report['reason']}",
    ]
    for index, step in enumerate(report["solution"]):
        lines.append(f"  {'solution:' if index == 0 else '':<10} - {step}")
    for match in report["matched"]:
        where = " of its last 10 MiB" if match["log"] in report["tail_only"] else ""
        lines.append(f"  matched:   {match['log']} log line {match['line']}{where}: {match['text']}")
    if report["hints"]:
        lines.append("  unknown to OpenPAI's exit rules too (they give 255 as well); what the log points at:")
    for hint in report["hints"]:
        lines.append(f"  hint:      {hint['name']} ({hint['log']} log line {hint['line']}: {hint['text']}): "
                     f"{hint['advice']}")
    return "\n".join(lines)
