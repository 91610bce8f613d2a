"""Semantic checks (E3xx, W2xx) on plain data, the case files (every semantic code), and the upstream corpus.

The placeholder checks (W4xx) on plain data are in tests/test_semantics_placeholders.py; `job` and `only` here
are shared with it and with tests/test_semantics_invalid_shapes.py.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from paictl.protocol.diagnostics import Anchor, Severity
from paictl.protocol.loading import decode_source, load_located
from paictl.protocol.semantics import check_semantics

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
CASES = Path(__file__).resolve().parent / "cases" / "semantic"

BASE = {
    "protocolVersion": 2,
    "name": "clean",
    "type": "job",
    "parameters": {"lr": 0.01, "nested": {"items": ["a", "b"]}},
    "secrets": {"token": "t0k"},
    "prerequisites": [
        {"name": "image", "type": "dockerimage", "uri": "python:3.11",
         "auth": {"username": "me", "password": "<% $secrets.token %>"}},
        {"name": "code", "type": "script", "uri": "https://example.com/code.git", "version": "v1"},
        {"name": "dataset", "type": "data", "uri": ["https://example.com/data.tgz"]},
        {"name": "results", "type": "output", "uri": "/mnt/out"},
    ],
    "taskRoles": {
        "worker": {
            "instances": 2,
            "completion": {"minFailedInstances": 1, "minSucceededInstances": None},
            "dockerImage": "image",
            "script": "code",
            "data": "dataset",
            "output": "results",
            "extraContainerOptions": {"shmMB": 1024, "infiniband": True},
            "resourcePerInstance": {"cpu": 1, "memoryMB": 1024, "gpu": 0, "ports": {"tb": 1}},
            "commands": [
                "git clone <% $script.uri %> && git checkout <% $script.version %>",
                "wget <% $data.uri[0] %> && echo <% $parameters.nested.items[1] %>",
                "python train.py --lr <%$parameters.lr%> --out <% $output.uri %> --token <% $secrets.token %>",
            ],
        },
    },
    "deployments": [{"name": "prod", "taskRoles": {"worker": {"preCommands": ["echo <% $data.name %>"]}}}],
    "defaults": {"deployment": "prod", "virtualCluster": "default"},
    "extras": {
        "gangAllocation": True,
        "com.microsoft.pai.runtimeplugin": [
            {"plugin": "ssh", "parameters": {"jobssh": True, "userssh": {"type": "custom",
                                                                            "value": "<% $secrets.token %>"}}},
        ],
        "hivedScheduler": {"note": "<% not rendered, not ours %>"},
    },
    "description": "use <% $parameters.lr %> to set the rate",
}


def job(**changes):
    """A deep copy of BASE with `changes` applied; keys are paths split on '__', and a value of ... deletes."""
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = data
        for token in parents:
            node = node[int(token)] if isinstance(node, list) else node[token]
        if value is ...:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return data


def only(findings, code):
    matching = [f for f in findings if f.code == code]
    assert matching, f"{code} not emitted; got {[(f.code, f.pointer, f.message) for f in findings]}"
    return matching


# ----------------------------------------------------------------------------------------------------------------
# semantics: a clean job, then one test per code

def test_clean_job_has_no_findings():
    assert check_semantics(job()) == []


def test_minimal_job_has_no_findings():
    minimal = {"protocolVersion": 2, "name": "m", "type": "job",
               "prerequisites": [{"name": "i", "type": "dockerimage", "uri": "x"}],
               "taskRoles": {"w": {"dockerImage": "i", "resourcePerInstance": {"cpu": 1, "memoryMB": 1, "gpu": 0},
                                   "commands": ["echo hi"]}}}
    assert check_semantics(minimal) == []


def test_every_finding_has_the_severity_of_its_code():
    data = job(prerequisites__1__name="image", taskRoles__worker__taskRetryCount=2)
    data["prerequisites"][1]["type"] = "dockerimage"
    findings = check_semantics(data)
    assert {f.code for f in findings} >= {"E301", "E304", "W405"}
    assert all(f.severity is (Severity.ERROR if f.code[0] == "E" else Severity.WARNING) for f in findings)


def test_e301_duplicate_prerequisite_points_at_the_second_name():
    data = job()
    data["prerequisites"].append({"name": "code", "type": "script", "uri": "other"})
    [f] = only(check_semantics(data), "E301")
    assert f.pointer == "/prerequisites/4/name" and f.anchor is Anchor.VALUE
    assert "script prerequisite 'code'" in f.message and "/prerequisites/1" in f.message


def test_e301_same_name_different_type_is_allowed():
    data = job()
    data["prerequisites"].append({"name": "code", "type": "data", "uri": ["x"]})
    assert check_semantics(data) == []


def test_e302_duplicate_deployment():
    data = job()
    data["deployments"].append(copy.deepcopy(data["deployments"][0]))
    [f] = only(check_semantics(data), "E302")
    assert f.pointer == "/deployments/1/name" and "'prod'" in f.message


def test_no_e301_or_e302_for_two_of_the_name_proto_and_the_last_is_used():
    """Upstream regroups with `prerequisites[type][name] = item` after a `hasOwnProperty` check: for `__proto__`
    that sets the object's prototype, so the second is no duplicate (the job runs) and a lookup finds the last."""
    from paictl.compiler.render import render_entrypoint
    from paictl.protocol.model import job_from_data

    data = job(taskRoles__worker__script="__proto__", defaults__deployment="__proto__")
    data["prerequisites"] += [{"name": "__proto__", "type": "script", "uri": "first"},
                              {"name": "__proto__", "type": "script", "uri": "second", "version": "v2"}]
    data["deployments"] = [{"name": "__proto__", "taskRoles": {"worker": {"preCommands": ["echo one"]}}},
                           {"name": "__proto__", "taskRoles": {"worker": {"preCommands": ["echo two"]}}}]
    assert [f.code for f in check_semantics(data) if f.code in ("E301", "E302")] == []
    entrypoint = render_entrypoint(job_from_data(data), "worker")
    assert entrypoint.startswith("echo two\ngit clone second && git checkout v2\n")
    # only the last one's commands are rendered upstream, so only they must parse
    from paictl.protocol.validate import validate_text

    text = Path(__file__).parent.joinpath("cases", "semantic", "E302-duplicate-deployment.yaml").read_text()
    assert not validate_text(text, "job.yaml").ok
    text = text.replace("- pip install -r requirements.txt", "- '<% #unclosed %>'")  # the first one's
    proto = text.replace("name: prod", "name: __proto__").replace("deployment: prod", "deployment: __proto__")
    assert proto.count("__proto__") == 3 and validate_text(proto, "job.yaml").ok


def test_e303_unknown_role_prerequisite_with_suggestion():
    [f] = only(check_semantics(job(taskRoles__worker__prerequisites=["code", "datset"])), "E303")
    assert f.pointer == "/taskRoles/worker/prerequisites/1"
    assert "'datset'" in f.message and "did you mean 'dataset'" in f.hint


@pytest.mark.parametrize("field, kind", [("dockerImage", "dockerimage"), ("script", "script"),
                                         ("output", "output"), ("data", "data")])
def test_e304_each_field_needs_a_prerequisite_of_its_type(field, kind):
    [f] = only(check_semantics(job(**{f"taskRoles__worker__{field}": "nothing"})), "E304")
    assert f.pointer == f"/taskRoles/worker/{field}"
    assert f.message == f"{field} 'nothing' names no prerequisite of type {kind}"


def test_e304_hint_names_the_other_type_and_suggests():
    [f] = only(check_semantics(job(taskRoles__worker__dockerImage="dataset")), "E304")
    assert "'dataset' is a prerequisite of type data" in f.hint
    [f] = only(check_semantics(job(taskRoles__worker__dockerImage="imag")), "E304")
    assert "did you mean 'image'" in f.hint


def test_e304_does_not_cascade_into_w403():
    findings = check_semantics(job(taskRoles__worker__script="nothing"))
    assert [f.code for f in findings] == ["E304"]


def test_e305_unknown_default_deployment():
    [f] = only(check_semantics(job(defaults__deployment="prd")), "E305")
    assert f.pointer == "/defaults/deployment" and "'prd'" in f.message and "'prod'" in f.hint


def test_e305_without_deployments():
    [f] = only(check_semantics(job(deployments=..., defaults__deployment="prod")), "E305")
    assert "no deployments" in f.hint


def test_w201_unknown_container_option_points_at_the_key():
    [f] = only(check_semantics(job(taskRoles__worker__extraContainerOptions={"shm": 1, "shmMB": 1})), "W201")
    assert f.pointer == "/taskRoles/worker/extraContainerOptions/shm" and f.anchor is Anchor.KEY
    assert "did you mean 'shmMB'" in f.hint


@pytest.mark.parametrize("gang, fragment", [(True, "ignores it"), (False, "without limit")])
def test_w202_negative_task_retry(gang, fragment):
    [f] = only(check_semantics(job(taskRoles__worker__taskRetryCount=-1, extras__gangAllocation=gang)), "W202")
    assert f.pointer == "/taskRoles/worker/taskRetryCount" and fragment in f.message
    assert "W405" not in {g.code for g in check_semantics(job(taskRoles__worker__taskRetryCount=-1))}


@pytest.mark.parametrize("value, fragment", [(0, "treats as unset"), (-2, "requires -1 or more")])
@pytest.mark.parametrize("key", ["minFailedInstances", "minSucceededInstances"])
def test_w203_completion_zero_or_below_minus_one(key, value, fragment):
    [f] = only(check_semantics(job(**{f"taskRoles__worker__completion__{key}": value})), "W203")
    assert f.pointer == f"/taskRoles/worker/completion/{key}" and fragment in f.message


@pytest.mark.parametrize("value", [None, -1, 1, 2])
def test_w203_not_for_valid_counts(value):
    assert check_semantics(job(taskRoles__worker__completion__minFailedInstances=value)) == []


def test_w204_unknown_defaults_key():
    [f] = only(check_semantics(job(defaults__virtualcluster="vc")), "W204")
    assert f.pointer == "/defaults/virtualcluster" and f.anchor is Anchor.KEY
    assert "did you mean 'virtualCluster'" in f.hint


def test_w205_unknown_deployment_key():
    [f] = only(check_semantics(job(deployments__0__taskrole="worker")), "W205")
    assert f.pointer == "/deployments/0/taskrole" and f.anchor is Anchor.KEY and "'prod'" in f.message


@pytest.mark.parametrize("value, kind", [([{"name": "w"}], "a list"), ("worker", "a string"), (None, "null")])
def test_w206_task_roles_not_a_mapping(value, kind):
    findings = check_semantics(job(taskRoles=value))
    [f] = only(findings, "W206")
    assert f.pointer == "/taskRoles" and kind in f.message
    assert "W406" not in {g.code for g in findings}


def test_w206_deployment_task_roles_not_a_mapping():
    findings = check_semantics(job(deployments__0__taskRoles=None))
    [f] = only(findings, "W206")
    assert f.pointer == "/deployments/0/taskRoles" and "deployment 'prod'" in f.message
    assert [g.code for g in findings] == ["W206"]


def test_odd_plugin_lists_do_not_break_the_checks():
    plugins = [None, "ssh", {"plugin": "ssh"}, {"plugin": "x", "taskroles": ["nobody"],
                                                "parameters": {"a": "<% $data.uri[0] %>"}}]
    [f] = only(check_semantics(job(**{"extras__com.microsoft.pai.runtimeplugin": plugins})), "W403")
    assert "no task role runs this plugin" in f.message
    assert check_semantics(job(**{"extras__com.microsoft.pai.runtimeplugin": {"not": "a list"}})) == []


@pytest.mark.parametrize("path, pointer", [
    ("taskRoles__worker__resourcePerInstance__cpu", "/taskRoles/worker/resourcePerInstance/cpu"),
    ("taskRoles__worker__resourcePerInstance__memoryMB", "/taskRoles/worker/resourcePerInstance/memoryMB"),
    ("taskRoles__worker__resourcePerInstance__gpu", "/taskRoles/worker/resourcePerInstance/gpu"),
])
def test_w207_negative_resources(path, pointer):
    [f] = only(check_semantics(job(**{path: -1})), "W207")
    assert f.pointer == pointer and "-1" in f.message


def test_w207_port_count_below_one():
    [f] = only(check_semantics(job(taskRoles__worker__resourcePerInstance__ports={"tb": 0})), "W207")
    assert f.pointer == "/taskRoles/worker/resourcePerInstance/ports/tb" and "'tb'" in f.message


def test_all_findings_in_document_order():
    data = job(defaults__deployment="nope", taskRoles__worker__taskRetryCount=-3)
    data["prerequisites"].append(copy.deepcopy(data["prerequisites"][0]))
    data["taskRoles"]["worker"]["prerequisites"] = ["ghost"]
    codes = [f.code for f in check_semantics(data)]
    assert codes == ["E301", "W202", "E303", "E305"]


# ----------------------------------------------------------------------------------------------------------------
# case files and the upstream corpus

CASE_FILES = sorted(CASES.glob("*.yaml"))


def _load(path: Path) -> dict:
    return load_located(decode_source(path.read_bytes(), path.name), path.name).data


@pytest.mark.parametrize("case", CASE_FILES, ids=lambda p: p.stem)
def test_case_file_triggers_exactly_its_code(case):
    expected = case.stem.split("-")[0]
    assert {f.code for f in check_semantics(_load(case), text=case.read_text(encoding="utf-8"))} == {expected}


def test_every_semantic_code_has_a_case_file():
    from paictl.protocol.codes import CODES

    # E306/E307 are W306/W307 raised to errors by a HiveD profile (compile); the case files show the warnings.
    semantic = {c for c in CODES if c[:2] in ("E3", "W2", "W4", "W3")} - {"E306", "E307"}
    assert {p.stem.split("-")[0] for p in CASE_FILES} == semantic


VALID = sorted((CORPUS / "openpai" / "valid").glob("*.y*ml")) if (CORPUS / "openpai" / "valid").is_dir() else []


@pytest.mark.skipif(not VALID, reason="../shared/corpus/openpai/valid is not beside this checkout")
def test_upstream_accepted_jobs_have_no_semantic_errors():
    for path in VALID:
        findings = check_semantics(_load(path))
        errors = [f for f in findings if f.severity is Severity.ERROR]
        assert not errors, f"{path.name}: {errors}"
        # The only warnings on the corpus are two real W407s (hived examples copied with instances lowered).
        assert {f.code for f in findings} <= {"W407"}, f"{path.name}: {findings}"
