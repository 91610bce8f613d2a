"""The emulator held to the real kube-apiserver (tests/kube_real): the same REST requests go to both, and what each
answers (status code and Status reason, or the part of the body that matters) must agree, except where DIFFERENCES
says why they do not. A documented difference that no longer differs fails too: the list stays true.

The emulator stays for what a real server cannot do on demand (an injected 429 or 5xx, a lost answer, exact timing);
everything else the Kubernetes tests check runs on the real control plane (tests/targets/kube/test_real_*.py).
"""

from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.request
from typing import Any, Callable

import pytest

#: case -> what the real server does that the emulator does not, and why the emulator is left so
#: (../shared/reference/kubernetes-real.md lists 16 behaviours; the others are cases below that agree)
DIFFERENCES = {
    "strict-field-validation": "real: 400 BadRequest for an unknown field (default Warn: pruned, a Warning header); "
                               "emulator: accepted and kept. The emulator holds no schemas of built-in kinds; paictl "
                               "checks its objects against the CRDs' schemas itself (E-codes) and its submits run on "
                               "the real server",
    "list-map-merge": "real: two managers' items of a list-map (Service ports) merge; emulator: every list atomic, "
                      "409. paictl is the only manager of what it applies; the controllers' merges are tested on "
                      "the real plane (test_real_resubmit.py)",
    "anonymous": "real: 403 for system:anonymous under RBAC; emulator: no authentication at all (a test's `forbid()` "
                 "makes chosen verbs 403); RBAC answers are tested on the real plane (test_real_flows.py)",
    "jobset-webhook-defaults": "real: JobSet's mutating webhook stores `cpu: 1` as \"1\" and adds `protocol: TCP`; "
                               "emulator: only the defaults kinds.py sets. Re-submits compared with the stored "
                               "JobSet run on the real webhook (test_real_resubmit.py)",
    "table-and-aggregated-discovery": "real: Table rows for `as=Table` and aggregated discovery v2; emulator: the "
                                      "plain list and legacy discovery (kubectl falls back to both)",
    "controller-writes-the-spec-back": "real: FrameworkController updates the whole Framework and becomes a manager "
                                       "of .spec.taskRoles; emulator: its scripted controller writes the status "
                                       "only, and only for a scenario a test sets. Re-submits over FC's rewrite "
                                       "(R2) run on the real FrameworkController (test_real_resubmit.py)",
}


class Client:
    """One server, spoken to with plain REST as the tests' other clients do. `forget_history`: make every older
    resourceVersion too old (real: restart kube-apiserver, whose watch cache starts empty, and compact etcd; the
    emulator: `expire_history()`). `require`: skip unless the real plane runs that controller. `patience`: the
    seconds a controller is given to act (real ones on a loaded machine; the emulator's run at its own speed)."""

    def __init__(self, send: Callable[..., tuple[int, bytes]], namespace: str,
                 forget_history: Callable[[], None], require: Callable[[str], None] = lambda part: None,
                 patience: float = 5.0):
        self.send = send
        self.namespace = namespace
        self.forget_history = forget_history
        self.require = require
        self.patience = patience

    def raw(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
            anonymous: bool = False, accept: str = "application/json") -> tuple[int, bytes]:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        return self.send(method, path.format(ns=self.namespace), data, content_type, anonymous, accept)

    def __call__(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                 anonymous: bool = False, accept: str = "application/json") -> tuple[int, dict]:
        status, raw = self.raw(method, path, body, content_type, anonymous, accept)
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {"raw": raw[:200].decode(errors="replace")}
        return status, answer if isinstance(answer, dict) else {"value": answer}

    def watch(self, path: str) -> tuple[int, list[dict]]:
        """A watch that the server ends itself (`timeoutSeconds` in `path`): its status and events."""
        status, raw = self.raw("GET", path)
        return status, [json.loads(line) for line in raw.splitlines() if line.strip()]


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


def _invalid(status: int, answer: dict) -> tuple:
    """A 422's reason, the kind it names and its causes (field and type), as a client reads them."""
    details = answer.get("details") or {}
    causes = sorted({(c.get("field"), c.get("reason")) for c in details.get("causes") or []})
    return _reason(status, answer), details.get("group"), details.get("kind"), causes, answer.get("message")


def case_apply_without_field_manager(client: Client) -> tuple:
    return _invalid(*client("PATCH", CM + "/five", _configmap("five"), APPLY))


def case_dry_run_yes(client: Client) -> tuple:
    return _invalid(*client("POST", CM + "?dryRun=Yes", _configmap("six")))


def case_annotations_over_256_kib(client: Client) -> tuple:
    return _invalid(*client("POST", CM, _configmap("seven", metadata={"annotations": {"big": "x" * 262_145}})))


def case_body_over_3_mib(client: Client) -> tuple:
    status, answer = client("POST", CM, {**_configmap("eight"), "data": {"a": "y" * (3 * 1024 * 1024 + 10)}})
    return _reason(status, answer), answer.get("message")


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
    return _invalid(*added)[:4], client("GET", CM + "/ten")[0]


def case_garbage_collection(client: Client) -> tuple:
    """A dependent goes with its owner (background deletion), as the real garbage collector does it."""
    owner = client("POST", CM, _configmap("owner"))[1]
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    client("POST", CM, _configmap("dependent", metadata={"ownerReferences": [reference]}))
    client("DELETE", CM + "/owner")
    deadline = time.monotonic() + client.patience
    while client("GET", CM + "/dependent")[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    return client("GET", CM + "/dependent")[0]


def case_job_delete_without_policy(client: Client) -> tuple:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "one"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "busybox", "args": ["sleep infinity"]}]}}}}
    client("POST", "/apis/batch/v1/namespaces/{ns}/jobs", job)
    status, answer = client("DELETE", "/apis/batch/v1/namespaces/{ns}/jobs/one")
    meta = answer.get("metadata") or {}
    # the garbage collector orphans what the Job owned, takes its `orphan` finalizer away, and the Job goes
    deadline = time.monotonic() + client.patience
    while client("GET", "/apis/batch/v1/namespaces/{ns}/jobs/one")[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    return (status, answer.get("kind"), meta.get("finalizers"), bool(meta.get("deletionTimestamp")),
            client("GET", "/apis/batch/v1/namespaces/{ns}/jobs/one")[0])


def case_anonymous(client: Client) -> tuple:
    return client("GET", CM, anonymous=True)[0]


SELECTED = "labelSelector=parity%3Dyes"  # a real namespace also holds its kube-root-ca.crt ConfigMap


def _event(event: dict) -> tuple:
    """A watch event as a client reads it: type, and the object's kind, name, annotations and, for an ERROR, the
    Status's reason and code; the keys a BOOKMARK's metadata carries."""
    obj = event.get("object") or {}
    meta = obj.get("metadata") or {}
    if event.get("type") == "BOOKMARK":
        return "BOOKMARK", obj.get("kind"), sorted(meta), meta.get("annotations"), meta["resourceVersion"].isdigit()
    if event.get("type") == "ERROR":
        return "ERROR", obj.get("kind"), obj.get("reason"), obj.get("code")
    return event.get("type"), obj.get("kind"), meta.get("name")


def case_watch_with_a_bad_resource_version(client: Client) -> tuple:
    status, answer = client("GET", CM + "?watch=1&resourceVersion=abc&timeoutSeconds=2")
    return status, answer.get("kind"), answer.get("reason"), answer.get("code"), answer.get("message")


def case_watch_bookmarks(client: Client) -> tuple:
    """Without a resourceVersion the current objects come first, then a BOOKMARK marking their end; from a
    resourceVersion, no bookmark in a short watch (the real server sends one about once a minute)."""
    client("POST", CM, _configmap("marked", metadata={"labels": {"parity": "yes"}}))
    initial = client.watch(CM + f"?watch=1&{SELECTED}&allowWatchBookmarks=true&timeoutSeconds=1")
    listed = client("GET", CM + "?" + SELECTED)[1]["metadata"]["resourceVersion"]
    later = client.watch(CM + f"?watch=1&{SELECTED}&allowWatchBookmarks=true&resourceVersion={listed}"
                              "&timeoutSeconds=1")
    # A plain BOOKMARK after the initial-events-end one may come or not: the real watch cache schedules a watcher
    # still owed that marker for its next one-second bookmark tick (apiserver cache_watcher.go nextBookmarkTime,
    # case c), and whether the tick falls inside a 1 s watch is timing: one came in some runs, none in others.
    # Compared: everything up to the marker, and that nothing but plain bookmarks follows it.
    events = [_event(e) for e in initial[1]]
    marker = next((i for i, e in enumerate(initial[1]) if e.get("type") == "BOOKMARK"
                   and "k8s.io/initial-events-end" in ((e.get("object") or {}).get("metadata") or {}).get(
                       "annotations", {})), len(events))
    after = {e.get("type") for e in initial[1][marker + 1:]
             if not (e.get("type") == "BOOKMARK" and not (e.get("object") or {}).get("metadata", {}).get("annotations"))}
    return (initial[0], events[:marker + 1], sorted(after)), (later[0], [_event(e) for e in later[1]])


def case_history_forgotten(client: Client) -> tuple:
    """What is older than the server's history (real: after a kube-apiserver restart and an etcd compaction): a
    watch gets a 410 ERROR event in a 200 stream, a continue token a 410 Status offering a token that goes on from
    the current state, a list at that exact resourceVersion a 410."""
    for index in range(3):
        client("POST", CM, _configmap(f"old-{index}", metadata={"labels": {"parity": "yes"}}))
    first = client("GET", CM + f"?{SELECTED}&limit=1")[1]["metadata"]
    old = first["resourceVersion"]
    client.forget_history()
    status, events = client.watch(CM + f"?watch=1&{SELECTED}&resourceVersion={old}&timeoutSeconds=2")
    message = (events[0]["object"].get("message") or "") if events else ""
    watched = status, [_event(e) for e in events], message.startswith(f"too old resource version: {old} (")
    expired = client("GET", CM + f"?{SELECTED}&limit=1&continue={first['continue']}")
    token = (expired[1].get("metadata") or {}).get("continue")
    onward = client("GET", CM + f"?{SELECTED}&limit=5&continue={token}") if token else (0, {})
    exact = client("GET", CM + f"?{SELECTED}&resourceVersion={old}&resourceVersionMatch=Exact")
    return (watched, _reason(*expired), expired[1].get("message", "")[:60],
            sorted(i["metadata"]["name"] for i in onward[1].get("items", [])), _reason(*exact),
            exact[1].get("message"))


SECRETS = "/api/v1/namespaces/{ns}/secrets"  # a new namespace holds none (ConfigMaps: kube-root-ca.crt)


def case_pages_are_one_snapshot(client: Client) -> tuple:
    """Every page of a list is of the first page's resourceVersion: what changed in between is not seen."""
    for index in range(4):
        client("POST", SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"s-{index}"}})
    first = client("GET", SECRETS + "?limit=2")[1]
    client("POST", SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s-1a"}})
    client("DELETE", SECRETS + "/s-3")
    client("PATCH", SECRETS + "/s-2", {"metadata": {"labels": {"changed": "yes"}}}, "application/merge-patch+json")
    second = client("GET", SECRETS + f"?limit=2&continue={first['metadata']['continue']}")[1]
    fresh = client("GET", SECRETS)[1]

    def page(answer: dict) -> tuple:
        meta = answer["metadata"]
        return ([(i["metadata"]["name"], i["metadata"].get("labels")) for i in answer["items"]],
                meta.get("remainingItemCount"), bool(meta.get("continue")))
    return (page(first), page(second), second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"],
            [i["metadata"]["name"] for i in fresh["items"]])


def _pod(name: str) -> dict:
    """A pod no node can take (the scheduler leaves it Pending, on no node)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeSelector": {"paictl.dev/no-such-node": "yes"},
                     "containers": [{"name": "main", "image": "busybox"}]}}


def case_logs_of_a_pod_on_no_node(client: Client) -> tuple:
    pods = "/api/v1/namespaces/{ns}/pods"
    created = client("POST", pods, _pod("waiting"))[0]
    log = client.raw("GET", pods + "/waiting/log")
    wrong = client("GET", pods + "/waiting/log?container=nope")
    client("DELETE", pods + "/waiting?gracePeriodSeconds=0")
    return created, log, _reason(*wrong), wrong[1].get("message")


def case_logs_of_a_pod_that_is_gone(client: Client) -> tuple:
    status, answer = client("GET", "/api/v1/namespaces/{ns}/pods/gone/log")
    return _reason(status, answer), answer.get("message"), answer.get("details")


def case_jobset_webhook_defaults(client: Client) -> tuple:
    client.require("jobset")
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "defaults"},
              "spec": {"replicatedJobs": [{"name": "main", "replicas": 1, "template": {"spec": {
                  "template": {"spec": {"restartPolicy": "Never", "containers": [{
                      "name": "main", "image": "busybox", "ports": [{"containerPort": 80}],
                      "resources": {"limits": {"cpu": 1}}}]}}}}}]}}
    status, stored = client("POST", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets?dryRun=All", jobset)
    container = stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    return status, container["resources"]["limits"]["cpu"], container["ports"]


def case_controller_writes_the_spec_back(client: Client) -> tuple:
    client.require("frameworkcontroller")
    frameworks = "/apis/frameworkcontroller.microsoft.com/v1/namespaces/{ns}/frameworks"
    framework = {"apiVersion": "frameworkcontroller.microsoft.com/v1", "kind": "Framework",
                 "metadata": {"name": "rewritten"}, "spec": {
                     "executionType": "Start", "retryPolicy": {"fancyRetryPolicy": False, "maxRetryCount": 0},
                     "taskRoles": [{"name": "main", "taskNumber": 1, "frameworkAttemptCompletionPolicy": {
                         "minFailedTaskCount": 1, "minSucceededTaskCount": -1},
                         "task": {"pod": {"spec": {"restartPolicy": "Never", "containers": [
                             {"name": "main", "image": "busybox", "resources": {"limits": {"cpu": 1}}}]}}}}]}}
    client("PATCH", frameworks + "/rewritten?fieldManager=paictl", framework, APPLY)

    def managers() -> dict:
        stored = client("GET", frameworks + "/rewritten")[1]
        return {entry["manager"]: sorted(entry["fieldsV1"].get("f:spec", {}))
                for entry in stored["metadata"].get("managedFields") or []}
    deadline = time.monotonic() + client.patience
    while "frameworkcontroller" not in managers() and time.monotonic() < deadline:
        time.sleep(0.2)
    return managers().get("frameworkcontroller")


def case_table_and_aggregated_discovery(client: Client) -> tuple:
    table = client("GET", CM, accept="application/json;as=Table;v=v1;g=meta.k8s.io")[1].get("kind")
    discovery = client("GET", "/apis", accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                                              "application/json")[1].get("kind")
    return table, discovery


CASES = {name[len("case_"):].replace("_", "-"): function for name, function in sorted(globals().items())
         if name.startswith("case_")}


def _real_sender(plane):
    def send(method, path, data, content_type, anonymous, accept):
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
        status, _, body = plane.raw(method, path, data, content_type=content_type, headers={"Accept": accept})
        return status, body
    return send


def _etcd(plane, path: str, body: dict) -> dict:
    """A call to etcd's JSON gateway."""
    request = urllib.request.Request(f"http://127.0.0.1:{plane.ports['etcd']}{path}",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _compact_etcd(plane) -> None:
    """etcd's own compaction: every revision before the current one is gone."""
    revision = _etcd(plane, "/v3/kv/range", {"key": "Lw=="})["header"]["revision"]  # any key: the header says it
    _etcd(plane, "/v3/kv/compaction", {"revision": revision, "physical": True})


def _forget_real_history(plane) -> Callable[[], None]:
    def forget() -> None:
        # One write first (a key outside the API server's /registry): the new server's watch cache starts at the
        # revision etcd is at, and were that still the test's last resourceVersion, the cache would serve it. A
        # graceful stop wrote meanwhile (its lease); a killed server does not.
        _etcd(plane, "/v3/kv/put", {"key": base64.b64encode(b"/paictl-tests/history").decode(),
                                    "value": base64.b64encode(str(time.time()).encode()).decode()})
        plane.restart_apiserver()  # the watch cache starts empty
        _compact_etcd(plane)  # and etcd keeps no older revision for a list or a continue token
    return forget


def _emulator_sender(emulator):
    port = int(emulator.url.rsplit(":", 1)[1])

    def send(method, path, data, content_type, anonymous, accept):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request(method, path, body=data, headers={"Content-Type": content_type, "Accept": accept})
            response = connection.getresponse()
            return response.status, response.read()
        except (ConnectionError, http.client.HTTPException) as error:
            return 0, str(error).encode()
        finally:
            connection.close()
    return send


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_emulator_answers_as_the_real_api_server(case, real_cluster, emulator):
    emulator.bookmark_interval = 60.0  # the fixture's faster bookmarks are a timing lever; this is the default
    real = CASES[case](Client(_real_sender(real_cluster.plane), real_cluster.namespace,
                              _forget_real_history(real_cluster.plane), real_cluster.require, patience=60))
    emulated = CASES[case](Client(_emulator_sender(emulator), "default", emulator.expire_history))
    if case in DIFFERENCES:
        assert real != emulated, f"{case} is documented as a difference ({DIFFERENCES[case]}) but both answer {real}"
    else:
        assert real == emulated, f"{case}: the real API server answers {real}, the emulator {emulated}"


def test_every_documented_difference_has_a_case():
    assert set(DIFFERENCES) <= set(CASES)
