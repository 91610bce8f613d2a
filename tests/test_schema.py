"""The job JSON Schema: well-formed, documented, and with exactly the upstream rest-server's verdicts.

Upstream's verdict comes from the rest-server's ajv schema. Two kinds of evidence pin ours to it:
- the upstream corpus (../shared/corpus/openpai), with upstream's recorded verdicts and ajv error locations
  (tests/test_schema_corpus.py);
- hand-written documents, one or more per quirk of the upstream schema, with the verdict upstream gives (here).
Both Python validators we ship (jsonschema and jsonschema_rs) must agree with each other on all of them.
"""

from __future__ import annotations

import copy
import importlib.resources
import json
from typing import Any

import jsonschema
import jsonschema_rs
import pytest

from paictl.protocol.loading import load_located
from paictl.schemas import load_schema, schema_names


@pytest.fixture(scope="module")
def schema() -> dict:
    return load_schema("job")


@pytest.fixture(scope="module")
def py_validator(schema):
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def rs_validator(schema):
    return jsonschema_rs.validator_for(schema)


# ----------------------------------------------------------------------------------------------------------------
# The schema file itself


def test_schema_is_valid_draft_2020_12(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert jsonschema.validators.validator_for(schema) is jsonschema.Draft202012Validator
    jsonschema_rs.validator_for(schema)  # the Rust validator compiles it too


def test_schema_identity(schema):
    assert schema["$id"] == "https://paictl.dev/schemas/job.schema.json"
    assert schema["title"]
    assert schema["description"]


def test_loader_api():
    assert "job" in schema_names()
    assert load_schema() is load_schema("job")  # cached
    with pytest.raises(ValueError):
        load_schema("no-such-schema")


def test_file_is_formatted_with_two_space_indent(schema):
    text = importlib.resources.files("paictl.schemas").joinpath("job.schema.json").read_text(encoding="utf-8")
    assert text == json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _resolve(schema: dict, node: Any) -> Any:
    while isinstance(node, dict) and "description" not in node and "$ref" in node:
        node = schema["$defs"][node["$ref"].removeprefix("#/$defs/")]
    return node


def _property_schemas(node: Any, where: str = ""):
    """(location, schema) of every schema under `properties` or `patternProperties`, anywhere in `node`."""
    if isinstance(node, dict):
        for keyword in ("properties", "patternProperties"):
            for key, sub in node.get(keyword, {}).items():
                yield f"{where}/{keyword}/{key}", sub
        for key, sub in node.items():
            if key not in ("enum", "const", "required", "if"):  # `if` only selects a prerequisite kind
                yield from _property_schemas(sub, f"{where}/{key}")
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            yield from _property_schemas(sub, f"{where}/{index}")


def test_every_property_has_a_description(schema):
    """Hover help in editors (yaml-language-server) shows these; every key a user can write needs one."""
    missing = []
    for where, sub in _property_schemas(schema):
        if sub is False:  # extraContainerOptions.additionalProperties: the upstream bug, reproduced literally
            continue
        if not (isinstance(sub, dict) and isinstance(_resolve(schema, sub), dict)
                and _resolve(schema, sub).get("description")):
            missing.append(where)
    assert not missing
    for name, definition in schema["$defs"].items():
        assert definition.get("description"), name


def test_descriptions_carry_the_known_pitfalls(schema):
    defs = schema["$defs"]
    assert "NOT a port number" in defs["ports"]["description"]
    assert "gangAllocation" in defs["taskRole"]["properties"]["taskRetryCount"]["description"]
    completion = defs["completion"]["properties"]
    assert "number of instances" in completion["minSucceededInstances"]["description"]
    assert "-1" in completion["minSucceededInstances"]["description"]
    assert "-1" in completion["minFailedInstances"]["description"]
    assert "512" in defs["extraContainerOptions"]["properties"]["shmMB"]["description"]


# ----------------------------------------------------------------------------------------------------------------
# Hand-written documents: each quirk of the upstream schema, with upstream's verdict

ROLE = {"dockerImage": "img", "resourcePerInstance": {"cpu": 1, "memoryMB": 1024, "gpu": 0}, "commands": ["echo hi"]}
BASE = {
    "protocolVersion": 2,
    "name": "tricky",
    "type": "job",
    "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "ubuntu:20.04"}],
    "taskRoles": {"train": ROLE},
}
DEPLOYMENT = {"name": "dep", "taskRoles": {"train": {"preCommands": ["echo pre"], "postCommands": ["echo post"]}}}
_DELETE = object()


def doc(**changes: Any) -> dict:
    """BASE with changes keyed by slash-separated path (`__` stands for `/`); `_DELETE` removes the key."""
    result = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target: Any = result
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target[token]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is _DELETE:
            del target[last]
        else:
            target[last] = copy.deepcopy(value)
    return result


def prereq(**fields: Any) -> dict:
    """BASE with a second prerequisite (keys with a trailing `_` lose it, e.g. `type_`)."""
    return doc(prerequisites=[BASE["prerequisites"][0], {k.rstrip("_"): v for k, v in fields.items()}])


def role(**changes: Any) -> dict:
    return doc(**{f"taskRoles__train__{k}": v for k, v in changes.items()})


def resources(**changes: Any) -> dict:
    return doc(**{f"taskRoles__train__resourcePerInstance__{k}": v for k, v in changes.items()})


def deployments(*items: Any) -> dict:
    return doc(deployments=list(items), defaults={"deployment": "dep"})


def deployment(**changes: Any) -> dict:
    return deployments({**copy.deepcopy(DEPLOYMENT), **changes})


TRICKY: list[tuple[str, dict, bool]] = [
    ("base", doc(), True),
    ("minimal-without-prerequisites", doc(prerequisites=_DELETE), True),  # only the semantic check needs them
    # top level
    ("unknown-top-level-key", doc(default={"deployment": "x"}), False),
    ("protocolVersion-string-2", doc(protocolVersion="2"), True),
    ("protocolVersion-float-2.0", doc(protocolVersion=2.0), True),
    ("protocolVersion-3-string", doc(protocolVersion="3"), False),
    ("protocolVersion-1", doc(protocolVersion=1), False),
    ("protocolVersion-true", doc(protocolVersion=True), False),
    ("protocolVersion-missing", doc(protocolVersion=_DELETE), False),
    ("name-255-chars", doc(name="x" * 255), True),
    ("name-256-chars", doc(name="x" * 256), False),
    ("name-dash-underscore-digits", doc(name="0-my_job-1"), True),
    ("name-with-dot", doc(name="my.job"), False),
    ("name-with-tilde", doc(name="user~job"), False),
    ("name-empty", doc(name=""), False),
    ("name-trailing-newline", doc(name="job\n"), False),  # JS `$` is end of input; Python's also allows "\n"
    ("name-number", doc(name=123), False),
    ("type-Job", doc(type="Job"), False),
    ("version-number", doc(version=1.5), True),
    ("version-string", doc(version="1.0.0"), True),
    ("version-bool", doc(version=True), False),
    ("version-null", doc(version=None), False),
    ("contributor-number", doc(contributor=1), False),
    ("description-string", doc(description="text"), True),
    ("jobRetryCount-0", doc(jobRetryCount=0), True),
    ("jobRetryCount-3.0", doc(jobRetryCount=3.0), True),  # 3.0 is an integer for ajv and for JSON Schema
    ("jobRetryCount-minus-1", doc(jobRetryCount=-1), False),
    ("jobRetryCount-minus-2", doc(jobRetryCount=-2), False),
    ("jobRetryCount-1.5", doc(jobRetryCount=1.5), False),
    ("parameters-nested", doc(parameters={"a": {"b": [1, None]}}), True),
    ("parameters-list", doc(parameters=[1]), False),
    ("secrets-string", doc(secrets="x"), False),
    ("extras-free-form", doc(extras={"gangAllocation": "maybe", "anything": [1]}), True),
    ("extras-null", doc(extras=None), False),
    ("extras-list", doc(extras=[]), False),
    ("defaults-other-keys", doc(defaults={"other": 1, "virtualCluster": 5}), True),
    ("defaults-deployment-number", doc(defaults={"deployment": 3}), False),
    ("defaults-list", doc(defaults=[]), False),
    # taskRoles
    ("taskRoles-number", doc(taskRoles=5), True),  # upstream has no `type: object` here
    ("taskRoles-list", doc(taskRoles=[]), True),
    ("taskRoles-empty", doc(taskRoles={}), False),
    ("taskRoles-missing", doc(taskRoles=_DELETE), False),
    ("taskRole-name-dash", doc(taskRoles={"a-b": ROLE}), False),
    ("taskRole-name-leading-digit", doc(taskRoles={"1abc": ROLE}), False),
    ("taskRole-name-leading-underscore", doc(taskRoles={"_a1": ROLE}), True),
    ("taskRole-name-trailing-newline", doc(taskRoles={"train\n": ROLE}), False),
    ("taskRole-not-object", doc(taskRoles={"train": "echo"}), False),
    ("taskRole-unknown-key", role(entrypoint="echo"), False),
    ("taskRole-protocolVersion", role(protocolVersion="2"), True),
    ("taskRole-missing-dockerImage", role(dockerImage=_DELETE), False),
    ("taskRole-missing-commands", role(commands=_DELETE), False),
    ("instances-1.0", role(instances=1.0), True),
    ("instances-0", role(instances=0), False),
    ("instances-template", role(instances="<% $parameters.n %>"), False),
    ("taskRetryCount-minus-5", role(taskRetryCount=-5), True),
    ("taskRetryCount-1.5", role(taskRetryCount=1.5), False),
    ("completion-minFailed-minus-7", role(completion={"minFailedInstances": -7}), True),
    ("completion-nulls", role(completion={"minFailedInstances": None, "minSucceededInstances": None}), True),
    ("completion-old-name", role(completion={"minSucceededTaskCount": 1}), False),
    ("completion-string-value", role(completion={"minSucceededInstances": "1"}), False),
    ("completion-not-object", role(completion="all"), False),
    ("taskRole-prerequisites-list", role(prerequisites=["img"]), True),
    ("taskRole-prerequisites-string", role(prerequisites="img"), False),
    ("taskRole-data-number", role(data=1), False),
    ("commands-empty", role(commands=[]), False),
    ("commands-string", role(commands="echo hi"), False),
    ("commands-number-item", role(commands=[1]), False),
    ("extraContainerOptions-infiniband-foo", role(extraContainerOptions={"infiniband": True, "foo": 1}), True),
    ("extraContainerOptions-infiniband-any-value", role(extraContainerOptions={"infiniband": "yes"}), True),
    ("extraContainerOptions-shmMB", role(extraContainerOptions={"shmMB": 4096}), True),
    ("extraContainerOptions-shmMB-string", role(extraContainerOptions={"shmMB": "4G"}), False),
    ("extraContainerOptions-additionalProperties", role(extraContainerOptions={"additionalProperties": 1}), False),
    ("extraContainerOptions-additionalProperties-false",
     role(extraContainerOptions={"additionalProperties": False}), False),
    ("extraContainerOptions-list", role(extraContainerOptions=[]), False),
    # resourcePerInstance
    ("resources-negative-cpu", resources(cpu=-1), True),  # no minimum upstream
    ("resources-float-gpu", resources(gpu=0.5), False),
    ("resources-missing-gpu", resources(gpu=_DELETE), False),
    ("resources-unknown-key", resources(memory=1024), False),
    ("ports-counts", resources(ports={"http": 1, "ssh": 2, "_x9": 1.0}), True),
    ("ports-negative-count", resources(ports={"http": -3}), True),
    ("ports-list", resources(ports=[{"http": 1}]), False),
    ("ports-empty", resources(ports={}), False),
    ("ports-label-dash", resources(ports={"my-port": 1}), False),
    ("ports-string-count", resources(ports={"http": "1"}), False),
    # prerequisites
    ("prerequisites-empty", doc(prerequisites=[]), False),
    ("prerequisites-object", doc(prerequisites={"dockerimage": {}}), False),
    ("prerequisite-string-item", doc(prerequisites=["img"]), False),
    ("dockerimage-all-keys", prereq(protocolVersion="2", name="img2", version=1, contributor="me", description="d",
                                    type_="dockerimage", uri="repo/image:tag",
                                    auth={"username": "u", "password": "<% $secrets.p %>", "registryuri": "r.io"}),
     True),
    ("dockerimage-extra-key", prereq(name="img2", type_="dockerimage", uri="x", tag="latest"), False),
    ("dockerimage-missing-uri", prereq(name="img2", type_="dockerimage"), False),
    ("dockerimage-uri-list", prereq(name="img2", type_="dockerimage", uri=["x"]), False),
    ("dockerimage-auth-extra-key", prereq(name="img2", type_="dockerimage", uri="x", auth={"token": "t"}), True),
    ("dockerimage-auth-number", prereq(name="img2", type_="dockerimage", uri="x", auth={"username": 1}), False),
    ("dockerimage-auth-string", prereq(name="img2", type_="dockerimage", uri="x", auth="u:p"), False),
    ("script-extra-key", prereq(name="s", type_="script", uri="git://x", foo={"bar": 1}), True),
    ("script-uri-list", prereq(name="s", type_="script", uri=["x"]), False),
    ("script-without-uri", prereq(name="s", type_="script"), True),
    ("output-plugin-require", prereq(name="o", type_="output", plugin="p", require=["a", "b"], uri="o"), True),
    ("output-require-string", prereq(name="o", type_="output", require="a"), False),
    ("data-uri-list", prereq(name="d", type_="data", uri=["hdfs://a", "hdfs://b"], extra=1), True),
    ("data-uri-string", prereq(name="d", type_="data", uri="hdfs://a"), False),
    ("data-uri-empty-list", prereq(name="d", type_="data", uri=[]), True),
    ("data-plugin-number", prereq(name="d", type_="data", plugin=1), False),
    ("prerequisite-unknown-type", prereq(name="m", type_="model", uri="x"), False),
    ("prerequisite-type-uppercase", prereq(name="m", type_="DockerImage", uri="x"), False),
    ("prerequisite-missing-type", prereq(name="m", uri="x"), False),
    ("prerequisite-missing-name", prereq(type_="script", uri="x"), False),
    ("prerequisite-name-pattern-script", prereq(name="bad name", type_="script"), False),
    ("prerequisite-name-pattern-dockerimage", prereq(name="a.b", type_="dockerimage", uri="x"), False),
    ("prerequisite-protocolVersion-3", prereq(name="s", type_="script", protocolVersion=3), False),
    ("prerequisite-version-list", prereq(name="s", type_="data", version=[1]), False),
    # deployments
    ("deployments-ok", deployments(DEPLOYMENT), True),
    ("deployments-empty", doc(deployments=[]), False),
    ("deployments-object", doc(deployments={"dep": DEPLOYMENT}), False),
    ("deployment-extra-key", deployment(foo=1), True),  # no additionalProperties on the item upstream
    ("deployment-protocolVersion-3", deployment(protocolVersion=3), False),
    ("deployment-name-space", deployment(name="a b"), False),
    ("deployment-missing-taskRoles", deployments({"name": "dep"}), False),
    ("deployment-missing-name", deployments({"taskRoles": DEPLOYMENT["taskRoles"]}), False),
    ("deployment-taskRoles-empty", deployment(taskRoles={}), False),
    ("deployment-taskRoles-number", deployment(taskRoles=5), True),  # like top-level taskRoles: no `type`
    ("deployment-taskRole-name-dash", deployment(taskRoles={"a-b": {"preCommands": ["x"]}}), False),
    ("deployment-taskRole-unknown-role-name", deployment(taskRoles={"nosuchrole": {}}), True),
    ("deployment-taskRole-extra-key", deployment(taskRoles={"train": {"commands": ["x"]}}), False),
    ("deployment-taskRole-list", deployment(taskRoles={"train": ["x"]}), False),
    ("deployment-preCommands-empty", deployment(taskRoles={"train": {"preCommands": []}}), False),
    ("deployment-postCommands-string", deployment(taskRoles={"train": {"postCommands": "x"}}), False),
]


def test_tricky_ids_are_unique():
    ids = [case_id for case_id, _, _ in TRICKY]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(("data", "expected"), [(d, e) for _, d, e in TRICKY], ids=[i for i, _, _ in TRICKY])
def test_tricky_document_verdict(data, expected, py_validator, rs_validator):
    errors = list(py_validator.iter_errors(data))
    assert (not errors) is expected, [e.message for e in errors]
    assert rs_validator.is_valid(data) is expected


def test_yaml_block_scalar_name_keeps_its_newline_and_is_rejected(py_validator, rs_validator):
    """`name: |` gives "job\\n"; upstream's JS regex rejects it, and so must Python's `re` (whose `$` would not)."""
    text = "protocolVersion: 2\nname: |\n  job\ntype: job\ntaskRoles: {}\n"
    data = load_located(text, "job.yaml").data
    assert data["name"] == "job\n"
    errors = [e for e in py_validator.iter_errors(data) if list(e.absolute_path) == ["name"]]
    assert [e.validator for e in errors] == ["pattern"]
    assert not rs_validator.is_valid(data)


def test_prerequisite_kind_errors_are_located_on_the_item(py_validator):
    """Kinds are chosen by `type` (if/then), so a broken item yields its own errors, not an opaque oneOf."""
    errors = list(py_validator.iter_errors(prereq(name="img2", type_="dockerimage")))
    assert [(list(e.absolute_path), e.validator) for e in errors] == [(["prerequisites", 1], "required")]
    errors = list(py_validator.iter_errors(prereq(name="d", type_="data", uri="x")))
    assert [(list(e.absolute_path), e.validator) for e in errors] == [(["prerequisites", 1, "uri"], "type")]
    errors = list(py_validator.iter_errors(prereq(name="img2", type_="dockerimage", uri="x", tag="latest")))
    assert [(list(e.absolute_path), e.validator) for e in errors] == [(["prerequisites", 1], "additionalProperties")]


def test_extra_container_options_quirk_is_the_literal_false_schema(schema, py_validator):
    assert schema["$defs"]["extraContainerOptions"]["properties"]["additionalProperties"] is False
    (error,) = py_validator.iter_errors(role(extraContainerOptions={"additionalProperties": True, "foo": 1}))
    assert error.schema is False and error.instance is True
    # jsonschema reports a `false` subschema without its own key (at extraContainerOptions); jsonschema_rs includes it
    assert list(error.absolute_path)[:3] == ["taskRoles", "train", "extraContainerOptions"]
