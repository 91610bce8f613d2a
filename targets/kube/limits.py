"""The sizes a Kubernetes API server refuses, checked when a job is compiled for a Kubernetes target (E610), so that
`paictl compile` and `submit --dry-run` refuse, located in the job file, what every real cluster would refuse with a
422, 413 or "etcdserver: request is too large" (issue 36, R3). `apply.check_size` keeps the same limits as the last
guard before a write.

- apimachinery pkg/api/validation ValidateAnnotationsSize: the keys and values of `metadata.annotations`, in all,
  at most TotalAnnotationSizeLimitB = 256 KiB (422 "Too long: must have at most 262144 bytes"). The Framework's
  `config` annotation carries the whole job text, as OpenPAI stores it.
- etcd's --max-request-bytes, 1.5 MiB by default (embed/config.go DefaultMaxRequestBytes): the stored object, which
  also carries the server's managedFields, so a margin is kept.
- the API server's maxRequestBodyBytes, 3 MiB: the request body (413); an object under etcd's limit is under it.
- pkg/apis/core/validation ValidateSecret / ValidateConfigMap: the data's values in all at most 1 MiB.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Mapping, Optional, Sequence

MAX_ANNOTATIONS_BYTES = 256 * 1024
MAX_OBJECT_BYTES = 1536 * 1024 - 16 * 1024
MAX_REQUEST_BYTES = 3 * 1024 * 1024
MAX_DATA_BYTES = 1024 * 1024


def annotations_size(obj: Mapping[str, Any]) -> int:
    """As the API server counts it: the bytes of every key and value."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return sum(len(str(key).encode()) + len(str(value).encode()) for key, value in annotations.items())


def object_size(obj: Mapping[str, Any]) -> int:
    return len(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


def data_size(obj: Mapping[str, Any]) -> int:
    """The decoded bytes of a Secret's or ConfigMap's values (0 for any other kind)."""
    if obj.get("kind") not in ("Secret", "ConfigMap"):
        return 0
    total = 0
    for key in ("data", "binaryData", "stringData"):
        for value in (obj.get(key) or {}).values():
            text = str(value or "")
            if key == "stringData" or (obj.get("kind") == "ConfigMap" and key == "data"):
                total += len(text.encode("utf-8"))
                continue
            try:
                total += len(base64.b64decode(text, validate=True))
            except (binascii.Error, ValueError):
                total += len(text)
    return total


def oversize(obj: Mapping[str, Any]) -> Optional[str]:
    """What about `obj` the API server would refuse by size (sizes only, never a value: it may be a secret);
    None when it fits."""
    kind = obj.get("kind")
    data = data_size(obj)
    if data > MAX_DATA_BYTES:
        return (f"its data is {data} bytes; Kubernetes keeps at most {MAX_DATA_BYTES} bytes (1 MiB) in a {kind}")
    annotations = annotations_size(obj)
    if annotations > MAX_ANNOTATIONS_BYTES:
        return (f"its annotations take {annotations} bytes; the API server accepts at most {MAX_ANNOTATIONS_BYTES} "
                f"(256 KiB) in all")
    size = object_size(obj)
    if size > MAX_OBJECT_BYTES:
        return (f"it is {size} bytes; etcd stores at most 1.5 MiB per object (less what the API server adds)")
    return None


def size_findings(objects: Sequence[Mapping[str, Any]], data: Optional[Mapping[str, Any]]) -> list:
    """E610 for each compiled object a Kubernetes API server would refuse by size, located at the part of the job
    that makes it big (`data`: the job as loaded; without it, at the job's root)."""
    from paictl.protocol.codes import finding
    from paictl.protocol.diagnostics import pointer_of

    findings = []
    for obj in objects:
        problem = oversize(obj)
        if problem is None:
            continue
        kind, name = obj.get("kind"), (obj.get("metadata") or {}).get("name")
        where = ("secrets",) if obj.get("kind") in ("Secret", "ConfigMap") and isinstance(data, Mapping) and \
            "secrets" in data else _largest_part(data)
        part = ".".join(map(str, where))
        findings.append(finding(
            "E610", pointer_of(*where), f"the compiled {kind} {name!r} is too big for Kubernetes: {problem}"
            + (f"; the largest part of the job is {part} ({_size(_at(data, where)) // 1024} KiB)" if part else ""),
            hint="ship large content (scripts, data, long commands) in the image, a volume or a storage, and keep "
                 "the job file small"))
    return findings


def _largest_part(data: Any) -> tuple:
    """The path to the part of `data` that holds most of its size: down while one child holds over half of it."""
    path: list = []
    node = data
    while isinstance(node, (Mapping, list)) and node:
        children = list(node.items()) if isinstance(node, Mapping) else list(enumerate(node))
        key, child = max(children, key=lambda item: _size(item[1]))
        if _size(child) * 2 < _size(node):
            break
        path.append(key)
        node = child
    return tuple(path)


def _at(data: Any, path: tuple) -> Any:
    for key in path:
        data = data[key]
    return data


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str).encode("utf-8"))

