"""What the OpenPAI tests share: a running test server, a clusters file pointing at it, a token canary.

The token is a canary: tests check that it never appears in any output stream or file paictl writes.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from .server import OpenPaiServer

TOKEN = "canary-openpai-token-3e9f1b77"
TOKEN_ENV = "PAICTL_TEST_OPENPAI_TOKEN"
ALIAS = "testpai"
#: Following polls this often in tests (the default is 1 s; the clusters file's minPollInterval sets it).
FAST_POLL = 0.02


@dataclasses.dataclass
class Harness:
    server: OpenPaiServer
    config_home: Path
    env: dict[str, str]

    @property
    def clusters_file(self) -> Path:
        return self.config_home / "paictl" / "openpai-clusters.yaml"

    def backend(self, **extra: Any):
        """An OpenPaiBackend for the alias, fast polling and fast retries."""
        from paictl.targets.backend import BackendOptions
        from paictl.targets.openpai.backend import OpenPaiBackend

        options = {"clusters_file": self.clusters_file, "min_poll_interval": FAST_POLL, "retry_backoff": 0.01,
                   **extra}
        pending_timeout = options.pop("pending_timeout", None)
        exit_spec = options.pop("exit_spec", None)
        return OpenPaiBackend(BackendOptions(cluster=ALIAS, extra=options, pending_timeout=pending_timeout,
                                             exit_spec=exit_spec))

    def paictl(self, *args: str, input: Optional[str] = None, env: Optional[dict[str, str]] = None,
               cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
        """The real CLI in a child process (its own environment: the token only through TOKEN_ENV)."""
        return subprocess.run([sys.executable, "-m", "paictl", *args], input=input, capture_output=True,
                              text=True, env={**self.env, **(env or {})}, cwd=cwd, timeout=120)


def start(tmp_path: Path, monkeypatch: Any, server: OpenPaiServer) -> Harness:
    """Write a clusters file for `server` (user alice, token from TOKEN_ENV) and point XDG_CONFIG_HOME at it."""
    from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

    server.issue_token("alice", TOKEN)
    config_home = tmp_path / "config"
    save_clusters({ALIAS: ClusterEntry(alias=ALIAS, url=server.url, user="alice", token_env=TOKEN_ENV,
                                       min_poll_interval=FAST_POLL)},
                  config_home / "paictl" / "openpai-clusters.yaml")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PAICTL_")}
    env.update({"XDG_CONFIG_HOME": str(config_home), TOKEN_ENV: TOKEN, "NO_COLOR": "1", "COLUMNS": "200"})
    return Harness(server=server, config_home=config_home, env=env)


def files_under(*roots: Path) -> dict[Path, bytes]:
    """Every file below the roots, for the canary: what paictl wrote must not contain the token."""
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                found[path] = path.read_bytes()
    return found


JOB = """\
protocolVersion: 2
name: {name}
type: job
parameters:
  epochs: 2
{secrets}prerequisites:
  - name: image
    type: dockerimage
    uri: python:3.11-slim
{auth}taskRoles:
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 0}}
    commands:
      - python train.py --epochs <% $parameters.epochs %>
{extras}"""


def write_job(folder: Path, name: str, *, virtual_cluster: Optional[str] = None, storages: tuple[str, ...] = (),
              secret: Optional[str] = None, registry_password: Optional[str] = None) -> Path:
    """A valid job file; `secret` goes into `secrets`, `registry_password` into the image's registry auth."""
    secrets = f"secrets:\n  apiKey: {secret}\n" if secret else ""
    auth = (f"    auth:\n      username: robot\n      password: {registry_password}\n"
            "      registryuri: registry.example.org\n") if registry_password else ""
    extras = ""
    if virtual_cluster:
        extras += f"defaults:\n  virtualCluster: {virtual_cluster}\n"
    if storages:
        extras += "extras:\n  storages:\n" + "".join(f"    - name: {s}\n" for s in storages)
    path = folder / f"{name}.yaml"
    path.write_text(JOB.format(name=name, secrets=secrets, auth=auth, extras=extras), encoding="utf-8")
    return path
