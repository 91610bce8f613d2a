"""The docker runtime of a local run: each task instance a container of its task role's image, as OpenPAI runs it.

Chosen at submit (`choose_runtime`): `--runtime docker|host`, by default docker when an engine answers at
`DOCKER_HOST` (else the default socket) and host processes otherwise. Before any task starts, every image is made
present (images.py `ensure_images`, per `--pull never|missing|always`) and every task role's resourcePerInstance is
checked against what the engine can give (`check_limits`, E611); either refuses the whole job with one line.

A task is `docker run --rm --init --network host ...` in the foreground (../docker_runtime.py says why the CLI
runs containers and the HTTP API does the rest), started and watched by the runner like a host task:
- the container gets the same PAI_* contract as a host task (its variables, ports and peers; every instance is on
  127.0.0.1 of the host network, as OpenPAI's pods share their node's), and none of the host's environment;
  the values travel in the CLI's environment (`--env NAME`), not on its command line;
- its limits are resourcePerInstance's: `--cpus`, `--memory <memoryMB>m`, `--gpus N` when asked (else
  NVIDIA_VISIBLE_DEVICES=none, as OpenPAI sets it),
  `--shm-size` (extraContainerOptions.shmMB, else 512 MB, OpenPAI's /dev/shm);
- it starts in the image's working directory (PAI_WORK_DIR is `$PWD` there, as openpai-runtime sets it);
- secrets are files, as OpenPAI mounts them: the job's `secrets.yaml` and one `secret.<path>` file per secret the
  commands use, in a private folder on /dev/shm (0700, removed when the run ends, by the watchdog if paictl is
  killed) mounted read-only at /usr/local/pai/secrets; a bash prelude fills the commands' `<% $secrets.x %>` tags
  from them (the native runtime's, targets/framework/native.py), so no value is in `docker inspect` (command or
  environment);
- its output goes to the task's log in the run folder, through the CLI; its exit code is the CLI's (128+N when
  killed by signal N; 125-127 when docker could not start it), and a container the kernel killed for memory
  completes as FrameworkController's -1200 ContainerDockerOOMKilled (never retried), not as a transient 137;
- stopping it is a SIGTERM to the CLI, which forwards it to the container's init, then after the grace period a
  SIGKILL to the CLI and a forced removal of the container (`Engine.remove`); every container carries the labels
  `paictl.run=<run id>` and `paictl.task=<role>-<index>`, by which the run's end (and its watchdog, if paictl
  dies) removes whatever is left.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from paictl.compiler.exit_rules import Rule
from paictl.errors import ClusterError, display_url

from paictl.targets.local.choices import RUNTIMES, check_choices
from paictl.targets.docker_runtime import ContainerSpec, Engine, EngineError, engine_address, gpu_devices, \
    run_argv
from paictl.targets.framework.native import SCRIPT_NAME, SHELL, run_commands

if TYPE_CHECKING:
    from paictl.protocol.loading import Document

LABEL_RUN, LABEL_JOB, LABEL_TASK = "paictl.run", "paictl.job", "paictl.task"
#: Where OpenPAI mounts a job's secrets in every task container.
SECRETS_MOUNT = "/usr/local/pai/secrets"
SECRETS_YAML = "secrets.yaml"
#: Containers removed at once in the background (the engine serialises little of a removal).
_REMOVERS = 4
#: The smallest --memory docker accepts.
_MIN_MEMORY_MB = 6
#: The first lines of a container's start: openpai-runtime's PAI_WORK_DIR.
_PRELUDE = ["# paictl docker runtime: what openpai-runtime does before a task's commands, then the commands.",
            "export PAI_WORK_DIR=$PWD"]

#: FrameworkController's completion code for a container killed for exceeding its memory limit (its default config's
#: ContainerDockerOOMKilled, frameworkcontroller.md; OpenPAI's UserContainerDockerOOMKilled): a permanent user failure.
OOM_KILLED = Rule(code=-1200, phrase="ContainerDockerOOMKilled", type="USER_FAILURE", behavior="PERMANENT",
                  reaction="NEVER_RETRY",
                  reason="The container used more memory than its resourcePerInstance.memoryMB, and the kernel "
                         "killed it.",
                  solution=("Ask for more memory per instance (resourcePerInstance.memoryMB).",
                            "Make the program hold less in memory."))

Report = Callable[[str, bool], None]  # (line, transient): a line to show now; transient lines replace each other


@dataclasses.dataclass(frozen=True, kw_only=True)
class Choice:
    """Where a local run's tasks run: `kind` docker (with the engine) or host; `defaulted` if not asked for."""
    kind: str
    engine: Optional[Engine] = None
    defaulted: bool = True
    reason: str = ""

    @property
    def line(self) -> str:
        where = f"engine {display_url(self.engine.address.url)}" if self.engine is not None else self.reason
        return f"paictl: runtime {self.kind} ({where}; choose with --runtime {'|'.join(RUNTIMES)})"


def choose_runtime(requested: Optional[str]) -> Choice:
    """--runtime as given, or docker when an engine answers, else host. ClusterError (3) when docker is asked for
    and no engine answers; UsageError (2) for a runtime that does not exist."""
    check_choices(requested, None)
    if requested == "host":
        return Choice(kind="host", defaulted=False, reason="tasks run as host processes")
    if shutil.which("docker") is None:  # it runs the containers (../docker_runtime.py)
        if requested == "docker":
            raise ClusterError("--runtime docker: the docker CLI is not installed (it runs the task containers; "
                               "Debian: apt-get install docker.io, or docker-ce-cli)")
        return Choice(kind="host", reason="no docker CLI on PATH")
    try:
        engine = Engine(engine_address(), timeout=30.0)
    except EngineError as error:
        if requested == "docker":
            raise ClusterError(f"--runtime docker: {error}") from None
        return Choice(kind="host", reason=f"no docker engine: {error}")
    try:
        engine.call("GET", "/_ping", timeout=2.0)
    except EngineError as error:  # nothing listens, or this user may not use it: the message says which
        if requested == "docker":
            raise ClusterError(f"--runtime docker: {error}; is dockerd running, and does DOCKER_HOST name it?") \
                from None
        return Choice(kind="host", reason=str(error))
    return Choice(kind="docker", engine=engine, defaulted=requested is None)


def check_limits(plan: Mapping[str, Any], engine: Engine, document: Optional[Document], path: str) -> None:
    """E611 for every task role whose instances ask for more than the engine can give, all at once, located."""
    from paictl.protocol.codes import finding

    from paictl.targets.findings import raise_if_any

    roles = plan["spec"]["taskRoles"]
    if all(r["resources"]["gpu"] <= 0 and r["resources"]["cpu"] <= 1 and r["resources"]["memoryMB"] >= _MIN_MEMORY_MB
           or r["resources"]["memoryMB"] <= 0 for r in roles):
        return  # what every engine can give: spare the engine's /info (~15 ms, most of what docker adds to a run)
    info = engine.info()
    cpus = int(info.get("NCPU") or 0)
    runtimes = info.get("Runtimes") or {}
    gpu_runtime = "nvidia" in runtimes or shutil.which("nvidia-container-runtime-hook") is not None
    devices = gpu_devices()
    findings = []
    for role in plan["spec"]["taskRoles"]:
        pointer = f"/taskRoles/{role['name']}/resourcePerInstance"
        gpus = role["resources"]["gpu"]
        if gpus > 0 and not gpu_runtime:
            findings.append(finding("E611", f"{pointer}/gpu", f"task role {role['name']!r} asks for {gpus} GPU(s); "
                                    "this machine's docker engine has no GPU runtime (NVIDIA's container toolkit)",
                                    hint="submit it to a cluster, or run it with --runtime host"))
        elif gpus > devices:
            findings.append(finding("E611", f"{pointer}/gpu", f"task role {role['name']!r} asks for {gpus} GPU(s) "
                                    f"per instance; this machine has {devices}",
                                    hint="ask for fewer, or submit it to a cluster"))
        memory = role["resources"]["memoryMB"]
        if 0 < memory < _MIN_MEMORY_MB:
            findings.append(finding("E611", f"{pointer}/memoryMB", f"task role {role['name']!r} asks for {memory} "
                                    f"MB of memory; docker's smallest limit is {_MIN_MEMORY_MB} MB",
                                    hint=f"ask for {_MIN_MEMORY_MB} or more"))
        if cpus and role["resources"]["cpu"] > cpus:
            findings.append(finding("E611", f"{pointer}/cpu", f"task role {role['name']!r} asks for "
                                    f"{role['resources']['cpu']} CPUs per instance; this machine's docker engine "
                                    f"has {cpus}", hint="ask for fewer, run it with --runtime host, or submit it "
                                                        "to a cluster"))
    raise_if_any(findings, document, path)


# -- at run time ------------------------------------------------------------------------------------------------

def write_secrets(run_id: str, secrets: Mapping[str, str]) -> Optional[Path]:
    """A folder holding the secret files (None without secrets), on /dev/shm so that the values never reach a disk
    (else in the temporary folder). It lies inside a private (0700) folder, so no other user of this machine can
    reach it, while the files themselves are readable by whichever user the image runs as (as a Kubernetes secret
    volume's 0644). `remove_secrets(folder)` removes both."""
    if not secrets:
        return None
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    private = Path(tempfile.mkdtemp(prefix=f"paictl-secrets-{run_id[:12]}-", dir=base))
    folder = private / "secrets"
    folder.mkdir(mode=0o755)
    for key, value in secrets.items():
        handle = os.open(folder / key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(value)
    return folder


def remove_secrets(folder: Optional[Path]) -> None:
    if folder is not None:
        shutil.rmtree(folder.parent, ignore_errors=True)


def container_name(plan: Mapping[str, Any], role: Mapping[str, Any], index: int, run_id: str, attempt: int,
                   task_attempt: int) -> str:
    return f"paictl-{plan['metadata']['name']}-{role['name']}-{index}-{run_id[:8]}-{attempt}-{task_attempt}"


def container_command(role: Mapping[str, Any]) -> list[str]:
    """bash with OpenPAI's options running the prelude, which execs the commands (`$1`) with the secrets filled in
    from the mounted files."""
    substitutions = [(item["tag"], item["key"]) for item in role["secretTags"]]
    prelude = "\n".join(_PRELUDE + run_commands(substitutions, SECRETS_MOUNT)) + "\n"
    return [*SHELL, "-c", prelude, SCRIPT_NAME, role["command"][-2]]


def launch(plan: Mapping[str, Any], role: Mapping[str, Any], *, name: str, env: Mapping[str, str],
           client_env: Mapping[str, str], labels: Mapping[str, str],
           secrets_dir: Optional[Path]) -> tuple[list[str], dict[str, str]]:
    """The docker CLI command line that runs one task attempt, and the CLI's environment: the host's (DOCKER_HOST,
    HOME for its configuration) plus the container's variables, which `--env NAME` copies into the container."""
    resources = role["resources"]
    spec = ContainerSpec(
        image=role["image"], command=container_command(role), name=name, labels=labels,
        env_from_client=tuple(env), cpus=float(resources["cpu"]) if resources["cpu"] > 0 else None,
        memory_mb=resources["memoryMB"] if resources["memoryMB"] > 0 else None,
        gpus=resources["gpu"] or None, shm_mb=resources["shmMB"],
        mounts=((str(secrets_dir), SECRETS_MOUNT, True),) if secrets_dir is not None else (),
        # Not --rm: the runner reads how the container ended (OOMKilled) before it removes it (DockerTasks.ended).
        remove=False, extra=("--pull", "never"))  # ensure_images made them present; never a pull nobody sees
    merged = dict(client_env)
    merged.update(env)
    return run_argv(spec), merged


def sweep_leftovers(folder: Path) -> Optional[str]:
    """Remove the containers of an ended run that its engine kept (recorded by DockerTasks.close when the engine
    did not answer), if the engine answers now; what `status` says about them, or None when nothing was left."""
    from paictl.targets.local.store import LEFTOVERS, read_leftovers, write_json

    record = read_leftovers(folder)
    if record is None:
        return None
    if record["removed"] is None:
        try:
            engine = Engine(engine_address({"DOCKER_HOST": record["engine"]}), timeout=5.0)  # a listing waits on it
            removed = engine.remove_labelled({LABEL_RUN: record["run"]})
        except EngineError:
            return (f"the docker engine at {display_url(record['engine'])} did not answer when the run ended and "
                    "still does not: the run's containers it keeps are removed once it answers")
        record["removed"] = removed
        try:
            write_json(folder / LEFTOVERS, record)
        except OSError:
            pass
    removed = record["removed"]
    if not removed:
        return None
    return (f"removed {len(removed)} container{'s' if len(removed) != 1 else ''} the docker engine kept after it "
            f"stopped mid-run ({', '.join(removed[:5])}{', ...' if len(removed) > 5 else ''})")


class DockerTasks:
    """The runner's docker side for one run (see the module docstring): starts task attempts as containers,
    removes each one as its task ends, and at the end of the run every container of the run and the secrets."""

    def __init__(self, plan: Mapping[str, Any], run_id: str, secrets: Mapping[str, str],
                 folder: Optional[Path] = None):
        from paictl.targets.local.procs import RUN_MARKER

        self.plan = plan
        self.folder = folder  # the run folder: where containers that could not be removed are recorded
        self.run_id = run_id
        self.url = plan["spec"]["runtime"]["engine"]
        environ = {k: v for k, v in os.environ.items() if k.startswith("DOCKER_")}
        environ["DOCKER_HOST"] = self.url
        self.engine = Engine(engine_address(environ), timeout=60.0)
        #: The CLI's own environment: the host's without the run's variables, pointed at the engine chosen.
        self.client_env = {k: v for k, v in os.environ.items() if not k.startswith(("PAI_", "FC_", RUN_MARKER))}
        self.client_env["DOCKER_HOST"] = self.url
        self.client_env.pop("DOCKER_CONTEXT", None)
        self._secrets = dict(secrets)
        self.secrets_dir: Optional[Path] = None
        self._written = False
        self.names: dict[str, str] = {}  # task label -> its current container
        self._oom: set[str] = set()  # tasks whose last container the kernel killed for memory
        self._removals: list[Any] = []  # threads removing containers, at most _REMOVERS at once
        self._removers: Any = None

    def watchdog_args(self) -> list[str]:
        """What the watchdog needs to clean up after the runner: the engine and the secrets folder."""
        return [self.url, str(self.secrets_dir) if self.secrets_dir is not None else ""]

    def prepare(self) -> None:
        """Write the secret files (once, before the watchdog starts, so that it knows where they are)."""
        if not self._written:
            self.secrets_dir = write_secrets(self.run_id, self._secrets)
            self._written = True

    def launch(self, role: Mapping[str, Any], index: int, env: Mapping[str, str], *, attempt: int,
               task_attempt: int) -> tuple[list[str], dict[str, str]]:
        label = f"{role['name']}-{index}"
        name = container_name(self.plan, role, index, self.run_id, attempt, task_attempt)
        self.names[label] = name
        labels = {LABEL_RUN: self.run_id, LABEL_JOB: self.plan["metadata"]["name"], LABEL_TASK: label}
        if role["resources"]["gpu"] <= 0:  # as OpenPAI's pods: no GPU, even where NVIDIA's runtime is the default
            env = {**env, "NVIDIA_VISIBLE_DEVICES": "none"}
        return launch(self.plan, role, name=name, env=env, client_env=self.client_env, labels=labels,
                      secrets_dir=self.secrets_dir)

    def ended(self, label: str) -> None:
        """The task's CLI has exited or been killed: note how its container ended (now: the verdict may depend on
        it), and remove it in the background (the engine takes ~0.1 s to remove one: in turn, 200 ending tasks
        would hold the run up for 20 s). `close` waits for every removal."""
        name = self.names.pop(label, None)
        if name is not None:
            try:
                details = self.engine.inspect(name)
            except EngineError:
                details = None
            if details is not None and (details.get("State") or {}).get("OOMKilled"):
                self._oom.add(label)
            import threading  # (concurrent.futures took 10 ms to import: a tenth of what docker adds to a task)

            if self._removers is None:
                self._removers = threading.BoundedSemaphore(_REMOVERS)
            thread = threading.Thread(target=self._remove, args=(name,), name=f"paictl-rm-{name}", daemon=True)
            thread.start()
            self._removals = [t for t in self._removals if t.is_alive()] + [thread]

    def _remove(self, name: str) -> None:
        assert self._removers is not None
        with self._removers:
            try:
                self.engine.remove(name)
            except EngineError:
                pass  # close() removes whatever carries the run's label

    def rule(self, label: str) -> Optional[Rule]:
        """The completion a cluster would give the task's last container instead of its exit code's, if any: the
        kernel killed it for memory (FrameworkController's -1200, permanent: not retried)."""
        if label not in self._oom:
            return None
        self._oom.discard(label)
        return OOM_KILLED

    def close(self) -> None:
        for label in list(self.names):
            self.ended(label)
        while self._removals:
            self._removals.pop().join()
        try:
            self.engine.remove_labelled({LABEL_RUN: self.run_id})
        except EngineError:
            # The engine does not answer (stopped mid-run): it keeps the run's containers, stopped, for when it is
            # back. Recorded, so that the next command that touches the run removes them (sweep_leftovers).
            if self.folder is not None:
                from paictl.targets.local.store import record_leftovers

                try:
                    record_leftovers(self.folder, self.url, self.run_id)
                except OSError:
                    pass  # the folder is gone or full: nothing can be recorded
        remove_secrets(self.secrets_dir)
        self.secrets_dir = None
