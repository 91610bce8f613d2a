"""The job JSON Schema: well-formed, documented, and with exactly the upstream rest-server's verdicts.

Upstream's verdict comes from the rest-server's ajv schema. Two kinds of evidence pin ours to it:
- the upstream corpus (../shared/corpus/openpai), with upstream's recorded verdicts and ajv error locations;
- hand-written documents, one or more per quirk of the upstream schema, with the verdict upstream gives.
Both Python validators we ship (jsonschema and jsonschema_rs) must agree with each other on all of them.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
import pytest

from paictl.protocol.loading import DocumentError, decode_source, load_located
from paictl.schemas import load_schema, schema_names

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
OPENPAI = CORPUS / "openpai"

# Only the corpus tests need ../shared/corpus; the schema's own tests run everywhere.
needs_corpus = pytest.mark.skipif(not OPENPAI.is_dir(), reason="../shared/corpus is not beside this checkout")


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


# ----------------------------------------------------------------------------------------------------------------
# The upstream corpus


def _corpus(*folders: str) -> list[Path]:
    files: list[Path] = []
    for folder in folders:
        base = OPENPAI / folder
        if base.is_dir():
            files += sorted(p for p in base.iterdir() if p.suffix in (".yaml", ".yml"))
    return files


def _load(path: Path) -> dict:
    """The document's data; DocumentError when it is not one YAML mapping."""
    return load_located(decode_source(path.read_bytes(), str(path)), str(path)).data


@functools.lru_cache(maxsize=None)
def _json(relative: str) -> dict:
    return json.loads((OPENPAI / relative).read_text(encoding="utf-8"))


def _upstream(path: Path) -> dict:
    """Upstream's recorded result for a corpus file: UPSTREAM_RESULTS.json (keys `name` for valid/, `folder/name`
    otherwise), else invalid/EXPECTED_UPSTREAM_OUTPUT.json (keyed by file name) for upstream's own unit-test cases."""
    results = _json("UPSTREAM_RESULTS.json")
    key = path.name if path.parent.name == "valid" else f"{path.parent.name}/{path.name}"
    if key in results:
        return results[key]
    return _json("invalid/EXPECTED_UPSTREAM_OUTPUT.json")[path.name]


_AJV_STEP = re.compile(r"\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")
_AJV_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "b": "\b"}


def ajv_pointer(data_path: str) -> str:
    """ajv 6 dataPath (`.taskRoles['train'].completion`, `.prerequisites[0]`) to a JSON pointer."""
    tokens, position = [], 0
    while position < len(data_path):
        step = _AJV_STEP.match(data_path, position)
        assert step, f"unparsed ajv dataPath {data_path!r} at {position}"
        name, index, quoted = step.groups()
        if quoted is not None:
            name = re.sub(r"\\(.)", lambda m: _AJV_ESCAPES.get(m.group(1), m.group(1)), quoted)
        tokens.append(index if index is not None else name)
        position = step.end()
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def test_ajv_pointer():
    assert ajv_pointer("") == ""
    assert ajv_pointer(".taskRoles['train'].completion") == "/taskRoles/train/completion"
    assert ajv_pointer(".prerequisites[0].type") == "/prerequisites/0/type"
    assert ajv_pointer(r".a['x/y~\'z']") == "/a/x~1y~0'z"


def upstream_error_pointers(errors: list[dict]) -> set[str]:
    """Where upstream reported errors. Errors from inside a oneOf branch (and ajv-merge-patch's `$merge` wrappers)
    only explain why each branch failed; the `oneOf` error at the item itself is the one that locates the problem.
    For ajv 6 `additionalProperties` (and `required`) errors the dataPath is already the parent object."""
    return {ajv_pointer(e["dataPath"]) for e in errors
            if e["keyword"] != "$merge" and "/oneOf/" not in e["schemaPath"]}


def our_error_pointers(validator, data: Any) -> set[str]:
    pointers: set[str] = set()
    stack = list(validator.iter_errors(data))
    while stack:
        error = stack.pop()
        pointers.add("".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in error.absolute_path))
        stack.extend(error.context or [])
    return pointers


@needs_corpus
@pytest.mark.parametrize("path", _corpus("valid"), ids=lambda p: p.name)
def test_valid_corpus_file_is_accepted(path, py_validator, rs_validator):
    assert _upstream(path)["ok"] is True
    data = _load(path)
    errors = list(py_validator.iter_errors(data))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    assert rs_validator.is_valid(data)


@needs_corpus
@pytest.mark.parametrize("path", _corpus("nonconforming", "invalid"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rejected_corpus_file_is_rejected_where_upstream_says(path, py_validator, rs_validator):
    upstream = _upstream(path)
    assert upstream["ok"] is False
    try:
        data = _load(path)
    except DocumentError:
        return  # rejected by the loader (multi-document, broken YAML, non-scalar key, ...)
    assert upstream.get("name") != "YAMLException", "upstream could not parse this file; neither should we"
    assert not rs_validator.is_valid(data)
    ours = our_error_pointers(py_validator, data)
    assert ours, "accepted by the schema, rejected upstream"
    theirs = upstream_error_pointers(upstream["message"])
    assert theirs <= ours
    # and nothing is reported outside the places upstream complained about
    for pointer in ours:
        assert any(pointer == t or pointer.startswith(t + "/") for t in theirs), pointer


@needs_corpus
def test_corpus_is_complete():
    """Every upstream verdict has a file, so the parametrized tests above cover the whole corpus."""
    results = _json("UPSTREAM_RESULTS.json")
    names = {p.name if p.parent.name == "valid" else f"{p.parent.name}/{p.name}"
             for p in _corpus("valid", "nonconforming")}
    assert names == set(results)
    expected = _json("invalid/EXPECTED_UPSTREAM_OUTPUT.json")
    assert {p.name for p in _corpus("invalid")} == set(expected)


@needs_corpus
def test_upstream_yaml_errors_are_loader_errors():
    """Files js-yaml could not parse never reach the schema here either."""
    results = _json("UPSTREAM_RESULTS.json")
    broken = [name for name, result in results.items() if result.get("name") == "YAMLException"]
    assert broken
    for name in broken:
        with pytest.raises(DocumentError):
            _load(OPENPAI / name)


@needs_corpus
@pytest.mark.parametrize("path", _corpus("valid", "nonconforming", "invalid"),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_python_and_rust_validators_agree_on_corpus(path, py_validator, rs_validator):
    try:
        data = _load(path)
    except DocumentError:
        return  # never reaches a validator
    assert py_validator.is_valid(data) is rs_validator.is_valid(data)
