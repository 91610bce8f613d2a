"""`extras.marsJob`: the MarsJob settings a protocol job has no words for, checked before anything is built.

KubeDL declares no enum, minimum or webhook for these fields (marsjob.md 1, 1.5): a misspelt key is pruned by the
API server and a wrong value is found when the job misbehaves. So paictl checks them at compile time, located in the
job file (E705), and knows the one misspelling upstream's own tutorial teaches: `memoryTuningPolicy`, which is read as
the real `workerMemoryTuningPolicy` with a warning (W701).

    extras:
      marsJob:
        webHost: mars.example.com          # Ingress host of the WebService (no scheme, no port)
        workerMemoryTuningPolicy:          # plasmaStore, lockFreeFileIO, spillDirs, workerCachePercentage (<= 100),
          workerCacheSize: 2Gi             # workerCacheSize (a Kubernetes quantity; wins over the percentage)
        cleanPodPolicy: None               # None (KubeDL's Mars default), Running or All
        ttlSecondsAfterFinished: 3600      # delete the MarsJob this long after it finished
        activeDeadlineSeconds: 86400       # fail it after this long
        backoffLimit: 3                    # restarts allowed job-wide (default: jobRetryCount, if > 0)
        schedulingPolicy: {minAvailable: 4, priorityClassName: high, queue: q1, priority: 1}
        restartPolicy: {worker: OnFailure} # per task role: Always, OnFailure, Never or ExitCode
"""

from __future__ import annotations

import dataclasses
import decimal
import functools
import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from paictl.targets.framework.values import plain

if TYPE_CHECKING:
    from paictl.protocol.diagnostics import Finding

KEY = "marsJob"
BASE = f"/extras/{KEY}"
#: The spelling in KubeDL's tutorial (docs/tutorial/marsjob.md 5); the API field is workerMemoryTuningPolicy.
TUTORIAL_NAME = "memoryTuningPolicy"
MEMORY_POLICY = "workerMemoryTuningPolicy"
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
#: The API group before KubeDL's "change crd groups" (2021-04): its schedulingPolicy has minAvailable only.
OLD_API_VERSION = "kubedl.io/v1alpha1"

_INT32 = 2**31 - 1
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
#: Kubernetes' quantity syntax (resource.Quantity), non-negative: what the CRD's int-or-string pattern accepts.
_QUANTITY = re.compile(r"^\+?(?P<number>[0-9]+(\.[0-9]*)?|\.[0-9]+)"
                       r"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][-+]?[0-9]+)?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

_POLICY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plasmaStore": {"type": "string", "pattern": "^/"},
        "lockFreeFileIO": {"type": "boolean"},
        "spillDirs": {"type": "array", "minItems": 1, "uniqueItems": True,
                      "items": {"type": "string", "pattern": "^/"}},
        "workerCachePercentage": {"type": "integer", "minimum": 1, "maximum": 100},
        "workerCacheSize": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                                      {"type": "string", "pattern": _QUANTITY.pattern}]},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "webHost": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
        MEMORY_POLICY: _POLICY_SCHEMA,
        TUTORIAL_NAME: _POLICY_SCHEMA,
        "cleanPodPolicy": {"enum": ["None", "Running", "All"]},
        "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0, "maximum": _INT32},
        "activeDeadlineSeconds": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
        "backoffLimit": {"type": "integer", "minimum": 0, "maximum": _INT32},
        "schedulingPolicy": {"type": "object", "properties": {
            "minAvailable": {"type": "integer", "minimum": 1, "maximum": _INT32},
            "priority": {"type": "integer", "minimum": -_INT32 - 1, "maximum": _INT32},
            "priorityClassName": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
            "queue": {"type": "string", "minLength": 1},
        }},
        "restartPolicy": {"type": "object", "additionalProperties": {"enum": list(RESTART_POLICIES)}},
    },
}
#: Keys of each mapping, for "unknown key, did you mean" (jsonschema's own message cannot suggest).
_KNOWN = {"": tuple(SCHEMA["properties"]), MEMORY_POLICY: tuple(_POLICY_SCHEMA["properties"]),
          TUTORIAL_NAME: tuple(_POLICY_SCHEMA["properties"]),
          "schedulingPolicy": tuple(SCHEMA["properties"]["schedulingPolicy"]["properties"])}
_HINTS = {
    "webHost": "the Ingress host alone, e.g. mars.example.com: no scheme, no port, no path",
    "workerCachePercentage": "a percentage of the worker's memory request, 1 to 100 (KubeDL caps larger values)",
    "workerCacheSize": "a Kubernetes quantity such as 2Gi or 512Mi, or a number of bytes",
    "restartPolicy": f"one of {', '.join(RESTART_POLICIES)}",
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class MarsSettings:
    """The checked `extras.marsJob`: the run policy as emitted, and what the compiler derives values from."""

    run_policy: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    web_host: str | None = None
    memory_policy: Mapping[str, Any] | None = None
    #: lower-case task role name -> restart policy
    restart_policies: Mapping[str, str] = dataclasses.field(default_factory=lambda: MappingProxyType({}))


def read_settings(extras: Mapping[str, Any], role_names: Mapping[str, str], api_version: str,
                  total_replicas: int) -> tuple[MarsSettings, list[Finding], list[Finding]]:
    """(settings, errors, warnings) for `extras.marsJob`; `role_names` maps lower-case role names to the job's."""
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor

    raw = extras.get(KEY)
    if raw is None:
        return MarsSettings(), [], []
    if not isinstance(raw, Mapping):
        return MarsSettings(), [finding("E705", BASE, f"extras.{KEY} must be a mapping of MarsJob settings",
                                        hint="see `targets/mars_extras.py` or the README for the keys")], []
    errors = _schema_errors(raw) + _unknown_keys(raw)
    warnings: list[Finding] = []
    policy_key = MEMORY_POLICY
    if TUTORIAL_NAME in raw:
        if MEMORY_POLICY in raw:
            errors.append(finding("E705", f"{BASE}/{TUTORIAL_NAME}", f"both {TUTORIAL_NAME} and {MEMORY_POLICY} "
                                  "are set; the MarsJob field is workerMemoryTuningPolicy", anchor=Anchor.KEY,
                                  hint=f"remove {TUTORIAL_NAME}"))
        else:
            policy_key = TUTORIAL_NAME
            warnings.append(finding(
                "W701", f"{BASE}/{TUTORIAL_NAME}", f"{TUTORIAL_NAME} is read as {MEMORY_POLICY}, the real MarsJob "
                "field (KubeDL's tutorial names one that does not exist; the API server would drop it)",
                hint=f"rename the key to {MEMORY_POLICY}", anchor=Anchor.KEY))
    scheduling = raw.get("schedulingPolicy")
    if api_version == OLD_API_VERSION and isinstance(scheduling, Mapping):
        errors += [finding("E705", f"{BASE}/schedulingPolicy/{key}", f"schedulingPolicy.{key} does not exist in "
                           f"{OLD_API_VERSION} (that operator knows minAvailable only; the API server drops it)",
                           hint="use the profile's mars.apiVersion training.kubedl.io/v1alpha1, or remove it",
                           anchor=Anchor.KEY)
                   for key in scheduling if key != "minAvailable" and key in _KNOWN["schedulingPolicy"]]
    if isinstance(scheduling, Mapping) and isinstance(scheduling.get("minAvailable"), int) \
            and scheduling["minAvailable"] > total_replicas:
        errors.append(finding("E705", f"{BASE}/schedulingPolicy/minAvailable",
                              f"minAvailable {scheduling['minAvailable']} is more than the job's {total_replicas} "
                              "pods, so a gang scheduler never starts it", hint=f"at most {total_replicas}"))
    memory = raw.get(MEMORY_POLICY if MEMORY_POLICY in raw else TUTORIAL_NAME)
    size = memory.get("workerCacheSize") if isinstance(memory, Mapping) else None
    if isinstance(size, str) and _QUANTITY.match(size) and quantity_bytes(size) >= 2**63:
        errors.append(finding("E705", f"{BASE}/{policy_key}/workerCacheSize", f"workerCacheSize {size} is more "
                              "than a Kubernetes quantity holds", hint=_HINTS["workerCacheSize"]))
    restart = raw.get("restartPolicy")
    for name in restart if isinstance(restart, Mapping) else ():
        if not isinstance(name, str) or name.lower() not in role_names:
            errors.append(finding("E705", f"{BASE}/restartPolicy/{_escape(str(name))}",
                                  f"restartPolicy names task role {name!r}, which the job does not have",
                                  hint=f"task roles: {', '.join(role_names.values())}", anchor=Anchor.KEY))
    if errors:
        return MarsSettings(), errors, warnings
    run_policy = {key: plain(raw[key]) for key in ("cleanPodPolicy", "ttlSecondsAfterFinished",
                                                   "activeDeadlineSeconds", "backoffLimit", "schedulingPolicy")
                  if key in raw}
    return MarsSettings(run_policy=MappingProxyType(run_policy), web_host=raw.get("webHost"),
                        memory_policy=plain(memory) if memory is not None else None,
                        restart_policies=MappingProxyType({k.lower(): v for k, v in (restart or {}).items()})
                        ), [], warnings


def _schema_errors(raw: Mapping[str, Any]) -> list[Finding]:
    from paictl.protocol.codes import finding

    validator = _validator()
    data = plain(raw)
    if validator.is_valid(data):
        return []
    findings = []
    for error in validator.iter_errors(data):
        path = [str(p) for p in error.instance_path]
        field = next((p for p in reversed(path) if p in _HINTS), None) or (path[0] if path else "")
        message = f"{error.instance!r} is not a Kubernetes quantity" if field == "workerCacheSize" \
            else _message(error)
        findings.append(finding("E705", BASE + "".join("/" + _escape(p) for p in path),
                                f"extras.{KEY}{''.join('.' + p for p in path)}: {message}",
                                hint=_HINTS.get(field)))
    return findings


def _message(error: Any) -> str:
    message = " ".join(str(error.message).split())
    return message if len(message) <= 160 else message[:157] + "..."


@functools.lru_cache(maxsize=None)
def _validator() -> Any:
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(SCHEMA)


def _unknown_keys(raw: Mapping[str, Any]) -> list[Finding]:
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import Anchor
    from paictl.protocol.suggest import did_you_mean

    findings = []
    for where, known in _KNOWN.items():
        mapping = raw.get(where) if where else raw
        if not isinstance(mapping, Mapping):
            continue
        for key in mapping:
            if key in known:
                continue
            guess = did_you_mean(str(key), known, {"host": "webHost"})
            pointer = f"{BASE}/{where}/{_escape(str(key))}" if where else f"{BASE}/{_escape(str(key))}"
            findings.append(finding("E705", pointer, f"unknown key {str(key)!r} in extras.{KEY}"
                                    + (f".{where}" if where else "") + (f"; did you mean {guess!r}?" if guess else ""),
                                    hint=f"known keys: {', '.join(known)}", anchor=Anchor.KEY))
    return findings


def cache_mb(policy: Mapping[str, Any] | None, memory_mb: int) -> int | None:
    """The worker cache KubeDL sets up, in MiB (rounded up): workerCacheSize, else the percentage of the request."""
    if not policy:
        return None
    size = policy.get("workerCacheSize")
    if size is not None:
        return -(-quantity_bytes(size) // 2**20)
    percentage = policy.get("workerCachePercentage")
    if percentage is not None:
        return -(-memory_mb * percentage // 100)
    return None


def quantity_bytes(value: int | str) -> int:
    """A Kubernetes quantity (already checked against its syntax) as a whole number of bytes, rounded up."""
    if isinstance(value, int):
        return value
    match = _QUANTITY.match(value)
    assert match is not None, value  # checked by SCHEMA
    number = decimal.Decimal(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return int((number * 1024 ** _BINARY[suffix]).to_integral_value(rounding=decimal.ROUND_CEILING))
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    if exponent > 30:  # beyond any memory (and beyond int64): avoid building a huge integer
        return 2**63
    return int(number.scaleb(exponent).to_integral_value(rounding=decimal.ROUND_CEILING))


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")
