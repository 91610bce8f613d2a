"""A stand-in for HiveD's web service (microsoft/hivedscheduler, ../shared/reference/hived.md 3): the inspect API the
rest-server reads when LAUNCHER_SCHEDULER=hivedscheduler, over one fixed cluster, plus the scheduler config file the
rest-server reads `physicalCluster.skuTypes` from (HIVED_SPEC_PATH).

Routes (`pkg/api/constants.go`): `GET /v1/inspect/clusterstatus/physicalcluster` (a list of physical cells),
`GET /v1/inspect/clusterstatus/virtualclusters/` (VC name → its virtual cells), `.../virtualclusters/{vc}` (one VC's
cells; an unknown VC is a 404 with `{code, message}`), `GET /v1/inspect/affinitygroups/` (an AffinityGroupList;
empty: no pod is ever bound here, there being no kubelet). Cells carry the status fields the rest-server walks:
cellType, cellAddress, cellState (Free/Used), cellHealthiness, cellPriority, leafCellType, isNodeLevel, cellChildren.
The extender verbs (filter/bind/preempt) are not served: no Kubernetes scheduler runs here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .loopback import LoopbackHandler, LoopbackServer

SKU = "K80"
#: VC name → how many of node-0's four K80 leaf cells it owns.
VIRTUAL_CLUSTERS = {"default": 2, "gpu": 2}

SPEC = {
    "webServerAddress": ":30096",
    "physicalCluster": {
        "skuTypes": {SKU: {"gpu": 1, "cpu": 2, "memory": "8192Mi"}},
        "cellTypes": {"K80-NODE": {"childCellType": SKU, "childCellNumber": 4, "isNodeLevel": True}},
        "physicalCells": [{"cellType": "K80-NODE", "cellAddress": "node-0"}],
    },
    "virtualClusters": {vc: {"virtualCells": [{"cellType": f"K80-NODE.{SKU}", "cellNumber": n}]}
                        for vc, n in VIRTUAL_CLUSTERS.items()},
}


def write_spec(path: Path) -> Path:
    path.write_text(json.dumps(SPEC))  # JSON is YAML
    return path


def _leaf(address: str, priority: int = -1, state: str = "Free") -> dict[str, Any]:
    return {"cellType": SKU, "cellAddress": address, "cellState": state, "cellHealthiness": "Healthy",
            "cellPriority": priority, "leafCellType": SKU}


def physical_cluster() -> list[dict[str, Any]]:
    return [{"cellType": "K80-NODE", "cellAddress": "node-0", "cellState": "Free", "cellHealthiness": "Healthy",
             "cellPriority": -1, "leafCellType": SKU, "isNodeLevel": True,
             "cellChildren": [_leaf(f"node-0/{i}") for i in range(4)]}]


def virtual_clusters() -> dict[str, list[dict[str, Any]]]:
    found, first = {}, 0
    for vc, number in VIRTUAL_CLUSTERS.items():
        # a free virtual cell has priority 0 when bound to no pod (guaranteed), the rest-server counts it as quota
        found[vc] = [{**_leaf(f"{vc}/{SKU}/{first + i}", priority=0), "physicalCell": _leaf(f"node-0/{first + i}")}
                     for i in range(number)]
        first += number
    return found


class HivedService(LoopbackServer):
    """`with HivedService() as hived:` serves on `hived.url`."""

    def __init__(self) -> None:
        self.requests: list[str] = []


class _Handler(LoopbackHandler):
    owner: HivedService

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.owner.requests.append(self.path)
        path = self.path.split("?", 1)[0]
        prefix = "/v1/inspect/clusterstatus/virtualclusters/"
        if path == "/v1/inspect/clusterstatus/physicalcluster":
            return self._json(200, physical_cluster())
        if path == prefix.rstrip("/") or path == prefix:
            return self._json(200, virtual_clusters())
        if path.startswith(prefix):
            name = path[len(prefix):]
            cells = virtual_clusters().get(name)
            if cells is None:
                return self._json(404, {"code": 404, "message": f"VC {name} does not exist!"})
            return self._json(200, cells)
        if path.rstrip("/") == "/v1/inspect/affinitygroups":
            return self._json(200, {"kind": "AffinityGroupList", "apiVersion": "v2", "items": []})
        self._json(404, {"code": 404, "message": f"no route {path}"})


HivedService.handler = _Handler
