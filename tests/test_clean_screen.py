"""validate's one-walk screen (protocol/clean_screen.py) against the checks it stands in for.

The screen lets a job skip check_semantics and compile_findings when it can vouch that both come back empty. It
may say "not sure" (False) for a clean job; it must never say True for a job either check reports anything in. So
wherever it says True, the checks are run here and must find nothing: over the corpus, and over generated jobs that
put the values each check looks at (bounds, names, placeholders, odd shapes) where it looks. And the validate path
that uses it must give every corpus file exactly the diagnostics of the located path, the authority.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import corpus_files, every_corpus_job
from paictl.protocol.clean_screen import surely_clean
from paictl.protocol.compile_checks import compile_findings
from paictl.protocol.loading import load_fast
from paictl.protocol.semantics import check_semantics
from paictl.protocol.validate import validate_located, validate_text
from paictl.schemas import fast_validator


def findings_of(data, text):
    return [f.code for f in check_semantics(data, text=text)] + [f.code for f in compile_findings(data)]


def assert_screen_holds(text: str) -> bool:
    """The screen's verdict on `text` (None if the fast path does not read it), checked against the checks."""
    data = load_fast(text)
    if data is None:
        return False
    clean = surely_clean(data, text)
    if clean:
        assert findings_of(data, text) == [], f"screened clean, but the checks report {findings_of(data, text)}:\n{text}"
    return clean


def test_the_corpus_screened_clean_is_clean_and_validates_as_the_located_path_does():
    files = every_corpus_job()
    screened = 0
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        screened += assert_screen_holds(text)
        fast, located = validate_text(text, path.name), validate_located(text, path.name)
        assert fast.diagnostics == located.diagnostics, path.name
    # not vacuous: most of the upstream jobs are vouched for (the rest go through the checks)
    assert screened >= len(corpus_files("valid")) * 3 // 4


def base_job() -> dict:
    return {
        "protocolVersion": 2, "name": "job", "type": "job",
        "parameters": {"epochs": 3, "lr": "0.1", "nested": {"a": 1}, "empty": "", "none": None, "items": [1, "b"],
                       "flag": False, "__proto__": "p", "printed": {"toString": 1}},
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"},
                          {"name": "code", "type": "script", "uri": "https://x/code"},
                          {"name": "set", "type": "data", "uri": ["/data/a", "/data/b"]}],
        "taskRoles": {"worker": {"instances": 2, "dockerImage": "img", "script": "code", "data": "set",
                                 "resourcePerInstance": {"cpu": 1, "memoryMB": 1024, "gpu": 0},
                                 "commands": ["python train.py"]}},
    }


#: Values each check looks for (bounds, wrong shapes, names of JavaScript built-ins) and plain ones.
VALUE_POOL = [-3, -2, -1, 0, 1, 2, 3, 10_000, 10_001, 2 ** 31 - 1, 2 ** 31, 2 ** 62, 0.5, 2.5, None, True, False, "",
              "x", " x", "x ", "toString", "prod", "crit", "K80", "a-b", "a" * 64, "a.b:c", [], {}, [1], ["x"],
              {"a": 1}, {"worker": {"skuType": "K80"}}, {"worker": {"skuType": "K80", "pinnedCellId": "c"}},
              {"worker": 1}, [{"name": "s"}], [{"name": "s"}, {"name": "s"}], [None], [{"name": ""}], ["s"],
              [{"name": "s", "mountPath": 1}], [{"plugin": "ssh", "parameters": {"jobssh": True}}],
              [{"plugin": "ssh", "parameters": "jobssh"}], [{"plugin": "ssh", "parameters": 1}], [{"plugin": 1}],
              [{"plugin": "teamwise_storage", "parameters": {"storageConfigNames": ["a"]}}],
              [{"plugin": "teamwise_storage", "parameters": None}], [1], "ssh",
              [{"name": "d", "taskRoles": {"worker": {"preCommands": ["x"]}}}],
              *([{"plugin": "cmd", "taskroles": users, "parameters": {"preCommands": [f"echo {tag}"], "x": {"y": tag}}}]
                for tag in ("<% $parameters.epochs %>", "<% $parameters.nope %>", "<% $secrets.key %>",
                            "<% $script.uri %>", "<% $output.uri %>", "<% $data.uri[0] %>", "<%# x %><%/ x %>")
                for users in (None, ["worker"], ["nope"], []))]
VALUES = st.sampled_from(VALUE_POOL)
NAMES = st.sampled_from(["img", "code", "set", "nope", "toString", "constructor", "", "Img"])
TAGS = st.sampled_from([
    "<% $parameters.epochs %>", "<%$parameters.lr%>", "<% $parameters.nope %>", "<% $parameters.nested.a %>",
    "<% $parameters.nested %>", "<% $parameters.nested.b %>", "<% $parameters.empty %>", "<% $parameters.none %>",
    "<% $parameters.items[0] %>", "<% $parameters.items.1 %>", "<% $parameters.items[2] %>", "<% $parameters.flag %>",
    "<% $parameters.items[01] %>", "<% $parameters.epochs.length %>", "<% $parameters.__proto__ %>",
    "<% $parameters.constructor %>", "<% $parameters %>", "<% $parameters.printed %>", "<% $data.uri[0] %>", "<% $data.uri[2] %>",
    "<% $data.name %>", "<% $script.uri %>", "<% $script.nope %>", "<% $output.uri %>", "<% $secrets.key %>",
    "<% $secrets.nope %>", "<% parameters.epochs %>", "<%# $parameters.epochs %><%/ $parameters.epochs %>",
    "<%& $parameters.epochs %>", "<%! note %>", "<% $parameters.epochs", "%> <% $parameters.lr %>",
    "<%\t$parameters.epochs %>", "<% $parameters.epochs %%>", "<%= <% %> =%>", "<<% $parameters.lr %>",
])
COMMANDS = st.lists(st.one_of(st.sampled_from(["python train.py", "toString", " valueOf ", "", "echo \\"]),
                              st.builds(lambda a, b: f"echo {a} {b}", TAGS, TAGS)), min_size=0, max_size=3)
PLACES = st.sampled_from([
    ("jobRetryCount",), ("taskRoles", "worker", "taskRetryCount"), ("taskRoles", "worker", "instances"),
    ("taskRoles", "worker", "completion", "minFailedInstances"),
    ("taskRoles", "worker", "completion", "minSucceededInstances"),
    ("taskRoles", "worker", "resourcePerInstance", "cpu"), ("taskRoles", "worker", "resourcePerInstance", "gpu"),
    ("taskRoles", "worker", "resourcePerInstance", "memoryMB"),
    ("taskRoles", "worker", "resourcePerInstance", "ports", "http"),
    ("taskRoles", "worker", "resourcePerInstance", "ports", "__proto__"),
    ("taskRoles", "worker", "resourcePerInstance", "ports"),
    ("taskRoles", "worker", "extraContainerOptions", "shmMB"),
    ("taskRoles", "worker", "extraContainerOptions", "infiniband"),
    ("taskRoles", "worker", "extraContainerOptions", "shm"),
    ("taskRoles", "worker", "completion"), ("taskRoles", "worker", "prerequisites"),
    ("taskRoles", "worker", "description"), ("taskRoles", "Worker!"), ("taskRoles", "other"),
    ("defaults",), ("defaults", "virtualCluster"), ("defaults", "deployment"), ("defaults", "other"),
    ("extras", "gangAllocation"), ("extras", "hivedScheduler"), ("extras", "hivedScheduler", "jobPriorityClass"),
    ("extras", "hivedScheduler", "taskRoles"),
    ("extras", "hivedScheduler", "taskRoles", "worker", "skuType"),
    ("extras", "hivedScheduler", "taskRoles", "nope", "skuType"), ("extras", "storages"),
    ("extras", "com.microsoft.pai.runtimeplugin"), ("extras", "other"), ("secrets",), ("secrets", "key"),
    ("parameters", "epochs"), ("parameters", "nested"), ("prerequisites", 0, "uri"), ("prerequisites", 0, "auth"),
    ("prerequisites", 0, "auth", "password"), ("prerequisites", 1, "name"), ("prerequisites", 2, "type"),
    ("prerequisites", 3), ("deployments",), ("version",), ("contributor",), ("description",),
])
NAME_FIELDS = st.sampled_from([("dockerImage",), ("script",), ("data",), ("output",)])


def put(data: dict, place: tuple, value) -> None:
    node = data
    for key in place[:-1]:
        if isinstance(node, list):
            if not isinstance(key, int) or key >= len(node):
                return
            node = node[key]
            continue
        if not isinstance(node, dict):
            return
        node = node.setdefault(key, {}) if not isinstance(node.get(key), (dict, list)) else node[key]
    if isinstance(node, dict):
        node[place[-1]] = value
    elif isinstance(node, list) and isinstance(place[-1], int):
        if place[-1] < len(node):
            node[place[-1]] = value
        else:
            node.append(value)


def test_every_single_change_screened_clean_has_no_finding():
    """Each value of the pool at each place, alone: most checks look at one value."""
    clean = 0
    for place in PLACES.elements:
        for value in [*VALUE_POOL, *TAGS.elements]:
            data = base_job()
            put(data, place, value)
            clean += assert_screen_holds(yaml.safe_dump(data, sort_keys=False))
    for field in ("dockerImage", "script", "data", "output"):
        for name in NAMES.elements:
            data = base_job()
            data["taskRoles"]["worker"][field] = name
            clean += assert_screen_holds(yaml.safe_dump(data, sort_keys=False))
    for tag in TAGS.elements:
        for command in (f"run {tag}", tag, f"{tag} {tag}", f"<% $parameters.epochs %> {tag}"):
            data = base_job()
            data["taskRoles"]["worker"]["commands"] = ["cd /", command]
            for secrets in (None, {"key": "s"}):
                if secrets is not None:
                    data["secrets"] = secrets
                clean += assert_screen_holds(yaml.safe_dump(data, sort_keys=False))
    assert clean >= 300  # not vacuous: many of these changes leave the job clean, and are vouched for


HIVED_PLACEMENTS = [None, {"skuType": "K80"}, {"skuType": "V100"}, {"pinnedCellId": "c"}, {"skuType": "K80",
                    "pinnedCellId": "c"}, {"skuType": ""}, {"skuType": 1}, {"affinityGroupName": 1}, 1, {}]


def test_hived_settings_of_two_task_roles_screened_clean_have_no_finding():
    """Affinity groups and placements need two task roles: each pair of settings, in one group or not."""
    clean = 0
    for first in HIVED_PLACEMENTS:
        for second in HIVED_PLACEMENTS:
            for group in (None, "g"):
                data = base_job()
                data["taskRoles"]["ps"] = copy.deepcopy(data["taskRoles"]["worker"])
                settings = {}
                for name, placement in (("worker", first), ("ps", second)):
                    if placement is not None:
                        settings[name] = dict(placement, affinityGroupName=group) if isinstance(placement, dict) \
                            and group else placement
                data["extras"] = {"hivedScheduler": {"jobPriorityClass": "prod", "taskRoles": settings}}
                clean += assert_screen_holds(yaml.safe_dump(data, sort_keys=False))
    assert clean >= 20


@settings(max_examples=600, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(changes=st.lists(st.tuples(PLACES, st.one_of(VALUES, NAMES, TAGS)), max_size=2),
       names=st.lists(st.tuples(NAME_FIELDS, NAMES), max_size=2), commands=st.one_of(st.none(), COMMANDS),
       text_value=st.sampled_from(["", "# <% $parameters.epochs %>\n", "# \\x3c% x\n", "# 1234\n"]))
def test_a_generated_job_screened_clean_has_no_finding(changes, names, commands, text_value):
    data = base_job()
    for place, value in changes:
        put(data, place, value)
    for (field,), name in names:
        data["taskRoles"]["worker"][field] = name
    if commands is not None:
        data["taskRoles"]["worker"]["commands"] = commands
    text = text_value + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    assert_screen_holds(text)


@pytest.mark.parametrize("command", ["python train.py --epochs <% $parameters.epochs %> --lr <%$parameters.lr%>",
                                     "cd <% $data.uri[0] %> && <% $script.uri %> <% $parameters.nested.a %>"])
def test_the_base_job_and_plain_placeholders_are_vouched_for(command):
    """The generated jobs' starting point, and placeholders that resolve, are screened clean: the test above is
    not vacuous."""
    data = base_job()
    data["taskRoles"]["worker"]["commands"] = [command]
    text = yaml.safe_dump(data, sort_keys=False)
    assert fast_validator("job").is_valid(load_fast(text))
    assert assert_screen_holds(text)
