"""Issue 30's classes, each from cases written here: where upstream runs the job paictl accepts it and builds the
same, where upstream fails paictl refuses it in `validate` as in every target's `compile`.

Upstream's behaviour for each case rests on the facts read from upstream's code in ../shared/reference/openpai.md
(the rest-server's schema, render and Framework conversion, the runtime's reading of the job) and on the rest-server's
recorded answers (the corpus's golden bodies, the recorded submissions), which tests/openpai_oracle compares with
paictl job by job; how a text reads is js-yaml 3's (npm), compared there too.
"""

from __future__ import annotations

import json

import pytest

from paictl.compiler.render import render_entrypoint
from paictl.protocol.validate import validate_text
from paictl.targets.compiled import compile_job

#: The Mars target also needs task roles named for MarsJob's replica types (E702), which these jobs do not have.
TARGETS = ["framework", "jobset", "local", "grass", "openpai"]

BASE = """\
protocolVersion: 2
name: classes
type: job
parameters: {xs: [a, b], word: hi}
prerequisites:
  - {name: img, type: dockerimage, uri: ubuntu}
taskRoles:
  worker:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands:
COMMANDS
"""


def job(commands: list[str], extra: str = "") -> str:
    """BASE with these commands; `extra` is appended (its `parameters:` replaces BASE's)."""
    text = BASE.replace("COMMANDS\n", "".join(f"      - {json.dumps(c)}\n" for c in commands))
    if extra.startswith("parameters:"):
        text = text.replace("parameters: {xs: [a, b], word: hi}\n", "")
    return text + extra


def verdicts(text: str) -> dict[str, bool]:
    """Whether each target compiles the job, and whether validate accepts it."""
    from paictl.errors import InvalidJobError

    found = {"validate": validate_text(text, "job.yaml").ok}
    for target in TARGETS:
        try:
            compile_job(text.encode(), target=target, profile="openpai" if target == "framework" else "default",
                        name="job.yaml")
            found[target] = True
        except InvalidJobError:
            found[target] = False
    return found


# --- a mustache section opened in one command and closed in a later one ---------------------------------------------

@pytest.mark.parametrize("commands, entrypoint", [
    (["<% #$parameters.xs %>", "echo inside", "<% /$parameters.xs %>", "echo after"], "echo after"),
    (["echo a <% ^$parameters.none %>", "echo b", "<% /$parameters.none %> echo c"], "echo a  echo c"),
    (["<% !a comment", "still the comment %>", "echo <% $parameters.word %>"], "echo hi"),
])
def test_a_section_spanning_commands_is_rendered_as_one_template(commands, entrypoint):
    text = job(commands)
    assert set(verdicts(text).values()) == {True}
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    assert render_entrypoint(compiled.job, "worker") == entrypoint


def test_a_section_closed_in_the_default_deployment_post_commands_parses():
    text = job(["<% #$parameters.xs %>", "echo inside"], "defaults: {deployment: d}\ndeployments:\n  - name: d\n"
               "    taskRoles:\n      worker: {postCommands: ['<% /$parameters.xs %>', 'echo post']}\n")
    assert set(verdicts(text).values()) == {True}
    assert not any("fails" in d.message for d in validate_text(text, "job.yaml").diagnostics)


@pytest.mark.parametrize("commands", [["<% #$parameters.xs %>", "echo never closed"],
                                      ["echo a", "<% /$parameters.xs %>"], ["echo <% unclosed"]])
def test_an_unparsable_template_is_refused_by_validate_and_every_target(commands):
    text = job(commands)
    result = validate_text(text, "job.yaml")
    assert [d.code for d in result.errors] == ["E803"]
    assert not any(d.code == "W409" and "fails" in d.message for d in result.diagnostics)  # said once, as E803
    assert set(verdicts(text).values()) == {False}


def test_a_section_left_open_in_another_deployment_is_not_rendered_so_not_refused():
    text = job(["echo hi"], "deployments:\n  - name: other\n    taskRoles:\n"
               "      worker: {preCommands: ['<% #$parameters.xs %>']}\n")
    assert verdicts(text)["validate"] and verdicts(text)["framework"]


# --- an unquoted date parameter sent to an OpenPAI cluster ---------------------------------------------------------

DATED = job(["echo <% $parameters.day %> <% $parameters.at %>"],
            "parameters: {day: 2020-01-01, at: 2001-12-14 21:59:43.10 -5}\n")


def test_the_body_sent_to_openpai_keeps_an_unquoted_date_a_date():
    """js-yaml reads the body back with the same Dates, so OpenPAI renders what the framework target renders."""
    import yaml

    from paictl.targets.openpai.target import protocol_document, protocol_text

    sent = protocol_text(protocol_document(validate_text(DATED, "job.yaml").data)).decode()
    assert "day: 2020-01-01T00:00:00.000Z\n" in sent and "at: 2001-12-15T02:59:43.100Z\n" in sent
    parameters = yaml.safe_load(sent)["parameters"]  # a YAML 1.1 reader, as js-yaml: timestamps, not strings
    assert {type(v).__name__ for v in parameters.values()} == {"datetime"}


def test_the_framework_target_renders_the_date_as_javascript_prints_it():
    compiled = compile_job(DATED.encode(), target="framework", profile="openpai", name="job.yaml")
    assert render_entrypoint(compiled.job, "worker") == (
        "echo Wed Jan 01 2020 00:00:00 GMT+0000 (Coordinated Universal Time) "
        "Sat Dec 15 2001 02:59:43 GMT+0000 (Coordinated Universal Time)")


# --- every -o json output is JSON -------------------------------------------------------------------------------------

NON_FINITE = job(["echo <% $parameters.n %>"], "parameters: {n: .nan, up: .inf, down: -.inf, day: 2020-01-01}\n")


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("target", TARGETS)
def test_compile_json_has_no_nan_or_infinity(target, run_cli, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(NON_FINITE)
    code, out, err = run_cli("compile", str(path), "--target", target, "-o", "json")
    assert code == 0, err
    listed = _strict(out)
    if target == "openpai":  # the document itself: non-finite numbers are null, dates their ISO text
        assert listed["items"][0]["parameters"] == {"n": None, "up": None, "down": None,
                                                    "day": "2020-01-01T00:00:00.000Z"}


def test_strict_json_writes_what_json_stringify_writes():
    from paictl.compiler.emit import strict_json

    assert strict_json({"a": [float("nan"), float("inf"), -float("inf"), 1.5], "b": (1, 2)}) == \
        '{"a": [null, null, null, 1.5], "b": [1, 2]}'


def test_validate_json_is_strict_too(run_cli, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(NON_FINITE)
    code, out, _ = run_cli("validate", str(path), "-o", "json")
    assert _strict(out)["summary"]["files"] == 1


# --- a docker image with an empty uri -------------------------------------------------------------------------------

@pytest.mark.parametrize("uri", ["''", "' ubuntu'", "'ubuntu '"])
def test_an_image_kubernetes_refuses_is_refused_by_validate_and_every_target(uri):
    text = job(["echo hi"]).replace("uri: ubuntu}", f"uri: {uri}}}")
    result = validate_text(text, "job.yaml")
    assert [(d.code, d.line) for d in result.errors] == [("E811", 6)]
    assert set(verdicts(text).values()) == {False}


def test_an_unused_image_with_an_empty_uri_is_no_error():
    text = job(["echo hi"]).replace("taskRoles:", "  - {name: spare, type: dockerimage, uri: ''}\ntaskRoles:")
    assert set(verdicts(text).values()) == {True}


def test_an_internal_error_is_one_line(run_cli, tmp_path, monkeypatch):
    """A compiled object failing its own schema is exit 70 with one line (a newline used to show as `\\n`)."""
    from paictl.targets import output_check

    monkeypatch.setattr(output_check, "object_errors", lambda obj: [("/a", "broken"), ("/b", "broken too")])
    path = tmp_path / "job.yaml"
    path.write_text(job(["echo hi"]))
    code, out, err = run_cli("compile", str(path), "--target", "grass")
    assert code == 70 and out == "" and err.count("\n") == 1 and "\\n" not in err and "broken too" in err


# --- a value in a registry auth that is not text ------------------------------------------------------------------

def _auth(value: str) -> str:
    return job(["echo hi"]).replace("uri: ubuntu}", f"uri: ubuntu, auth: {{username: u, password: p, "
                                                    f"registryuri: r.io, extra: {value}}}}}")


@pytest.mark.parametrize("value", ["5", "1.5", "true", "[]", "[a]", "{a: 1}", "2020-01-01", "!!binary aGk=",
                                   "!!binary ''"])
def test_an_auth_value_mustache_throws_on_is_refused_by_validate_and_every_target(value):
    """mustache.js parses only text: `this.tail.search is not a function` for a truthy non-string (a Date too, and
    a !!binary value, which js-yaml makes a Node Buffer: an object, truthy even when empty)."""
    result = validate_text(_auth(value), "job.yaml")
    assert [(d.code, d.line) for d in result.errors] == [("E803", 6)]
    assert set(verdicts(_auth(value)).values()) == {False}


@pytest.mark.parametrize("value", ["null", "false", "0", "''"])
def test_a_falsy_auth_value_renders_empty_and_is_accepted(value):
    assert set(verdicts(_auth(value)).values()) == {True}


# --- ports that mean no ports ---------------------------------------------------------------------------------------

def _ports(value: str) -> str:
    return job(["echo hi"]).replace("gpu: 0}", f"gpu: 0, ports: {value}}}")


@pytest.mark.parametrize("value", ["false", "0", "''", "[]", "null"])
def test_ports_upstream_reads_as_none_build_the_framework_of_no_ports(value):
    assert set(verdicts(_ports(value)).values()) == {True}
    with_value = compile_job(_ports(value).encode(), target="framework", profile="openpai", name="job.yaml").objects
    without = compile_job(job(["echo hi"]).encode(), target="framework", profile="openpai", name="job.yaml").objects
    framework = [o for o in with_value if o["kind"] == "Framework"][0]
    plain = [o for o in without if o["kind"] == "Framework"][0]
    for f in (framework, plain):
        f["metadata"]["annotations"].pop("config")
    assert framework == plain


@pytest.mark.parametrize("value, code", [("true", "E203"), ("5", "E203"), ("abc", "E203"), ("[http]", "E210"),
                                         ("[{http: 1}]", "E210"), ("[2, true]", "E210")])
def test_ports_upstream_crashes_on_or_cannot_run_are_refused(value, code):
    assert [d.code for d in validate_text(_ports(value), "job.yaml").errors] == [code]


def test_a_list_of_port_counts_runs_as_upstream_runs_it_labels_0_1_with_a_warning():
    """Upstream's schema gives `ports` no type; the rest-server copies the list's indexes as labels into the
    port-scheduling spec and the runtime allocates each count (issue 37: E210 was a policy refusal)."""
    text = _ports("[2, 3]")
    assert set(verdicts(text).values()) == {True}
    assert [d.code for d in validate_text(text, "job.yaml").diagnostics] == ["W212"]
    objects = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml").objects
    [framework] = [o for o in objects if o["kind"] == "Framework"]
    spec = json.loads(framework["spec"]["taskRoles"][0]["task"]["pod"]["metadata"]["annotations"]
                      ["rest-server/port-scheduling-spec"])
    assert spec["ports"] == {"0": {"count": 2}, "1": {"count": 3}, "ssh": {"count": 1}, "http": {"count": 1}}


# --- secrets: {} still makes the secrets Secret ---------------------------------------------------------------------

def test_empty_secrets_make_an_empty_secrets_secret_as_upstream():
    objects = compile_job(job(["echo hi"], "secrets: {}\n").encode(), target="framework", profile="openpai",
                          name="job.yaml").objects
    [secret] = [o for o in objects if o["kind"] == "Secret"]
    import base64

    assert base64.b64decode(secret["data"]["secrets.yaml"]) == b"{}\n"


# --- HiveD: a task role without instances in an affinity group -----------------------------------------------------

def test_hived_refuses_a_group_member_without_instances(tmp_path):
    from pathlib import Path

    from paictl.errors import InvalidJobError

    profile = Path(__file__).resolve().parents[1] / "compiler" / "profiles" / "openpai.yaml"
    (tmp_path / "hived.yaml").write_text(profile.read_text().replace("  enabled: false\n", "  enabled: true\n", 1))
    text = job(["echo hi"]).replace("    instances: 1\n", "")
    compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")  # a default of 1 elsewhere
    with pytest.raises(InvalidJobError) as caught:
        compile_job(text.encode(), target="framework", profile=str(tmp_path / "hived.yaml"), name="job.yaml")
    assert [(d.code, d.line) for d in caught.value.diagnostics] == [("E609", 8)]
    no_gang = text + "extras: {gangAllocation: false}\n"  # no affinity group, nothing to count
    compile_job(no_gang.encode(), target="framework", profile=str(tmp_path / "hived.yaml"), name="job.yaml")


# --- runtime plugin parameters --------------------------------------------------------------------------------------

def _plugin(parameters: str) -> str:
    return job(["echo hi"], f"extras:\n  com.microsoft.pai.runtimeplugin:\n    - {{plugin: ssh, parameters: {parameters}}}\n")


@pytest.mark.parametrize("parameters", ["5", "true", "1.5"])
def test_plugin_parameters_the_runtime_raises_on_are_refused(parameters):
    """The plugins test `key in parameters`: a TypeError on a number or boolean, and the init container fails."""
    result = validate_text(_plugin(parameters), "job.yaml")
    assert [d.code for d in result.errors] == ["E804"] and "TypeError" in result.errors[0].message
    assert set(verdicts(_plugin(parameters)).values()) == {False}


@pytest.mark.parametrize("parameters", ["jobssh", "[jobssh]"])
def test_plugin_parameters_that_are_text_or_a_list_are_warned_and_compiled(parameters):
    result = validate_text(_plugin(parameters), "job.yaml")
    assert result.ok and [d.code for d in result.warnings] == ["W804"]
    assert set(verdicts(_plugin(parameters)).values()) == {True}


@pytest.mark.parametrize("parameters", ["null", "false", "0", "''", "[]", "{}"])
def test_plugin_parameters_read_as_none_are_fine(parameters):
    result = validate_text(_plugin(parameters), "job.yaml")
    assert not [d for d in result.diagnostics if d.code.endswith("804")]


# --- YAML js-yaml reads and libyaml refuses -------------------------------------------------------------------------

@pytest.mark.parametrize("commands, entrypoint", [
    ("      -\t|\n        echo hi\n      -\techo two\n", "echo hi\necho two"),
    ("      - \t>-\n        echo folded\n", "echo folded"),
])
def test_a_tab_after_a_block_indicator_separates_as_in_js_yaml(commands, entrypoint):
    text = BASE.replace("COMMANDS\n", commands)
    assert set(verdicts(text).values()) == {True}
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    assert render_entrypoint(compiled.job, "worker") == entrypoint


def test_a_tab_inside_a_value_is_kept_and_tab_indentation_still_refused():
    kept = job(["echo a\tb"])
    compiled = compile_job(kept.encode(), target="framework", profile="openpai", name="job.yaml")
    assert render_entrypoint(compiled.job, "worker") == "echo a\tb"
    indented = BASE.replace("COMMANDS\n", "\t- echo hi\n")
    assert [d.code for d in validate_text(indented, "job.yaml").errors] == ["E105"]


@pytest.mark.parametrize("directive, ok", [("%YAML 1.3", True), ("%YAML 1.10", True), ("%YAML 1.2", True),
                                           ("%YAML 2.0", False)])
def test_a_yaml_directive_of_another_1_x_version_is_read_as_js_yaml_reads_it(directive, ok):
    text = f"{directive}\n---\n" + job(["echo hi"])
    result = validate_text(text, "job.yaml")
    assert result.ok is ok
    if ok:
        assert set(verdicts(text).values()) == {True}


# --- resource counts Kubernetes cannot hold -------------------------------------------------------------------------

@pytest.mark.parametrize("resources, key", [
    ("{cpu: 1, memoryMB: 1024, gpu: 1e+30}", "gpu"), ("{cpu: 1e+30, memoryMB: 1024, gpu: 0}", "cpu"),
    ("{cpu: 1, memoryMB: 1e+21, gpu: 0}", "memoryMB"), ("{cpu: 1, memoryMB: 8796093022208, gpu: 0}", "memoryMB"),
])
def test_resources_beyond_kubernetes_quantities_are_refused_everywhere(resources, key):
    text = job(["echo hi"]).replace("resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}",
                                    f"resourcePerInstance: {resources}")
    result = validate_text(text, "job.yaml")
    assert [d.code for d in result.errors] == ["E802"] and result.errors[0].pointer.endswith(key)
    assert set(verdicts(text).values()) == {False}


def test_the_largest_memory_kubernetes_holds_is_accepted():
    text = job(["echo hi"]).replace("memoryMB: 1024", "memoryMB: 8796093022207")
    assert validate_text(text, "job.yaml").ok


# --- validate with a target or profile gives compile's verdict ------------------------------------------------------

@pytest.mark.parametrize("target", ["framework", "jobset", "mars", "local", "grass", "openpai"])
def test_validate_with_a_target_gives_compiles_verdict(target, run_cli, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(job(["echo hi"]))  # one task role named worker: Mars needs a scheduler (E702)
    code, out, err = run_cli("validate", str(path), "--target", target)
    compiled, _, compile_err = run_cli("compile", str(path), "--target", target)
    assert (code == 0) == (compiled == 0)
    if target == "mars":
        assert code == 1 and "[E702]" in out and "[E702]" in compile_err


def test_validate_with_a_hived_profile_refuses_what_a_hived_cluster_refuses(run_cli, tmp_path):
    from pathlib import Path

    profile = Path(__file__).resolve().parents[1] / "compiler" / "profiles" / "openpai.yaml"
    hived = tmp_path / "hived.yaml"
    hived.write_text(profile.read_text().replace("  enabled: false\n", "  enabled: true\n", 1))
    path = tmp_path / "job.yaml"
    path.write_text(job(["echo hi"], "extras:\n  hivedScheduler: {taskRoles: {chief: {skuType: K80}}}\n"))
    code, out, _ = run_cli("validate", str(path))
    assert code == 0 and "[W307]" in out
    code, out, _ = run_cli("validate", str(path), "--profile", str(hived))
    assert code == 1 and "[E307]" in out
    code, _, err = run_cli("validate", str(path), "--target", "nowhere")
    assert code == 2 and "unknown target" in err


# --- found by the differential test ---------------------------------------------------------------------------------

def test_a_job_holding_nan_keeps_its_text_as_the_config_annotation():
    """The mask check compared the re-read job with `==`, and NaN != NaN sent the annotation to the serialiser."""
    text = job(["echo hi"], "secrets: {a: b}\nextras: {x: .nan}\n")
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    [framework] = [o for o in compiled.objects if o["kind"] == "Framework"]
    assert framework["metadata"]["annotations"]["config"] == text.replace("secrets: {a: b}", 'secrets: "******"')


def test_a_date_as_a_task_roles_hived_settings_is_no_settings(tmp_path):
    from pathlib import Path

    profile = Path(__file__).resolve().parents[1] / "compiler" / "profiles" / "openpai.yaml"
    (tmp_path / "hived.yaml").write_text(profile.read_text().replace("  enabled: false\n", "  enabled: true\n", 1))
    text = job(["echo hi"], "extras:\n  hivedScheduler:\n    taskRoles:\n      worker: 2020-01-01 12:30:00\n")
    compile_job(text.encode(), target="framework", profile=str(tmp_path / "hived.yaml"), name="job.yaml")
