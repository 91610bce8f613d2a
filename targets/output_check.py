"""Check every compiled object against its schema before it leaves paictl (issue item 7, "Output validity").

A job that passed validation must compile into objects the cluster accepts; an object that fails here is a bug in
paictl, never in the job, so it raises InternalError (exit 70) rather than an invalid-job error.

The Framework is checked against `schemas/framework.schema.json` (written for paictl from FrameworkController's
types and CRD). Kubernetes' own kinds, and the PodTemplateSpec inside each task role (which the Framework CRD stores
unvalidated), are checked against the JSON schemas that the `kubernetes-validate` package ships, for
KUBERNETES_VERSION. That package's Python API is not used: importing it costs ~160 ms, more than half of a whole
`paictl compile`. Its schema files are read directly and compiled with jsonschema_rs instead (~10 ms, once per
process; see `needed_definitions`).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import json
import math
import os
import re
from typing import Any, Callable, Iterable

from paictl.errors import InternalError

#: The Kubernetes release whose object schemas the output is checked against. FrameworkController needs the
#: apiextensions.k8s.io/v1 CRD (Kubernetes >= 1.22); 1.30 is old enough that anything paictl emits must run on any
#: maintained cluster. It must be one of the versions kubernetes-validate ships (pyproject.toml bounds it).
KUBERNETES_VERSION = "1.30.0"
#: The `-strict` variant sets additionalProperties false everywhere: a misspelt field is an error, not dropped.
_SCHEMA_DIR = f"v{KUBERNETES_VERSION}-local-strict"
#: The `$ref`s in the kind files resolve (against their `$id`, https://kubernetes.io/api/<kind>/<version>) here.
_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"

#: Schema file (in kubernetes-validate's folder) for each (apiVersion, kind) paictl may emit.
KIND_SCHEMAS: dict[tuple[str, str], str] = {
    ("v1", "Secret"): "secret-v1.json",
    ("scheduling.k8s.io/v1", "PriorityClass"): "priorityclass-scheduling-v1.json",
    ("v1", "ServiceAccount"): "serviceaccount-v1.json",
    ("rbac.authorization.k8s.io/v1", "Role"): "role-rbac-v1.json",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "rolebinding-rbac-v1.json",
}
FRAMEWORK = ("frameworkcontroller.microsoft.com/v1", "Framework")
#: The local target's plan (targets/local.py), checked against schemas/localplan.schema.json.
LOCAL_PLAN = ("paictl.dev/v1alpha1", "LocalPlan")
#: The grass target's plan (targets/grass/target.py); its job file is MARO's, with no apiVersion or kind: it is
#: recognised by its `mode` (grass/...) and checked against schemas/grass-job.schema.json.
GRASS_PLAN = ("paictl.dev/v1alpha1", "GrassPlan")

#: Pod spec fields that are not PodSpec fields but are emitted on purpose, with the one value allowed: upstream
#: OpenPAI sends `privileged: false` and the API server drops it (targets/framework_pod.py).
TOLERATED_POD_SPEC_FIELDS: dict[str, Any] = {"privileged": False}

#: Rules the API server enforces in code, not in its OpenAPI schema (apimachinery's validation), that a compiled
#: object could break: names of cluster objects are DNS-1123 subdomains, label values are short and plain.
_METADATA_RULES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 253,
                 "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"},
        "labels": {"type": "object", "additionalProperties": {
            "type": "string", "maxLength": 63, "pattern": r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}},
    },
}

#: What paictl's own Frameworks promise beyond the CRD, which accepts a zero-task ("paused") role that never
#: completes: every job has a task role and every task role at least one instance (job.schema.json).
_PAICTL_FRAMEWORK_RULES: dict[str, Any] = {
    "properties": {"spec": {"properties": {"taskRoles": {
        "minItems": 1,
        "items": {"required": ["taskNumber"], "properties": {"taskNumber": {"minimum": 1}}},
    }}}},
}

#: KubeDL's MarsJob, in both API groups (targets/mars.py): `schemas/marsjob.schema.json`, and each replica type's
#: pod template as a Kubernetes PodTemplateSpec (the CRD's copy of that schema is older and loose).
MARSJOBS = (("training.kubedl.io/v1alpha1", "MarsJob"), ("kubedl.io/v1alpha1", "MarsJob"))
#: Kubernetes JobSet (targets/jobset): `schemas/jobset.schema.json`, and each replicatedJob's template as a Kubernetes
#: JobTemplateSpec (which holds the pod template).
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")

_MAX_REPORTED = 10
_ISSUES = "https://github.com/paictl/paictl/issues"


def check_objects(objects: Iterable[dict[str, Any]]) -> None:
    """Raise InternalError listing every schema violation in `objects` (all of them, so one report is enough)."""
    problems: list[str] = []
    for obj in objects:
        where = _describe(obj)
        problems += [f"{where} at {path}: {message}" for path, message in object_errors(obj)]
    if problems:
        shown = problems[:_MAX_REPORTED]
        more = f"; ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        # One line: the CLI prints an error as one line (a newline in it would be shown escaped, as `\n`).
        raise InternalError(
            "this is a bug in paictl: an object it compiled fails its schema check, so it was not printed: "
            + "; ".join(shown) + more
            + f". Please report it at {_ISSUES} with the job file and the command line.")


def object_errors(obj: Any) -> list[tuple[str, str]]:
    """(JSON pointer, message) for every violation in one object; empty when it is valid."""
    if not isinstance(obj, dict):
        return [("", f"not a mapping but {type(obj).__name__}")]
    if "kind" not in obj and "protocolVersion" in obj:  # the openpai target's output: a job protocol document
        return _errors(_paictl_validator("job"), _as_ajv_reads(obj), "")
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key == (None, None) and str(obj.get("mode", "")).startswith("grass"):
        return _errors(_paictl_validator("grass-job"), obj, "")
    if key == GRASS_PLAN:
        return _errors(_paictl_validator("grass-plan"), obj, "")
    if key == FRAMEWORK:
        errors = _errors(_framework_validator(), obj, "") + _errors(_inline_validator("paictl"), obj, "")
        errors += _metadata_errors(obj, "")
        roles = (obj.get("spec") or {}).get("taskRoles") if isinstance(obj.get("spec"), dict) else None
        for index, role in enumerate(roles if isinstance(roles, list) else ()):
            pod = role.get("task", {}).get("pod") if isinstance(role, dict) and isinstance(role.get("task"), dict) \
                else None
            if isinstance(pod, dict):
                where = f"/spec/taskRoles/{index}/task/pod"
                errors += _errors(_kubernetes_validator("podtemplatespec-v1.json"), _without_tolerated(pod), where)
                errors += _metadata_errors(pod, where)
        return errors
    if key in MARSJOBS:
        return _marsjob_errors(obj)
    if key == JOBSET:
        return _jobset_errors(obj)
    if key == LOCAL_PLAN:
        return _errors(_paictl_validator("localplan"), obj, "")
    if key in KIND_SCHEMAS:
        return (_errors(_kubernetes_validator(KIND_SCHEMAS[key]), obj, "")
                + _metadata_errors(obj, ""))
    known = ", ".join(f"{api}/{kind}" for api, kind in [*KIND_SCHEMAS, FRAMEWORK, *MARSJOBS, JOBSET, LOCAL_PLAN])
    return [("/kind", f"no schema for apiVersion {key[0]!r} kind {key[1]!r} (paictl checks {known})")]


def _marsjob_errors(obj: dict[str, Any]) -> list[tuple[str, str]]:
    errors = _errors(_paictl_validator("marsjob"), obj, "") + _metadata_errors(obj, "")
    spec = obj.get("spec")
    replicas = spec.get("marsReplicaSpecs") if isinstance(spec, dict) else None
    for replica_type, replica in (replicas.items() if isinstance(replicas, dict) else ()):
        template = replica.get("template") if isinstance(replica, dict) else None
        if isinstance(template, dict):
            where = f"/spec/marsReplicaSpecs/{_escape(replica_type)}/template"
            errors += _errors(_kubernetes_validator("podtemplatespec-v1.json"), template, where)
            errors += _metadata_errors(template, where)
    return errors


def _jobset_errors(obj: dict[str, Any]) -> list[tuple[str, str]]:
    errors = _errors(_paictl_validator("jobset"), obj, "") + _metadata_errors(obj, "")
    spec = obj.get("spec")
    rjobs = spec.get("replicatedJobs") if isinstance(spec, dict) else None
    for index, rjob in enumerate(rjobs if isinstance(rjobs, list) else ()):
        template = rjob.get("template") if isinstance(rjob, dict) else None
        if isinstance(template, dict):
            where = f"/spec/replicatedJobs/{index}/template"
            errors += _errors(_kubernetes_validator("jobtemplatespec-batch-v1.json"), template, where)
            pod = (template.get("spec") or {}).get("template") if isinstance(template.get("spec"), dict) else None
            if isinstance(pod, dict):
                errors += _metadata_errors(pod, where + "/spec/template")
    return errors


def _as_ajv_reads(value: Any) -> Any:
    """The job document as ajv checks it, in types jsonschema-rs takes: +-Infinity is an integer there (a `.inf`
    retry count, W210, is sent as written), a date (a Date) and a !!binary value (a Buffer) are objects. Only a
    validated document gets here, so the stand-in's size is never compared against a bound Infinity would fail."""
    if isinstance(value, float) and math.isinf(value):
        return 2 ** 63 - 1 if value > 0 else -(2 ** 63 - 1)
    if isinstance(value, dict):
        return {key: _as_ajv_reads(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_ajv_reads(item) for item in value]
    if isinstance(value, (datetime.date, datetime.time)) or (isinstance(value, str) and type(value) is not str):
        return {}
    return value


@functools.lru_cache(maxsize=None)
def _paictl_validator(name: str) -> Any:
    import jsonschema_rs

    from paictl.schemas import load_schema

    return jsonschema_rs.validator_for(load_schema(name))


def _errors(validator: Any, instance: Any, prefix: str) -> list[tuple[str, str]]:
    if validator.is_valid(instance):  # the common case, and much cheaper than collecting errors
        return []
    return [(prefix + "".join("/" + _escape(part) for part in error.instance_path) or "/", error.message)
            for error in validator.iter_errors(instance)]


def _metadata_errors(obj: dict[str, Any], prefix: str) -> list[tuple[str, str]]:
    """The apimachinery rules; a missing or mistyped `metadata` is left to the object's own schema."""
    metadata = obj.get("metadata")
    return _errors(_inline_validator("metadata"), metadata, prefix + "/metadata") if isinstance(metadata, dict) else []


def _escape(part: str | int) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _describe(obj: Any) -> str:
    if not isinstance(obj, dict):
        return "an object"
    name = obj.get("metadata", {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    return f"{obj.get('kind', 'object')} {name!r}" if name else str(obj.get("kind", "an object"))


def _without_tolerated(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod template minus TOLERATED_POD_SPEC_FIELDS that hold exactly their allowed value (a copy if any)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    drop = {field for field, allowed in TOLERATED_POD_SPEC_FIELDS.items()
            if field in spec and type(spec[field]) is type(allowed) and spec[field] == allowed}
    return {**pod, "spec": {k: v for k, v in spec.items() if k not in drop}} if drop else pod


@functools.lru_cache(maxsize=None)
def _framework_validator() -> Any:
    import jsonschema_rs

    from paictl.schemas import load_schema

    return jsonschema_rs.validator_for(load_schema("framework"))


@functools.lru_cache(maxsize=None)
def _inline_validator(name: str) -> Any:
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator({"metadata": _METADATA_RULES, "paictl": _PAICTL_FRAMEWORK_RULES}[name])


@functools.lru_cache(maxsize=None)
def _kubernetes_validator(filename: str) -> Any:
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(_read(filename), registry=_kubernetes_registry(),
                                              validate_formats=True, formats=_FORMATS)


@functools.lru_cache(maxsize=None)
def _kubernetes_registry() -> Any:
    """The kind files' `$ref`s (absolute paths, resolved against their `$id`s) all point into this one resource."""
    import jsonschema_rs

    return jsonschema_rs.Registry([(_DEFINITIONS_URI, {"$defs": needed_definitions()})])


@functools.lru_cache(maxsize=None)
def needed_definitions() -> dict[str, Any]:
    """The shared definitions the kinds in KIND_SCHEMAS (and PodTemplateSpec) reach through `$ref`, and no others.

    `_definitions.json` holds ~650 definitions (1.3 MB): parsing all of them and handing them to jsonschema_rs costs
    ~11 ms, most of this check's time. The file is generated JSON with one definition per 4-space-indented key, so
    the ~110 needed ones are found with one regex pass and parsed alone (~5 ms). If the layout ever differs, the
    whole file is parsed instead: slower, never wrong.
    """
    path = os.path.join(schema_folder(), "_definitions.json")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise _missing(path, exc) from None
    starts = {match.group(1): match.end() for match in _TOP_LEVEL_KEY.finditer(text)}
    decoder = json.JSONDecoder()
    pending = sorted({name for filename in _ROOT_FILES for name in _REF.findall(_read_text(filename))})
    found: dict[str, Any] = {}
    while pending:
        name = pending.pop()
        if name in found:
            continue
        if name not in starts:
            return json.loads(text)["$defs"]
        found[name], end = decoder.raw_decode(text, starts[name])
        pending += _REF.findall(text, starts[name], end)
    return found


#: A top-level key of `_definitions.json`'s `$defs` (2-space indentation), up to where its value starts.
_TOP_LEVEL_KEY = re.compile(r'\n    "([^"]+)": ')
#: A `$ref` to a shared definition, from a kind file (absolute path) or from another definition (same document).
_REF = re.compile(r'"\$ref": "(?:/api/_definitions\.json)?#/\$defs/([^"#/]+)"')
_ROOT_FILES = (*KIND_SCHEMAS.values(), "podtemplatespec-v1.json", "jobtemplatespec-batch-v1.json")


def _read(filename: str) -> Any:
    return json.loads(_read_text(filename))


def _read_text(filename: str) -> str:
    path = os.path.join(schema_folder(), filename)
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise _missing(path, exc) from None


def _missing(path: str, exc: OSError) -> InternalError:
    return InternalError(f"cannot read Kubernetes schema {path} ({exc.strerror}); paictl needs the "
                         f"kubernetes-validate package with Kubernetes {KUBERNETES_VERSION} schemas (reinstall paictl)")


@functools.lru_cache(maxsize=None)
def schema_folder() -> str:
    """kubernetes-validate's schema folder for KUBERNETES_VERSION, found without importing the package."""
    import importlib.util

    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise InternalError("the kubernetes-validate package is missing; paictl needs it to check its output "
                            "(reinstall paictl)")
    return os.path.join(list(spec.submodule_search_locations)[0], "kubernetes-json-schema", _SCHEMA_DIR)


def _is_base64(value: str) -> bool:
    """OpenAPI's `byte` format: what Go's base64.StdEncoding decodes (standard alphabet, padded)."""
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return False
    return True


_FORMATS: dict[str, Callable[[str], bool]] = {"byte": _is_base64}
