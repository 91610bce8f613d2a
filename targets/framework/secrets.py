"""Where a job's secrets go: into Kubernetes Secrets, and nowhere else.

OpenPAI keeps a job's `secrets` out of the Framework: the stored `config` annotation is the submitted YAML with the
secrets block masked (`protocolSecret.js mask()`), the values go to the Secret `<name>-configcred` (mounted for the
runtime, which substitutes `<% $secrets.x %>` inside the container) and registry credentials, rendered with the
secrets, go to the dockerconfigjson Secret `<name>-regcred`. paictl follows the same split, so a compiled Framework
can be printed, diffed and committed without leaking anything.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from paictl.targets.framework.values import plain

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.model import Job

MASK = 'secrets: "******"'
MASK_VALUE = "******"
DEFAULT_REGISTRY = "https://index.docker.io/v1/"

_SECRETS_LINE = re.compile(r"^secrets\s*:")
#: A line that starts a new top-level entry (anything not indented, not blank, not a comment).
_TOP_LEVEL = re.compile(r"^[^\s#]")


def mask_secrets(text: str) -> str:
    """Upstream's mask: the top-level `secrets:` entry, up to the next top-level key, becomes `secrets: "******"`.

    Blank, indented and comment lines after `secrets:` belong to it (a comment may sit between secret entries).
    """
    lines = text.split("\n")
    out: list[str] = []
    masking = False
    for line in lines:
        if _SECRETS_LINE.match(line):
            out.append(MASK)
            masking = True
            continue
        if masking and not _TOP_LEVEL.match(line):
            continue
        masking = False
        out.append(line)
    # When the secrets run to the end of the text, upstream's mask also takes the final line break: its pattern
    # ends the block at the next top-level line, which is the `Z` it appends after a line break and slices off.
    return "\n".join(out)


def config_annotation(job: Job, text: str | None, data: Mapping[str, Any] | None = None) -> str:
    """The Framework's `config` annotation: the job as submitted, secrets masked.

    With the source text this is upstream's value byte for byte, provided the mask provably worked: the masked text,
    read back, must be exactly the job with `secrets` replaced by the mask. That is decided on the parsed structure,
    not on lines, so every layout the textual mask cannot handle (one-line JSON, a flow root, `--- {...}`, a
    `? secrets` complex key, secrets brought in by a `<<:` merge, a quoted value continuing at column 0, an alias of
    a secret used elsewhere) is caught; the annotation is then the job serialised from the model, secrets masked.
    `data` is what `text` was read as, when the caller has it (it saves reading the text again).
    """
    # Upstream masks only the `secrets:` block and so stores registry passwords in the annotation; paictl does not:
    # a job with docker `auth` is stored serialised from the model, its auth masked like its secrets.
    has_auth = any(p.auth is not None for p in job.prerequisites)
    if text is not None and not has_auth:
        masked = mask_secrets(text)
        if masked == text and data is not None and "secrets" not in data:
            return masked  # nothing was masked and the job has no secrets
        if _mask_holds(text, masked, data):
            return masked
    return _dump(job_data(job, masked_secrets=bool(job.secrets)))


def _mask_holds(text: str, masked: str, data: Mapping[str, Any] | None = None) -> bool:
    """True when `masked` reads back as the job of `text` with its top-level `secrets` value replaced by the mask."""
    from paictl.protocol.loading import DocumentError, load_data

    try:
        original = dict(data) if data is not None else load_data(text, "<config>")
        reread = load_data(masked, "<config>")
    except DocumentError:
        return False
    expected = dict(original)
    if "secrets" in expected:
        expected["secrets"] = MASK_VALUE
    return _same(reread, expected)


def _same(a: Any, b: Any) -> bool:
    """`a == b`, keys in the same order, and NaN equal to NaN (a job may hold `.nan`: the mask still holds)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def job_data(job: Job, *, masked_secrets: bool) -> dict[str, Any]:
    """The protocol document a Job stands for (keys in protocol order), for when no source text is at hand."""
    data: dict[str, Any] = {"protocolVersion": int(job.protocol_version) if job.protocol_version.isdigit()
                            else job.protocol_version, "name": job.name, "type": job.type}
    for key, value in (("version", job.version), ("contributor", job.contributor),
                       ("description", job.description)):
        if value is not None:
            data[key] = value
    if job.parameters:
        data["parameters"] = plain(job.parameters)
    if masked_secrets:
        data["secrets"] = MASK_VALUE
    if job.job_retry_count:
        data["jobRetryCount"] = job.job_retry_count
    if job.prerequisites:
        data["prerequisites"] = [{**plain(p.fields), **({"auth": MASK_VALUE} if p.auth is not None else {})}
                                 for p in job.prerequisites]  # auth is left out of `fields`
    data["taskRoles"] = {role.name: _role_data(role) for role in job.task_roles}
    if job.deployments:
        data["deployments"] = [{"name": d.name, "taskRoles": {
            name: {k: list(v) for k, v in (("preCommands", t.pre_commands), ("postCommands", t.post_commands)) if v}
            for name, t in d.task_roles.items()}} for d in job.deployments]
    defaults = {k: v for k, v in (("deployment", job.defaults.deployment),
                                  ("virtualCluster", job.defaults.virtual_cluster)) if v is not None}
    if defaults:
        data["defaults"] = defaults
    if job.extras:
        data["extras"] = plain(job.extras)
    return data


def _role_data(role) -> dict[str, Any]:
    data: dict[str, Any] = {"instances": role.instances}
    completion = {k: v for k, v in (("minFailedInstances", role.completion.min_failed_instances),
                                    ("minSucceededInstances", role.completion.min_succeeded_instances))
                  if v is not None}
    if completion:
        data["completion"] = completion
    if role.task_retry_count:
        data["taskRetryCount"] = role.task_retry_count
    if role.prerequisites:
        data["prerequisites"] = list(role.prerequisites)
    data["dockerImage"] = role.docker_image
    for key in ("data", "output", "script"):
        if getattr(role, key) is not None:
            data[key] = getattr(role, key)
    if role.extra_container_options:
        data["extraContainerOptions"] = plain(role.extra_container_options)
    res = role.resources
    data["resourcePerInstance"] = {"cpu": res.cpu, "memoryMB": res.memory_mb, "gpu": res.gpu}
    if res.ports:
        data["resourcePerInstance"]["ports"] = dict(res.ports)
    data["commands"] = list(role.commands)
    return data


def _dump(data: Any) -> str:
    from paictl.compiler.emit import to_yaml_document

    return to_yaml_document(data)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def config_secret(name: str, job: Job, profile: Profile) -> dict[str, Any]:
    """`<name>-configcred`: the job's secrets as YAML, which the runtime reads from /usr/local/pai/secrets."""
    return {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"{name}-configcred", "namespace": profile.namespace},
        "data": {"secrets.yaml": _b64(_dump(plain(job.secrets)).encode("utf-8"))},
        "type": "Opaque",
    }


def registry_auths(job: Job) -> dict[str, str]:
    """Registry URI -> base64 `user:password`, for every dockerimage prerequisite with `auth`.

    k8s.js walks `Object.values(prerequisites.dockerimage)`, an object keyed by prerequisite name: names that are
    array indexes ("2", "10") come first, in numeric order, and a later entry for the same registry wins.
    """
    from paictl.compiler.render import render_with_secrets
    from paictl.protocol.jsstring import object_keys

    images = {p.name: p for p in job.prerequisites if p.type == "dockerimage"}
    auths: dict[str, str] = {}
    for prerequisite in (images[name] for name in object_keys(images)):
        auth = prerequisite.auth
        if auth is None:
            continue
        values = [render_with_secrets(v, job.secrets) if isinstance(v, str) else ("" if v is None else str(v))
                  for v in (auth.username, auth.password, auth.registry_uri)]
        username, password, registry = values
        auths[registry or DEFAULT_REGISTRY] = _b64(f"{username}:{password}".encode("utf-8"))
    return auths


def docker_secret(name: str, job: Job, profile: Profile) -> dict[str, Any] | None:
    auths = registry_auths(job)
    if not auths:
        return None
    # JSON.stringify: no blanks, and characters beyond ASCII as they are (UTF-8 once encoded)
    config = json.dumps({"auths": {uri: {"auth": value} for uri, value in auths.items()}}, separators=(",", ":"),
                        ensure_ascii=False)
    return {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"{name}-regcred", "namespace": profile.namespace},
        "data": {".dockerconfigjson": _b64(config.encode("utf-8"))},
        "type": "kubernetes.io/dockerconfigjson",
    }


def priority_class(name: str, priority: int) -> dict[str, Any]:
    """`<name>-priority`, with upstream's value formula and a fixed creation time.

    Upstream: `-(((126 - priority) << 24) + jobCreationTime)`, where jobCreationTime is the submission time in
    16-second units (so older jobs of a priority go first). A compiled object must not depend on the clock, so
    jobCreationTime is 0: the value keeps the job in its priority band, and jobs of equal priority tie.
    """
    return {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": f"{name}-priority"},
        "value": -((126 - priority) << 24),
        "preemptionPolicy": "PreemptLowerPriority",
        "globalDefault": False,
    }


def native_secret_objects(name: str, job: Job, profile: Profile, entrypoints: Iterable[str],
                          secrets_from: str | None) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """The Secrets of a target whose pods run the native runtime's prelude (MarsJob, JobSet): the job's secrets with
    one `secret.<path>` key per secret the commands use (framework/native.py), and the registry credentials.

    Returns (objects, the Secret to mount as job-secrets or None, the registry Secret's name or None).
    """
    from paictl.targets.framework.native import secret_files

    objects: list[dict[str, Any]] = []
    secrets_secret = secrets_from
    if secrets_from is None and (job.secrets or job.has_secrets):
        secret = config_secret(name, job, profile)
        files = secret_files(job, entrypoints)
        secret["data"].update((key, _b64(value.encode("utf-8"))) for key, value in sorted(files.items()))
        objects.append(secret)
        secrets_secret = secret["metadata"]["name"]
    regcred = docker_secret(name, job, profile)
    if regcred is not None:
        objects.append(regcred)
    return objects, secrets_secret, regcred["metadata"]["name"] if regcred else None
