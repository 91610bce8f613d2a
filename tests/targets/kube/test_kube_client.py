"""kubectl's connection rules (kubeconfig, context, namespace) and the one-line errors of an unreachable cluster."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from paictl.errors import ClusterError
from paictl.targets.kube.client import FRAMEWORK, MARSJOB, Resource, resource_for
from paictl.targets.kube.connection import connect, context_namespace

pytest.importorskip("kubernetes")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def port():
    """A port where something listens: `connect` opens one TCP connection to the cluster before it loads the client
    (targets/kube/client.py `probe`), so a kubeconfig naming a dead port is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def write_kubeconfig(path: Path, port: int, *, current: str = "team") -> Path:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "http://127.0.0.1:{port}"}}
contexts:
- name: team
  context: {{cluster: local, user: me, namespace: team-a}}
- name: bare
  context: {{cluster: local, user: me}}
current-context: {current}
users:
- name: me
  user: {{token: not-a-real-token}}
""")
    return path


def test_the_current_context_and_its_namespace(tmp_path, port):
    config = write_kubeconfig(tmp_path / "config", port)
    cluster = connect(kubeconfig=str(config))
    assert (cluster.context, cluster.namespace, cluster.server) == ("team", "team-a", f"http://127.0.0.1:{port}")


def test_namespace_flag_wins_then_context_then_default(tmp_path, port):
    config = str(write_kubeconfig(tmp_path / "config", port))
    assert connect(kubeconfig=config, namespace="other").namespace == "other"
    assert connect(kubeconfig=config, context="bare").namespace == "default"
    assert context_namespace(context=None, kubeconfig=config) == "team-a"
    assert context_namespace(context="bare", kubeconfig=config) is None


def test_kubeconfig_environment_variable(tmp_path, monkeypatch, port):
    config = write_kubeconfig(tmp_path / "config", port, current="bare")
    monkeypatch.setenv("KUBECONFIG", str(config))
    assert connect().context == "bare"


def test_unknown_context_and_missing_file_are_one_line_errors(tmp_path):
    config = str(write_kubeconfig(tmp_path / "config", 6443))
    with pytest.raises(ClusterError, match="no context named 'nope'"):
        connect(kubeconfig=config, context="nope")
    with pytest.raises(ClusterError, match=r"kubeconfig .*missing"):
        connect(kubeconfig=str(tmp_path / "missing"))


def test_resource_paths():
    assert FRAMEWORK.item("demo", "team") == \
        "/apis/frameworkcontroller.microsoft.com/v1/namespaces/team/frameworks/demo"
    assert FRAMEWORK.full_name == "frameworks.frameworkcontroller.microsoft.com"
    assert MARSJOB.label("x") == "marsjob.training.kubedl.io/x"
    secret = resource_for({"apiVersion": "v1", "kind": "Secret"})
    assert secret.collection("ns") == "/api/v1/namespaces/ns/secrets" and secret.label("s") == "secret/s"
    priority = resource_for({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"})
    assert priority.item("p", "ignored") == "/apis/scheduling.k8s.io/v1/priorityclasses/p"
    with pytest.raises(ClusterError):
        resource_for({"apiVersion": "example.com/v1", "kind": "Widget"})
    assert isinstance(secret, Resource)


@pytest.mark.parametrize("command", [["status", "demo"], ["stop", "demo"], ["logs", "demo"],
                                     ["submit", "examples/hello-world.yaml", "--target", "framework"]])
def test_an_unreachable_cluster_is_exit_3_with_one_line(tmp_path, command):
    config = write_kubeconfig(tmp_path / "config", free_port())
    done = subprocess.run([sys.executable, "-m", "paictl", *command, "--kubeconfig", str(config),
                           *(["--target", "framework"] if command[0] != "submit" else [])],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[3], timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "cannot reach the cluster at http://127.0.0.1:" in done.stderr
    assert "(context team)" in done.stderr


def test_a_tls_failure_is_one_line(emulator, tmp_path):
    """https:// to a server speaking plain HTTP: the TLS handshake fails; the user reads one line, not a traceback."""
    config = tmp_path / "tls"
    config.write_text(emulator.kubeconfig.read_text().replace("http://", "https://"))
    done = subprocess.run([sys.executable, "-m", "paictl", "status", "demo", "--target", "framework",
                           "--kubeconfig", str(config)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], timeout=60)
    assert done.returncode == 3
    assert done.stderr.startswith("paictl: error: cannot reach the cluster at https://127.0.0.1:")
    assert done.stderr.count("\n") == 1 and "SSL" in done.stderr


def test_a_missing_kubeconfig_is_one_line_pointing_at_the_local_target(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("status", "nope", "--kubeconfig", str(tmp_path / "absent"))
    assert code == 3 and out == ""
    assert err == (f"paictl: error: no local run 'nope' in {tmp_path / 'state/paictl/runs'}; on the cluster: no kubeconfig at "
                   f"{tmp_path / 'absent'}: give --kubeconfig FILE (or set KUBECONFIG), or run the job on this "
                   "machine with --target local\n")
