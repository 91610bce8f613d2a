"""validate's checks of the task roles the screen could not vouch for, against every check over the whole job.

When the screen (protocol/clean_screen.py) vouches for all of a job but some task roles, validate runs the checks on
those task roles alone (protocol/validate.py, task_role_findings). That must change nothing a user sees: the same
findings in the same order, so the same diagnostics, locations, messages, codes, exit status and JSON. Here each job
is validated both ways: over the upstream corpus, the project's own example and case folders, and many variants of
them, each changed in one or two places (a task role first, in the middle or last) by what the checks look for.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from conftest import CASES, JOBS, ROOT, corpus_files
from paictl.protocol import validate as validate_module
from paictl.protocol.clean_screen import CLEAN, unvouched_parts
from paictl.cli.report import json_report, summary_line, text_report
from paictl.protocol.loading import DocumentError, decode_source, load_fast
from paictl.protocol.validate import job_findings, task_role_findings, validate_text
from paictl.schemas import fast_validator


def own_jobs() -> list[Path]:
    """The project's example jobs and its validation cases (positive and negative)."""
    folders = [ROOT / "examples", JOBS, CASES]
    return sorted(p for folder in folders for p in folder.rglob("*") if p.suffix in (".yaml", ".yml"))


def text_of(path: Path) -> str | None:
    """The file's text as validate reads it; None for one it cannot decode (no check runs on it)."""
    try:
        return decode_source(path.read_bytes(), path.name)
    except DocumentError:
        return None


def upstream_jobs() -> list[Path]:
    return corpus_files("valid") + corpus_files("nonconforming") + corpus_files("invalid")


def every_check(text: str, path: str):
    """validate_text with the screen vouching for nothing: every check runs over the whole job."""
    screen = validate_module.unvouched_parts
    validate_module.unvouched_parts = lambda data, text: None
    try:
        return validate_text(text, path)
    finally:
        validate_module.unvouched_parts = screen


class Tally:
    """How the jobs went, so that a test shows it was not vacuous."""

    def __init__(self) -> None:
        self.selective = 0  # validated from some task roles alone, with findings
        self.commands_only = 0  # of those, from the placeholder checks of their commands alone
        self.lookups_only = 0  # of those, without the compile checks (only lookups that find nothing were in doubt)
        self.fell_back = 0  # the task roles alone found something elsewhere: every check ran
        self.codes: set[str] = set()


def assert_same(text: str, path: str, tally: Tally) -> None:
    """The selective path gives what every check gives: the findings, and validate's whole result."""
    data = load_fast(text)
    if data is not None and fast_validator("job").is_valid(data):
        unvouched = unvouched_parts(data, text)
        if unvouched is not None and unvouched != CLEAN:
            selected = task_role_findings(data, text, unvouched)
            whole = job_findings(data, text)
            if selected is None:
                tally.fell_back += 1
            else:
                assert selected == whole, f"{path}: {unvouched}\n{text}"
                tally.selective += bool(whole)
                tally.commands_only += bool(whole) and unvouched.commands_only
                tally.lookups_only += bool(whole) and unvouched.lookups_only
                tally.codes.update(f.code for f in whole)
        elif unvouched == CLEAN:
            assert job_findings(data, text) == [], f"{path}: screened clean, but the checks find something\n{text}"
    fast, reference = validate_text(text, path), every_check(text, path)
    assert fast.diagnostics == reference.diagnostics, f"{path}\n{text}"
    for strict in (False, True):  # what `paictl validate` prints, in text and JSON, and its verdict
        assert json_report([fast], strict) == json_report([reference], strict)
        assert summary_line([fast], strict) == summary_line([reference], strict)
    assert text_report([fast]) == text_report([reference]) and fast.ok == reference.ok


def test_the_project_jobs_and_cases_validate_as_with_every_check():
    tally = Tally()
    files = own_jobs()
    assert len(files) >= 40
    for path in files:
        text = text_of(path)
        if text is not None:
            assert_same(text, path.name, tally)


def test_the_upstream_jobs_validate_as_with_every_check():
    files = upstream_jobs()
    if not files:
        pytest.skip("../shared/corpus is not beside this checkout")
    tally = Tally()
    for path in files:
        text = text_of(path)
        if text is not None:
            assert_same(text, path.name, tally)


# ---------------------------------------------------------------------------------------------------------------
# Variants: one or two changes at a time, in task roles at different places


def role_changes(data: dict, name: str) -> list:
    """(label, change) pairs; each change edits task role `name` of `data` in place (or the job around it)."""
    def at(*keys, value):
        def change(job):
            node = job["taskRoles"][name]
            for key in keys[:-1]:
                node = node.setdefault(key, {}) if isinstance(node.get(key), dict) or key not in node else node[key]
                if not isinstance(node, dict):
                    return
            node[keys[-1]] = value
        return change

    def command(text, where=-1):
        def change(job):
            commands = job["taskRoles"][name].setdefault("commands", ["true"])
            if isinstance(commands, list):
                commands.insert(len(commands) if where == -1 else where, text)
        return change

    def copy_as(new_name):
        def change(job):
            roles = job["taskRoles"]
            roles[new_name] = copy.deepcopy(roles[name])
        return change

    def deployment(key, text):
        def change(job):
            job.setdefault("deployments", []).append({"name": "d9", "taskRoles": {name: {key: [text]}}})
        return change

    def chosen(text):
        def change(job):
            job.setdefault("deployments", []).append({"name": "d9", "taskRoles": {name: {"preCommands": [text]}}})
            job["defaults"] = {"deployment": "d9"}
        return change

    def hived(settings):
        def change(job):
            extras = job.setdefault("extras", {})
            if isinstance(extras, dict):
                extras["hivedScheduler"] = {"jobPriorityClass": "prod", "taskRoles": {name: settings}}
        return change

    def plugin(text, users):
        def change(job):
            extras = job.setdefault("extras", {})
            if isinstance(extras, dict):
                extras.setdefault("com.microsoft.pai.runtimeplugin", []).append(
                    {"plugin": "cmd", "taskroles": users, "parameters": {"preCommands": [text]}})
        return change

    return [
        ("unknown container option", at("extraContainerOptions", "shm", value=64)),
        ("shm infinite", at("extraContainerOptions", "shmMB", value=float("inf"))),
        ("negative retries", at("taskRetryCount", value=-1)),
        ("retries with gang", at("taskRetryCount", value=3)),
        ("retries past int32", at("taskRetryCount", value=2 ** 31)),
        ("retries infinite", at("taskRetryCount", value=float("inf"))),
        ("instances past the limit", at("instances", value=10_001)),
        ("completion zero", at("completion", "minFailedInstances", value=0)),
        ("completion above instances", at("completion", "minSucceededInstances", value=99)),
        ("completion below -1", at("completion", "minFailedInstances", value=-5)),
        ("negative cpu", at("resourcePerInstance", "cpu", value=-1)),
        ("huge memory", at("resourcePerInstance", "memoryMB", value=2 ** 62)),
        ("zero ports", at("resourcePerInstance", "ports", "http", value=0)),
        ("proto port", at("resourcePerInstance", "ports", "__proto__", value=1)),
        ("ports as a list", at("resourcePerInstance", "ports", value=[1, 2])),
        ("missing docker image", at("dockerImage", value="nope")),
        ("docker image names data", at("dockerImage", value="toString")),
        ("missing script", at("script", value="nope")),
        ("script prototype name", at("script", value="constructor")),
        ("missing data", at("data", value="nope")),
        ("missing prerequisite", at("prerequisites", value=["nope"])),
        ("wrong type", at("instances", value="two")),
        ("placeholder in a field never rendered", at("extraContainerOptions", "infiniband", value="<% $parameters.x %>")),
        ("unknown parameter", command("echo <% $parameters.nope_nope %>")),
        ("unknown parameter first", command("echo <% $parameters.nope_nope %>", where=0)),
        ("unknown secret", command("echo <% $secrets.nope %>")),
        ("no script", command("echo <% $script.uri %>")),
        ("no data", command("echo <% $data.uri[0] %>")),
        ("root without dollar", command("echo <% parameters.x %>")),
        ("section", command("<%# $parameters.x %>run<%/ $parameters.x %>")),
        ("unclosed tag", command("echo <% $parameters.x")),
        ("unclosed section across commands", command("<%# $parameters.x %>")),
        ("prototype lookup", command("echo <% $parameters.constructor.name %>")),
        ("throwing lookup", command("echo <% $parameters.toString.caller %>")),
        ("missing, then deeper", command("echo <% $parameters.nope.deeper %>")),
        ("a mapping's prototype member", command("echo <% $parameters.hasOwnProperty %>")),
        ("a number's member", command("echo <% $parameters.epochs.toFixed %>")),
        ("a text's length", command("echo <% $script.uri.length %>")),
        ("an index past the end", command("echo <% $data.uri[7] %>")),
        ("a mapping printed", command("echo <% $script %>")),
        ("only a prototype name", at("commands", value=["toString"])),
        ("names collide", copy_as(name.upper() + "!")),
        ("deployment with a bad tag", deployment("preCommands", "echo <% $parameters.nope %>")),
        ("default deployment with a bad tag", chosen("echo <% $data.nope %>")),
        ("default deployment prototype name", chosen("valueOf")),
        ("hived settings", hived({"skuType": "K80"})),
        ("hived both", hived({"skuType": "K80", "pinnedCellId": "c"})),
        ("plugin tag for this role", plugin("<% $script.nope %>", [name])),
        ("plugin tag for every role", plugin("<% $parameters.nope %>", None)),
    ]


def roles_of(data) -> list[str]:
    roles = data.get("taskRoles") if isinstance(data, dict) else None
    if not isinstance(roles, dict) or not roles:
        return []
    names = list(roles)
    return list(dict.fromkeys([names[0], names[len(names) // 2], names[-1]]))


def variant_bases() -> list[tuple[str, dict]]:
    """Jobs to change: the project's valid jobs and examples, the upstream valid jobs, and a job of many task roles
    (the usual shape the selective path is for)."""
    bases = []
    for path in [*own_jobs(), *corpus_files("valid")]:
        text = text_of(path)
        data = load_fast(text) if text is not None else None
        if data is not None and fast_validator("job").is_valid(data) and roles_of(data):
            bases.append((path.name, data))
    roles = {f"role{i}": {"instances": 2, "dockerImage": "img", "script": "code",
                          "resourcePerInstance": {"cpu": 2, "memoryMB": 4096, "gpu": 1},
                          "commands": [f"python train.py --epochs <% $parameters.epochs %> --part {i}"]}
             for i in range(8)}
    bases.append(("eight roles", {"protocolVersion": 2, "name": "many", "type": "job", "parameters": {"epochs": 3},
                                  "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"},
                                                    {"name": "code", "type": "script", "uri": "https://x/c"}],
                                  "taskRoles": roles}))
    return bases


def as_text(data: dict) -> str | None:
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        return None


def test_jobs_changed_in_one_task_role_validate_as_with_every_check():
    tally = Tally()
    for label, base in variant_bases():
        for name in roles_of(base):
            for change_label, change in role_changes(base, name):
                data = copy.deepcopy(base)
                change(data)
                text = as_text(data)
                if text is not None:
                    assert_same(text, f"{label} {name} {change_label}", tally)
    # not vacuous: most changes were validated from their task role alone, and found what the checks report
    assert tally.selective >= 500, (tally.selective, tally.fell_back)
    assert tally.selective > 5 * tally.fell_back
    assert tally.commands_only >= 200, tally.commands_only
    assert tally.lookups_only >= 100, tally.lookups_only
    assert {"W201", "W202", "W203", "W207", "W211", "W212", "W401", "W402", "W403", "W405", "W407", "W408", "W409",
            "E303", "E304", "W304", "E802", "E803", "E810"} <= tally.codes, sorted(tally.codes)


def test_jobs_changed_in_two_task_roles_validate_as_with_every_check():
    """Two problems in two task roles (or two in one): both task roles' checks run, in the job's order."""
    tally = Tally()
    for label, base in variant_bases()[-12:]:
        names = roles_of(base)
        if len(names) < 2:
            continue
        changes_first = role_changes(base, names[-1])
        changes_second = role_changes(base, names[0])
        for index, (first_label, first) in enumerate(changes_first):
            for second_label, second in (changes_second[index::7] + changes_first[index + 1::11]):
                data = copy.deepcopy(base)
                first(data)
                second(data)
                text = as_text(data)
                if text is not None:
                    assert_same(text, f"{label}: {first_label} + {second_label}", tally)
    assert tally.selective >= 100, (tally.selective, tally.fell_back)


def test_the_benchmark_job_with_one_warning_is_checked_in_its_one_task_role():
    """The job validate_vs_check_jsonschema.py times: its one W401 comes from its first task role's checks alone."""
    data = variant_bases()[-1][1]
    data["taskRoles"]["role5"]["commands"] = ["python train.py --epochs <% $parameters.epoch_ %>"]
    text = as_text(data)
    assert unvouched_parts(load_fast(text), text) == (frozenset({"role5"}), True, True)
    tally = Tally()
    assert_same(text, "bench", tally)
    assert tally.selective == tally.commands_only == tally.lookups_only == 1 and tally.codes == {"W401"}
    assert [d["code"] for d in json.loads(json_report([validate_text(text, "bench")], False))["results"][0][
        "diagnostics"]] == ["W401"]
