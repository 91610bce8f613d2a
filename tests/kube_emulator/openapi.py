"""A minimal OpenAPI v3: enough for kubectl to learn that the server validates fields itself.

`kubectl apply` validates by default (`--validate=strict`). It first asks the OpenAPI v3 document of the object's
group-version whether the PATCH operation of that kind takes the `fieldValidation` query parameter; if it does,
kubectl leaves validation to the server and needs no schema. So each group-version document lists, per kind, the
PATCH operation tagged with `x-kubernetes-group-version-kind` and that parameter, and nothing else (no schemas:
`kubectl explain` does not work). OpenAPI v2 (/openapi/v2) answers 404, which kubectl only needs when v3 fails.
"""

from __future__ import annotations

import hashlib
import json


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def root(registry) -> dict:
    paths = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            document = group_version(registry, group, version)
            digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32].upper()
            paths[_gv_path(group, version)] = {"serverRelativeURL": f"/openapi/v3/{_gv_path(group, version)}"
                                                                    f"?hash={digest}"}
    return {"paths": paths}


def group_version(registry, group: str, version: str) -> dict | None:
    kinds = [rt for rt in registry.types if rt.group == group and rt.version == version]
    if not kinds:
        return None
    paths = {}
    for rt in kinds:
        base = f"/{_gv_path(group, version)}"
        item = f"{base}/namespaces/{{namespace}}/{rt.plural}/{{name}}" if rt.namespaced else \
            f"{base}/{rt.plural}/{{name}}"
        paths[item] = {"patch": {
            "operationId": f"patch{rt.kind}",
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": rt.kind},
            "parameters": [{"name": name, "in": "query", "schema": {"type": "string"}}
                           for name in ("dryRun", "fieldManager", "fieldValidation", "force")],
            "responses": {"200": {"description": "OK"}},
        }}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.4"}, "paths": paths,
            "components": {"schemas": {}}}
