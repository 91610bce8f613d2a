"""paictl inside a pod: the service account's token and CA, as the official client loads them
(kubernetes-client/python kubernetes/config/incluster_config.py InClusterConfigLoader:
https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the token and ca.crt under
/var/run/secrets/kubernetes.io/serviceaccount), used when no kubeconfig is named or found, as kubectl does
(client-go tools/clientcmd ClientConfigLoadingRules, rest.InClusterConfig; the namespace from $POD_NAMESPACE, else
the service account's namespace file, else default).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytest.importorskip("kubernetes")


@pytest.fixture
def tls_emulator(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the emulator's serving certificate")
    cert, key = tmp_path / "apiserver.crt", tmp_path / "apiserver.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=kubernetes", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    from kube_emulator import Emulator

    with Emulator(speed=200, tls=(str(cert), str(key))) as emu:
        yield emu, cert


@pytest.fixture
def service_account(tmp_path, monkeypatch, tls_emulator):
    from kubernetes.config import incluster_config

    emu, cert = tls_emulator
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    (folder / "token").write_text("sa-token-5b1e")
    (folder / "ca.crt").write_text(cert.read_text())
    (folder / "namespace").write_text("team-a\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(folder / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(folder / "ca.crt"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kube/config
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", emu.url.rsplit(":", 1)[1])
    emu.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    return emu


def test_in_a_pod_the_service_account_is_used(service_account):
    from paictl.targets.backend import BackendOptions
    from paictl.targets.kube.backend import KubeBackend
    from paictl.targets.kube.connection import connect

    emu = service_account
    cluster = connect()
    assert (cluster.context, cluster.namespace, cluster.server) == ("in-cluster", "team-a", emu.url)
    cluster.json("GET", "/api/v1/namespaces/team-a/pods")
    assert emu.requests[-1].authorization.lower() == "bearer sa-token-5b1e"  # the client writes "bearer"
    backend = KubeBackend(BackendOptions(target="framework"))
    assert backend.is_configured() and backend.namespace == "team-a"
    assert backend.list() == []


def test_pod_namespace_wins_and_a_missing_token_is_one_line(service_account, monkeypatch, tmp_path):
    from kubernetes.config import incluster_config

    from paictl.errors import ClusterError
    from paictl.targets.kube.connection import connect

    monkeypatch.setenv("POD_NAMESPACE", "team-b")
    assert connect().namespace == "team-b"
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "absent"))
    with pytest.raises(ClusterError, match=r"^in-cluster configuration \(service account\): Service token file does "
                                           r"not exist\.$"):
        connect()
