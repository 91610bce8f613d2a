"""The emulator held to the real kube-apiserver (tests/kube_real): the same REST requests go to both, and what each
answers (status code and Status reason, or the part of the body that matters) must agree, except where DIFFERENCES
says why they do not. A documented difference that no longer differs fails too: the list stays true.

The emulator stays for what a real server cannot do on demand (an injected 429 or 5xx, a lost answer, exact timing);
everything else the Kubernetes tests check runs on the real control plane (tests/targets/kube/test_real_*.py).
"""

from __future__ import annotations

import http.client
import json
import time
from typing import Any, Callable

import pytest

#: case -> what the real server does that the emulator does not (../shared/reference/kubernetes-real.md)
DIFFERENCES = {
    "apply-without-field-manager": "real: 422 Invalid (FieldValueRequired); emulator: 400",
    "dry-run-yes": "real: 422 Invalid (only dryRun=All exists); emulator: 400",
    "annotations-over-256-kib": "real: 422 Too long; emulator: accepted (paictl refuses such a job at compile, E610)",
    "body-over-3-mib": "real: 413 before decoding; emulator: 422",
    "strict-field-validation": "real: 400 BadRequest for an unknown field; emulator: accepted and kept",
    "list-map-merge": "real: two managers' items of a list-map (Service ports) merge; emulator: every list atomic, "
                      "409",
    "finalizer-on-deleting-object": "real: 422 (no new finalizer once deletion started); emulator: accepted",
    "anonymous": "real: 403 for system:anonymous under RBAC; emulator: allowed",
    "job-delete-without-policy": "real: the Job comes back with a deletionTimestamp and the `orphan` finalizer (its "
                                 "pods are kept); emulator: a Status, the Job gone at once",
}


class Client:
    """One server, spoken to with plain REST as the tests' other clients do."""

    def __init__(self, send: Callable[..., tuple[int, bytes]], namespace: str):
        self.send = send
        self.namespace = namespace

    def __call__(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                 anonymous: bool = False) -> tuple[int, dict]:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        status, raw = self.send(method, path.format(ns=self.namespace), data, content_type, anonymous)
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {"raw": raw[:200].decode(errors="replace")}
        return status, answer if isinstance(answer, dict) else {"value": answer}


def _configmap(name: str, **extra) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **extra.pop("metadata", {})},
            "data": {"a": "1"}, **extra}


def _reason(status: int, answer: dict) -> tuple:
    return status, answer.get("reason") if answer.get("kind") == "Status" else None


CM = "/api/v1/namespaces/{ns}/configmaps"
APPLY = "application/apply-patch+yaml"


def case_create_get_missing_duplicate(client: Client) -> tuple:
    created = client("POST", CM, _configmap("one"))
    got = client("GET", CM + "/one")
    missing = client("GET", CM + "/nothing")
    duplicate = client("POST", CM, _configmap("one"))
    return (_reason(*created), got[0], got[1]["data"], _reason(*missing), missing[1].get("details", {}).get("name"),
            _reason(*duplicate))


def case_server_side_apply(client: Client) -> tuple:
    first = client("PATCH", CM + "/two?fieldManager=paictl&force=false", _configmap("two"), APPLY)
    again = client("PATCH", CM + "/two?fieldManager=paictl&force=false", _configmap("two"), APPLY)
    other = client("PATCH", CM + "/two?fieldManager=someone&force=false",
                   {**_configmap("two"), "data": {"a": "2"}}, APPLY)
    causes = [c.get("field") for c in (other[1].get("details") or {}).get("causes") or []]
    dry = client("PATCH", CM + "/three?fieldManager=paictl&dryRun=All", _configmap("three"), APPLY)
    absent = client("GET", CM + "/three")
    return (first[0], again[0], again[1]["metadata"]["resourceVersion"] == first[1]["metadata"]["resourceVersion"],
            _reason(*other), causes, dry[0], absent[0])


def case_merge_patch_and_delete(client: Client) -> tuple:
    client("POST", CM, _configmap("four"))
    patched = client("PATCH", CM + "/four", {"data": {"b": "2"}}, "application/merge-patch+json")
    deleted = client("DELETE", CM + "/four")
    gone = client("GET", CM + "/four")
    return patched[0], patched[1]["data"], deleted[0], gone[0]


def case_label_selector_and_pages(client: Client) -> tuple:
    for index in range(3):
        client("POST", CM, _configmap(f"page-{index}", metadata={"labels": {"page": "yes"}}))
    first = client("GET", CM + "?labelSelector=page%3Dyes&limit=2")
    token = first[1]["metadata"].get("continue")
    second = client("GET", CM + f"?labelSelector=page%3Dyes&limit=2&continue={token}") if token else (0, {})
    names = [i["metadata"]["name"] for i in first[1]["items"] + second[1].get("items", [])]
    return first[0], bool(token), sorted(names), second[1].get("metadata", {}).get("continue") or None


def case_missing_namespace(client: Client) -> tuple:
    created = client("POST", "/api/v1/namespaces/no-such-namespace/configmaps", _configmap("x"))
    return _reason(*created), (created[1].get("details") or {}).get("kind")


def case_apply_without_field_manager(client: Client) -> tuple:
    return _reason(*client("PATCH", CM + "/five", _configmap("five"), APPLY))


def case_dry_run_yes(client: Client) -> tuple:
    return _reason(*client("POST", CM + "?dryRun=Yes", _configmap("six")))


def case_annotations_over_256_kib(client: Client) -> tuple:
    return _reason(*client("POST", CM, _configmap("seven", metadata={"annotations": {"big": "x" * 262_145}})))


def case_body_over_3_mib(client: Client) -> tuple:
    return client("POST", CM, {**_configmap("eight"), "data": {"a": "y" * (3 * 1024 * 1024 + 10)}})[0]


def case_strict_field_validation(client: Client) -> tuple:
    return _reason(*client("POST", CM + "?fieldValidation=Strict", {**_configmap("nine"), "unknownField": 1}))


def case_list_map_merge(client: Client) -> tuple:
    def service(port: int) -> dict:
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                "spec": {"clusterIP": "None", "ports": [{"name": f"p{port}", "port": port, "protocol": "TCP"}]}}

    path = "/api/v1/namespaces/{ns}/services/svc"
    client("PATCH", path + "?fieldManager=one&force=false", service(80), APPLY)
    second = client("PATCH", path + "?fieldManager=two&force=false", service(81), APPLY)
    return _reason(*second)


def case_finalizer_on_deleting_object(client: Client) -> tuple:
    client("POST", CM, _configmap("ten", metadata={"finalizers": ["paictl.dev/test"]}))
    client("DELETE", CM + "/ten")
    added = client("PATCH", CM + "/ten", {"metadata": {"finalizers": ["paictl.dev/test", "paictl.dev/another"]}},
                   "application/merge-patch+json")
    client("PATCH", CM + "/ten", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    return _reason(*added)


def case_garbage_collection(client: Client) -> tuple:
    """A dependent goes with its owner (background deletion), as the real garbage collector does it."""
    owner = client("POST", CM, _configmap("owner"))[1]
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    client("POST", CM, _configmap("dependent", metadata={"ownerReferences": [reference]}))
    client("DELETE", CM + "/owner")
    deadline = time.monotonic() + 30
    while client("GET", CM + "/dependent")[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    return client("GET", CM + "/dependent")[0]


def case_job_delete_without_policy(client: Client) -> tuple:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "one"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "busybox", "args": ["sleep infinity"]}]}}}}
    client("POST", "/apis/batch/v1/namespaces/{ns}/jobs", job)
    status, answer = client("DELETE", "/apis/batch/v1/namespaces/{ns}/jobs/one")
    client("DELETE", "/apis/batch/v1/namespaces/{ns}/jobs/one", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                                   "propagationPolicy": "Background"})
    return status, answer.get("kind"), "orphan" in (answer.get("metadata") or {}).get("finalizers", [])


def case_anonymous(client: Client) -> tuple:
    return client("GET", CM, anonymous=True)[0]


CASES = {name[len("case_"):].replace("_", "-"): function for name, function in sorted(globals().items())
         if name.startswith("case_")}


def _real_sender(plane):
    def send(method, path, data, content_type, anonymous):
        if anonymous:
            import ssl

            context = ssl.create_default_context(cafile=str(plane.dir / "ca.crt"))
            connection = http.client.HTTPSConnection("127.0.0.1", plane.ports["apiserver"], context=context,
                                                     timeout=30)
            try:
                connection.request(method, path, body=data, headers={"Content-Type": content_type})
                response = connection.getresponse()
                return response.status, response.read()
            finally:
                connection.close()
        status, _, body = plane.raw(method, path, data, content_type=content_type)
        return status, body
    return send


def _emulator_sender(emulator):
    port = int(emulator.url.rsplit(":", 1)[1])

    def send(method, path, data, content_type, anonymous):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request(method, path, body=data, headers={"Content-Type": content_type,
                                                                 "Accept": "application/json"})
            response = connection.getresponse()
            return response.status, response.read()
        except (ConnectionError, http.client.HTTPException) as error:  # the emulator drops an oversized body
            return 0, str(error).encode()
        finally:
            connection.close()
    return send


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_emulator_answers_as_the_real_api_server(case, real_cluster, emulator):
    real = CASES[case](Client(_real_sender(real_cluster.plane), real_cluster.namespace))
    emulated = CASES[case](Client(_emulator_sender(emulator), "default"))
    if case in DIFFERENCES:
        assert real != emulated, f"{case} is documented as a difference ({DIFFERENCES[case]}) but both answer {real}"
    else:
        assert real == emulated, f"{case}: the real API server answers {real}, the emulator {emulated}"


def test_every_documented_difference_has_a_case():
    assert set(DIFFERENCES) <= set(CASES)
