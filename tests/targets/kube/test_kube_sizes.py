"""Objects too big for the cluster are refused before anything is written (issue 28: etcd's 1.5 MiB).

- etcd refuses a request over --max-request-bytes (1.5 MiB by default; etcd embed/config.go
  DefaultMaxRequestBytes), which the API server passes on as "etcdserver: request is too large";
- kubernetes pkg/apis/core/validation/validation.go ValidateSecret / ValidateConfigMap: the data's values in all
  at most core.MaxSecretSize = 1 MiB (pkg/apis/core/types.go), else 422 "Too long".
The emulator enforces both, so the checks are also seen to match what the server would do.
"""

from __future__ import annotations

import base64

import pytest

from paictl.errors import ClusterError

pytest.importorskip("kubernetes")

FC = "frameworkcontroller.microsoft.com/v1"


def _framework(command: str) -> dict:
    return {"apiVersion": FC, "kind": "Framework", "metadata": {"name": "big", "namespace": "default"},
            "spec": {"executionType": "Start", "retryPolicy": {"fancyRetryPolicy": False, "maxRetryCount": 0},
                     "taskRoles": [{"name": "main", "taskNumber": 1, "frameworkAttemptCompletionPolicy": {
                         "minFailedTaskCount": 1, "minSucceededTaskCount": -1}, "task": {"pod": {"spec": {
                             "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", command]}]
                         }}}}]}}


def _secret(size: int) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big-secret", "namespace": "default"},
            "data": {"blob": base64.b64encode(b"s" * size).decode()}}


def test_a_framework_over_etcds_limit_is_refused_before_any_write(emulator):
    from paictl.targets.kube.apply import apply_objects
    from paictl.targets.kube.connection import connect

    cluster = connect(kubeconfig=str(emulator.kubeconfig))
    with pytest.raises(ClusterError, match=r"^framework\.frameworkcontroller\.microsoft\.com/big: it is \d+ bytes; "
                                           r"etcd stores at most 1\.5 MiB per object"):
        apply_objects(cluster, [_secret(10), _framework("x" * 1_700_000)], dry_run=False)
    assert emulator.count("PATCH") == 0 and emulator.list_objects("v1", "Secret", "default") == []
    from kube_emulator.errors import ApiError

    with pytest.raises(ApiError, match="etcdserver: request is too large"):  # what the server would have said
        emulator.create_object(_framework("x" * 1_700_000))


def test_a_secret_over_one_mib_is_refused_by_size_only(emulator):
    from paictl.targets.kube.apply import apply_objects
    from paictl.targets.kube.connection import connect

    cluster = connect(kubeconfig=str(emulator.kubeconfig))
    with pytest.raises(ClusterError) as raised:
        apply_objects(cluster, [_secret(1024 * 1024 + 1), _framework("true")], dry_run=False)
    assert str(raised.value).startswith("secret/big-secret: its data is 1048577 bytes; Kubernetes keeps at most "
                                        "1048576 bytes (1 MiB) in a Secret")
    assert "sss" not in str(raised.value)
    assert emulator.count("PATCH") == 0
    from kube_emulator.errors import ApiError

    with pytest.raises(ApiError, match="Too long: must have at most 1048576 bytes"):
        emulator.create_object(_secret(1024 * 1024 + 1))
    apply_objects(cluster, [_secret(1024 * 1024), _framework("true")], dry_run=False)  # the limit itself is fine
