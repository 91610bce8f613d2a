"""The two long-lived responses: watch streams and followed pod logs.

A watch answers 200 and then one JSON object per line: `{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object":
...}`. Without a resourceVersion (or with "0") it starts with a synthetic ADDED per existing object, as the
watch cache does (followed, when bookmarks are asked for, by a BOOKMARK annotated `k8s.io/initial-events-end`);
from an expired resourceVersion it sends a single ERROR event carrying a 410 `Expired` Status and ends; an
unparsable resourceVersion is a 500 Status before any stream. A MODIFIED event that moves an object out of (into)
the selector is sent as DELETED (ADDED). Bookmarks carry only the kind and a resourceVersion and come every
`bookmark_interval` real seconds when asked for (a real API server: about once a minute).
`timeoutSeconds` (real seconds) ends the stream cleanly; `drop_watches()` ends it abruptly (no final chunk).
"""

from __future__ import annotations

import json
import time

from . import errors
from .selectors import field_selector, label_selector

WAKE_INTERVAL = 0.2  # real seconds between checks for shutdown, drops and bookmarks


def _line(kind: str, obj: dict) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def _bookmark(rt, resource_version: int, annotations: dict[str, str] | None = None) -> dict:
    """A BOOKMARK event's object: the kind and a resourceVersion, nothing else of an object."""
    metadata: dict = {"resourceVersion": str(resource_version)}
    if annotations:
        metadata["annotations"] = annotations
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": metadata}


def serve_watch(handler, emu, rt, route, query: dict[str, str]) -> None:
    store = emu.store
    labels = label_selector(query.get("labelSelector"))
    fields = field_selector(query.get("fieldSelector"), rt.kind)
    if route.name:
        by_name = route.name
        fields_inner = fields
        fields = lambda o: o["metadata"]["name"] == by_name and fields_inner(o)  # noqa: E731

    def matches(obj: dict | None) -> bool:
        if obj is None:
            return False
        if route.namespace and obj["metadata"].get("namespace") != route.namespace:
            return False
        return labels(obj) and fields(obj)

    timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
    deadline = time.monotonic() + timeout if timeout else None
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    requested = query.get("resourceVersion", "")
    if requested and not requested.isdigit():  # refused before the stream starts, a Status without a reason
        raise errors.ApiError(500, "", f'resourceVersion: Invalid value: "{requested}": strconv.ParseUint: '
                              f'parsing "{requested}": invalid syntax')
    handler.start_chunked("application/json")
    pending: list[bytes] = []
    with store.lock:
        if requested in ("", "0"):
            items, cursor = store.list(rt, route.namespace, matches)
            pending = [_line("ADDED", item) for item in items]
            if bookmarks:  # the end of the initial events, marked as the watch cache marks it
                pending.append(_line("BOOKMARK", _bookmark(rt, cursor, {"k8s.io/initial-events-end": "true"})))
        else:
            cursor = int(requested)
            if cursor < store.oldest:
                pending = [_line("ERROR", errors.gone(cursor, store.oldest).status())]
                cursor = -1
    try:
        for data in pending:
            handler.write_chunk(data)
        if cursor < 0:
            handler.end_chunked(cleanly=True)
            return
        last_bookmark = time.monotonic()
        while True:
            if not handler.stream_alive() or emu._stopping:
                handler.end_chunked(cleanly=False)
                return
            with store.lock:
                try:
                    events = store.events_after(cursor)
                except errors.ApiError as gone:
                    events, expired = [], gone
                else:
                    expired = None
                head = store.rv
                if not events and expired is None:
                    wait = WAKE_INTERVAL
                    if deadline is not None:
                        wait = min(wait, max(deadline - time.monotonic(), 0))
                    store.changed.wait(wait)
            if expired is not None:
                handler.write_chunk(_line("ERROR", expired.status()))
                handler.end_chunked(cleanly=True)
                return
            for event in events:
                if (event.group, event.plural) != (rt.group, rt.plural):
                    continue
                now_in, was_in = matches(event.obj), matches(event.previous)
                kind = event.type
                if kind == "MODIFIED" and now_in != was_in:
                    kind = "ADDED" if now_in else "DELETED"
                if now_in or (kind == "DELETED" and was_in):
                    handler.write_chunk(_line(kind, event.obj))
            cursor = head
            if bookmarks and time.monotonic() - last_bookmark >= emu.bookmark_interval:
                handler.write_chunk(_line("BOOKMARK", _bookmark(rt, cursor)))
                last_bookmark = time.monotonic()
            if deadline is not None and time.monotonic() >= deadline:
                handler.end_chunked(cleanly=True)
                return
    except OSError:
        handler.end_chunked(cleanly=False)


# -- pod logs ------------------------------------------------------------------------------------------------------

_WAITING = {"ImagePullBackOff": "image can't be pulled", "ErrImagePull": "trying and failing to pull image"}


def _container(pod: dict, wanted: str | None) -> str:
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    every = names + [c["name"] for c in spec.get("initContainers") or []]
    name = pod["metadata"]["name"]
    if wanted:
        if wanted not in every:
            raise errors.bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(names) != 1:
        raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                 f"[{' '.join(names)}]")
    return names[0]


def _state(pod: dict, container: str) -> tuple[str, str]:
    """('waiting', reason) | ('running', '') | ('terminated', '')."""
    status = pod.get("status") or {}
    for entry in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if entry.get("name") == container:
            state = entry.get("state") or {}
            if "running" in state:
                return "running", ""
            if "terminated" in state:
                return "terminated", ""
            return "waiting", (state.get("waiting") or {}).get("reason", "ContainerCreating")
    if status.get("phase") in ("Succeeded", "Failed"):
        return "terminated", ""
    return "waiting", "ContainerCreating"


def _select(text: str, query: dict[str, str]) -> str:
    if query.get("tailLines"):
        lines = text.splitlines(keepends=True)
        count = int(query["tailLines"])
        text = "".join(lines[-count:]) if count > 0 else ""
    if query.get("limitBytes"):
        text = text.encode()[: int(query["limitBytes"])].decode(errors="ignore")
    return text


def serve_log(handler, emu, route, query: dict[str, str]) -> None:
    pods = emu.registry.by_kind("v1", "Pod")
    pod = emu.store.get(pods, route.namespace, route.name)
    container = _container(pod, query.get("container"))
    if not (pod.get("spec") or {}).get("nodeName"):  # registry/core/pod/rest/log.go: no node, nothing to stream
        handler.send_empty(204)
        return
    state, reason = _state(pod, container)
    if state == "waiting":
        raise errors.bad_request(f'container "{container}" in pod "{route.name}" is waiting to start: '
                                 f"{_WAITING.get(reason, reason)}")
    uid = pod["metadata"]["uid"]
    text = emu.log_text(route.namespace, route.name, container)
    if query.get("follow") not in ("true", "1") or state == "terminated":
        handler.send_text(200, _select(text, query))
        return
    handler.start_chunked("text/plain")
    try:
        handler.write_chunk(_select(text, query).encode())
        sent = text
        while True:
            time.sleep(0.05)
            if not handler.stream_alive() or emu._stopping:
                handler.end_chunked(cleanly=False)
                return
            current = emu.store.find(pods, route.namespace, route.name)
            alive = current is not None and current["metadata"]["uid"] == uid
            text = emu.log_text(route.namespace, route.name, container, None if alive else uid)
            if text.startswith(sent) and len(text) > len(sent):  # everything written before the end is sent
                handler.write_chunk(text[len(sent):].encode())
                sent = text
            if not alive or _state(current, container)[0] == "terminated":
                handler.end_chunked(cleanly=True)
                return
    except OSError:
        handler.end_chunked(cleanly=False)
