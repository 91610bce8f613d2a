"""The non-streaming verbs: get, list (with selectors and limit/continue), create, update, patch and delete.

Response shapes follow the API server: create answers 201, a server-side apply that creates answers 201, a delete
of a built-in kind answers a `Status` of Success while a custom resource's delete answers the object (as the
apiextensions server does), and a delete that has to wait (finalizers, Foreground) answers the object carrying its
deletionTimestamp.
"""

from __future__ import annotations

import base64
import copy
import json

import yaml

from . import apply, errors
from .selectors import field_selector, label_selector

# Kinds whose DELETE answers the deleted object (ReturnDeletedObject in their registry); others answer a Status.
RETURN_DELETED = ("Pod", "Service", "Namespace")
PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]


def verb_of(method: str, route, watch: bool) -> str:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if route.name else "list"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}[method]


def _manager(query: dict[str, str], user_agent: str) -> str:
    """The field manager: `fieldManager`, else the User-Agent up to its first `/` (as the API server derives it)."""
    return query.get("fieldManager") or user_agent.split("/")[0] or "unknown"


#: the options object each verb's query parameters decode into (what a refused option is reported against)
OPTIONS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}


def _dry_run(query: dict[str, str], options: dict | None = None, method: str = "POST") -> bool:
    values = [query["dryRun"]] if "dryRun" in query else list((options or {}).get("dryRun") or [])
    unsupported = [value for value in values if value != "All"]
    if unsupported:
        shown = "[" + ",".join(f'"{value}"' for value in unsupported) + "]"
        raise errors.invalid_options(OPTIONS[method], "dryRun", "FieldValueNotSupported",
                                     f'Unsupported value: {shown}: supported values: "All"')
    return bool(values)


def _json_body(handler) -> dict:
    try:
        body = json.loads(handler.body or b"null")
    except ValueError as error:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {error}") from None
    if not isinstance(body, dict):
        raise errors.bad_request("Object 'Kind' is missing in request body")
    return body


def _check_type(rt, body: dict) -> None:
    if body.get("apiVersion") and body["apiVersion"] != rt.api_version:
        raise errors.bad_request(f"the API version in the data ({body['apiVersion']}) does not match the expected "
                                 f"API version ({rt.api_version})")
    if body.get("kind") and body["kind"] != rt.kind:
        raise errors.bad_request(f"the kind in the data ({body['kind']}) does not match the expected kind "
                                 f"({rt.kind})")


def _check_name(route, body: dict) -> None:
    name = (body.get("metadata") or {}).get("name")
    if name and name != route.name:
        raise errors.bad_request(f"the name of the object ({name}) does not match the name on the URL "
                                 f"({route.name})")


def handle(emu, handler, method: str, rt, route, query: dict[str, str]) -> tuple[int, dict]:
    store = emu.store
    manager = _manager(query, handler.record.user_agent)
    if method == "GET" and route.name:
        obj = store.get(rt, route.namespace, route.name)
        return 200, _view(rt, obj, route.subresource)
    if method == "GET":
        return 200, list_objects(emu, rt, route.namespace, query)
    if method == "POST":
        if route.name:
            raise errors.method_not_allowed(method)
        body = _json_body(handler)
        _check_type(rt, body)
        obj = store.create(rt, route.namespace, body, manager, dry_run=_dry_run(query, method=method))
        return 201, obj
    if method == "PUT":
        return 200, _update(emu, rt, route, _json_body(handler), manager, _dry_run(query, method=method))
    if method == "PATCH":
        return _patch(emu, handler, rt, route, query, manager)
    if method == "DELETE":
        options = _json_body(handler) if handler.body else {}
        if not route.name:
            return _delete_collection(emu, rt, route, query, options)
        propagation = query.get("propagationPolicy") or options.get("propagationPolicy")
        if propagation is None and (rt.group, rt.kind) == ("batch", "Job"):
            propagation = "Orphan"  # batch/v1 Job's registry default (DefaultGarbageCollectionPolicy): its pods stay
        grace = query.get("gracePeriodSeconds", options.get("gracePeriodSeconds"))
        obj, gone = store.delete(rt, route.namespace, route.name, propagation=propagation,
                                 dry_run=_dry_run(query, options, method), preconditions=options.get("preconditions"),
                                 grace_seconds=int(grace) if grace is not None else None,
                                 orphan_finalizer=propagation == "Orphan")
        if gone and rt.kind not in RETURN_DELETED and not rt.custom:
            details = {"name": route.name, "kind": rt.plural, "uid": obj["metadata"]["uid"]}
            if rt.group:
                details["group"] = rt.group
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": details}
        return 200, obj
    raise errors.method_not_allowed(method)


def _view(rt, obj: dict, subresource: str | None) -> dict:
    if subresource and subresource != "status":
        raise errors.no_such_resource()
    if subresource == "status" and not rt.status_subresource:
        raise errors.no_such_resource()
    return obj


def list_objects(emu, rt, namespace: str | None, query: dict[str, str]) -> dict:
    labels = label_selector(query.get("labelSelector"))
    fields = field_selector(query.get("fieldSelector"), rt.kind)
    items, rv = emu.store.list(rt, namespace, lambda o: labels(o) and fields(o))
    if query.get("resourceVersionMatch") == "Exact" and query.get("resourceVersion"):
        wanted = int(query["resourceVersion"])
        if wanted < emu.store.oldest:
            raise errors.ApiError(410, "Expired", "The resourceVersion for the provided list is too old.")
    start = 0
    if query.get("continue"):
        try:
            token = json.loads(base64.b64decode(query["continue"]))
        except ValueError:
            raise errors.bad_request("continue key is not valid: illegal base64 data") from None
        # the pages after the first are of the first page's snapshot (etcd3 store GetList reads at its revision);
        # one too old is refused with a token that goes on from the current state (its resourceVersion -1)
        if token["rv"] != -1:
            if token["rv"] < emu.store.oldest:
                inconsistent = {"rv": -1, "after": token["after"]}
                raise errors.expired_continue(base64.b64encode(json.dumps(inconsistent).encode()).decode())
            rv = token["rv"]
            items = emu.store.snapshot(rt, namespace, rv, lambda o: labels(o) and fields(o))
        start = next((i for i, o in enumerate(items) if _sort_key(o) > tuple(token["after"])), len(items))
    items = items[start:]
    metadata: dict = {"resourceVersion": str(rv)}
    limit = int(query.get("limit") or 0)
    if limit and len(items) > limit:
        rest = len(items) - limit
        items = items[:limit]
        token = {"rv": rv, "after": list(_sort_key(items[-1]))}
        metadata["continue"] = base64.b64encode(json.dumps(token).encode()).decode()
        if not query.get("labelSelector") and not query.get("fieldSelector"):  # counted only without a selector
            metadata["remainingItemCount"] = rest
    if not rt.custom:
        items = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in items]
    return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": metadata, "items": items}


def _sort_key(obj: dict) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _merge_server_fields(rt, live: dict, body: dict, subresource: str | None) -> dict:
    """What a PUT/PATCH result keeps from the live object: the status (main resource of a kind with a status
    subresource), or everything but the status (the status subresource)."""
    if subresource == "status":
        new = copy.deepcopy(live)
        if "status" in body:
            new["status"] = copy.deepcopy(body["status"])
        else:
            new.pop("status", None)
        return new
    new = copy.deepcopy(body)
    if rt.status_subresource:
        if "status" in live:
            new["status"] = copy.deepcopy(live["status"])
        else:
            new.pop("status", None)
    return new


def _check_subresource(rt, route) -> str:
    if route.subresource and (route.subresource != "status" or not rt.status_subresource):
        raise errors.no_such_resource()
    return route.subresource or ""


def _update(emu, rt, route, body: dict, manager: str, dry_run: bool) -> dict:
    subresource = _check_subresource(rt, route)
    _check_type(rt, body)
    _check_name(route, body)
    with emu.store.lock:
        live = emu.store.get(rt, route.namespace, route.name)
        wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
        if wanted_rv and wanted_rv != live["metadata"]["resourceVersion"]:
            raise errors.modified(rt, route.name)
        if not wanted_rv and rt.custom:
            raise errors.invalid(rt, route.name, [("metadata.resourceVersion", "FieldValueInvalid",
                                                   "Invalid value: 0x0: must be specified for an update")])
        new = _merge_server_fields(rt, live, body, subresource or None)
        _keep_managed_fields(live, body, new)
        apply.record_update(live, new, manager, rt.api_version, emu.clock.stamp(), subresource)
        return emu.store.commit(rt, live, new, dry_run=dry_run)


def _keep_managed_fields(live: dict, body: dict, new: dict) -> None:
    """A request without managedFields (or with an empty list) keeps the live ones; `[{}]` resets them."""
    sent = (body.get("metadata") or {}).get("managedFields")
    meta = new.setdefault("metadata", {})
    if not sent:
        if live["metadata"].get("managedFields"):
            meta["managedFields"] = copy.deepcopy(live["metadata"]["managedFields"])
        else:
            meta.pop("managedFields", None)
    elif all(not entry for entry in sent):
        meta.pop("managedFields", None)


def _patch(emu, handler, rt, route, query: dict[str, str], manager: str) -> tuple[int, dict]:
    subresource = _check_subresource(rt, route)
    content_type = (handler.record.content_type or "").split(";")[0].strip()
    dry_run = _dry_run(query, method="PATCH")
    accepted = PATCH_TYPES if rt.custom else PATCH_TYPES + ["application/strategic-merge-patch+json"]
    if content_type not in accepted:
        raise errors.unsupported_media(content_type, accepted)
    store = emu.store
    if content_type == "application/apply-patch+yaml":
        try:
            applied = yaml.safe_load(handler.body or b"{}")
        except yaml.YAMLError as error:
            raise errors.bad_request(f"error decoding YAML: {error}") from None
        if not isinstance(applied, dict):
            raise errors.bad_request("Object 'Kind' is missing in request body")
        for required in ("kind", "apiVersion"):
            if not applied.get(required):
                raise errors.bad_request(f"Object '{required[0].upper() + required[1:]}' is missing in request body")
        _check_type(rt, applied)
        _check_name(route, applied)
        applied.setdefault("metadata", {})["name"] = route.name
        if rt.status_subresource:
            applied = {k: v for k, v in applied.items() if (k == "status") == (subresource == "status")
                       or k in ("apiVersion", "kind", "metadata")}
        force = query.get("force") in ("true", "1")
        with store.lock:
            live = store.find(rt, route.namespace, route.name)
            result = apply.server_side_apply(rt, live, applied, query.get("fieldManager", ""), force,
                                             emu.clock.stamp(), subresource)
            if live is None:
                if subresource:
                    raise errors.not_found(rt, route.name)
                return 201, store.create(rt, route.namespace, result, "", dry_run=dry_run, managed=True)
            return 200, store.commit(rt, live, result, dry_run=dry_run)
    try:
        patch = json.loads(handler.body or b"null")
    except ValueError as error:
        raise errors.bad_request(f"error decoding patch: {error}") from None
    with store.lock:
        live = store.get(rt, route.namespace, route.name)
        if content_type == "application/json-patch+json":
            patched = apply.json_patch(live, patch, lambda message: errors.invalid(
                rt, route.name, [("", "FieldValueInvalid", message)]))
        elif content_type == "application/merge-patch+json":
            patched = apply.merge_patch(live, patch)
        else:
            patched = apply.strategic_merge_patch(live, patch)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch did not produce an object")
        wanted_rv = (patched.get("metadata") or {}).get("resourceVersion")
        if wanted_rv and wanted_rv != live["metadata"]["resourceVersion"]:
            raise errors.modified(rt, route.name)
        new = _merge_server_fields(rt, live, patched, subresource or None)
        _keep_managed_fields(live, patched, new)
        apply.record_update(live, new, manager, rt.api_version, emu.clock.stamp(), subresource)
        return 200, store.commit(rt, live, new, dry_run=dry_run)


def _delete_collection(emu, rt, route, query: dict[str, str], options: dict) -> tuple[int, dict]:
    listed = list_objects(emu, rt, route.namespace, {k: v for k, v in query.items() if k != "limit"})
    dry_run = _dry_run(query, options, "DELETE")
    propagation = query.get("propagationPolicy") or options.get("propagationPolicy")
    deleted = []
    for item in listed["items"]:
        meta = item["metadata"]
        obj, _ = emu.store.delete(rt, meta.get("namespace"), meta["name"], propagation=propagation, dry_run=dry_run)
        deleted.append(obj)
    return 200, {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": {}, "items": deleted}
