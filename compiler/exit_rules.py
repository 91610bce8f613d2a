"""Failure analysis: which exit-spec rule a failed task falls under, and whether retrying it can help.

OpenPAI's runtime decides a task's final exit code by matching its exit status and log tail against the exit spec;
the platform then retries or not from that code's reaction, whatever taskRetryCount says. The local runner and the
Kubernetes follow view both need the same verdict, so it lives here, driven by data (`exit_rules.yaml`, checked
against `schemas/exit-rules.schema.json`) that a user can replace with `--exit-spec FILE`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping


Reaction = Literal["ALWAYS_RETRY", "ALWAYS_BACKOFF_RETRY", "RETRY_TO_MAX", "NEVER_RETRY"]

#: Upstream's aggregator reads only this much of the end of each log: the cause of a failure is near its end, and
#: multi-gigabyte training logs must not be scanned whole. Counted in characters here (the logs are decoded text).
LOG_TAIL = 10 * 1024 * 1024
#: Upstream caps a reported match at this many bytes; a matched "line" can be a whole minified blob.
MATCH_LIMIT = 2048

BUILTIN_NAME = "<built-in exit rules>"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Pattern:
    """All present fields must match; an absent field matches anything."""

    exit_code: int | None = None
    user_log_regex: re.Pattern[str] | None = None
    platform_log_regex: re.Pattern[str] | None = None
    gpu_double_ecc_error: bool | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Rule:
    """One exit-spec entry: a code, what it means, whether the platform retries it, and how it is recognised."""

    code: int
    phrase: str
    type: str
    behavior: str
    reaction: Reaction
    reason: str
    solution: tuple[str, ...]
    #: Empty for codes that are assigned elsewhere (barrier, scheduler, default): never matched from logs.
    patterns: tuple[Pattern, ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class MatchedLine:
    """The log line that decided the verdict, so a user sees the evidence rather than only a phrase."""

    log: Literal["user", "platform"]
    line: int
    text: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Verdict:
    """The rule a failed task falls under, with the pattern and log lines that decided it."""

    rule: Rule
    pattern: Pattern | None = None
    matched: tuple[MatchedLine, ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuleSet:
    """The loaded file: rules in matching order, and the code used when none matches."""

    source: str
    rules: tuple[Rule, ...]
    default_code: int

    def by_code(self, code: int) -> Rule:
        return next(r for r in self.rules if r.code == code)


def load_rules(path: str | os.PathLike[str] | None = None) -> tuple[Rule, ...]:
    """The rules of `path`, or the built-in ones (read once) when None; InvalidJobError if the file is invalid."""
    return load_rule_set(path).rules


def load_rule_set(path: str | os.PathLike[str] | None = None) -> RuleSet:
    if path is None:
        return _builtin()
    from paictl.errors import InputError
    from paictl.protocol.source import read_text_file

    name = os.fspath(path)
    try:
        text = read_text_file(name, "exit rules file")  # bounded, as a job is
    except InputError as exc:
        raise InputError(f"{name}: cannot read the exit rules: {str(exc).partition(': ')[2]}") from None
    return rules_from_text(text, name)


@functools.lru_cache(maxsize=1)
def _builtin() -> RuleSet:
    """The shipped rules, trusted: the tests check them against the schema and the consistency rules
    (tests/test_exit_rules.py), so they are only parsed here (checking them cost ~80 ms of every local run)."""
    from paictl.protocol.loading import load_fast

    text = builtin_text()
    data = load_fast(text)
    if data is None:  # pragma: no cover - the fast loader reads the shipped file (tested)
        return rules_from_text(text, BUILTIN_NAME)
    return _rule_set(data, BUILTIN_NAME)


def builtin_text() -> str:
    # A plain file beside this module (package data); importlib.resources would cost more to import than to read.
    return Path(__file__).with_name("exit_rules.yaml").read_text(encoding="utf-8")


def rules_from_text(text: str, path: str = "<exit rules>") -> RuleSet:
    """Parse and check a rules file, reporting problems located like a job's (`file:line:col`)."""
    from paictl.protocol.validate import load_checked

    document = load_checked(text, path, "exit-rules", _consistency)
    return _rule_set(document.data, path)


def _rule_set(data: Mapping[str, Any], path: str) -> RuleSet:
    return RuleSet(source=path, rules=tuple(_rule(r) for r in data["rules"]), default_code=data["default"])


def _consistency(data: Mapping[str, Any]) -> list:
    """What the schema cannot say: unique codes and phrases, the codes the matcher relies on, compiling regexes."""
    from paictl.protocol.codes import finding

    findings = []
    seen_codes: set[int] = set()
    seen_phrases: set[str] = set()
    for index, rule in enumerate(data["rules"]):
        where = f"/rules/{index}"
        if rule["code"] in seen_codes:
            findings.append(finding("E502", f"{where}/code", f"code {rule['code']} is defined twice",
                                    hint="each code may appear in one rule only"))
        if rule["phrase"] in seen_phrases:
            findings.append(finding("E502", f"{where}/phrase", f"phrase {rule['phrase']!r} is used twice",
                                    hint="each rule needs its own phrase"))
        seen_codes.add(rule["code"])
        seen_phrases.add(rule["phrase"])
        for p_index, pattern in enumerate(rule.get("patterns", ())):
            for key in ("userLogRegex", "platformLogRegex"):
                if key in pattern:
                    problem = _regex_problem(pattern[key])
                    if problem:
                        findings.append(finding("E502", f"{where}/patterns/{p_index}/{key}",
                                                f"{key} does not compile: {problem}",
                                                hint="write it in the syntax common to Go RE2 and Python re"))
    if data["default"] not in seen_codes:
        findings.append(finding("E502", "/default", f"no rule has the default code {data['default']}",
                                hint="add that rule, or name an existing code"))
    if 0 not in seen_codes:
        findings.append(finding("E502", "/rules", "no rule has code 0 (a task that succeeded)",
                                hint="add a rule with code 0, e.g. phrase Succeeded"))
    return findings


def _regex_problem(source: str) -> str | None:
    try:
        re.compile(source)
    except re.error as exc:
        return str(exc)
    return None


def _rule(data: Mapping[str, Any]) -> Rule:
    return Rule(code=data["code"], phrase=data["phrase"], type=data["type"], behavior=data["behavior"],
                reaction=data["reaction"], reason=data["reason"], solution=tuple(data["solution"]),
                patterns=tuple(_pattern(p) for p in data.get("patterns", ())))


def _pattern(data: Mapping[str, Any]) -> Pattern:
    user, platform = data.get("userLogRegex"), data.get("platformLogRegex")
    gpu = data.get("gpuInfo")
    return Pattern(exit_code=data.get("exitCode"),
                   user_log_regex=re.compile(user) if user is not None else None,
                   platform_log_regex=re.compile(platform) if platform is not None else None,
                   gpu_double_ecc_error=gpu["nvidiaDoubleEccError"] if gpu is not None else None)


def analyse(exit_code: int, user_log: str = "", platform_log: str = "", rules: RuleSet | None = None, *,
            gpu_double_ecc_error: bool = False) -> Verdict:
    """The verdict with its evidence: the rule, the pattern that matched and the log lines it matched."""
    rule_set = rules if rules is not None else _builtin()
    if exit_code == 0:
        return Verdict(rule=rule_set.by_code(0))
    user_tail, platform_tail = _tail(user_log), _tail(platform_log)
    for rule in rule_set.rules:
        for pattern in rule.patterns:
            matched = _match(pattern, exit_code, user_log, user_tail, platform_log, platform_tail,
                             gpu_double_ecc_error)
            if matched is not None:
                return Verdict(rule=rule, pattern=pattern, matched=matched)
    return Verdict(rule=rule_set.by_code(rule_set.default_code))


def diagnose(exit_code: int, user_log: str = "", platform_log: str = "",
             rules: RuleSet | Iterable[Rule] | None = None) -> Rule:
    """The rule a task that exited with `exit_code` falls under: first match wins; 0 succeeds; else the default."""
    return analyse(exit_code, user_log, platform_log, _as_rule_set(rules)).rule


def should_retry(rule: Rule, attempts_left: int) -> bool:
    """Whether the platform would run the task again: the reaction overrides taskRetryCount except RETRY_TO_MAX."""
    if rule.reaction in ("ALWAYS_RETRY", "ALWAYS_BACKOFF_RETRY"):
        return True
    if rule.reaction == "NEVER_RETRY":
        return False
    return attempts_left > 0


def _as_rule_set(rules: RuleSet | Iterable[Rule] | None) -> RuleSet | None:
    """Accept the bare tuple `load_rules` returns; its default is 255 as upstream's, falling back to the last rule."""
    if rules is None or isinstance(rules, RuleSet):
        return rules
    rules = tuple(rules)
    default = 255 if any(r.code == 255 for r in rules) else rules[-1].code
    return RuleSet(source="<rules>", rules=rules, default_code=default)


def _tail(log: str) -> tuple[int, str]:
    offset = max(0, len(log) - LOG_TAIL)
    return offset, log[offset:]


def _match(pattern: Pattern, exit_code: int, user_log: str, user_tail: tuple[int, str], platform_log: str,
           platform_tail: tuple[int, str], gpu_double_ecc_error: bool) -> tuple[MatchedLine, ...] | None:
    if pattern.exit_code is not None and pattern.exit_code != exit_code:
        return None
    if pattern.gpu_double_ecc_error is not None and pattern.gpu_double_ecc_error != gpu_double_ecc_error:
        return None
    evidence = []
    for regex, log, (offset, tail), name in ((pattern.user_log_regex, user_log, user_tail, "user"),
                                             (pattern.platform_log_regex, platform_log, platform_tail, "platform")):
        if regex is None:
            continue
        found = regex.search(tail)
        if found is None:
            return None
        evidence.append(_line_of(log, offset + found.start(), name))
    return tuple(evidence)


def _line_of(log: str, position: int, name: Literal["user", "platform"]) -> MatchedLine:
    start = log.rfind("\n", 0, position) + 1
    end = log.find("\n", position)
    text = log[start:end if end >= 0 else len(log)].rstrip("\r")
    clipped = text.encode("utf-8")[:MATCH_LIMIT].decode("utf-8", errors="ignore")
    return MatchedLine(log=name, line=log.count("\n", 0, start) + 1, text=clipped)
