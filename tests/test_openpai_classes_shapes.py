"""Issue 30's last classes, each from cases written here: a list where upstream wants a mapping (and the reverse),
the input limits that were policy, and names only JavaScript's Object prototype has.

Upstream's behaviour for each case rests on the facts read from upstream's code in ../shared/reference/openpai.md (the
rest-server's schema, render and Framework conversion; for a taskRoles list, openpai-runtime's source, see the test
comments) and on the rest-server's recorded answers, which tests/openpai_oracle compares with paictl job by job.
"""

from __future__ import annotations

import json
import math

import pytest

from paictl.compiler.render import render_entrypoint
from paictl.protocol.loading import DocumentError, load_located
from paictl.protocol.validate import validate_text
from paictl.targets.compiled import compile_job
from test_openpai_classes import verdicts  # validate and every target but Mars, side by side

HEAD = """\
protocolVersion: 2
name: shapes
type: job
prerequisites:
  - {name: img, type: dockerimage, uri: ubuntu}
"""
ROLE = """\
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands: ["echo <% $parameters.p %>"]
"""


def one_role(extra: str = "", name: str = "worker", role_extra: str = "") -> str:
    return HEAD + f"taskRoles:\n  {name}:\n" + ROLE + role_extra + extra


def with_parameter(value: str) -> str:
    return one_role(f"parameters:\n  p: {value}\n")


def codes(text: str) -> set[str]:
    return {d.code for d in validate_text(text, "job.yaml").diagnostics}


def entrypoint(text: str, role: str = "worker") -> str:
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    return render_entrypoint(compiled.job, role)


def framework(text: str) -> dict:
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    return next(o for o in compiled.objects if o["kind"] == "Framework")


# --- taskRoles as a list, and other lists and mappings swapped ------------------------------------------------------

LIST_OF_ROLES = HEAD + "taskRoles:\n  - instances: 1\n" + ROLE + "  - instances: 2\n" + ROLE


@pytest.mark.parametrize("roles", [
    "  - instances: 1\n" + ROLE + "  - instances: 2\n" + ROLE,  # upstream: roles "0" and "1", PAI_TASK_ROLE_LIST=0,1
    "  - instances: 1\n" + ROLE,
    "  - 5\n",  # upstream's rest-server crashes: `'prerequisites' in 5`
    "  - null\n",
])
def test_a_list_of_task_roles_is_refused_by_validate_and_every_target(roles):
    """The rest-server runs a list under the names 0, 1, ... (Object.keys of an array), but openpai-runtime's
    initializer (src/init.d/initializer.py collect_plugin_configs) reads `jobconfig['taskRoles'][taskrole]` from the
    submitted text, where taskRoles is still a list: TypeError, and every task's init container exits 1."""
    text = HEAD + "parameters: {p: 1}\ntaskRoles:\n" + roles
    assert set(verdicts(text).values()) == {False}
    [error] = [d for d in validate_text(text, "job.yaml").diagnostics if d.code == "E801"]
    assert error.pointer == "/taskRoles" and error.line == 8
    assert "0, 1" in error.message and "init container" in error.message


@pytest.mark.parametrize("extra, code", [
    ("parameters: [a, b]\n", "E203"),  # ajv: should be object
    ("secrets: [a, b]\n", "E203"),
    ("extras: [a]\n", "E203"),
    ("deployments: {d: {taskRoles: {worker: {preCommands: [x]}}}}\n", "E203"),  # ajv: should be array
    ("extras: {storages: {confignfs: {}}}\n", "E808"),  # upstream: config.extras.storages is not iterable
    ("extras: {com.microsoft.pai.runtimeplugin: {ssh: {plugin: ssh}}}\n", "E804"),  # not iterable
])
def test_a_mapping_or_list_swapped_is_refused_as_upstream_refuses_it(extra, code):
    text = one_role(extra)
    assert set(verdicts(text).values()) == {False}
    assert code in codes(text)


def test_prerequisites_keyed_by_name_are_refused_as_upstream_refuses_them():
    text = one_role().replace("  - {name: img, type: dockerimage, uri: ubuntu}", "  img: {type: dockerimage, uri: x}")
    assert set(verdicts(text).values()) == {False}
    assert "E203" in codes(text)


# --- input limits: what upstream reads, paictl reads --------------------------------------------------------------

@pytest.mark.parametrize("value, printed, warned", [
    ("1" * 5000, "Infinity", True),
    ("-" + "9" * 4400, "-Infinity", True),
    ("1_" * 3000 + "1", "Infinity", False),  # 3,001 digits: Python converts them, and prints what JavaScript does
    ("0." + "0" * 5000 + "1", "0", False),
    ("1." + "3" * 5000, "1.3333333333333333", False),
    ("1" + ":30" * 2000, "Infinity", False),  # sexagesimal: js-yaml adds the parts up in doubles
])
def test_a_number_longer_than_4300_characters_is_read_as_javascript_reads_it(value, printed, warned):
    text = with_parameter(value)
    assert set(verdicts(text).values()) == {True}
    assert entrypoint(text) == f"echo {printed}"
    assert ("W209" in codes(text)) is warned


def test_the_long_number_warning_is_located_and_strict_validate_fails_on_it(run_cli, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(with_parameter("7" * 4400))
    [warning] = validate_text(path.read_text(), "job.yaml").diagnostics
    assert (warning.code, warning.pointer, warning.line) == ("W209", "/parameters/p", 12)
    assert run_cli("validate", str(path))[0] == 0
    assert run_cli("validate", "--strict", str(path))[0] == 1


@pytest.mark.parametrize("value, printed", [
    ("!!binary aGVsbG8=", "hello"),
    ("!!binary |\n    aGVs\n    bG8=", "hello"),
    ("!!binary 4pyTIMOgIGxhIG1vZGU=", "\u2713 \u00e0 la mode"),
    ("!!binary /w==", "\ufffd"),  # not UTF-8: Buffer's toString gives U+FFFD
    ("!!timestamp 2020-01-01", "Wed Jan 01 2020 00:00:00 GMT+0000 (Coordinated Universal Time)"),
    ("!!omap [a: 1, b: 2]", "[object Object],[object Object]"),
    ("!!pairs [a: 1, b: 2]", "a,1,b,2"),
    ("!!pairs [a: 1, a: 2]", "a,1,a,2"),
    ("!!set {a, b}", "[object Object]"),
    ("!<tag:yaml.org,2002:str> 5", "5"),
])
def test_the_tags_of_js_yamls_safe_schema_are_read_as_upstream_reads_them(value, printed):
    text = with_parameter(value)
    assert set(verdicts(text).values()) == {True}
    assert entrypoint(text) == f"echo {printed}"


@pytest.mark.parametrize("value", ["!foo x", "!!python/tuple [1]", "!!merge x", "!!binary aGVsbG8", "!!timestamp x",
                                   "!!omap [a: 1, a: 2]", "!!omap [a]"])
def test_a_tag_js_yaml_throws_on_is_a_located_refusal_everywhere(value):
    """js-yaml's safeLoad throws (unknown tag, or a value its type cannot resolve): the rest-server answers 500."""
    text = with_parameter(value)
    assert set(verdicts(text).values()) == {False}
    [error] = validate_text(text, "job.yaml").diagnostics
    assert error.code == "E101" and error.line == 12


@pytest.mark.parametrize("old, new", [
    ('"echo <% $parameters.p %>"', "!!binary aGVsbG8="),  # a command
    ("uri: ubuntu", "uri: !!binary dWJ1bnR1"),
    ("name: shapes", "name: !!binary Ymlu"),
])
def test_a_binary_where_upstreams_schema_wants_text_is_refused_as_ajv_refuses_a_buffer(old, new):
    """A Buffer is an object for ajv: `type: string` fails, and the rest-server answers 400."""
    text = with_parameter("1").replace(old, new)
    assert set(verdicts(text).values()) == {False}
    assert "E203" in codes(text)


@pytest.mark.parametrize("depth", [101, 400])
def test_nesting_past_paictls_bound_is_a_located_refusal_everywhere(depth):
    """Upstream reads 101 levels (js-yaml recurses until ~3,000); paictl's schema check, semantic walks and renderers
    recurse too, and the bound keeps them far from Python's recursion limit (docs: hostile input)."""
    text = with_parameter("[" * depth + "1" + "]" * depth)
    assert set(verdicts(text).values()) == {False}
    [error] = validate_text(text, "job.yaml").diagnostics
    assert error.code == "E106" and error.line == 12


def test_nesting_within_the_bound_is_read():
    text = with_parameter("[" * 90 + "1" + "]" * 90)
    assert set(verdicts(text).values()) == {True}
    assert entrypoint(text) == "echo 1"


def test_a_document_past_the_size_bound_is_refused_in_validate_and_compile():
    """Upstream's body-parser refuses a body over 100 KiB (HTTP 413) long before paictl's 2 MiB bound."""
    text = one_role("description: '" + "x" * (2 * 1024 * 1024) + "'\n")
    assert set(verdicts(text).values()) == {False}
    assert codes(text) == {"E107"}


@pytest.mark.parametrize("key, path", [
    ("jobRetryCount: .inf\n", ("spec", "retryPolicy", "maxRetryCount")),
    ("taskRetryCount: -.inf\n", ("spec", "taskRoles", 0, "task", "retryPolicy", "maxRetryCount")),
])
def test_an_infinite_retry_count_compiles_as_the_zero_frameworkcontroller_ends_up_with(key, path):
    """ajv takes .inf for an integer; JSON.stringify writes null, which the API server drops from the field."""
    text = one_role(key, role_extra="") if key.startswith("job") else one_role(role_extra="    " + key)
    text += "parameters: {p: 1}\nextras: {gangAllocation: false}\n"
    assert set(verdicts(text).values()) == {True}
    assert "W210" in codes(text)
    value = framework(text)
    for step in path:
        value = value[step]
    assert value == 0


@pytest.mark.parametrize("role_extra", [
    "    instances: .inf\n",
    "    completion: {minFailedInstances: .inf}\n",
    "    completion: {minSucceededInstances: -.inf}\n",
    "    extraContainerOptions: {shmMB: .inf}\n",
])
def test_an_infinite_count_upstreams_objects_cannot_carry_is_refused_everywhere(role_extra):
    text = one_role("parameters: {p: 1}\n", role_extra=role_extra)
    assert set(verdicts(text).values()) == {False}
    assert codes(text) == {"E802"}


@pytest.mark.parametrize("resources", ["{cpu: .inf, memoryMB: 1024, gpu: 0}", "{cpu: 1, memoryMB: -.inf, gpu: 0}",
                                       "{cpu: 1, memoryMB: 1024, gpu: 0, ports: {a: .inf}}"])
def test_infinite_resources_are_refused_everywhere(resources):
    text = one_role("parameters: {p: 1}\n").replace("{cpu: 1, memoryMB: 1024, gpu: 0}", resources)
    assert set(verdicts(text).values()) == {False}
    assert "E802" in codes(text)


def test_an_infinite_number_is_an_integer_for_the_schema_as_for_ajv():
    assert load_located("a: .inf\n", "j").data == {"a": math.inf}
    text = one_role("jobRetryCount: -.inf\nparameters: {p: 1}\n")  # jobRetryCount has minimum 0: ajv refuses
    assert "E206" in codes(text) or "E200" in codes(text)


# --- names only JavaScript's Object prototype has -------------------------------------------------------------------

@pytest.mark.parametrize("parameters, placeholder, printed", [
    ("{__proto__: x}", "$parameters.__proto__", "x"),
    ("{__proto__: {a: 1}}", "$parameters.__proto__.a", "1"),
    ("{a: 1}", "$parameters.constructor.name", "Object"),
    ("{a: 1}", "$parameters.__proto__.constructor.name", "Object"),
    ("{constructor: c}", "$parameters.constructor", "c"),
    ("{hasOwnProperty: h, valueOf: v}", "$parameters.hasOwnProperty", "h"),
])
def test_a_prototype_name_in_parameters_renders_as_upstream_renders_it(parameters, placeholder, printed):
    text = one_role(f"parameters: {parameters}\n").replace("$parameters.p", placeholder)
    assert set(verdicts(text).values()) == {True}
    assert entrypoint(text) == f"echo {printed}"


def test_a_to_string_key_makes_the_whole_mapping_unprintable_as_upstream():
    """`<% $parameters %>` of a mapping with a toString key: JavaScript throws "Cannot convert object to primitive
    value" and the rest-server answers 500."""
    text = one_role("parameters: {toString: t}\n").replace("$parameters.p", "$parameters")
    assert set(verdicts(text).values()) == {False}
    assert codes(text) == {"E810"}


@pytest.mark.parametrize("name, converted", [("__proto__", "proto"), ("constructor", "constructor"),
                                             ("toString", "tostring"), ("hasOwnProperty", "hasownproperty")])
def test_a_task_role_named_for_a_prototype_member_is_an_ordinary_role(name, converted):
    text = one_role("parameters: {p: 1}\n", name=name)
    assert set(verdicts(text).values()) == {True}
    assert entrypoint(text, name) == "echo 1"
    [role] = framework(text)["spec"]["taskRoles"]
    assert role["name"] == converted


@pytest.mark.parametrize("image", ["__proto__", "constructor", "toString"])
def test_a_prerequisite_named_for_a_prototype_member_is_found_by_its_name(image):
    text = one_role("parameters: {p: 1}\n").replace("name: img", f"name: {image}").replace(
        "dockerImage: img", f"dockerImage: {image}")
    assert set(verdicts(text).values()) == {True}
    containers = framework(text)["spec"]["taskRoles"][0]["task"]["pod"]["spec"]["containers"]
    assert containers[0]["image"] == "ubuntu"


def test_prototype_names_in_secrets_and_extras_are_ordinary_keys():
    text = one_role("parameters: {p: 1}\nsecrets: {__proto__: s, constructor: c}\n"
                    "extras: {__proto__: {a: 1}, constructor: 5}\n")
    assert set(verdicts(text).values()) == {True}
    assert entrypoint(text) == "echo 1"


def test_an_unparsable_document_is_no_crash():
    with pytest.raises(DocumentError):
        load_located("a: !!pairs x\n", "j")


@pytest.mark.parametrize("commands", ['["toString"]', '["  valueOf  "]', '["__proto__"]', '["constructor"]'])
def test_a_template_that_is_a_prototype_name_is_refused_as_mustaches_cache_makes_upstream_throw(commands):
    """mustache.js 2.3.2 caches parsed templates in a plain object keyed by the text: `cache['toString']` is a
    function, which OpenPAI's render takes for the tokens (`tokens is not iterable`, HTTP 500)."""
    text = one_role("parameters: {p: 1}\n").replace('["echo <% $parameters.p %>"]', commands)
    assert set(verdicts(text).values()) == {False}
    assert codes(text) == {"E803"}


def test_an_auth_value_that_is_a_prototype_name_is_refused_without_showing_it():
    text = one_role("parameters: {p: 1}\n").replace("uri: ubuntu}", "uri: ubuntu, auth: {username: u, password: "
                                                    "hasOwnProperty}}")
    assert set(verdicts(text).values()) == {False}
    [error] = validate_text(text, "job.yaml").diagnostics
    assert error.code == "E803" and "hasOwnProperty" not in error.message


@pytest.mark.parametrize("commands", ['["echo toString"]', '["toString", "echo"]', '["length"]'])
def test_a_template_that_only_holds_a_prototype_name_is_fine(commands):
    text = one_role("parameters: {p: 1}\n").replace('["echo <% $parameters.p %>"]', commands)
    assert set(verdicts(text).values()) == {True}


def test_a_proto_port_label_is_dropped_as_upstreams_object_drops_it():
    text = one_role("parameters: {p: 1}\n").replace("gpu: 0}", "gpu: 0, ports: {__proto__: 1, web: 2}}")
    assert set(verdicts(text).values()) == {True}
    assert codes(text) == {"W211"}
    annotations = framework(text)["spec"]["taskRoles"][0]["task"]["pod"]["metadata"]["annotations"]
    spec = json.loads(annotations["rest-server/port-scheduling-spec"])
    assert list(spec["ports"]) == ["web", "ssh", "http"]


@pytest.mark.parametrize("role_extra, ok", [
    ("    completion: !!binary aGVsbG8=\n", False),  # ajv: additionalProperty "0" (HTTP 400), paictl: E202
    ("    completion: !!binary ''\n", False),  # the rest-server's Buffer has index keys even then
    # upstream's extraContainerOptions schema nests `additionalProperties: false` inside `properties`: open
    ("    extraContainerOptions: !!binary aGk=\n", True),
])
def test_a_binary_where_a_mapping_belongs_has_the_buffers_byte_indexes_as_keys(role_extra, ok):
    text = one_role("parameters: {p: 1}\n", role_extra=role_extra)
    assert set(verdicts(text).values()) == {ok}
    assert ("E202" in codes(text)) is not ok


def test_a_binary_secret_is_written_back_as_binary_as_upstreams_js_yaml_dumps_a_buffer():
    """The runtime reads secrets.yaml with PyYAML: a !!binary there is bytes, as upstream's dump of the Buffer."""
    import base64

    import yaml

    text = one_role("parameters: {p: 1}\nsecrets: {key: !!binary /+Zh}\n")
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    [secret] = [o for o in compiled.objects if o["kind"] == "Secret" and "secrets.yaml" in o.get("data", {})]
    assert yaml.safe_load(base64.b64decode(secret["data"]["secrets.yaml"])) == {"key": b"\xff\xe6a"}


def test_the_body_sent_to_openpai_keeps_a_binary_value_binary():
    from paictl.targets.openpai.target import protocol_document, protocol_text

    text = with_parameter("!!binary aGVsbG8=")
    document = load_located(text, "job.yaml")
    assert "  p: !!binary aGVsbG8=\n" in protocol_text(protocol_document(document.data)).decode()


# --- issue 37: what upstream accepts and runs is accepted, with a warning -------------------------------------------

@pytest.mark.parametrize("field", ["script", "data", "output"])
@pytest.mark.parametrize("name", ["constructor", "toString", "__proto__"])
def test_script_data_output_naming_a_prototype_member_run_as_upstream_runs_them(field, name):
    """Upstream's `name in prerequisites[type]` finds Object.prototype's member; only dockerImage makes the pod's
    image, so the job runs. `<% $script.uri %>` looks `uri` up on that member: undefined, so written back."""
    text = one_role(role_extra=f"    {field}: {name}\n").replace(
        "commands:", "commands:\n      - echo <% $" + field + ".uri %> done", 1)
    assert set(verdicts(text).values()) == {True}
    assert [d.code for d in validate_text(text, "job.yaml").diagnostics if d.code.startswith(("E", "W3"))] == ["W304"]
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    assert render_entrypoint(compiled.job, "worker").startswith(f"echo <% ${field}.uri %> done")


def test_a_docker_image_naming_a_prototype_member_stays_refused():
    text = one_role().replace("dockerImage: img", "dockerImage: constructor")
    assert "E304" in codes(text)


def test_secrets_as_an_unquoted_date_run_with_a_warning_that_never_shows_the_date():
    text = one_role("parameters: {p: 1}\nsecrets: 2021-03-04\n")
    assert set(verdicts(text).values()) == {True}
    result = validate_text(text, "job.yaml")
    assert [d.code for d in result.diagnostics] == ["W812"]
    assert "2021" not in result.diagnostics[0].message and "2021" not in (result.diagnostics[0].source_line or "")


@pytest.mark.parametrize("key, stored", [("{!!binary aGk=: v}", "hi"), ("{[a, b]: v}", "a,b"),
                                         ("{? {x: 1} : v}", "[object Object]"), ("{0X1f: v}", "0X1f"),
                                         ("{0x1F: v}", "31"), ("{.inf: v}", "Infinity")])
def test_keys_js_yaml_stringifies_in_extras_are_accepted_as_it_stringifies_them(key, stored):
    """A !!binary key crashed validate and compile (a Buffer reached the schema check); flow collections as keys were
    refused. js-yaml makes each key a string; the job runs."""
    text = one_role(f"extras: {key}\n")
    assert set(verdicts(text).values()) == {True}
    assert load_located(text, "job.yaml").data["extras"] == {stored: "v"}
