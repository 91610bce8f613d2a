"""`status`, `logs` and `stop` of local runs import only what they run: the docker machinery (containers.py,
docker_runtime.py: HTTP and TLS) only when a run uses docker."""

from __future__ import annotations

import subprocess
import sys


def test_status_of_host_runs_never_imports_the_docker_machinery(tmp_path):
    code = ("import sys; from paictl.cli.app import main; sys.argv = ['paictl', 'status', '--target', 'local']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m in ('paictl.targets.local.containers',"
            " 'paictl.targets.docker_runtime', 'http.client', 'ssl')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"XDG_STATE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr
