"""The placeholder checks of the semantic phase (W401-W409, protocol/placeholders.py) on plain data, and the
validate path that skips the placeholder walk for texts without tags.

Apart from tests/test_semantics.py because the placeholder walk is its own module with its own concerns (what each
`<% %>` tag resolves to in the rendered views, where OpenPAI never renders, tags split across commands); the jobs
are built from the same base job (`job`).
"""

from __future__ import annotations

import copy

import pytest

from paictl.protocol.diagnostics import Anchor
from paictl.protocol.semantics import check_semantics
from test_semantics import job, only


def test_w401_unresolved_parameter_in_a_command():
    data = job()
    data["taskRoles"]["worker"]["commands"][2] = "python train.py --lr <% $parameters.lrate %>"
    [f] = only(check_semantics(data), "W401")
    assert f.pointer == "/taskRoles/worker/commands/2"
    assert "'<% $parameters.lrate %>'" in f.message and "has no key 'lrate'" in f.message
    assert "runtime blanks it" in f.message  # the job has secrets


def test_w401_explains_lists_scalars_and_nulls():
    data = job(parameters={"items": ["a"], "s": "x", "n": None})
    data["taskRoles"]["worker"]["commands"] = [
        "<% $parameters.items[3] %> <% $parameters.s.x %> <% $parameters.n %>"]
    messages = [f.message for f in only(check_semantics(data), "W401")]
    assert any("has 1 item, no index '3'" in m for m in messages)
    assert any("$parameters.s is a string, not a mapping" in m for m in messages)
    assert any("$parameters.n is null" in m for m in messages)


def test_w401_parameter_in_auth_is_never_rendered():
    [f] = only(check_semantics(job(prerequisites__0__auth={"password": "<% $parameters.lr %>"})), "W401")
    assert f.pointer == "/prerequisites/0/auth/password" and "$secrets only" in f.message


def test_w401_in_the_chosen_and_the_other_deployments():
    data = job()
    data["deployments"].append({"name": "dev", "taskRoles": {"worker": {
        "preCommands": ["ok"], "postCommands": ["echo <% $parameters.gone %>"]}}})
    [f] = only(check_semantics(data), "W401")
    assert f.pointer == "/deployments/1/taskRoles/worker/postCommands/0"


def test_w402_missing_secret_in_command_auth_and_plugin():
    data = job(secrets={"other": "x"})
    pointers = {f.pointer: f.message for f in only(check_semantics(data), "W402")}
    assert set(pointers) == {"/prerequisites/0/auth/password", "/taskRoles/worker/commands/2",
                             "/extras/com.microsoft.pai.runtimeplugin/0/parameters/userssh/value"}
    assert "empty string" in pointers["/taskRoles/worker/commands/2"]
    assert "KeyError" in pointers["/extras/com.microsoft.pai.runtimeplugin/0/parameters/userssh/value"]


def test_w402_job_without_secrets():
    findings = only(check_semantics(job(secrets=...)), "W402")
    assert all("the job has no secrets" in f.message for f in findings) and len(findings) == 3


def test_w403_role_without_the_field_or_prerequisite_without_the_key():
    findings = only(check_semantics(job(taskRoles__worker__script=...)), "W403")
    assert [f.pointer for f in findings] == ["/taskRoles/worker/commands/0"] * 2
    assert all("task role 'worker' sets no script" in f.message for f in findings)
    data = job()
    data["taskRoles"]["worker"]["commands"] = ["echo <% $output.version %>"]
    [f] = only(check_semantics(data), "W403")
    assert "$output (prerequisite 'results') has no key 'version'" in f.message


def test_w403_plugin_prerequisite_resolves_per_using_role():
    data = job()
    data["prerequisites"].append({"name": "hook", "type": "script", "plugin": "com.microsoft.pai.runtimeplugin.cmd",
                                  "callbacks": [{"event": "taskStarts", "commands": ["echo <% $data.urls %>"]}]})
    data["taskRoles"]["worker"]["prerequisites"] = ["hook"]
    [f] = only(check_semantics(data), "W403")
    assert f.pointer == "/prerequisites/4/callbacks/0/commands/0" and "'urls'" in f.message


def test_w404_converted_names_collide():
    data = job()
    data["taskRoles"]["Work_er"] = copy.deepcopy(data["taskRoles"]["worker"])
    [f] = only(check_semantics(data), "W404")
    assert f.pointer == "/taskRoles/Work_er" and f.anchor is Anchor.KEY
    assert "task roles 'worker' and 'Work_er' both become 'worker'" in f.message


def test_w405_task_retry_ignored_under_gang_allocation():
    [f] = only(check_semantics(job(taskRoles__worker__taskRetryCount=3)), "W405")
    assert f.pointer == "/taskRoles/worker/taskRetryCount" and "gangAllocation: false" in f.hint
    assert check_semantics(job(taskRoles__worker__taskRetryCount=3, extras__gangAllocation=False)) == []
    assert check_semantics(job(taskRoles__worker__taskRetryCount=0)) == []
    assert only(check_semantics(job(taskRoles__worker__taskRetryCount=3, extras__gangAllocation=...)), "W405")


def test_w406_deployment_names_unknown_role():
    data = job()
    data["deployments"][0]["taskRoles"]["wrker"] = {"preCommands": ["echo"]}
    [f] = only(check_semantics(data), "W406")
    assert f.pointer == "/deployments/0/taskRoles/wrker" and f.anchor is Anchor.KEY
    assert "did you mean 'worker'" in f.hint


@pytest.mark.parametrize("key, fragment", [("minFailedInstances", "never fail the job"),
                                           ("minSucceededInstances", "all its tasks")])
def test_w407_completion_above_instances(key, fragment):
    [f] = only(check_semantics(job(**{f"taskRoles__worker__completion__{key}": 3})), "W407")
    assert f.pointer == f"/taskRoles/worker/completion/{key}" and fragment in f.message
    data = job(**{f"taskRoles__worker__completion__{key}": 2, "taskRoles__worker__instances": ...})
    [f] = only(check_semantics(data), "W407")
    assert "only 1 instance," in f.message


@pytest.mark.parametrize("path, pointer", [
    ("defaults__virtualCluster", "/defaults/virtualCluster"),
    ("prerequisites__1__uri", "/prerequisites/1/uri"),
    ("prerequisites__0__uri", "/prerequisites/0/uri"),
    ("taskRoles__worker__extraContainerOptions__note", "/taskRoles/worker/extraContainerOptions/note"),
    ("deployments__0__contributor", "/deployments/0/contributor"),
    ("contributor", "/contributor"),
])
def test_w408_placeholder_in_a_field_never_rendered(path, pointer):
    findings = check_semantics(job(**{path: "<% $parameters.lr %>"}))
    [f] = only(findings, "W408")
    assert f.pointer == pointer and "'<% $parameters.lr %>'" in f.message
    assert {g.code for g in findings} <= {"W408", "W201"}


def test_w408_skips_free_form_fields():
    data = job(parameters={"x": "<% $parameters.y %>"}, secrets={"t": "<% x %>"})
    data["prerequisites"][1]["description"] = "<% whatever %>"
    data["extras"]["storages"] = [{"name": "<% $parameters.lr %>"}]
    assert not [f for f in check_semantics(data) if f.code in ("W408", "W409")]


def test_w408_plugin_keys_other_than_parameters():
    [f] = only(check_semantics(job(**{"extras__com.microsoft.pai.runtimeplugin__0__failurePolicy": "<% x %>"})),
               "W408")
    assert f.pointer == "/extras/com.microsoft.pai.runtimeplugin/0/failurePolicy"


@pytest.mark.parametrize("command, fragment", [
    ("echo <% parameters.lr %>", "names 'parameters'"),
    ("echo <%# $parameters.lr %>x<%/ $parameters.lr %>", "section tag"),
    ("echo <%^ $parameters.lr %>x<%/ $parameters.lr %>", "inverted section tag"),
    ("echo <%& $parameters.lr %>", "unescaped tag"),
    ("echo <%! note %>", "comment tag"),
    ("echo <%> part %>", "partial tag"),
    ("echo <%= [[ ]] =%>", "delimiter change"),
    ("echo <% $parameters.lr", "fails on this text: unclosed tag"),
    ("echo <% <% $parameters.lr %>", "holds another '<%'"),
])
def test_w409_tags_openpai_drops_or_leaves(command, fragment):
    data = job()
    data["taskRoles"]["worker"]["commands"][2] = command
    findings = check_semantics(data)
    [f] = only(findings, "W409")
    assert f.pointer == "/taskRoles/worker/commands/2" and fragment in f.message
    assert {g.code for g in findings} == {"W409"}


def test_w409_suggests_the_dollar_name():
    data = job()
    data["taskRoles"]["worker"]["commands"] = ["<% $Secrets.token %>"]
    [f] = only(check_semantics(data), "W409")
    assert "did you mean '$secrets'" in f.hint


def test_unclosed_tag_runs_into_the_next_command():
    data = job()
    data["taskRoles"]["worker"]["commands"][1] = "echo <% $parameters.lr"
    [f] = only(check_semantics(data), "W409")
    assert f.pointer == "/taskRoles/worker/commands/1" and "holds another '<%'" in f.message
    assert len(f.message) < 250


def test_tag_split_across_commands_points_at_its_start():
    data = job()
    data["taskRoles"]["worker"]["commands"] = ["echo <% $parameters.nope", "%> done"]
    [f] = only(check_semantics(data), "W401")
    assert f.pointer == "/taskRoles/worker/commands/0"


def test_a_tag_made_by_a_double_quoted_escape_is_still_checked():
    """validate skips the placeholder walk when the text has no `<%` and no backslash; an escape can make one."""
    from paictl.protocol.validate import validate_text

    job = ("protocolVersion: 2\nname: a\ntype: job\nprerequisites: [{name: i, type: dockerimage, uri: u}]\n"
           "taskRoles:\n  a:\n    dockerImage: i\n    resourcePerInstance: {cpu: 1, memoryMB: 1, gpu: 0}\n"
           "    commands: [\"echo \\x3c% $parameters.nope %>\"]\n")
    assert [d.code for d in validate_text(job, "x").diagnostics] == ["W401"]
    folded = job.replace('"echo \\x3c% $parameters.nope %>"', '"echo <\\\n      % $parameters.nope %>"')
    assert "<%" not in folded
    assert [d.code for d in validate_text(folded, "x").diagnostics] == ["W401"]


def test_skipping_the_placeholder_walk_changes_no_verdict():
    """Every local case and example: the semantic findings with the walk skipped (no `<%`, no backslash in the
    text) are the full check's."""
    from conftest import ROOT

    from paictl.protocol.loading import DocumentError, decode_source, load_located
    from paictl.protocol.semantics import check_semantics

    checked = 0
    for path in sorted((ROOT / "tests" / "cases").rglob("*.yaml")) + sorted((ROOT / "examples").rglob("*.yaml")):
        try:
            text = decode_source(path.read_bytes(), str(path))
            data = load_located(text, str(path)).data
        except DocumentError:
            continue
        if "<%" not in text and "\\" not in text:
            assert check_semantics(data, tags=False) == check_semantics(data), path
            checked += 1
    assert checked >= 10
