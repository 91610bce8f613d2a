"""Real kubectl against the emulator: it must get, apply --server-side (with its default validation) and delete as
against a real API server, so that the emulator cannot drift into a dialect only paictl's tests speak.

Without kubectl these tests skip, except in CI (env CI set), where kubectl is required and its absence fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

KUBECTL = shutil.which("kubectl") or ("/usr/bin/kubectl" if os.path.exists("/usr/bin/kubectl") else None)

if KUBECTL is None:
    if os.environ.get("CI"):
        pytest.fail("kubectl is required in CI for the emulator cross-check", pytrace=False)
    pytest.skip("kubectl is not installed", allow_module_level=True)

FRAMEWORK = """\
apiVersion: frameworkcontroller.microsoft.com/v1
kind: Framework
metadata:
  name: demo
spec:
  executionType: {execution}
  retryPolicy: {{fancyRetryPolicy: false, maxRetryCount: 0}}
  taskRoles:
  - name: worker
    taskNumber: 1
    frameworkAttemptCompletionPolicy: {{minFailedTaskCount: 1, minSucceededTaskCount: -1}}
    task:
      retryPolicy: {{fancyRetryPolicy: false, maxRetryCount: 0}}
      pod:
        spec:
          restartPolicy: Never
          containers: [{{name: main, image: busybox}}]
"""
SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: demo-secrets
type: Opaque
data:
  token: {token}
"""


@pytest.fixture
def kubectl(emulator, tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "KUBECONFIG": str(emulator.kubeconfig)}

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)

    return run


def manifest(execution: str = "Start", token: str = "YWJj") -> str:
    return FRAMEWORK.format(execution=execution) + "---\n" + SECRET.format(token=token)


def test_kubectl_apply_server_side_get_and_delete(emulator, kubectl):
    first = kubectl("apply", "--server-side", "-f", "-", stdin=manifest())
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["framework.frameworkcontroller.microsoft.com/demo serverside-applied",
                                         "secret/demo-secrets serverside-applied"]
    applies = [r for r in emulator.requests if r.method == "PATCH"]
    assert {r.content_type for r in applies} == {"application/apply-patch+yaml"}
    assert {r.query.get("fieldValidation") for r in applies} == {"Strict"}  # kubectl's default validation
    framework = emulator.get_object("frameworkcontroller.microsoft.com/v1", "Framework", "default", "demo")
    secret = emulator.get_object("v1", "Secret", "default", "demo-secrets")
    assert [(m["manager"], m["operation"]) for m in framework["metadata"]["managedFields"]] == [("kubectl", "Apply")]
    assert secret["data"] == {"token": "YWJj"}

    again = kubectl("apply", "--server-side", "-f", "-", stdin=manifest())
    assert again.returncode == 0, again.stderr
    assert emulator.get_object("frameworkcontroller.microsoft.com/v1", "Framework", "default", "demo") == framework
    assert emulator.get_object("v1", "Secret", "default", "demo-secrets") == secret

    listed = kubectl("get", "frameworks")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:3] == ["NAME", "AGE", "demo"]
    as_json = kubectl("get", "framework", "demo", "-o", "json", "--show-managed-fields")
    assert json.loads(as_json.stdout) == framework
    token = kubectl("get", "secret", "demo-secrets", "-o", "jsonpath={.data.token}")
    assert token.stdout == "YWJj"

    conflict = kubectl("apply", "--server-side", "--field-manager=other", "-f", "-",
                       stdin=manifest(execution="Stop", token="eHl6"))
    assert conflict.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.executionType' in conflict.stderr
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .data.token' in conflict.stderr
    forced = kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
                     stdin=manifest(execution="Stop", token="eHl6"))
    assert forced.returncode == 0, forced.stderr
    stopped = emulator.get_object("frameworkcontroller.microsoft.com/v1", "Framework", "default", "demo")
    assert stopped["spec"]["executionType"] == "Stop"

    deleted = kubectl("delete", "-f", "-", stdin=manifest())
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines() == ['framework.frameworkcontroller.microsoft.com "demo" deleted',
                                           'secret "demo-secrets" deleted']
    assert emulator.get_object("frameworkcontroller.microsoft.com/v1", "Framework", "default", "demo") is None
    missing = kubectl("get", "framework", "demo")
    assert missing.returncode == 1
    assert 'Error from server (NotFound): frameworks.frameworkcontroller.microsoft.com "demo" not found' in \
        missing.stderr


def test_kubectl_sees_the_scripted_controller_and_deletes_in_the_foreground(emulator, kubectl):
    emulator.scenario("Framework", "demo", "running", seconds=3600)
    assert kubectl("apply", "--server-side", "-f", "-", stdin=FRAMEWORK.format(execution="Start")).returncode == 0
    for _ in range(200):
        pod = emulator.get_object("v1", "Pod", "default", "demo-worker-0")
        if pod and pod["status"]["phase"] == "Running":
            break
        emulator.clock.sleep(1)
    pods = kubectl("get", "pods", "-l", "FC_FRAMEWORK_NAME=demo", "-o", "name")
    assert pods.stdout.split() == ["pod/demo-worker-0"], pods.stderr
    state = kubectl("get", "framework", "demo", "-o", "jsonpath={.status.state}")
    assert state.stdout == "AttemptRunning"
    logs = kubectl("logs", "demo-worker-0")
    assert logs.returncode == 0 and logs.stdout.startswith("[demo-worker-0] step 1"), logs.stderr
    deleted = kubectl("delete", "framework", "demo", "--cascade=foreground")
    assert deleted.returncode == 0, deleted.stderr
    delete = next(r for r in emulator.requests if r.method == "DELETE")
    assert delete.path == "/apis/frameworkcontroller.microsoft.com/v1/namespaces/default/frameworks/demo"
    assert emulator.get_object("frameworkcontroller.microsoft.com/v1", "Framework", "default", "demo") is None
    assert emulator.list_objects("v1", "Pod", "default") == []
    assert emulator.list_objects("v1", "ConfigMap", "default") == []


def test_kubectl_client_side_apply_and_patch(emulator, kubectl):
    outputs = [kubectl("apply", "-f", "-", stdin=manifest(execution=execution)).stdout.splitlines()
               for execution in ("Start", "Start", "Stop")]
    assert outputs == [["framework.frameworkcontroller.microsoft.com/demo created", "secret/demo-secrets created"],
                       ["framework.frameworkcontroller.microsoft.com/demo unchanged", "secret/demo-secrets unchanged"],
                       ["framework.frameworkcontroller.microsoft.com/demo configured",
                        "secret/demo-secrets unchanged"]]
    framework = emulator.get_object("frameworkcontroller.microsoft.com/v1", "Framework", "default", "demo")
    assert framework["spec"]["executionType"] == "Stop"
    assert "kubectl.kubernetes.io/last-applied-configuration" in framework["metadata"]["annotations"]
    merged = kubectl("patch", "framework", "demo", "--type=merge", "-p", '{"metadata":{"labels":{"a":"b"}}}')
    assert merged.returncode == 0, merged.stderr
    strategic = kubectl("patch", "framework", "demo", "-p", '{"metadata":{"labels":{"a":"c"}}}')
    assert strategic.returncode == 1
    assert "application/strategic-merge-patch+json is not supported by frameworkcontroller.microsoft.com/v1" in \
        strategic.stderr
    labelled = kubectl("label", "secret", "demo-secrets", "team=ml")
    assert labelled.returncode == 0, labelled.stderr
    assert emulator.get_object("v1", "Secret", "default", "demo-secrets")["metadata"]["labels"] == {"team": "ml"}
