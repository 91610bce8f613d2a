"""A kubeconfig whose exec credential plugin fails: one line of paictl's, exit 3, and none of the official client's
own log lines (it logs the failure with the root logger and would go on without credentials)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

pytest.importorskip("kubernetes")


@pytest.mark.parametrize("plugin, reason", [("/bin/false", "exec: process returned 1"),
                                            ("/bin/true", "exec: failed to decode process output")])
def test_a_failing_exec_plugin_is_one_line_of_paictl(tmp_path, plugin, reason):
    with socket.create_server(("127.0.0.1", 0)) as server:  # paictl's probe needs a server that accepts
        port = server.getsockname()[1]
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(f"""\
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: {plugin}}}}}}}]
contexts: [{{name: lab, context: {{cluster: c, user: u}}}}]
current-context: lab
""")
        done = subprocess.run([sys.executable, "-m", "paictl", "status", "job", "--target", "framework",
                               "--kubeconfig", str(kubeconfig)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"paictl: error: kubeconfig {kubeconfig}: context 'lab': getting credentials "
                                  f"failed: {reason}")
    assert "ERROR:root" not in done.stderr
