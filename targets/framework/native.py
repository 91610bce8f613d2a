"""The native runtime (`runtime: native`): a cluster with FrameworkController and nothing from OpenPAI.

Jobs written for OpenPAI expect what openpai-runtime gives their commands (openpai.md d.1, d.2): bash with errexit,
nounset and pipefail, the PAI_* variables, peers' addresses, `$secrets` filled in. Without the runtime image, the
app container does it itself, with nothing but bash builtins, so any image with bash works:

    command: [bash, -o, errexit, -o, nounset, -o, pipefail, -c, <prelude>, paictl-task]
    args:    [<the task role's entrypoint, as rest-server renders it>]

The prelude (generated per task role, short and readable in `kubectl get -o yaml`) exports what must be computed in
the pod, resolves `$secrets`, then `exec`s a fresh `bash -o errexit -o nounset -o pipefail -c <commands>`: the
commands run as the container's main process, with the shell options of OpenPAI's user.sh, and none of the prelude's
own variables.

Environment. The PAI_* list rest-server sets (framework_env.py) comes as plain values; the task index, as in
OpenPAI, from the downward API (`metadata.annotations['FC_TASK_INDEX']`); the container's IP
(`PAI_CURRENT_CONTAINER_IP`, `PAI_CONTAINER_HOST_IP`) from `status.podIP`; `PAI_WORK_DIR` is `$PWD` at start.

Ports. OpenPAI's runtime hashes the pod UID into *host* ports because its pods share the host network. Here each
pod has its own IP, so ports are fixed at compile time: numbered from the start of the profile's portRange, job-wide
in task role and label order (the job's labels, then ssh and http), and declared as containerPorts. Every task of a
role has the same ports, so the runtime's per-task variables (`PAI_PORT_LIST_<R>_<i>_<label>`,
`PAI_<R>_<i>_<label>_PORT`, `PAI_TASK_ROLE_INSTANCES`) are known everywhere without asking the API server; the
prelude builds them in one loop per role, so a 1,000-task job does not carry 1,000 env entries per pod. With
`hostNetwork: true` the declared ports are host ports, and the scheduler keeps two tasks of one role off the same node.

Peers. With gang allocation (the default) an init container runs FrameworkController's FrameworkBarrier
(frameworkcontroller.md e): it waits until every task has a pod IP, then writes `injector.sh`, which exports
`FB_<ROLE>_IPS` and `FB_<ROLE>_ADDRESSES` (the latter `ip:${FB_<ROLE>_PORT}`). The prelude sets each role's port to
its http port and sources it, so `PAI_TASK_ROLE_<R>_HOST_LIST` is exactly OpenPAI's `ip:httpPort,...`, and
`PAI_HOST_IP_<R>_<i>` follows. The barrier reads the Framework, so the pod needs a service account allowed to get,
list and watch `frameworks`: `serviceAccount`, else the profile's `frameworkBarrier.serviceAccount` (FC's example:
`kubectl create serviceaccount frameworkbarrier; kubectl create clusterrole frameworkbarrier
--verb=get,list,watch --resource=frameworks; kubectl create clusterrolebinding frameworkbarrier
--clusterrole=frameworkbarrier --user=system:serviceaccount:<namespace>:frameworkbarrier`). Without gang allocation
tasks start independently and the host variables are not set (OpenPAI sets them only once IPs are known).

Secrets. Rest-server leaves `<% $secrets.x %>` in the entrypoint and openpai-runtime renders it with pystache in the
container, from the mounted `secrets.yaml`. Parsing YAML needs more than bash (and Python images lack PyYAML), so
the secrets Secret paictl emits for this runtime also holds one key per secret the commands use, `secret.<path>`
(e.g. `secret.storageKey`, `secret.db.password`; a path outside [-._a-zA-Z0-9] gets `secret.sha256-<hex>`), mounted
as files next to `secrets.yaml`. The prelude reads the file, HTML-escapes it as pystache does, and substitutes the
literal tag in the commands, so no value is ever in the pod template. As in the runtime (only when the job has
secrets), every other leftover tag becomes empty; that part is known at compile time and done in `args` already.
With `--secrets-from`, that Secret must carry the same `secret.<path>` keys; a missing one is reported on stderr
and its tag becomes empty, as pystache renders an unresolved tag.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from paictl.protocol.names import convert_name
from paictl.protocol.templates import TagKind, TemplateError, resolve, scan_tags

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.diagnostics import Finding
    from paictl.protocol.model import Job, TaskRole

BARRIER_MOUNT = "/mnt/frameworkbarrier"
BARRIER_VOLUME = "frameworkbarrier-volume"
SHELL = ("bash", "-o", "errexit", "-o", "nounset", "-o", "pipefail")
#: `$0` of the prelude and of the commands (OpenPAI's is the path of user.sh).
SCRIPT_NAME = "paictl-task"
SECRET_KEY_PREFIX = "secret."
#: Port labels the runtime always allocates, after the job's own (as the port-scheduling-spec lists them).
ALWAYS_PORTS = ("ssh", "http")
_KEY_CHARS = re.compile(r"[-._a-zA-Z0-9]+")
#: Secret data keys are at most 253 characters.
_MAX_KEY = 253

#: The largest request the Kubernetes API server accepts (its maxRequestBodyBytes, 3 MiB): a bigger object can never
#: be created.
MAX_OBJECT_BYTES = 3 * 1024 * 1024
#: task role name -> label -> ports, in the order the environment lists them.
Ports = Mapping[str, Mapping[str, tuple[int, ...]]]


def allocate_ports(job: Job, profile: Profile) -> tuple[dict[str, dict[str, tuple[int, ...]]], list[Finding]]:
    """Fixed ports for every task role, consecutive from portRange's start; E607 if they overflow it."""
    from paictl.protocol.codes import finding

    start, end = profile.port_range
    # Counted before any range is made: 100,000 labels of 30,000 ports each would be 3 billion numbers.
    needed = sum(max(count, 0) for role in job.task_roles for label, count in
                 {**{label: 1 for label in ALWAYS_PORTS}, **dict(role.resources.ports)}.items())
    if start + needed > end:
        return {}, [finding("E607", "/taskRoles", f"the job needs {needed} ports; the profile's portRange "
                                                  f"[{start}, {end}) holds {end - start}",
                            hint="ask for fewer ports (resourcePerInstance.ports), or widen portRange")]
    next_port = start
    ports: dict[str, dict[str, tuple[int, ...]]] = {}
    for role in job.task_roles:
        counts = dict(role.resources.ports)
        for label in ALWAYS_PORTS:
            counts.setdefault(label, 1)
        ports[role.name] = {}
        for label, count in counts.items():
            count = max(count, 0)
            ports[role.name][label] = tuple(range(next_port, next_port + count))
            next_port += count
    size = len(job.task_roles) * sum(len(line) + 1 for line in port_lines(job, ports))
    if size > MAX_OBJECT_BYTES:
        return {}, [finding("E608", "/taskRoles", f"every pod exports every task's port variables: for "
                                                  f"{len(job.task_roles)} task roles they alone would take "
                                                  f"{size // (1024 * 1024)} MiB, over the {MAX_OBJECT_BYTES // (1024 * 1024)} "
                                                  "MiB Kubernetes accepts in one object",
                            hint="use fewer task roles (the instances of one role share its variables), or a "
                                 "profile with OpenPAI's own runtime")]
    return ports, []


def secret_key(path: tuple[str, ...]) -> str:
    """The Secret key (and file name) holding the secret at `path` below `$secrets`."""
    dotted = ".".join(path)
    if _KEY_CHARS.fullmatch(dotted) and len(SECRET_KEY_PREFIX) + len(dotted) <= _MAX_KEY:
        return SECRET_KEY_PREFIX + dotted
    import hashlib  # only for a path that is not a valid key as is: importing it loads OpenSSL (3 ms)

    return f"{SECRET_KEY_PREFIX}sha256-{hashlib.sha256(dotted.encode('utf-8')).hexdigest()}"


def _tags(entrypoint: str) -> list[Any]:
    try:
        return list(scan_tags(entrypoint))
    except TemplateError:
        return []  # pystache fails on such text too; the commands are left as they are


def _secret_path(tag: Any) -> tuple[str, ...] | None:
    if tag.kind is TagKind.NAME and len(tag.path) > 1 and tag.path[0] == "$secrets":
        return tuple(tag.path[1:])
    return None


def secret_files(job: Job, entrypoints: Iterable[str]) -> dict[str, str]:
    """`secret.<path>` -> the value pystache would print (Python's str, not yet escaped), for every secret used."""
    from paictl.targets.framework.values import plain

    secrets = {"$secrets": plain(job.secrets)}
    files: dict[str, str] = {}
    for entrypoint in entrypoints:
        for tag in _tags(entrypoint):
            path = _secret_path(tag)
            if path is not None:
                found, value = resolve(tag.path, secrets)
                if found:
                    files[secret_key(path)] = str(value)
    return files


def runtime_commands(entrypoint: str, has_secrets: bool) -> tuple[str, list[tuple[str, str]]]:
    """The commands with every tag the runtime would blank removed, and the (tag, key) pairs filled at start.

    Without secrets the runtime runs the entrypoint unchanged, leftover tags included (openpai.md b).
    """
    if not has_secrets:
        return entrypoint, []
    out, position, substitutions = [], 0, []
    for tag in _tags(entrypoint):
        out.append(entrypoint[position:tag.start])
        position = tag.end
        path = _secret_path(tag)
        if path is not None:
            out.append(tag.raw)
            if (tag.raw, secret_key(path)) not in substitutions:
                substitutions.append((tag.raw, secret_key(path)))
    out.append(entrypoint[position:])
    return "".join(out), substitutions


def _role_loop(role: TaskRole, ports: Ports) -> list[str]:
    name = convert_name(role.name)
    body = [f'  instances+=("{name}:$i")']
    for label, numbers in ports[role.name].items():
        value = ",".join(map(str, numbers))
        body.append(f'  export "PAI_PORT_LIST_{name}_${{i}}_{label}={value}" "PAI_{name}_${{i}}_{label}_PORT={value}"')
    return [f"for ((i = 0; i < {role.instances}; i++)); do", *body, "done"]


def http_port(role: TaskRole, ports: Ports) -> str:
    """The role's http port (the one OpenPAI's host lists name), or "" when it asked for none."""
    return str(ports[role.name]["http"][0]) if ports[role.name]["http"] else ""


def port_lines(job: Job, ports: Ports) -> list[str]:
    """The prelude's start, shared with the JobSet target: PAI_WORK_DIR and every task's port variables."""
    lines = [
        "# paictl native runtime: what openpai-runtime does before a task's commands, then the commands.",
        "export PAI_WORK_DIR=$PWD",
        "# Ports are fixed per task role (each pod has its own IP): every task's port variables are known here.",
        "instances=()",
    ]
    for role in job.task_roles:
        lines += _role_loop(role, ports)
    lines.append('PAI_TASK_ROLE_INSTANCES=$(IFS=,; echo "${instances[*]}"); export PAI_TASK_ROLE_INSTANCES')
    return lines


def prelude(job: Job, ports: Ports, substitutions: list[tuple[str, str]], secrets_mount: str) -> str:
    """The script run before the commands (see the module docstring); `$1` is the commands."""
    lines = port_lines(job, ports)
    if job.gang_allocation:
        lines += [
            "# Peers: the frameworkbarrier init container waited for every task's IP and wrote injector.sh; with",
            "# each role's http port set, FB_<ROLE>_ADDRESSES is OpenPAI's ip:port host list.",
            'host_ips() { local i=0 ip IFS=,; for ip in $2; do export "PAI_HOST_IP_$1_$i=$ip"; i=$((i + 1)); done; }',
        ]
        lines += [f"FB_{convert_name(r.name).upper()}_PORT={http_port(r, ports)}" for r in job.task_roles]
        lines += ["set +o nounset", f". {BARRIER_MOUNT}/injector.sh >&2", "set -o nounset"]
        for role in job.task_roles:
            name, upper = convert_name(role.name), convert_name(role.name).upper()
            lines += [f"export PAI_TASK_ROLE_{name}_HOST_LIST=$FB_{upper}_ADDRESSES",
                      f'host_ips {name} "$FB_{upper}_IPS"']
    return "\n".join(lines + run_commands(substitutions, secrets_mount)) + "\n"


def run_commands(substitutions: list[tuple[str, str]], secrets_mount: str) -> list[str]:
    """The prelude's end, shared with the Mars target: fill in `$secrets` from the mounted Secret, exec the commands."""
    lines: list[str] = []
    command = '"$1"'
    if substitutions:
        lines += [
            "# $secrets: read from the mounted Secret now, HTML-escaped as pystache does; never in the pod spec.",
            "cmd=$1",
            "secret() {",
            f"  local value='' file={shlex.quote(secrets_mount)}/$2",
            "  if [[ -f $file ]]; then IFS= read -r -d '' value < \"$file\" || true",
            '  else echo "paictl: the mounted Secret has no key $2; $1 becomes empty" >&2; fi',
            '  value=${value//"&"/"&amp;"}; value=${value//"<"/"&lt;"}; value=${value//">"/"&gt;"}',
            '  value=${value//\'"\'/"&quot;"}; value=${value//"\'"/"&#x27;"}',
            '  cmd=${cmd//"$1"/"$value"}',
            "}",
        ]
        lines += [f"secret {shlex.quote(tag)} {shlex.quote(key)}" for tag, key in substitutions]
        command = '"$cmd"'
    lines.append(f'exec {" ".join(SHELL)} -c {command} "$0"')
    return lines


def native_env(role: TaskRole, ports: Ports) -> list[dict[str, Any]]:
    """What the runtime's genenv adds for the current container and needs no other pod: its IP and its ports."""
    own = ports[role.name]
    env = [{"name": name, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
           for name in ("PAI_CURRENT_CONTAINER_IP", "PAI_CONTAINER_HOST_IP")]
    first = {label: str(numbers[0]) if numbers else "" for label, numbers in own.items()}
    env += [{"name": "PAI_CURRENT_CONTAINER_PORT", "value": first["http"]},
            {"name": "PAI_CONTAINER_HOST_PORT", "value": first["http"]},
            {"name": "PAI_CONTAINER_SSH_PORT", "value": first["ssh"]}]
    env += [{"name": f"PAI_CONTAINER_HOST_{label}_PORT_LIST", "value": ",".join(map(str, numbers))}
            for label, numbers in own.items()]
    env.append({"name": "PAI_CONTAINER_HOST_PORT_LIST",
                "value": ";".join(f"{label}:{','.join(map(str, numbers))}" for label, numbers in own.items())})
    return env


def container_ports(role: TaskRole, ports: Ports) -> list[dict[str, Any]]:
    return [{"containerPort": port} for numbers in ports[role.name].values() for port in numbers]


def barrier_init_container(profile: Profile) -> dict[str, Any]:
    """FrameworkBarrier as FC's example runs it: in-cluster config, output in an emptyDir the app also mounts."""
    return {"name": "frameworkbarrier", "image": profile.barrier_image,
            "volumeMounts": [{"name": BARRIER_VOLUME, "mountPath": BARRIER_MOUNT}]}


def barrier_rbac(job: Job, profile: Profile) -> list[dict[str, Any]]:
    """What the FrameworkBarrier's pods need on a plain cluster: their service account, and a Role and RoleBinding
    that let it get, list and watch frameworks (FC's example: `kubectl create serviceaccount frameworkbarrier`, a
    ClusterRole with those verbs on `frameworks`, and a binding). Namespaced here: the barrier reads only its own
    Framework, and a namespace's admin can apply a Role where a ClusterRole needs the cluster's. Empty unless the
    profile asks for it and the job's pods run as the barrier's account."""
    account = profile.barrier_service_account
    if not (profile.barrier_rbac and account and job.gang_allocation and not profile.service_account):
        return []
    metadata = {"name": account, "namespace": profile.namespace}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(metadata)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(metadata),
         "rules": [{"apiGroups": ["frameworkcontroller.microsoft.com"], "resources": ["frameworks"],
                    "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(metadata),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": profile.namespace}]},
    ]


def service_account(job: Job, profile: Profile) -> str | None:
    if profile.service_account or not job.gang_allocation:
        return profile.service_account
    return profile.barrier_service_account
