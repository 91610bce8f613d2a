"""What the OpenPAI tests share: one user's view of a running double (their own config folder, a clusters file with
one alias, their token in an environment variable, the real CLI in a child process) and a job file to submit.

The token is a canary: tests check that it never appears in any output stream or file paictl writes.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Optional

from .server import OpenPaiServer

TOKEN = "canary-openpai-token-3e9f1b77"
TOKEN_ENV = "PAICTL_TEST_OPENPAI_TOKEN"
ALIAS = "testpai"
#: Following polls this often in tests (the default is 1 s; the clusters file's minPollInterval sets it).
FAST_POLL = 0.02

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
    instances: {instances}
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: {gpu}}}
    commands:
      - python train.py --epochs <% $parameters.epochs %>
{extras}"""


def job_text(name: str, *, instances: int = 2, gpu: int = 0, extras: str = "", secret: str = "",
             registry_password: str = "", virtual_cluster: str = "", storages: tuple[str, ...] = ()) -> str:
    """A valid job; `secret` goes into `secrets`, `registry_password` into the image's registry auth."""
    secrets = f"secrets:\n  apiKey: {secret}\n" if secret else ""
    auth = (f"    auth:\n      username: robot\n      password: {registry_password}\n"
            "      registryuri: registry.example.org\n") if registry_password else ""
    if virtual_cluster:
        extras += f"defaults:\n  virtualCluster: {virtual_cluster}\n"
    if storages:
        extras += "extras:\n  storages:\n" + "".join(f"    - name: {s}\n" for s in storages)
    return JOB.format(name=name, secrets=secrets, auth=auth, extras=extras, instances=instances, gpu=gpu)


def write_job(folder: Path, name: str, *, virtual_cluster: Optional[str] = None, storages: tuple[str, ...] = (),
              secret: Optional[str] = None, registry_password: Optional[str] = None, **options: Any) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(job_text(name, virtual_cluster=virtual_cluster or "", storages=storages, secret=secret or "",
                             registry_password=registry_password or "", **options), encoding="utf-8")
    return path


@dataclasses.dataclass
class Harness:
    """One user of `server`: their clusters file (alias `alias` at `url`), their token in TOKEN_ENV, the CLI."""
    server: OpenPaiServer
    folder: Path
    token: str
    user: str = "alice"
    alias: str = ALIAS
    url: str = ""

    def __post_init__(self) -> None:
        from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

        self.url = self.url or self.server.url
        self.config_home = self.folder / "config"
        save_clusters({self.alias: ClusterEntry(alias=self.alias, url=self.url, user=self.user, token_env=TOKEN_ENV,
                                                min_poll_interval=FAST_POLL)}, self.clusters_file)
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("PAICTL_")}
        self.env.update({"XDG_CONFIG_HOME": str(self.config_home), TOKEN_ENV: self.token, "NO_COLOR": "1",
                         "COLUMNS": "200"})

    @property
    def clusters_file(self) -> Path:
        return self.config_home / "paictl" / "openpai-clusters.yaml"

    def other(self, user: str) -> "Harness":
        """Another user of the same server, in a folder of their own, with a token of their own."""
        return Harness(self.server, self.folder / user, self.server.accounts.login(user), user, self.alias,
                       self.url)

    def backend(self, **extra: Any):
        """An OpenPaiBackend for the alias, fast polling and fast retries (the token from TOKEN_ENV, which the
        fixture sets)."""
        from paictl.targets.backend import BackendOptions
        from paictl.targets.openpai.backend import OpenPaiBackend

        options = {"clusters_file": self.clusters_file, "min_poll_interval": FAST_POLL, "retry_backoff": 0.01,
                   **extra}
        pending_timeout = options.pop("pending_timeout", None)
        exit_spec = options.pop("exit_spec", None)
        return OpenPaiBackend(BackendOptions(cluster=self.alias, extra=options, pending_timeout=pending_timeout,
                                             exit_spec=exit_spec))

    def paictl(self, *args: str, input: Optional[str] = None, env: Optional[dict[str, str]] = None,
               cwd: Optional[Path] = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """The real CLI in a child process (its own environment: the token only through TOKEN_ENV)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return subprocess.run([sys.executable, "-m", "paictl", *args], input=input, capture_output=True,
                              text=True, env={**self.env, **(env or {})}, cwd=cwd or self.folder, timeout=timeout)

    def name(self, base: str) -> str:
        return f"{base}{uuid.uuid4().hex[:8]}"

    def write_job(self, name: str, **options: Any) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        return write_job(self.folder, name, **options)

    def job(self, name: str):
        """The double's job `name` of this user (FrameworkController's moves are its `fc_*` methods)."""
        return self.server.job(f"{self.user}~{name}")

    def files(self) -> dict[Path, bytes]:
        return files_under(self.folder)


def start(tmp_path: Path, monkeypatch: Any, server: OpenPaiServer, **options: Any) -> Harness:
    """Alice on `server` (token TOKEN from TOKEN_ENV), XDG_CONFIG_HOME and TOKEN_ENV set for in-process use."""
    server.issue_token(options.get("user", "alice"), TOKEN)
    harness = Harness(server, tmp_path, TOKEN, **options)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(harness.config_home))
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    return harness


def files_under(*roots: Path) -> dict[Path, bytes]:
    """Every file below the roots, for the canary: what paictl wrote must not contain the token."""
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                found[path] = path.read_bytes()
    return found
