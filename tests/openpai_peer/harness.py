"""What the OpenPAI tests against the real server share: a user's view of a running Stack.

`PaiUser` is one test's user: their own config folder, a clusters file with one alias ("lab") pointing at the
stack's site through pylon (`.../rest-server`, as a deployment is reached), their real token in an environment
variable, and the real CLI in a child process. The token is the canary: tests check it never appears in any output
stream or file paictl writes. Job names are unique per test, since one stack serves the whole session.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Optional

from .frameworks import framework_name

TOKEN_ENV = "PAICTL_TEST_OPENPAI_TOKEN"
ALIAS = "lab"
FAST_POLL = 0.05

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


@dataclasses.dataclass
class PaiUser:
    stack: Any
    folder: Path
    user: str = "alice"
    server: Any = None     # the RestServer to talk to (default: the stack's default-scheduler one)

    def __post_init__(self) -> None:
        from paictl.targets.openpai.clusters import ClusterEntry, save_clusters

        self.server = self.server or self.stack.default
        self.config_home = self.folder / "config"
        self.token = self.stack.tokens[self.user]
        save_clusters({ALIAS: ClusterEntry(alias=ALIAS, url=self.server.api_url, user=self.user,
                                           token_env=TOKEN_ENV, min_poll_interval=FAST_POLL)}, self.clusters_file)
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("PAICTL_")}
        self.env.update({"XDG_CONFIG_HOME": str(self.config_home), TOKEN_ENV: self.token, "NO_COLOR": "1",
                         "COLUMNS": "200"})

    @property
    def clusters_file(self) -> Path:
        return self.config_home / "paictl" / "openpai-clusters.yaml"

    def paictl(self, *args: str, input: Optional[str] = None, env: Optional[dict[str, str]] = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "paictl", *args], input=input, capture_output=True, text=True,
                              env={**self.env, **(env or {})}, cwd=self.folder, timeout=timeout)

    def backend(self, **extra: Any):
        from paictl.targets.backend import BackendOptions
        from paictl.targets.openpai.backend import OpenPaiBackend

        os.environ[TOKEN_ENV] = self.token
        options = {"clusters_file": self.clusters_file, "min_poll_interval": FAST_POLL, "retry_backoff": 0.01,
                   **extra}
        pending_timeout = options.pop("pending_timeout", None)
        return OpenPaiBackend(BackendOptions(cluster=ALIAS, extra=options, pending_timeout=pending_timeout))

    def name(self, base: str) -> str:
        return f"{base}{uuid.uuid4().hex[:8]}"

    def framework(self, job: str) -> str:
        return framework_name(self.user, job)

    def write_job(self, name: str, *, instances: int = 2, gpu: int = 0, extras: str = "", secret: str = "",
                  registry_password: str = "") -> Path:
        secrets = f"secrets:\n  apiKey: {secret}\n" if secret else ""
        auth = (f"    auth:\n      username: robot\n      password: {registry_password}\n"
                "      registryuri: registry.example.org\n") if registry_password else ""
        path = self.folder / f"{name}.yaml"
        path.write_text(JOB.format(name=name, secrets=secrets, auth=auth, extras=extras, instances=instances,
                                   gpu=gpu), encoding="utf-8")
        return path

    def in_background(self, work: Callable[[], Any]) -> "Background":
        return Background(work)

    def files(self) -> dict[Path, bytes]:
        return {path: path.read_bytes() for path in self.folder.rglob("*") if path.is_file()}


class Background:
    """Run the FrameworkController's part while the CLI follows; `result()` re-raises what it raised."""

    def __init__(self, work: Callable[[], Any]):
        self.error: Optional[BaseException] = None
        self.value: Any = None
        self.thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self.thread.start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            self.value = work()
        except BaseException as error:  # handed to the test thread
            self.error = error

    def result(self, timeout: float = 60) -> Any:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError("the controller's part did not finish")
        if self.error is not None:
            raise self.error
        return self.value


def job_text(name: str, **options: Any) -> str:
    values = {"secrets": "", "auth": "", "extras": "", "instances": 2, "gpu": 0, **options}
    return JOB.format(name=name, **values)
