"""A long-lived Node process running OpenPAI's unchanged rest-server submission path (oracle.js), one per
scheduler mode, with the launcher environment peers.md A lists and the cluster settings of the golden files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: The SKU table of the golden files (shared/corpus/openpai/golden/README.md), in HiveD's config format.
HIVED_SPEC = """\
physicalCluster:
  skuTypes:
    K80: {cpu: 4, memory: 30720Mi, gpu: 1}
    M60: {cpu: 6, memory: 56320Mi, gpu: 1}
"""


def launcher_env(hived: bool, scratch: Path, exit_spec: Path) -> dict[str, str]:
    """The rest-server's environment (peers.md A): the golden files' settings, nothing reachable."""
    hived_spec = scratch / "hivedscheduler.yaml"
    hived_spec.write_text(HIVED_SPEC)
    env = {key: value for key, value in os.environ.items() if key in ("PATH", "HOME", "LANG")}
    env.update({
        "TZ": "UTC",  # the rest-server container's zone: dates rendered into commands print in UTC
        "NODE_ENV": "production",
        "LOG_LEVEL": "error",
        "JWT_SECRET": "oracle",
        "LAUNCHER_TYPE": "k8s",
        "LAUNCHER_SCHEDULER": "hivedscheduler" if hived else "defaultscheduler",
        "HIVED_WEBSERVICE_URI": "http://127.0.0.1:9",
        "HIVED_SPEC_PATH": str(hived_spec),
        "LAUNCHER_PRIORITY_CLASS": "true",
        "LAUNCHER_RUNTIME_IMAGE": "openpai/openpai-runtime:v1.8.0",
        "LAUNCHER_RUNTIME_IMAGE_PULL_SECRETS": "pai-secret",
        "HIVED_COMPUTING_DEVICE_ENVS": "NVIDIA_VISIBLE_DEVICES,HIVED_VISIBLE_DEVICES",
        "DEFAULT_COMPUTING_DEVICE_TYPE": "nvidia.com/gpu",
        "RBAC_IN_CLUSTER": "false",
        "K8S_APISERVER_URI": "https://kubernetes.default:443",  # the profile's apiServerAddress; never contacted
        "REST_SERVER_URI": "http://rest-server:9186",
        "WRITE_MERGER_URL": "http://127.0.0.1:9",
        "SQL_CONNECTION_STR": "postgres://nobody@127.0.0.1:9/openpai",
        "SQL_MAX_CONNECTION": "1",
        "JOB_HISTORY": "false",
        "ALERT_MANAGER_URL": "http://127.0.0.1:9",
        "PAI_REST_SERVER_EXIT_SPEC_PATH": str(exit_spec),
        "LOG_SERVER": "log_manager",
        "LOG_MANAGER_PORT": "9103",
        "LOG_MANAGER_ADMIN_NAME": "admin",
        "LOG_MANAGER_ADMIN_PASSWORD": "admin-password",
    })
    return env


class Oracle:
    """One Node process answering `ask(job_text)` with upstream's verdict, entrypoints and request body."""

    def __init__(self, rest_server: Path, exit_spec_source: Path, *, hived: bool):
        self._scratch = Path(tempfile.mkdtemp(prefix="openpai-oracle-run-"))
        exit_spec = self._scratch / "k8s-job-exit-spec.yaml"
        # The rest-server reads the `spec` list of the exit spec file, as its deployment's ConfigMap holds it.
        exit_spec.write_text(_spec_list(exit_spec_source.read_text()))
        self._process = subprocess.Popen(
            ["node", str(HERE / "oracle.js"), str(rest_server)], cwd=self._scratch,
            env=launcher_env(hived, self._scratch, exit_spec), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
        ready = self._read()
        if not ready.get("ready") or ready.get("hived") is not hived:
            raise RuntimeError(f"the oracle did not start as asked: {ready}")
        self._next = 0

    def ask(self, text: str) -> dict[str, Any]:
        self._next += 1
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps({"id": self._next, "yaml": text}) + "\n")
        self._process.stdin.flush()
        answer = self._read()
        if answer.get("id") != self._next:
            raise RuntimeError(f"the oracle answered out of turn: {answer}")
        return answer

    def ask_many(self, texts: list[str]) -> list[dict[str, Any]]:
        """Every job written before any answer is read: one pipe round trip for a batch."""
        assert self._process.stdin is not None
        first = self._next + 1
        for text in texts:
            self._next += 1
            self._process.stdin.write(json.dumps({"id": self._next, "yaml": text}) + "\n")
        self._process.stdin.flush()
        answers = [self._read() for _ in texts]
        if [a.get("id") for a in answers] != list(range(first, self._next + 1)):
            raise RuntimeError("the oracle answered out of turn")
        return answers

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the oracle exited (code {self._process.poll()})")
        return json.loads(line)

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._scratch, ignore_errors=True)


def _spec_list(text: str) -> str:
    """The `spec:` list of upstream's k8s-job-exit-spec.yaml, as a document of its own (JSON is YAML)."""
    import yaml

    return json.dumps(yaml.safe_load(text)["spec"])
