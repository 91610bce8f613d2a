"""The Kubernetes API server emulator (tests/kube_emulator) seen through the official `kubernetes` python client:
the emulator is only useful if a real client gets what a real API server would answer. This file: the REST side."""

from __future__ import annotations

import threading

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, dynamic, watch  # noqa: E402

from kube_emulator.samples import (  # noqa: E402
    FC_GROUP, FC_PLURAL, FC_VERSION, MARS_GROUP, MARS_VERSION, create_framework, error_of, follow_states, framework,
    message, reason)
from kube_emulator import samples  # noqa: E402

api, core, custom = samples.api, samples.core, samples.custom  # fixtures: python clients for the emulator


# -- discovery and CRUD ----------------------------------------------------------------------------------------------

def test_discovery_lists_the_kinds_paictl_uses(api):
    resources = dynamic.DynamicClient(api).resources
    fw = resources.get(api_version=f"{FC_GROUP}/{FC_VERSION}", kind="Framework")
    assert (fw.name, fw.namespaced) == ("frameworks", True)
    assert {"create", "get", "list", "watch", "patch", "delete"} <= set(fw.verbs)
    assert resources.get(api_version=f"{MARS_GROUP}/{MARS_VERSION}", kind="MarsJob").name == "marsjobs"
    assert resources.get(api_version="scheduling.k8s.io/v1", kind="PriorityClass").namespaced is False
    for kind in ("Pod", "Secret", "ConfigMap", "Service"):
        assert resources.get(api_version="v1", kind=kind).namespaced
    assert client.VersionApi(api).get_code().git_version.startswith("v1.")


def test_create_get_list_replace_delete_a_secret(emulator, core):
    created = core.create_namespaced_secret("default", {"metadata": {"name": "creds", "labels": {"a": "b"}},
                                                        "stringData": {"token": "s3cr3t"}})
    assert created.data == {"token": "czNjcjN0"} and created.metadata.uid and created.metadata.resource_version
    assert reason(error_of(core.create_namespaced_secret, "default", {"metadata": {"name": "creds"}})) == \
        "AlreadyExists"
    assert [r.method for r in emulator.requests if b"s3cr3t" in r.body] == ["POST"]  # request bodies are kept
    fetched = core.read_namespaced_secret("creds", "default")
    assert fetched.metadata.resource_version == created.metadata.resource_version
    assert [s.metadata.name for s in core.list_namespaced_secret("default", label_selector="a=b").items] == ["creds"]
    assert core.list_namespaced_secret("default", label_selector="a!=b").items == []
    fetched.data["extra"] = "eA=="
    replaced = core.replace_namespaced_secret("creds", "default", fetched)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    stale = error_of(core.replace_namespaced_secret, "creds", "default", fetched)
    assert stale.status == 409 and "the object has been modified" in message(stale)
    core.delete_namespaced_secret("creds", "default")
    missing = error_of(core.read_namespaced_secret, "creds", "default")
    assert missing.status == 404 and reason(missing) == "NotFound" and message(missing) == 'secrets "creds" not found'


def test_list_pages_with_limit_and_continue(core):
    for index in range(5):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm{index}"}})
    first = core.list_namespaced_config_map("default", limit=2)
    assert [c.metadata.name for c in first.items] == ["cm0", "cm1"] and first.metadata._continue
    rest = core.list_namespaced_config_map("default", limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["cm2", "cm3", "cm4"] and not rest.metadata._continue


def test_invalid_framework_is_refused_with_the_crd_rules(custom):
    bad = framework("has-dash")
    error = error_of(create_framework, custom, bad)
    assert error.status == 422 and reason(error) == "Invalid" and "metadata.name" in message(error)
    worse = framework("ok")
    worse["spec"]["executionType"] = "Go"
    assert 'spec.executionType: Unsupported value: "Go"' in message(error_of(create_framework, custom, worse))


def test_create_in_a_missing_namespace_is_not_found(core):
    error = error_of(core.create_namespaced_config_map, "nowhere", {"metadata": {"name": "x"}})
    assert error.status == 404 and message(error) == 'namespaces "nowhere" not found'


def test_dry_run_creates_patches_and_deletes_nothing(emulator, custom):
    answer = custom.create_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, framework("dry"),
                                                    dry_run="All")
    assert answer["metadata"]["name"] == "dry"
    assert emulator.get_object(f"{FC_GROUP}/{FC_VERSION}", "Framework", "default", "dry") is None
    create_framework(custom, framework("real"))
    before = emulator.get_object(f"{FC_GROUP}/{FC_VERSION}", "Framework", "default", "real")
    patched = custom.patch_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "real",
                                                    {"spec": {"executionType": "Stop"}}, dry_run="All")
    assert patched["spec"]["executionType"] == "Stop"
    custom.delete_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "real", dry_run="All")
    assert emulator.get_object(f"{FC_GROUP}/{FC_VERSION}", "Framework", "default", "real") == before


def test_patch_formats(api, custom):
    create_framework(custom, framework("pt"))
    merged = custom.patch_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "pt",
                                                   {"metadata": {"labels": {"x": "1"}}})
    assert merged["metadata"]["labels"] == {"x": "1"}
    patched = custom.patch_namespaced_custom_object(
        FC_GROUP, FC_VERSION, "default", FC_PLURAL, "pt",
        [{"op": "test", "path": "/spec/taskRoles/0/name", "value": "worker"},
         {"op": "replace", "path": "/spec/executionType", "value": "Stop"}],
        _content_type="application/json-patch+json")
    assert patched["spec"]["executionType"] == "Stop"
    failed_test = error_of(custom.patch_namespaced_custom_object, FC_GROUP, FC_VERSION, "default", FC_PLURAL, "pt",
                           [{"op": "test", "path": "/spec/taskRoles/0/name", "value": "master"}],
                           _content_type="application/json-patch+json")
    assert failed_test.status == 422
    frameworks = dynamic.DynamicClient(api).resources.get(api_version=f"{FC_GROUP}/{FC_VERSION}", kind="Framework")
    strategic = error_of(frameworks.patch, name="pt", namespace="default", body={"spec": {"description": "x"}})
    assert strategic.status == 415  # a real API server refuses strategic merge patch on custom resources


# -- server-side apply ---------------------------------------------------------------------------------------------

def apply_framework(custom, body: dict, manager: str, force: bool = False) -> dict:
    return custom.patch_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, body["metadata"]["name"],
                                                 body, field_manager=manager, force=force,
                                                 _content_type="application/apply-patch+yaml")


def test_server_side_apply_owns_fields_and_reports_conflicts(emulator, custom):
    # An apply that creates answers 201, which CustomObjectsApi.patch_* (declared for 200 only) returns as None.
    assert apply_framework(custom, framework("ssa"), "paictl") is None
    assert emulator.requests[-1].status == 201
    created = custom.get_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, "ssa")
    assert [(m["manager"], m["operation"]) for m in created["metadata"]["managedFields"]] == [("paictl", "Apply")]
    assert "f:executionType" in created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
    again = apply_framework(custom, framework("ssa"), "paictl")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    shared = apply_framework(custom, framework("ssa"), "someone")  # same values: ownership is shared, no conflict
    assert {m["manager"] for m in shared["metadata"]["managedFields"]} == {"paictl", "someone"}
    stop = framework("ssa", execution="Stop")
    conflict = error_of(apply_framework, custom, stop, "other")
    assert conflict.status == 409 and reason(conflict) == "Conflict"
    assert message(conflict) == ('Apply failed with 2 conflicts: conflicts with "paictl":\n- .spec.executionType\n'
                                 'conflicts with "someone":\n- .spec.executionType')
    alone = error_of(apply_framework, custom, framework("ssa", execution="Create"), "paictl")
    assert message(alone) == 'Apply failed with 1 conflict: conflict with "someone": .spec.executionType'
    forced = apply_framework(custom, stop, "other", force=True)
    assert forced["spec"]["executionType"] == "Stop"
    owners = {m["manager"]: m["fieldsV1"] for m in forced["metadata"]["managedFields"]}
    assert "f:executionType" in owners["other"]["f:spec"] and "f:executionType" not in owners["paictl"]["f:spec"]


def test_apply_keeps_the_status_the_controller_wrote(emulator, custom):
    emulator.scenario("Framework", "keep", "running", seconds=600)
    apply_framework(custom, framework("keep"), "paictl")
    states, obj = follow_states(custom, "keep", final=lambda o: (o.get("status") or {}).get("state") ==
                                "AttemptRunning")
    assert obj["status"]["state"] == "AttemptRunning"
    described = framework("keep")
    described["spec"]["description"] = "re-applied"
    after = apply_framework(custom, described, "paictl")
    assert after["status"]["state"] in ("AttemptRunning", "AttemptDeletionPending", "AttemptCompleted", "Completed")
    assert after["spec"]["description"] == "re-applied"


def test_apply_removes_fields_the_manager_stopped_applying(custom):
    body = framework("rm")
    body["metadata"]["labels"] = {"keep": "1", "drop": "1"}
    apply_framework(custom, body, "paictl")
    body["metadata"]["labels"] = {"keep": "1"}
    assert apply_framework(custom, body, "paictl")["metadata"]["labels"] == {"keep": "1"}


# -- watches -------------------------------------------------------------------------------------------------------

def test_watch_resumes_from_a_resource_version(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "w"}, "data": {"v": "1"}})
    listed = core.list_namespaced_config_map("default")
    core.patch_namespaced_config_map("w", "default", {"data": {"v": "2"}})
    core.delete_namespaced_config_map("w", "default")
    events = [(e["type"], e["object"].data) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=listed.metadata.resource_version,
        timeout_seconds=1)]
    assert events == [("MODIFIED", {"v": "2"}), ("DELETED", {"v": "2"})]


def test_watch_without_resource_version_starts_with_the_current_objects(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", timeout_seconds=1)]
    assert events == [("ADDED", "a")]


def test_watch_sends_bookmarks_when_asked(emulator, core):
    listed = core.list_namespaced_config_map("default")
    stream = watch.Watch().stream(core.list_namespaced_config_map, "default", allow_watch_bookmarks=True,
                                  resource_version=listed.metadata.resource_version, timeout_seconds=1,
                                  deserialize=False)
    kinds = [event["type"] for event in stream]
    assert "BOOKMARK" in kinds


def test_watch_from_an_expired_resource_version_gets_410(emulator, core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "old"}})
    old = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("old", "default", {"data": {"v": "2"}})
    emulator.expire_history()
    error = error_of(lambda: list(watch.Watch().stream(core.list_namespaced_config_map, "default",
                                                       resource_version=old, timeout_seconds=1)))
    assert error.status == 410 and "too old resource version" in error.reason
    fresh = core.list_namespaced_config_map("default").metadata.resource_version
    assert list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=fresh,
                                     timeout_seconds=1)) == []


def test_dropped_watch_breaks_the_client_stream(emulator, core):
    listed = core.list_namespaced_config_map("default")
    outcome: dict = {}

    def consume() -> None:
        try:
            for _ in watch.Watch().stream(core.list_namespaced_config_map, "default",
                                          resource_version=listed.metadata.resource_version, timeout_seconds=30):
                pass
            outcome["ended"] = "cleanly"
        except Exception as error:  # the client's own exception for a broken chunked stream
            outcome["ended"] = type(error).__name__

    thread = threading.Thread(target=consume)
    thread.start()
    for _ in range(1500):
        if emulator.count(watch=True) == 1 and emulator.requests[-1].status == 200:
            break
        threading.Event().wait(0.02)
    else:
        raise AssertionError("the watch never started streaming")
    emulator.drop_watches()
    thread.join(20)  # a loaded machine may take a while to run the client's thread; its own timeout is 30 s
    assert not thread.is_alive() and outcome["ended"] != "cleanly"
    assert emulator.count(watch=True) == 1


# -- injected faults -----------------------------------------------------------------------------------------------

def test_fail_next_returns_500_then_recovers(emulator, core):
    emulator.fail_next(2, status=500, method="GET", path_contains="/configmaps")
    for _ in range(2):
        error = error_of(core.list_namespaced_config_map, "default")
        assert error.status == 500 and reason(error) == "InternalError"
    assert core.list_namespaced_config_map("default").items == []
    core.list_namespaced_secret("default")  # other paths were never affected
    assert emulator.count(method="GET", path_contains="/configmaps") == 3


def test_forbidden_verb_gets_403(emulator, custom, core):
    emulator.forbid("create", "frameworks")
    error = error_of(create_framework, custom, framework("nope"))
    assert error.status == 403 and reason(error) == "Forbidden"
    assert 'cannot create resource "frameworks" in API group "frameworkcontroller.microsoft.com"' in message(error)
    custom.list_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL)  # other verbs still allowed


def test_uninstalled_crd_is_404_and_gone_from_discovery(emulator, api, custom):
    create_framework(custom, framework("gone"))
    emulator.uninstall("frameworks")
    error = error_of(custom.list_namespaced_custom_object, FC_GROUP, FC_VERSION, "default", FC_PLURAL)
    assert error.status == 404
    with pytest.raises(dynamic.exceptions.ResourceNotFoundError):
        dynamic.DynamicClient(api).resources.get(api_version=f"{FC_GROUP}/{FC_VERSION}", kind="Framework")
    emulator.install("frameworks")
    assert custom.list_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL)["items"] == []


# -- deletion ------------------------------------------------------------------------------------------------------

def owned_config_map(core, name: str, owner) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "v1", "kind": "Secret", "name": owner.metadata.name, "uid": owner.metadata.uid,
        "blockOwnerDeletion": True}]}})


def test_finalizers_hold_an_object_until_removed(emulator, core):
    core.create_namespaced_secret("default", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    answer = core.delete_namespaced_secret("held", "default")  # a plain dict in client v37
    assert answer["kind"] == "Secret" and answer["metadata"]["deletionTimestamp"]  # not gone: the object comes back
    assert core.read_namespaced_secret("held", "default").metadata.deletion_timestamp
    core.patch_namespaced_secret("held", "default", {"metadata": {"finalizers": None}})
    assert error_of(core.read_namespaced_secret, "held", "default").status == 404


def test_background_and_orphan_deletion_of_dependents(emulator, core):
    owner = core.create_namespaced_secret("default", {"metadata": {"name": "owner"}})
    owned_config_map(core, "dependent", owner)
    core.delete_namespaced_secret("owner", "default", propagation_policy="Orphan")
    orphan = core.read_namespaced_config_map("dependent", "default")
    assert orphan.metadata.owner_references is None
    owner = core.create_namespaced_secret("default", {"metadata": {"name": "owner2"}})
    owned_config_map(core, "dependent2", owner)
    answer = core.delete_namespaced_secret("owner2", "default")
    assert (answer["kind"], answer["status"], answer["details"]["name"]) == ("Status", "Success", "owner2")
    for _ in range(100):
        if not [c for c in core.list_namespaced_config_map("default").items if c.metadata.name == "dependent2"]:
            break
        emulator.clock.sleep(1)
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["dependent"]
