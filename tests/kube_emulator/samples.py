"""Sample objects and watch helpers for tests that drive the emulator with the official python client (shared by
the emulator's own tests and usable by paictl's)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

FC_GROUP, FC_VERSION, FC_PLURAL = "frameworkcontroller.microsoft.com", "v1", "frameworks"
MARS_GROUP, MARS_VERSION = "training.kubedl.io", "v1alpha1"


def framework(name: str, tasks: int = 1, task_retries: int = 0, framework_retries: int = 0, fancy: bool = False,
              execution: str = "Start") -> dict:
    return {
        "apiVersion": f"{FC_GROUP}/{FC_VERSION}", "kind": "Framework", "metadata": {"name": name},
        "spec": {"executionType": execution,
                 "retryPolicy": {"fancyRetryPolicy": False, "maxRetryCount": framework_retries},
                 "taskRoles": [{"name": "worker", "taskNumber": tasks,
                                "frameworkAttemptCompletionPolicy": {"minFailedTaskCount": 1,
                                                                     "minSucceededTaskCount": -1},
                                "task": {"retryPolicy": {"fancyRetryPolicy": fancy, "maxRetryCount": task_retries},
                                         "podGracefulDeletionTimeoutSec": 600,
                                         "pod": {"metadata": {"labels": {"app": "{{FC_FRAMEWORK_NAME}}"}},
                                                 "spec": {"restartPolicy": "Never", "containers": [
                                                     {"name": "main", "image": "busybox",
                                                      "command": ["sh", "-c", "echo hi"]}]}}}}]},
    }


def marsjob(name: str, workers: int = 1) -> dict:
    def replica(count: int) -> dict:
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"spec": {"containers": [{"name": "mars", "image": "mars:latest"}]}}}

    return {"apiVersion": f"{MARS_GROUP}/{MARS_VERSION}", "kind": "MarsJob", "metadata": {"name": name},
            "spec": {"marsReplicaSpecs": {"Scheduler": replica(1), "WebService": replica(1),
                                          "Worker": replica(workers)}}}


# Fixtures; a test module takes them with `api, core, custom = samples.api, samples.core, samples.custom`.

@pytest.fixture
def api(emulator):
    return config.new_client_from_config(config_file=str(emulator.kubeconfig))


@pytest.fixture
def core(api):
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api):
    return client.CustomObjectsApi(api)


ATTEMPT = ["AttemptCreationPending", "AttemptCreationRequested", "AttemptPreparing", "AttemptRunning",
           "AttemptDeletionPending", "AttemptDeletionRequested", "AttemptDeleting", "AttemptCompleted"]


def create_framework(custom, body: dict) -> dict:
    return custom.create_namespaced_custom_object(FC_GROUP, FC_VERSION, "default", FC_PLURAL, body)


def follow_states(custom, name: str, final=lambda obj: (obj.get("status") or {}).get("state") == "Completed",
                  plural: str = FC_PLURAL, group: str = FC_GROUP, version: str = FC_VERSION, timeout: int = 20,
                  state=lambda obj: (obj.get("status") or {}).get("state"), since: dict | None = None):
    """Watch one object (from the resourceVersion of `since`, else from now) until `final(obj)`; returns (distinct
    successive states, last object)."""
    states, last = [], None
    start = {"resource_version": since["metadata"]["resourceVersion"]} if since else {}
    stream = watch.Watch().stream(custom.list_namespaced_custom_object, group, version, "default", plural,
                                  field_selector=f"metadata.name={name}", timeout_seconds=timeout, **start)
    for event in stream:
        last = event["object"]
        current = state(last)
        if current is not None and (not states or states[-1] != current):
            states.append(current)
        if final(last):
            break
    return states, last


def error_of(call, *args, **kwargs) -> ApiException:
    """The ApiException `call(*args, **kwargs)` raises (AssertionError if it raises none)."""
    try:
        call(*args, **kwargs)
    except ApiException as error:
        return error
    raise AssertionError(f"{getattr(call, '__name__', call)} raised no ApiException")


def reason(error: ApiException) -> str:
    return json.loads(error.body)["reason"]


def message(error: ApiException) -> str:
    return json.loads(error.body)["message"]


def mars_state(obj: dict):
    conditions = (obj.get("status") or {}).get("conditions") or []
    return conditions[-1]["type"] if conditions else None


def mars_done(obj: dict) -> bool:
    return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def create_marsjob(custom, body: dict) -> dict:
    return custom.create_namespaced_custom_object(MARS_GROUP, MARS_VERSION, "default", "marsjobs", body)


def follow_mars(custom, name: str, final=mars_done, since: dict | None = None):
    return follow_states(custom, name, final=final, plural="marsjobs", group=MARS_GROUP, version=MARS_VERSION,
                         state=mars_state, since=since)
