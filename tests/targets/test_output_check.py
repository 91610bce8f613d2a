"""Output validity: every object `compile` emits passes its schema, and a broken one is reported as paictl's bug.

The Framework schema is checked against upstream's own example Frameworks too, so that it is no stricter than
FrameworkController where it should not be.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import os
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import CORPUS, ROOT, corpus_files, needs_corpus
from paictl.errors import InternalError, InvalidJobError, PaictlError
from paictl.targets import output_check
from paictl.targets.output_check import check_objects, object_errors

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
PS = ROOT / "examples" / "parameter-server.yaml"
FC_CORPUS = CORPUS / "frameworkcontroller"


def _profiles():
    from paictl.compiler.profiles import load_profile

    openpai = load_profile("openpai")
    return {"default": load_profile("default"), "openpai": openpai,
            "openpai-hived": dataclasses.replace(openpai, hived=dataclasses.replace(openpai.hived, enabled=True))}


def _compile(path: Path, profile_name: str) -> list[dict]:
    from paictl.targets.framework.target import compile_framework_file

    return compile_framework_file(path, _profiles()[profile_name])


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    """A compiled job with every kind paictl emits (Secret, PriorityClass, Framework); tests break copies of it."""
    compiled = _compile(PS, "openpai")
    assert {o["kind"] for o in compiled} == {"Secret", "PriorityClass", "Framework"}
    return compiled


def _one(objects: list[dict], kind: str) -> dict:
    return copy.deepcopy(next(o for o in objects if o["kind"] == kind))


# --- every compiled object is valid ---------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", ["default", "openpai", "openpai-hived"])
def test_every_example_compiles_to_valid_objects(profile):
    for example in EXAMPLES:
        try:
            compiled = _compile(example, profile)
        except InvalidJobError:  # a cluster-dependent misfit (e.g. HiveD cells), reported to the user as such
            continue
        check_objects(compiled)


@needs_corpus
@pytest.mark.parametrize("profile", ["default", "openpai", "openpai-hived"])
def test_every_valid_corpus_job_compiles_to_valid_objects(profile):
    checked, problems = 0, []
    for job in corpus_files("valid"):
        try:
            compiled = _compile(job, profile)
        except InvalidJobError:
            continue
        checked += 1
        problems += [f"{job.name} {o['kind']} {path}: {message}"
                     for o in compiled for path, message in object_errors(o)]
    assert problems == []
    assert checked >= 90  # nearly all of them compile; a regression that skips them all must not pass silently


# --- broken objects are caught, with the path ---------------------------------------------------------------------

def _paths(obj: dict) -> list[str]:
    return [path for path, _ in object_errors(obj)]


def test_bad_framework_name_is_caught(objects):
    framework = _one(objects, "Framework")
    framework["metadata"]["name"] = "my-job"  # FrameworkController splits pod names on '-'
    assert "/metadata/name" in _paths(framework)


def test_bad_task_role_name_is_caught(objects):
    framework = _one(objects, "Framework")
    framework["spec"]["taskRoles"][0]["name"] = "Worker"
    assert _paths(framework) == ["/spec/taskRoles/0/name"]


@pytest.mark.parametrize("number", [0, -1, 10001, "3", 1.5])
def test_bad_task_number_is_caught(objects, number):
    """0 is a "paused" role to FrameworkController but never paictl's output: a job's instances are >= 1."""
    framework = _one(objects, "Framework")
    framework["spec"]["taskRoles"][1]["taskNumber"] = number
    assert set(_paths(framework)) == {"/spec/taskRoles/1/taskNumber"}


def test_unknown_execution_type_is_caught(objects):
    framework = _one(objects, "Framework")
    framework["spec"]["executionType"] = "Go"
    [(path, message)] = object_errors(framework)
    assert path == "/spec/executionType" and "Go" in message


@pytest.mark.parametrize("pointer, value", [
    ("/spec/retryPolicy/maxRetryCount", -3),
    ("/spec/taskRoles/0/task/retryPolicy/maxRetryCount", -3),
    ("/spec/taskRoles/0/frameworkAttemptCompletionPolicy/minFailedTaskCount", -2),
    ("/spec/taskRoles/0/frameworkAttemptCompletionPolicy/minSucceededTaskCount", 2 ** 31),
    ("/spec/taskRoles/0/task/podGracefulDeletionTimeoutSec", "600"),
    ("/spec/taskRoles/0/task/retryPolicy/fancyRetryPolicy", "yes"),
])
def test_out_of_range_framework_fields_are_caught(objects, pointer, value):
    framework = _one(objects, "Framework")
    *parents, last = [int(p) if p.isdigit() else p for p in pointer.strip("/").split("/")]
    target = framework
    for part in parents:
        target = target[part]
    target[last] = value
    assert set(_paths(framework)) == {pointer}


def test_limits_that_upstream_allows_pass(objects):
    framework = _one(objects, "Framework")
    role = framework["spec"]["taskRoles"][0]
    role["frameworkAttemptCompletionPolicy"] = {"minFailedTaskCount": -1, "minSucceededTaskCount": -1}
    role["task"]["retryPolicy"]["maxRetryCount"] = -2
    role["task"]["podGracefulDeletionTimeoutSec"] = None
    role["taskNumber"] = 10000
    assert object_errors(framework) == []


def test_unknown_framework_field_is_caught(objects):
    framework = _one(objects, "Framework")
    framework["spec"]["taskRoles"][0]["task"]["podGracefulDeletionTimeout"] = 600
    [(path, message)] = object_errors(framework)
    assert path == "/spec/taskRoles/0/task" and "podGracefulDeletionTimeout" in message


def test_pod_template_unknown_field_is_caught(objects):
    framework = _one(objects, "Framework")
    framework["spec"]["taskRoles"][1]["task"]["pod"]["spec"]["containers"][0]["imagePolicy"] = "Always"
    [(path, message)] = object_errors(framework)
    assert path == "/spec/taskRoles/1/task/pod/spec/containers/0" and "imagePolicy" in message


def test_pod_template_wrong_type_is_caught(objects):
    framework = _one(objects, "Framework")
    framework["spec"]["taskRoles"][0]["task"]["pod"]["spec"]["restartPolicy"] = 3
    framework["spec"]["taskRoles"][0]["task"]["pod"]["spec"]["containers"][0]["ports"] = [{"containerPort": "80"}]
    assert sorted(_paths(framework)) == ["/spec/taskRoles/0/task/pod/spec/containers/0/ports/0/containerPort",
                                         "/spec/taskRoles/0/task/pod/spec/restartPolicy"]


def test_pod_template_annotation_keys_are_escaped_in_the_path(objects):
    framework = _one(objects, "Framework")
    framework["spec"]["taskRoles"][0]["task"]["pod"]["metadata"]["annotations"]["example.com/x"] = 1
    assert _paths(framework) == ["/spec/taskRoles/0/task/pod/metadata/annotations/example.com~1x"]


def test_privileged_is_tolerated_only_as_upstream_sends_it(objects):
    framework = _one(objects, "Framework")
    spec = framework["spec"]["taskRoles"][0]["task"]["pod"]["spec"]
    assert spec["privileged"] is False  # the openpai runtime sends it, as upstream does
    assert object_errors(framework) == []
    spec["privileged"] = True
    assert _paths(framework) == ["/spec/taskRoles/0/task/pod/spec"]


def test_bad_label_value_is_caught(objects):
    framework = _one(objects, "Framework")
    framework["metadata"]["labels"]["userName"] = "-alice"
    assert _paths(framework) == ["/metadata/labels/userName"]


def test_secret_with_non_base64_data_is_caught(objects):
    secret = _one(objects, "Secret")
    secret["data"]["secrets.yaml"] = "storageKey: replace-me"
    [(path, message)] = object_errors(secret)
    assert path == "/data/secrets.yaml" and "byte" in message


def test_secret_with_unpadded_base64_is_caught(objects):
    secret = _one(objects, "Secret")
    secret["data"]["secrets.yaml"] = base64.b64encode(b"ab").decode().rstrip("=")
    assert _paths(secret) == ["/data/secrets.yaml"]


@pytest.mark.parametrize("field, value, pointer", [
    ("type", 1, "/type"),
    ("data", ["x"], "/data"),
    ("immutable", "yes", "/immutable"),
    ("kind", "Secrets", "/kind"),
])
def test_secret_with_a_wrong_type_is_caught(objects, field, value, pointer):
    secret = _one(objects, "Secret")
    secret[field] = value
    assert pointer in _paths(secret)


def test_secret_name_must_be_a_dns_subdomain(objects):
    secret = _one(objects, "Secret")
    secret["metadata"]["name"] = "Alice_configcred"
    assert _paths(secret) == ["/metadata/name"]


def test_priority_class_value_must_be_an_integer(objects):
    priority = _one(objects, "PriorityClass")
    priority["value"] = "high"
    priority["preemptionPolicy"] = 1
    assert sorted(_paths(priority)) == ["/preemptionPolicy", "/value"]


def test_unknown_kind_is_caught():
    assert _paths({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}) == ["/kind"]


def test_check_objects_names_the_object_and_says_it_is_a_bug(objects):
    framework = _one(objects, "Framework")
    framework["spec"]["executionType"] = "Go"
    with pytest.raises(InternalError) as raised:
        check_objects([_one(objects, "Secret"), framework])
    message = str(raised.value)
    assert raised.value.exit_code == 70 and isinstance(raised.value, PaictlError)
    assert "bug in paictl" in message and "report" in message
    assert f"Framework {framework['metadata']['name']!r} at /spec/executionType:" in message
    assert "Secret" not in message


# --- the CLI ----------------------------------------------------------------------------------------------------

def test_cli_exits_70_and_prints_nothing_when_a_compiled_object_is_broken(run_cli, monkeypatch):
    from paictl.targets.framework import target as target

    real = target.compile

    def broken(*args, **kwargs):
        compiled = real(*args, **kwargs)
        compiled[-1]["spec"]["taskRoles"][0]["taskNumber"] = 0
        return compiled

    monkeypatch.setattr(target, "compile", broken)
    code, out, err = run_cli("compile", str(PS), "--profile", "openpai")
    assert code == 70
    assert out == ""
    assert err.startswith("paictl: error: this is a bug in paictl")
    assert "/spec/taskRoles/0/taskNumber" in err


def test_cli_output_passes_the_check(run_cli):
    code, out, err = run_cli("compile", str(PS), "--profile", "openpai", "--format", "json")
    assert code == 0, err
    check_objects(json.loads(out)["items"])


# --- the schemas themselves ---------------------------------------------------------------------------------------

def test_framework_schema_is_a_valid_draft_2020_12_schema():
    import jsonschema

    from paictl.schemas import load_schema, schema_names

    assert "framework" in schema_names()
    jsonschema.Draft202012Validator.check_schema(load_schema("framework"))


def _upstream_frameworks() -> list[tuple[str, dict]]:
    if not FC_CORPUS.is_dir():
        return []
    found = []
    for path in sorted(FC_CORPUS.glob("*.yaml")):
        for document in YAML(typ="safe", pure=True).load_all(path.read_text(encoding="utf-8")):
            if isinstance(document, dict) and document.get("kind") == "Framework":
                found.append((path.name, document))
    return found


@pytest.mark.skipif(not FC_CORPUS.is_dir(), reason="../shared/corpus/frameworkcontroller is not beside this checkout")
def test_framework_schema_accepts_upstream_example_frameworks():
    import jsonschema_rs

    from paictl.schemas import load_schema

    frameworks = _upstream_frameworks()
    assert len(frameworks) >= 10
    validator = jsonschema_rs.validator_for(load_schema("framework"))
    problems = [f"{name} {list(e.instance_path)}: {e.message}" for name, doc in frameworks
                for e in validator.iter_errors(doc)]
    assert problems == []


@pytest.mark.skipif(not FC_CORPUS.is_dir(), reason="../shared/corpus/frameworkcontroller is not beside this checkout")
def test_pod_template_check_finds_upstreams_misspelt_field():
    """servicestateful.yaml's `ActiveDeadlineSeconds` (for activeDeadlineSeconds) is silently dropped upstream."""
    [(_, framework)] = [f for f in _upstream_frameworks() if f[0].endswith("basic__servicestateful.yaml")]
    errors = object_errors(framework)
    assert [(p, "ActiveDeadlineSeconds" in m) for p, m in errors] == [("/spec/taskRoles/0/task/pod/spec", True)]


def test_kubernetes_schemas_are_there_for_the_pinned_version():
    folder = output_check.schema_folder()
    assert os.path.basename(folder) == f"v{output_check.KUBERNETES_VERSION}-local-strict"
    for filename in (*output_check.KIND_SCHEMAS.values(), "podtemplatespec-v1.json", "_definitions.json"):
        assert os.path.isfile(os.path.join(folder, filename)), filename


def test_needed_definitions_are_exactly_the_parsed_ones():
    """The fast partial read of _definitions.json gives the same definitions as parsing the whole file."""
    with open(os.path.join(output_check.schema_folder(), "_definitions.json"), encoding="utf-8") as handle:
        everything = json.load(handle)["$defs"]
    needed = output_check.needed_definitions()
    assert len(needed) < len(everything)
    assert {"io.k8s.api.core.v1.PodSpec", "io.k8s.api.core.v1.Container",
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"} <= needed.keys()
    assert all(needed[name] == everything[name] for name in needed)
