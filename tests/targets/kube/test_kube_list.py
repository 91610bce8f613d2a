"""Listing jobs in pages, as kubectl does (`limit` + `continue`), and across namespaces or by label.

kubernetes staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go GetList: with `limit` the answer carries
`metadata.continue` until the last page; a continue token older than the compaction window answers 410 Expired
("The provided continue parameter is too old"), after which a client lists again from the start
(k8s.io/client-go/tools/pager/pager.go List: on an expired token it falls back to a full list).
"""

from __future__ import annotations

import pytest

from paictl.targets.backend import BackendOptions

pytest.importorskip("kubernetes")

FC = "frameworkcontroller.microsoft.com/v1"


def _framework(name: str, namespace: str = "default", labels: dict | None = None) -> dict:
    return {"apiVersion": FC, "kind": "Framework",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"executionType": "Start", "retryPolicy": {"fancyRetryPolicy": False, "maxRetryCount": 0},
                     "taskRoles": [{"name": "main", "taskNumber": 1, "frameworkAttemptCompletionPolicy": {
                         "minFailedTaskCount": 1, "minSucceededTaskCount": -1},
                         "task": {"pod": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}]}}


def _backend(emulator):
    from paictl.targets.kube.backend import KubeBackend

    return KubeBackend(BackendOptions(kubeconfig=str(emulator.kubeconfig), target="framework"))


def test_jobs_are_listed_in_pages(emulator):
    for index in range(5):
        emulator.create_object(_framework(f"job{index}"))
    views = _backend(emulator).list(page_size=2)
    assert [view.name for view in views] == [f"job{index}" for index in range(5)]
    pages = [r for r in emulator.requests if r.method == "GET" and r.path.endswith("/frameworks")]
    assert [r.query.get("limit") for r in pages] == ["2", "2", "2"]
    assert [bool(r.query.get("continue")) for r in pages] == [False, True, True]


def test_an_expired_continue_token_lists_again_from_the_start(emulator):
    for index in range(5):
        emulator.create_object(_framework(f"job{index}"))
    emulator.fail_next(1, status=410, method="GET", path_contains="continue=")  # the second page's token
    backend = _backend(emulator)
    views = backend.list(page_size=2)
    assert [view.name for view in views] == [f"job{index}" for index in range(5)]
    statuses = [r.status for r in emulator.requests if r.path.endswith("/frameworks") and r.method == "GET"]
    assert statuses == [200, 410, 200, 200, 200]  # page 1, its continue expired, then pages 1-3 afresh


def test_every_namespace_and_a_label_selector(emulator):
    emulator.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}})
    emulator.create_object(_framework("herea", labels={"team": "a"}))
    emulator.create_object(_framework("thereb", "team-b", labels={"team": "b"}))
    backend = _backend(emulator)
    assert [v.name for v in backend.list()] == ["herea"]
    assert [v.name for v in backend.list(all_namespaces=True)] == ["herea", "thereb"]
    assert [v.name for v in backend.list(all_namespaces=True, label_selector="team=b")] == ["thereb"]
