"""A client for MARO's node API (what MARO's NodeApiClientV1 calls), with the cluster token when there is one."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Mapping, Optional
from urllib.parse import quote

from paictl.errors import ClusterError


class NodeApiError(ClusterError):
    """A node's API could not be reached or refused the call."""


class NoLogRoute(NodeApiError):
    """The node's API has no logs route (MARO's node API answers such a path with Flask's HTML 404 page)."""


def call(node: Mapping[str, Any], method: str, path: str, *, token: Optional[str] = None, body: Any = None,
         timeout: float = 30.0) -> bytes:
    """`method` `path` on the node whose record (or cluster-file entry) is `node`; the answer's body."""
    url = f"http://{_host(node['hostname'])}:{node['api_server']['port']}{path}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http to a cluster node
            return response.read()
    except urllib.error.HTTPError as exc:
        body = exc.read()[:4096]
        if exc.code in (404, 405) and not _json_error(body):
            raise NoLogRoute(f"node {node.get('name', '?')}: {method} {path}: HTTP {exc.code} (no such route)") \
                from None
        detail = body[:300].decode("utf-8", "replace")
        raise NodeApiError(f"node {node.get('name', '?')}: {method} {path}: HTTP {exc.code} {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NodeApiError(f"node {node.get('name', '?')} at {url}: {reason}") from None


def _json_error(body: bytes) -> bool:
    try:
        return isinstance(json.loads(body), dict)
    except ValueError:
        return False


def _host(hostname: str) -> str:
    return f"[{hostname}]" if ":" in hostname else hostname


#: Seconds a create may take: `docker run` may pull the image first (MARO's own client waits without a limit).
CREATE_SECONDS = 300.0


def create(node: Mapping[str, Any], config: dict[str, Any], *, token: Optional[str] = None) -> dict[str, Any]:
    return json.loads(call(node, "POST", "/v1/containers", token=token, body=config, timeout=CREATE_SECONDS))


def stop(node: Mapping[str, Any], name: str, *, token: Optional[str] = None) -> None:
    call(node, "POST", f"/v1/containers/{quote(name)}:stop", token=token)


def remove(node: Mapping[str, Any], name: str, *, token: Optional[str] = None) -> None:
    call(node, "DELETE", f"/v1/containers/{quote(name)}", token=token)


def logs(node: Mapping[str, Any], name: str, *, token: Optional[str] = None, timeout: float = 30.0) -> bytes:
    return call(node, "GET", f"/v1/containers/{quote(name)}/logs", token=token, timeout=timeout)
