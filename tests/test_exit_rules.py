"""Failure analysis: the built-in exit rules, the matcher, user replacement files and `paictl diagnose`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paictl.compiler.exit_rules import (analyse, diagnose, load_rule_set, load_rules, rules_from_text,
                                        should_retry)
from paictl.errors import InvalidJobError

UPSTREAM_SPEC = (Path(__file__).resolve().parents[2] / "shared" / "corpus" / "openpai" / "spec"
                 / "pai__src__k8s-job-exit-spec__config__k8s-job-exit-spec.yaml")

SYNTAX_LOG = 'Traceback (most recent call last):\n  File "train.py", line 3\n    def f(\nSyntaxError: invalid syntax\n'

SMALL_RULES = """\
version: 1
default: 99
rules:
  - code: 0
    phrase: Fine
    type: USER_SUCCESS
    behavior: UNKNOWN
    reaction: NEVER_RETRY
    reason: It worked.
    solution: []
  - code: 42
    phrase: DiskFull
    type: PLATFORM_FAILURE
    behavior: TRANSIENT
    reaction: ALWAYS_RETRY
    reason: The disk filled up.
    solution: [Free some space.]
    patterns:
      - userLogRegex: '(?i)no space left on device'
  - code: 99
    phrase: Whatever
    type: UNKNOWN_FAILURE
    behavior: UNKNOWN
    reaction: RETRY_TO_MAX
    reason: Nobody knows.
    solution: [Look at the log.]
"""


def test_syntax_error_is_never_retried_even_with_attempts_left():
    rule = diagnose(1, SYNTAX_LOG)
    assert (rule.code, rule.phrase, rule.reaction) == (231, "ContainerSyntaxError", "NEVER_RETRY")
    assert should_retry(rule, attempts_left=5) is False


def test_sigkill_is_transient_and_always_retried():
    rule = diagnose(137)
    assert (rule.code, rule.phrase, rule.behavior, rule.reaction) == (
        137, "ContainerSigKillReceived", "TRANSIENT", "ALWAYS_RETRY")
    assert should_retry(rule, attempts_left=0) is True


def test_command_not_found_needs_both_exit_code_127_and_the_phrase():
    assert diagnose(127, "sh: 1: trainer: command not found\n").code == 220
    assert diagnose(127, "something else went wrong\n").code != 220
    assert diagnose(1, "sh: 1: trainer: command not found\n").code != 220


def test_unmatched_is_255_retried_to_max_and_zero_is_success():
    rule = diagnose(3, "nothing recognisable\n")
    assert (rule.code, rule.phrase, rule.reaction) == (255, "PAIRuntimeUnknownFailed", "RETRY_TO_MAX")
    assert should_retry(rule, 1) is True and should_retry(rule, 0) is False
    assert diagnose(0, SYNTAX_LOG).phrase == "Succeeded"


def test_first_match_wins():
    # matches 231 (attributeerror) and 232 (importerror) and 235 (core dumped): 231 comes first in the file
    log = "ImportError: no module named foo\nAttributeError: 'X' object has no attribute 'y'\nAborted (core dumped)\n"
    assert diagnose(1, log).code == 231
    # an exit-code rule listed before the log rules wins over them
    assert diagnose(137, log).code == 137


def test_platform_log_and_gpu_patterns():
    assert diagnose(10, platform_log="SSH barrier reaches max retry count\n").code == 249
    assert diagnose(10, user_log="SSH barrier reaches max retry count\n").code == 255
    assert analyse(1, gpu_double_ecc_error=True).rule.code == 128
    assert diagnose(1).code == 255


def test_only_the_last_10_mb_are_searched():
    from paictl.compiler import exit_rules

    head = "SyntaxError: invalid syntax\n"
    assert diagnose(1, head + "x" * exit_rules.LOG_TAIL).code == 255
    verdict = analyse(1, "x" * exit_rules.LOG_TAIL + "\n" + head)
    assert verdict.rule.code == 231 and verdict.matched[0].line == 2


def test_matched_line_is_reported():
    verdict = analyse(1, SYNTAX_LOG)
    assert [(m.log, m.line, m.text) for m in verdict.matched] == [("user", 4, "SyntaxError: invalid syntax")]


def test_builtin_rules_validate_and_every_regex_compiles():
    rules = load_rules()
    assert rules is load_rules()  # cached
    codes = [r.code for r in rules]
    assert len(codes) == len(set(codes)) and 0 in codes and 255 in codes
    assert {250, 251, 252, 253, 254, 255, 256} <= set(codes)
    import jsonschema
    from importlib.resources import files

    from paictl.schemas import load_schema
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load(files("paictl.compiler").joinpath("exit_rules.yaml").read_text())
    jsonschema.Draft202012Validator.check_schema(load_schema("exit-rules"))
    jsonschema.Draft202012Validator(load_schema("exit-rules")).validate(data)


def test_builtin_rules_pass_every_check_and_the_trusted_load_agrees():
    """The shipped rules are trusted at run time (parsed, not re-validated): this is where they are checked."""
    from paictl.compiler.exit_rules import BUILTIN_NAME, builtin_text

    checked = rules_from_text(builtin_text(), BUILTIN_NAME)  # schema + consistency rules; raises if broken
    assert load_rule_set() == checked


def test_user_replacement_rules():
    rule_set = rules_from_text(SMALL_RULES, "mine.yaml")
    assert diagnose(1, "write: No space left on device", rules=rule_set).phrase == "DiskFull"
    assert diagnose(1, SYNTAX_LOG, rules=rule_set).code == 99
    assert diagnose(0, rules=rule_set).phrase == "Fine"


def _invalid(text: str) -> list:
    with pytest.raises(InvalidJobError) as caught:
        rules_from_text(text, "bad.yaml")
    return caught.value.diagnostics


def test_invalid_rules_are_located():
    diagnostics = _invalid(SMALL_RULES.replace("reaction: ALWAYS_RETRY", "reaction: SOMETIMES"))
    assert [(d.code, d.file, d.line) for d in diagnostics] == [("E204", "bad.yaml", 15)]


def test_bad_regex_duplicate_phrase_and_missing_default_are_located():
    diagnostics = _invalid(SMALL_RULES.replace("'(?i)no space left on device'", "'(unclosed'"))
    assert [(d.code, d.line, d.pointer) for d in diagnostics] == [
        ("E502", 19, "/rules/1/patterns/0/userLogRegex")]
    assert "does not compile" in diagnostics[0].message
    diagnostics = _invalid(SMALL_RULES.replace("phrase: Whatever", "phrase: DiskFull"))
    assert [(d.code, d.line) for d in diagnostics] == [("E502", 21)]
    diagnostics = _invalid(SMALL_RULES.replace("default: 99", "default: 7"))
    assert [(d.code, d.line, d.pointer) for d in diagnostics] == [("E502", 2, "/default")]


def test_cli_text(run_cli, tmp_path):
    log = tmp_path / "task.log"
    log.write_text(SYNTAX_LOG)
    code, out, _ = run_cli("diagnose", "--exit-code", "1", "--log", str(log))
    assert code == 0
    assert out.splitlines()[0] == "231 ContainerSyntaxError"
    assert "NEVER_RETRY (retried: no)" in out
    assert "matched:   user log line 4: SyntaxError: invalid syntax" in out
    code, out, _ = run_cli("diagnose", "--exit-code", "134")
    assert code == 0 and "retried: up to taskRetryCount" in out and "matched" not in out


def test_cli_json_and_stdin(run_cli):
    code, out, _ = run_cli("diagnose", "--exit-code", "127", "--log", "-", "--format", "json",
                           input="bash: nvcc: command not found\n")
    assert code == 0
    report = json.loads(out)
    assert report["code"] == 220 and report["phrase"] == "UserCommandExitWithError"
    assert report["retried"] == "no" and report["solution"]
    assert report["matched"] == [{"log": "user", "line": 1, "text": "bash: nvcc: command not found"}]
    code, out, _ = run_cli("diagnose", "--exit-code", "137", "-o", "json")
    assert json.loads(out)["reaction"] == "ALWAYS_RETRY" and json.loads(out)["matched"] == []


def test_cli_exit_spec_replacement_and_errors(run_cli, tmp_path):
    spec = tmp_path / "rules.yaml"
    spec.write_text(SMALL_RULES)
    code, out, _ = run_cli("diagnose", "--exit-code", "1", "--exit-spec", str(spec), "--log", "-",
                           input="No space left on device\n")
    assert code == 0 and out.startswith("42 DiskFull")
    spec.write_text(SMALL_RULES.replace("'(?i)no space left on device'", "'(unclosed'"))
    code, out, err = run_cli("diagnose", "--exit-code", "1", "--exit-spec", str(spec))
    assert code == 1 and out == "" and f"{spec}:19:" in err and "E502" in err
    code, _, err = run_cli("diagnose", "--exit-code", "1", "--log", str(tmp_path / "missing.log"))
    assert code == 2 and "cannot read the log" in err
    code, _, err = run_cli("diagnose", "--exit-code", "1", "--exit-spec", str(tmp_path / "missing.yaml"))
    assert code == 2 and "cannot read the exit rules" in err


@pytest.mark.skipif(not UPSTREAM_SPEC.is_file(), reason="../shared/corpus is not beside this checkout")
def test_parity_with_the_upstream_exit_spec():
    from ruamel.yaml import YAML

    upstream = YAML(typ="safe", pure=True).load(UPSTREAM_SPEC.read_text(encoding="utf-8"))["spec"]
    ours = {r.code: r for r in load_rules()}
    with_patterns = [s for s in upstream if s.get("pattern", {}).get("runtimeContainerPatterns")]
    assert with_patterns
    for spec in upstream:
        rule = ours.get(spec["code"])
        if spec in with_patterns or rule is not None:
            assert rule is not None, spec["code"]
            assert (rule.phrase, rule.type, rule.behavior, rule.reaction) == (
                spec["phrase"], spec["type"], spec["behavior"], spec["reaction"]), spec["code"]
        if spec not in with_patterns:
            continue
        theirs = [(p.get("exitCode"), p.get("userLogRegex"), p.get("platformLogRegex"),
                   p.get("gpuInfo", {}).get("nvidiaDoubleEccError"))
                  for p in spec["pattern"]["runtimeContainerPatterns"]]
        mine = [(p.exit_code, p.user_log_regex.pattern if p.user_log_regex else None,
                 p.platform_log_regex.pattern if p.platform_log_regex else None, p.gpu_double_ecc_error)
                for p in rule.patterns]
        assert mine == theirs, spec["code"]
    # and in upstream's order, so that "first match wins" picks the same code
    order = [s["code"] for s in with_patterns]
    assert [r.code for r in load_rules() if r.patterns] == order


def test_load_rule_set_from_a_file(tmp_path):
    spec = tmp_path / "rules.yaml"
    spec.write_text(SMALL_RULES)
    rule_set = load_rule_set(spec)
    assert rule_set.default_code == 99 and rule_set.source == str(spec)
    assert diagnose(5, rules=load_rules(spec)).code == 99
