"""Property-based tests: thousands of malformed documents, and the fast path never disagreeing with the located one.

Every generated document must yield a result (never an exception) within a time bound; every error must be located;
and `validate_text` (fast path first) must report exactly what the authoritative located path reports. The semantic
checks, which also run on documents that fail the schema, must take any loaded data without raising.
"""

from __future__ import annotations

import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paictl.protocol.loading import DocumentError, load_fast, load_located
from paictl.protocol.semantics import check_semantics
from paictl.protocol.validate import validate_bytes, validate_located, validate_text

VALID_JOB = {
    "protocolVersion": 2,
    "name": "prop",
    "type": "job",
    "parameters": {"lr": 0.1, "n": [1, 2]},
    "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "busybox"},
                      {"name": "d", "type": "data", "uri": ["a", "b"]}],
    "taskRoles": {
        "worker": {
            "instances": 2,
            "dockerImage": "img",
            "data": "d",
            "completion": {"minFailedInstances": 1},
            "resourcePerInstance": {"cpu": 1, "memoryMB": 512, "gpu": 0, "ports": {"http": 1}},
            "commands": ["echo <% $parameters.lr %>", "echo <% $data.uri[0] %>"],
        },
    },
    "deployments": [{"name": "dep", "taskRoles": {"worker": {"preCommands": ["echo pre"]}}}],
    "defaults": {"deployment": "dep"},
}

PROFILE = settings(max_examples=1000, deadline=2000, suppress_health_check=[HealthCheck.too_slow],
                   derandomize=True)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=8), st.sampled_from(["<% $parameters.x %>", "job", "dockerimage", "-1"]))
trees = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)), max_leaves=12)
KEYS = ["protocolVersion", "name", "type", "taskRoles", "prerequisites", "deployments", "defaults", "extras",
        "worker", "instances", "commands", "resourcePerInstance", "cpu", "gpu", "memoryMB", "ports", "completion",
        "minFailedInstances", "taskRetryCount", "dockerImage", "uri", "auth", "jobRetryCount", "taskrole"]


def dump_yaml(data) -> str:
    from ruamel.yaml import YAML

    stream = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(data, stream)
    return stream.getvalue()


@st.composite
def mutated_jobs(draw):
    """A valid job with a few random edits: keys deleted, values replaced by random trees, keys added."""
    job = json.loads(json.dumps(VALID_JOB))
    for _ in range(draw(st.integers(1, 4))):
        containers = []

        def walk(node):
            if isinstance(node, dict):
                containers.append(node)
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(job)
        target = draw(st.sampled_from(containers))
        action = draw(st.sampled_from(["delete", "replace", "add"]))
        if action == "delete" and target:
            del target[draw(st.sampled_from(sorted(target)))]
        elif action == "replace" and target:
            target[draw(st.sampled_from(sorted(target)))] = draw(trees)
        else:
            target[draw(st.sampled_from(KEYS) | st.text(max_size=6))] = draw(trees)
    return dump_yaml(job)


@st.composite
def corrupted_texts(draw):
    """The valid job's YAML text with characters inserted, deleted or lines duplicated: broken YAML of all kinds."""
    text = dump_yaml(VALID_JOB)
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate-line"]))
        if action == "insert":
            text = text[:position] + draw(st.sampled_from(
                ["\t", ":", "- ", "&a ", "*a", "!t ", "---\n", "{", "]", "'", '"', "\n  ", "<<: *a\n", "\x00",
                 "? ", "|", ">", "%YAML 1.2\n", "#"])) + text[position:]
        elif action == "delete":
            text = text[:position] + text[position + draw(st.integers(1, 5)):]
        else:
            lines = text.splitlines(keepends=True)
            index = draw(st.integers(0, len(lines) - 1))
            lines.insert(index, lines[index])
            text = "".join(lines)
    return text


REQUIRED = [((), "protocolVersion"), ((), "name"), ((), "type"), ((), "taskRoles"),
            (("taskRoles", "worker"), "dockerImage"), (("taskRoles", "worker"), "resourcePerInstance"),
            (("taskRoles", "worker"), "commands"), (("taskRoles", "worker", "resourcePerInstance"), "gpu"),
            (("prerequisites", 0), "uri")]
INTEGERS = [((), "jobRetryCount"), (("taskRoles", "worker"), "instances"),
            (("taskRoles", "worker", "resourcePerInstance"), "cpu"),
            (("taskRoles", "worker", "resourcePerInstance"), "memoryMB")]
CLOSED = [(), ("taskRoles", "worker"), ("taskRoles", "worker", "resourcePerInstance"),
          ("taskRoles", "worker", "completion")]
not_integers = st.one_of(st.text(max_size=5), st.lists(scalars, max_size=2), st.none(), st.booleans(),
                         st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != int(f)))


def _at(job, path):
    for token in path:
        job = job[token]
    return job


@st.composite
def broken_jobs(draw):
    """A valid job with 1-3 edits that each make it certainly invalid: a required key removed, an integer field
    given a non-integer, or an unknown key added to a closed mapping. Every one must yield an error."""
    job = json.loads(json.dumps(VALID_JOB))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["required", "integer", "unknown"]))
        try:
            if kind == "required":
                path, key = draw(st.sampled_from(REQUIRED))
                _at(job, path).pop(key, None)
            elif kind == "integer":
                path, key = draw(st.sampled_from(INTEGERS))
                _at(job, path)[key] = draw(not_integers)
            else:
                target = _at(job, draw(st.sampled_from(CLOSED)))
                key = draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in KNOWN_KEYS))
                target[key] = draw(trees)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier edit removed the container; the earlier edit already broke the job
    return dump_yaml(job)


KNOWN_KEYS = {"protocolVersion", "name", "type", "version", "contributor", "description", "prerequisites",
              "parameters", "secrets", "jobRetryCount", "taskRoles", "deployments", "defaults", "extras", "instances",
              "completion", "taskRetryCount", "dockerImage", "data", "output", "script", "extraContainerOptions",
              "resourcePerInstance", "commands", "cpu", "memoryMB", "gpu", "ports", "minFailedInstances",
              "minSucceededInstances"}


def assert_well_formed(result):
    for d in result.diagnostics:
        assert d.code and d.message and "\n" not in d.message
        if d.is_error and d.code != "E107":
            assert d.line is not None and d.column is not None, d


def assert_same_verdict(text: str):
    """The fast path may only shortcut a clean file: whatever it returns equals the located path's answer."""
    fast = validate_text(text, "p.yaml")
    located = validate_located(text, "p.yaml")
    assert fast.diagnostics == located.diagnostics
    data = load_fast(text)
    if data is not None and located.data == data:
        # the schema shortcut: jsonschema-rs's verdict stands in for jsonschema's only when the two agree
        from paictl.protocol.schema_check import _validator
        from paictl.schemas import fast_validator

        assert fast_validator("job").is_valid(data) == (not any(_validator("job").iter_errors(data)))
    assert_well_formed(fast)
    return fast


@PROFILE
@given(mutated_jobs())
def test_mutated_jobs_get_diagnostics_never_exceptions(text):
    assert_same_verdict(text)


@PROFILE
@given(corrupted_texts())
def test_corrupted_yaml_gets_diagnostics_never_exceptions(text):
    assert_same_verdict(text)


@settings(max_examples=300, deadline=2000, derandomize=True)
@given(st.binary(max_size=300))
def test_arbitrary_bytes(raw):
    assert_well_formed(validate_bytes(raw, "b.yaml"))


@settings(max_examples=500, deadline=2000, derandomize=True)
@given(st.dictionaries(st.text(max_size=5), trees, max_size=4))
def test_fast_and_located_loaders_build_the_same_data(data):
    text = dump_yaml(data)
    fast = load_fast(text)
    try:
        located = load_located(text, "x").data
    except DocumentError:
        assert fast is None
        return
    if fast is not None:
        assert fast == located


@settings(parent=PROFILE, max_examples=2000)
@given(mutated_jobs())
def test_semantic_checks_take_any_mutated_job(text):
    try:
        data = load_located(text, "x").data
    except DocumentError:
        return
    check_semantics(data)


@settings(parent=PROFILE, max_examples=1000)
@given(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), trees, max_size=6))
def test_semantic_checks_take_any_tree(data):
    check_semantics(data)


@PROFILE
@given(broken_jobs())
def test_certainly_broken_jobs_always_get_a_located_error(text):
    result = assert_same_verdict(text)
    assert not result.ok and all(d.line and d.column for d in result.errors)
