"""Errors as the API server reports them: a `Status` object with reason, code and message worded like Kubernetes'.

Clients key their behaviour on `reason` and `code` (the python client raises ApiException(status=code), kubectl
prints `Error from server (Reason): message`), so those two are exact; messages follow apimachinery's wording.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.metadata = metadata or {}

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": dict(self.metadata),
                               "status": "Failure", "message": self.message}
        if self.reason:  # an error the API server did not classify (e.g. a watch's unparsable resourceVersion)
            out["reason"] = self.reason
        out["code"] = self.code
        if self.details is not None:
            out["details"] = self.details
        return out


def _details(rt, name: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    return details


def not_found(rt, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rt.qualified} "{name}" not found', _details(rt, name))


def namespace_not_found(namespace: str) -> ApiError:
    return ApiError(404, "NotFound", f'namespaces "{namespace}" not found', {"name": namespace, "kind": "namespaces"})


def no_such_resource() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(rt, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{rt.qualified} "{name}" already exists', _details(rt, name))


def modified(rt, name: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {rt.qualified} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again", _details(rt, name))


def precondition_uid(rt, name: str, want: str, have: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {rt.qualified} "{name}": Precondition failed: '
                    f"UID in precondition: {want}, UID in object meta: {have}", _details(rt, name))


def gone(requested: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def expired_continue(inconsistent_token: str | None = None) -> ApiError:
    """`inconsistent_token`: the token the Status offers to go on from the current state instead."""
    return ApiError(410, "Expired", "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter, or use the continue token in this "
                    "response to retrieve the remainder of the results. Continuing with the provided token results "
                    "in an inconsistent list - objects that were created, modified, or deleted between the time the "
                    "first chunk was returned and now may show up in the list.",
                    metadata={"continue": inconsistent_token} if inconsistent_token else None)


def forbidden(rt, verb: str, namespace: str | None, name: str | None, user: str) -> ApiError:
    subject = f'{rt.qualified} "{name}"' if name else rt.qualified
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    message = (f'{subject} is forbidden: User "{user}" cannot {verb} resource "{rt.plural}" in API group '
               f'"{rt.group}"{where}')
    return ApiError(403, "Forbidden", message, _details(rt, name))


def invalid(rt, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """causes: (field, reason type e.g. FieldValueInvalid, message text after `field: `)."""
    text = ", ".join(f"{field}: {message}" for field, _, message in causes)
    group_kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    if len(causes) > 1:
        text = "[" + text + "]"
    details = _details(rt, name)
    details["kind"] = rt.kind
    details["causes"] = [{"reason": reason, "message": message, "field": field} for field, reason, message in causes]
    return ApiError(422, "Invalid", f'{group_kind} "{name}" is invalid: {text}', details)


def invalid_options(kind: str, field: str, reason: str, message: str) -> ApiError:
    """A request's options (`PatchOptions`, `CreateOptions`...) refused by their validation: 422, as an object."""
    return ApiError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {field}: {message}',
                    {"group": "meta.k8s.io", "kind": kind,
                     "causes": [{"reason": reason, "message": message, "field": field}]})


def too_large(limit: int) -> ApiError:
    """A request body over the API server's limit (3 MiB), refused before it is decoded."""
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unsupported_media(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted media "
                    f"types include: {', '.join(accepted)}", {})


def method_not_allowed(method: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def injected(code: int, message: str | None = None) -> ApiError:
    reasons = {500: "InternalError", 503: "ServiceUnavailable", 429: "TooManyRequests", 504: "Timeout",
               409: "Conflict", 403: "Forbidden", 404: "NotFound", 410: "Expired"}
    reason = reasons.get(code, "InternalError")
    message = message or ("an error on the server (\"injected by the emulator\") has prevented the request from "
                          "succeeding")
    return ApiError(code, reason, message, {"causes": [{"reason": "UnexpectedServerResponse",
                                                         "message": "injected by the emulator"}]})
