"""Per-kind rules the API server applies on write: name formats, the CRD schema checks FrameworkController's and
KubeDL's CRDs declare, built-in validation the emulated kinds need, and defaulting (Secret stringData, Pod phase,
Service clusterIP). Only the checks a client can trip over are here; anything else is accepted."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re

from .errors import invalid

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
FC_NAME = re.compile(r"^[a-z0-9]{1,63}$")  # FrameworkController's NamingConvention
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

Cause = tuple[str, str, str]


def _name_causes(rt, name: str) -> list[Cause]:
    if rt.kind == "Framework":
        if not FC_NAME.match(name):
            return [("metadata.name", "FieldValueInvalid",
                     f'Invalid value: "{name}": metadata.name in body should match \'^[a-z0-9]{{1,63}}$\'')]
        return []
    if rt.kind in ("Namespace",):
        ok, what = DNS1123_LABEL.match(name) and len(name) <= 63, "RFC 1123 label"
    elif rt.kind == "Service":
        ok, what = DNS1035_LABEL.match(name) and len(name) <= 63, "RFC 1035 label"
    else:
        ok, what = DNS1123_SUBDOMAIN.match(name) and len(name) <= 253, "RFC 1123 subdomain"
    if ok:
        return []
    return [("metadata.name", "FieldValueInvalid",
             f'Invalid value: "{name}": a lowercase {what} must consist of lower case alphanumeric characters, '
             "'-' or '.', and must start and end with an alphanumeric character")]


def _int_range(causes: list[Cause], value, field: str, low: int | None, high: int | None) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        causes.append((field, "FieldValueTypeInvalid", f'Invalid value: "{type(value).__name__}": {field} in body '
                       "must be of type integer"))
        return
    if low is not None and value < low:
        causes.append((field, "FieldValueInvalid", f"Invalid value: {value}: {field} in body should be greater than "
                       f"or equal to {low}"))
    if high is not None and value > high:
        causes.append((field, "FieldValueInvalid", f"Invalid value: {value}: {field} in body should be less than or "
                       f"equal to {high}"))


def _framework(obj: dict) -> list[Cause]:
    causes: list[Cause] = []
    spec = obj.get("spec") or {}
    if "executionType" in spec and spec["executionType"] not in ("Create", "Start", "Stop"):
        causes.append(("spec.executionType", "FieldValueNotSupported",
                       f'Unsupported value: "{spec["executionType"]}": supported values: "Create", "Start", "Stop"'))
    _int_range(causes, (spec.get("retryPolicy") or {}).get("maxRetryCount"), "spec.retryPolicy.maxRetryCount", -2,
               None)
    for i, role in enumerate(spec.get("taskRoles") or []):
        base = f"spec.taskRoles[{i}]"
        name = role.get("name")
        if not isinstance(name, str) or not FC_NAME.match(name):
            causes.append((f"{base}.name", "FieldValueInvalid",
                           f'Invalid value: "{name}": {base}.name in body should match \'^[a-z0-9]{{1,63}}$\''))
        _int_range(causes, role.get("taskNumber"), f"{base}.taskNumber", 0, 10000)
        policy = role.get("frameworkAttemptCompletionPolicy") or {}
        for key in ("minFailedTaskCount", "minSucceededTaskCount"):
            _int_range(causes, policy.get(key), f"{base}.frameworkAttemptCompletionPolicy.{key}", -1, None)
        task = role.get("task") or {}
        _int_range(causes, (task.get("retryPolicy") or {}).get("maxRetryCount"),
                   f"{base}.task.retryPolicy.maxRetryCount", -2, None)
    return causes


def _marsjob(obj: dict) -> list[Cause]:
    spec = obj.get("spec") or {}
    if "marsReplicaSpecs" not in spec:
        return [("spec.marsReplicaSpecs", "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    for rtype, replica in (spec["marsReplicaSpecs"] or {}).items():
        if not ((replica or {}).get("template") or {}).get("spec", {}).get("containers"):
            causes.append((f"spec.marsReplicaSpecs.{rtype}.template.spec.containers", "FieldValueRequired",
                           "Required value"))
    return causes


def _jobset(obj: dict) -> list[Cause]:
    """What JobSet's validating webhook refuses that a client can trip over (reference jobset.md 1.1, 1.3): no
    replicatedJobs, names that are not DNS-1035 labels, and Job or pod names longer than 63 characters."""
    spec = obj.get("spec") or {}
    rjobs = spec.get("replicatedJobs")
    if not rjobs:
        return [("spec.replicatedJobs", "FieldValueRequired", "Required value")]
    name = obj["metadata"]["name"]
    causes: list[Cause] = []
    if not DNS1035_LABEL.match(name) or len(name) > 63:
        causes.append(("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": a DNS-1035 label must '
                       "consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
                       "and end with an alphanumeric character"))
    for i, rjob in enumerate(rjobs):
        rname = str(rjob.get("name") or "")
        replicas = int(rjob.get("replicas", 1))
        job_spec = (rjob.get("template") or {}).get("spec") or {}
        if not DNS1035_LABEL.match(rname):
            causes.append((f"spec.replicatedJobs[{i}].name", "FieldValueInvalid", f'Invalid value: "{rname}"'))
        longest_job = f"{name}-{rname}-{max(replicas - 1, 0)}"
        if len(longest_job) > 63:
            causes.append(("spec.replicatedJobs", "FieldValueInvalid", f'Invalid value: "{longest_job}": must be no '
                           "more than 63 characters"))
        if job_spec.get("completionMode", "Indexed") == "Indexed" and job_spec.get("completions"):
            longest_pod = f"{longest_job}-{int(job_spec['completions']) - 1}-abcde"
            if len(longest_pod) > 63:
                causes.append(("spec.replicatedJobs", "FieldValueInvalid", f'Invalid value: "{longest_pod}": must '
                               "be no more than 63 characters"))
    return causes


def _data_too_long(obj: dict, sizes) -> list[Cause]:
    """pkg/apis/core/validation ValidateSecret/ValidateConfigMap: the values together at most 1 MiB."""
    total = sum(sizes)
    if total > 1024 * 1024:
        return [("data", "FieldValueTooLong", f"Too long: must have at most {1024 * 1024} bytes")]
    return []


def _config_map(obj: dict) -> list[Cause]:
    sizes = [len(str(v).encode()) for v in (obj.get("data") or {}).values()]
    sizes += [len(base64.b64decode(str(v) or "")) for v in (obj.get("binaryData") or {}).values()]
    return _data_too_long(obj, sizes)


def _secret(obj: dict) -> list[Cause]:
    causes: list[Cause] = []
    for key, value in (obj.get("data") or {}).items():
        if not CONFIG_KEY.match(key):
            causes.append((f"data[{key}]", "FieldValueInvalid", f'Invalid value: "{key}": a valid config key must '
                           "consist of alphanumeric characters, '-', '_' or '.'"))
        try:
            base64.b64decode(value or "", validate=True)
        except (binascii.Error, TypeError):
            causes.append((f"data[{key}]", "FieldValueInvalid", "Invalid value: illegal base64 data"))
    if not causes:
        causes += _data_too_long(obj, [len(base64.b64decode(v or "")) for v in (obj.get("data") or {}).values()])
    return causes


def _pod(obj: dict) -> list[Cause]:
    containers = (obj.get("spec") or {}).get("containers")
    if not containers:
        return [("spec.containers", "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    for i, container in enumerate(containers):
        if not container.get("name"):
            causes.append((f"spec.containers[{i}].name", "FieldValueRequired", "Required value"))
        if not container.get("image"):
            causes.append((f"spec.containers[{i}].image", "FieldValueRequired", "Required value"))
    return causes


def _priority_class(obj: dict) -> list[Cause]:
    if not isinstance(obj.get("value"), int):
        return [("value", "FieldValueRequired", "Required value")]
    return []


_CHECKS = {"Framework": _framework, "MarsJob": _marsjob, "JobSet": _jobset, "Secret": _secret, "Pod": _pod,
           "PriorityClass": _priority_class, "ConfigMap": _config_map}


#: apimachinery ValidateAnnotationsSize: keys and values of `metadata.annotations` together
ANNOTATIONS_MAX_BYTES = 256 * 1024


def validate(rt, obj: dict) -> None:
    name = obj["metadata"]["name"]
    causes = _name_causes(rt, name)
    annotations = obj["metadata"].get("annotations") or {}
    if sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items()) > ANNOTATIONS_MAX_BYTES:
        causes.append(("metadata.annotations", "FieldValueTooLong",
                       f"Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes"))
    check = _CHECKS.get(rt.kind)
    if check:
        causes += check(obj)
    if causes:
        raise invalid(rt, name, causes)


def default(rt, obj: dict, cluster_ip: str) -> None:
    """Defaulting and the conversions the API server does on every write."""
    if rt.kind == "Secret":
        string_data = obj.pop("stringData", None) or {}
        data = obj.setdefault("data", {}) if string_data else obj.get("data")
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj.setdefault("type", "Opaque")
    elif rt.kind == "JobSet":
        # JobSet's defaulting webhook: DNS hostnames on, success policy All, Indexed Jobs, pods OnFailure.
        spec = obj.setdefault("spec", {})
        network = spec.setdefault("network", {})
        network.setdefault("enableDNSHostnames", True)
        network.setdefault("publishNotReadyAddresses", True)
        spec.setdefault("successPolicy", {"operator": "All"})
        for rjob in spec.get("replicatedJobs") or []:
            rjob.setdefault("replicas", 1)
            job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
            job_spec.setdefault("completionMode", "Indexed")
            job_spec.setdefault("template", {}).setdefault("spec", {}).setdefault("restartPolicy", "OnFailure")
    elif rt.kind == "Service":
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        if spec.get("type") == "ClusterIP" and not spec.get("clusterIP"):
            spec["clusterIP"] = cluster_ip
        if spec.get("clusterIP"):
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("sessionAffinity", "None")
    elif rt.kind == "Pod":
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif rt.kind == "Namespace":
        obj.setdefault("status", {}).setdefault("phase", "Active")
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])


def _go_dump(value) -> str:
    """A value as the webhook's error prints it (Go's %#v of the Go struct): long, every field. Only its length
    and shape matter to a client."""
    return "[]v1alpha2.ReplicatedJob{" + ", ".join(
        "v1alpha2.ReplicatedJob{" + ", ".join(f"{k[:1].upper()}{k[1:]}:{json.dumps(v, sort_keys=True)}"
                                              for k, v in sorted(item.items())) + "}" for item in value) + "}"


def validate_update(rt, old: dict, new: dict) -> None:
    """JobSet's validating webhook on UPDATE (kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go
    ValidateUpdate): spec.replicatedJobs and spec.managedBy are immutable, except that while the JobSet is (or is
    being) suspended, each pod template's labels, annotations, nodeSelector, tolerations and schedulingGates may
    change (for Kueue). A denial reaches the client as the webhook's 422, prefixed by the API server."""
    if rt.kind != "JobSet":
        return
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    munged = copy.deepcopy(new_spec.get("replicatedJobs") or [])
    if old_spec.get("suspend") or new_spec.get("suspend"):
        old_jobs = {r.get("name"): r for r in old_spec.get("replicatedJobs") or []}
        for rjob in munged:
            before = old_jobs.get(rjob.get("name"))
            if before is None:
                continue
            template = rjob.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
            old_template = ((before.get("template") or {}).get("spec") or {}).get("template") or {}
            for key in ("labels", "annotations"):
                _copy_key(template.setdefault("metadata", {}), old_template.get("metadata") or {}, key)
            for key in ("nodeSelector", "tolerations", "schedulingGates"):
                _copy_key(template.setdefault("spec", {}), old_template.get("spec") or {}, key)
    causes: list[Cause] = []
    if munged != (old_spec.get("replicatedJobs") or []):
        causes.append(("spec.replicatedJobs", "FieldValueInvalid",
                       f"Invalid value: {_go_dump(new_spec.get('replicatedJobs') or [])}: field is immutable"))
    if new_spec.get("managedBy") != old_spec.get("managedBy"):
        causes.append(("spec.managedBy", "FieldValueInvalid",
                       f"Invalid value: {json.dumps(new_spec.get('managedBy'))}: field is immutable"))
    if causes:
        error = invalid(rt, new["metadata"]["name"], causes)
        error.message = f'admission webhook "vjobset.kb.io" denied the request: {error.message}'
        raise error


def _copy_key(target: dict, source: dict, key: str) -> None:
    if key in source:
        target[key] = copy.deepcopy(source[key])
    else:
        target.pop(key, None)
