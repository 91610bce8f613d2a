"""A Grass cluster as paictl sees it: the master (whose Redis holds every record) and the nodes that run containers.

Three kinds of file describe one, and `load_cluster` reads any mix of them, in order:
- paictl's own cluster file (`schemas/grass-cluster.schema.json`): the master and a list of nodes;
- MARO's on-premises create file (`mode: grass/on-premises`, `master.private_ip_address`...): the master only;
- MARO's node-join file (`node: {hostname, private_ip_address, resources}`): one node each.
so a team that runs MARO passes its own files (`--cluster create.yml --cluster node1.yml ...`).

Every problem is a located diagnostic, as for a job (`InvalidClusterError`, exit 2). The Redis password and the
cluster token are kept out of `repr` and never printed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any, Iterable, Optional, Sequence, Union

from paictl.errors import InvalidJobError

DEFAULT_REDIS_PORT = 6379
DEFAULT_FLUENTD_PORT = 24224
DEFAULT_API_PORT = 51812
#: MARO's agents wake every 5 s (maro.md A.7, A.9).
DEFAULT_CHECK_INTERVAL = 5.0
Amount = Union[float, str]  # a number, or "all" (the node agent detects it)


class InvalidClusterError(InvalidJobError):
    """A cluster file with error diagnostics: reported like an invalid job, but it is an input error (exit 2)."""

    exit_code = 2


@dataclasses.dataclass(frozen=True, kw_only=True)
class Master:
    """The Grass master: how to reach its Redis (password and TLS included) and its log collector."""
    hostname: str
    redis_port: int = DEFAULT_REDIS_PORT
    redis_password: Optional[str] = dataclasses.field(default=None, repr=False)
    redis_tls: bool = False
    fluentd_port: int = DEFAULT_FLUENTD_PORT
    data: Optional[str] = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Node:
    """One Grass node and the resources it offers to containers."""
    name: str
    hostname: str
    api_port: int = DEFAULT_API_PORT
    cpu: Amount = "all"
    memory: Amount = "all"      # MB
    gpu: Amount = "all"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Cluster:
    """A Grass cluster as read from a cluster file: its master and its nodes."""
    name: str
    id: str
    master: Master
    nodes: tuple[Node, ...]
    token: Optional[str] = dataclasses.field(default=None, repr=False)
    check_interval: float = DEFAULT_CHECK_INTERVAL
    lost_after: Optional[float] = None
    source: str = ""
    #: A MARO node-join file: nodes only, merged into the one cluster file given with it.
    nodes_only: bool = False

    @property
    def lost_after_seconds(self) -> float:
        """Three heartbeats of the slowest node agent there may be: MARO's publish every 5 s whatever this file
        says, so a shorter check interval never makes a MARO node look lost between two of its heartbeats."""
        if self.lost_after is not None:
            return self.lost_after
        return 3 * max(self.check_interval, DEFAULT_CHECK_INTERVAL)

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        from paictl.errors import UsageError

        raise UsageError(f"node {name!r} is not in the cluster file {self.source} "
                         f"(nodes: {', '.join(n.name for n in self.nodes) or 'none'})")

    @property
    def redis_address(self) -> str:
        return f"{self.master.hostname}:{self.master.redis_port}"


def derived_id(prefix: str, *parts: str) -> str:
    """MARO's id shape (`prefix` + 8 hex) from a hash of `parts`: deterministic where MARO draws it at random."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
    return prefix + digest[:8]


def load_cluster(paths: Union[str, Sequence[str]]) -> Cluster:
    """Read one cluster from one or more files (see the module docstring); InvalidClusterError lists every problem."""
    from paictl.protocol import read_source
    from paictl.protocol.loading import DocumentError, decode_source, load_located
    from paictl.targets.findings import located

    if isinstance(paths, str):
        paths = [paths]
    if not paths:
        from paictl.errors import UsageError

        raise UsageError("--cluster FILE is required for this command")
    parts: list[Cluster] = []
    diagnostics = []
    credentials: list[str] = []
    for path in paths:
        try:
            document = load_located(decode_source(read_source(path), path), path, kind="grass-cluster")
        except DocumentError as exc:
            diagnostics += exc.diagnostics
            continue
        credentials += _credentials(document.data)
        findings, cluster = _read(document.data, path)
        diagnostics += [located(f, document, path) for f in findings]
        if cluster is not None:
            parts.append(cluster)
    if diagnostics:
        raise InvalidClusterError(_redacted(diagnostics, credentials))
    return _merge(parts, paths)


_CREDENTIAL_KEY = re.compile(r"""['"]?\b(?:token|password)\b['"]?[ \t]*:""")


def _credentials(data: Any) -> list[str]:
    """The cluster token and the Redis password of a cluster file, as text, longest first."""
    found = []
    if isinstance(data, dict):
        master = data.get("master") if isinstance(data.get("master"), dict) else {}
        redis = master.get("redis") if isinstance(master.get("redis"), dict) else {}
        for value in (data.get("token"), redis.get("password")):
            if value not in (None, "") and not isinstance(value, (dict, list)):
                found.append(str(value))
    return sorted(found, key=len, reverse=True)


def _redacted(diagnostics: list, credentials: list[str]) -> list:
    """The diagnostics with the token and the password masked as job secrets are (protocol/redaction.py): never in
    a message or a hint, and a source line that holds one shown up to its key."""
    from paictl.protocol.redaction import MASK, redact_text

    out = []
    for diagnostic in diagnostics:
        source = diagnostic.source_line
        if source is not None:
            found = _CREDENTIAL_KEY.search(source)
            if found is not None:
                source = source[:found.end()] + " " + MASK
            source = redact_text(source, credentials, aggressive=True) if credentials else source
        message, hint = diagnostic.message, diagnostic.hint
        if credentials:
            message = redact_text(message, credentials, aggressive=True)
            hint = redact_text(hint, credentials, aggressive=True)
        out.append(diagnostic._replace(message=message, hint=hint, source_line=source))
    return out


def cluster_from_data(data: dict[str, Any], path: str = "<cluster>") -> Cluster:
    findings, cluster = _read(data, path)
    if findings or cluster is None:
        from paictl.targets.findings import located

        raise InvalidClusterError([located(f, None, path) for f in findings])
    return _merge([cluster], [path])


def _read(data: Any, path: str) -> tuple[list, Optional[Cluster]]:
    from paictl.protocol.schema_check import check_schema

    if isinstance(data, dict) and "node" in data and "nodes" not in data:
        return _maro_join(data, path)
    if isinstance(data, dict) and "nodes" not in data and isinstance(data.get("master"), dict) \
            and ("private_ip_address" in data["master"] or "user" in data):
        return _maro_create(data, path)
    findings = check_schema(data, "grass-cluster")
    if findings:
        return findings, None
    findings += _duplicates(data)
    master = data["master"]
    agents = data.get("agents", {})
    cluster = Cluster(
        name=data["name"], id=data.get("id") or derived_id("maro", data["name"]),
        master=Master(hostname=master["hostname"],
                      redis_port=master.get("redis", {}).get("port", DEFAULT_REDIS_PORT),
                      redis_password=master.get("redis", {}).get("password"),
                      redis_tls=master.get("redis", {}).get("tls", False),
                      fluentd_port=master.get("fluentd", {}).get("port", DEFAULT_FLUENTD_PORT),
                      data=master.get("data")),
        nodes=tuple(_node(item) for item in data["nodes"]),
        token=data.get("token"), check_interval=agents.get("check_interval", DEFAULT_CHECK_INTERVAL),
        lost_after=agents.get("lost_after"), source=path)
    return findings, (None if findings else cluster)


def _duplicates(data: dict[str, Any]) -> list:
    from paictl.protocol.codes import finding

    seen: dict[Any, int] = {}
    findings = []
    for index, node in enumerate(data["nodes"]):
        for key in ("name", "hostname+port"):
            value = node["name"] if key == "name" else (node["hostname"], node.get("api_server", {}).get("port",
                                                                                                    DEFAULT_API_PORT))
            if (key, value) in seen:
                findings.append(finding("E200", f"/nodes/{index}/{'name' if key == 'name' else 'hostname'}",
                                        f"node {index} has the same {'name' if key == 'name' else 'address and API port'}"
                                        f" as node {seen[(key, value)]}"))
            seen.setdefault((key, value), index)
    return findings


def _memory(value: Any) -> Amount:
    if isinstance(value, str) and value.endswith("m") and value[:-1].isdigit():
        return int(value[:-1])
    return value


def _node(item: dict[str, Any]) -> Node:
    resources = item["resources"]
    return Node(name=item["name"], hostname=item["hostname"],
                api_port=item.get("api_server", {}).get("port", DEFAULT_API_PORT),
                cpu=resources["cpu"], memory=_memory(resources["memory"]), gpu=resources["gpu"])


def _require(data: dict[str, Any], keys: Iterable[str], pointer: str) -> list:
    from paictl.protocol.codes import finding

    where = f" in {pointer}" if pointer else ""
    findings = []
    for key in keys:
        if key not in data:
            findings.append(finding("E201", pointer, f"MARO's file is missing the required key '{key}'{where}"))
        elif data[key] in ("", None):
            findings.append(finding("E200", f"{pointer}/{key}", f"MARO's file leaves '{key}'{where} empty"))
    return findings


def _maro_create(data: dict[str, Any], path: str) -> tuple[list, Optional[Cluster]]:
    """MARO's `grass_on_premises_create.yml`: the master; nodes come from join files."""
    master = data["master"]
    findings = _require(data, ("mode", "name"), "") + _require(master, ("private_ip_address",), "/master")
    findings += _maro_ports(master, ("redis", "fluentd", "ssh", "api_server"), "/master")
    if findings:
        return findings, None
    name = str(data["name"])
    return [], Cluster(
        name=name, id=derived_id("maro", name),
        master=Master(hostname=str(master["private_ip_address"]),
                      redis_port=_port(master, "redis", DEFAULT_REDIS_PORT),
                      fluentd_port=_port(master, "fluentd", DEFAULT_FLUENTD_PORT)),
        nodes=(), source=path)


def _maro_join(data: dict[str, Any], path: str) -> tuple[list, Optional[Cluster]]:
    """MARO's `grass_on_premises_join_node.yml`: one node, and where its master is."""
    node = data["node"] if isinstance(data["node"], dict) else {}
    master = data.get("master") if isinstance(data.get("master"), dict) else {}
    findings = _require(data, ("master",), "") + _require(master, ("private_ip_address",), "/master")
    findings += _require(node, ("hostname",), "/node")
    findings += _maro_ports(master, ("redis", "api_server"), "/master") + _maro_ports(node, ("ssh", "api_server"),
                                                                                      "/node")
    findings += _maro_resources(node.get("resources"), "/node/resources")
    if findings:
        return findings, None
    resources = node.get("resources") or {}
    address = str(node.get("private_ip_address") or node["hostname"])
    name = str(node.get("name") or node["hostname"])
    return [], Cluster(
        name="", id="",
        master=Master(hostname=str(master["private_ip_address"]), redis_port=_port(master, "redis", DEFAULT_REDIS_PORT)),
        nodes=(Node(name=name, hostname=address, api_port=_port(node, "api_server", DEFAULT_API_PORT),
                    cpu=resources.get("cpu", "all"), memory=_memory(resources.get("memory", "all")),
                    gpu=resources.get("gpu", "all")),),
        source=path, nodes_only=True)


def _maro_ports(section: dict[str, Any], keys: Iterable[str], pointer: str) -> list:
    """Located findings for `<key>: {port: N}` entries of a MARO file that are not a port (MARO formats them into
    URLs and `docker run -p` unchecked)."""
    from paictl.protocol.codes import finding

    findings = []
    for key in keys:
        value = section.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            findings.append(finding("E203", f"{pointer}/{key}", f"'{key}' in {pointer} must be a mapping "
                                    f"{{port: N}}"))
            continue
        port = value.get("port")
        if port in (None, ""):
            continue
        text = str(port)
        if isinstance(port, bool) or not isinstance(port, (int, str)) or not text.isdigit() \
                or not 0 < int(text) < 65536:
            findings.append(finding("E206", f"{pointer}/{key}/port", f"'{key}.port' in {pointer} is {port!r}, not a "
                                    f"port number from 1 to 65535"))
    return findings


def _maro_resources(resources: Any, pointer: str) -> list:
    """Located findings for a node-join file's `resources` that MARO's node agent would not take as written: it
    keeps a number, and for anything else but `all` logs "Invalid ... assignment" and offers the whole node
    (node_agent/agent.py `_init_resources`). paictl reads MARO's documented "2048m" as 2048 MB; any other text
    ("4g", "lots") is refused rather than silently read as either."""
    from paictl.protocol.codes import finding

    if resources is None:
        return []
    if not isinstance(resources, dict):
        return [finding("E203", pointer, f"{pointer} must be a mapping {{cpu, memory, gpu}}")]
    findings = []
    for key in ("cpu", "memory", "gpu"):
        value = resources.get(key, "all")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not 0 <= value < float("inf"):
                findings.append(finding("E206", f"{pointer}/{key}", f"{key} {value!r} in {pointer} is not a "
                                        f"finite amount at least 0"))
            continue
        if value == "all" or (key == "memory" and isinstance(value, str) and value.endswith("m")
                              and value[:-1].isdigit()):
            continue
        unit = 'MB (a number, or "<MB>m")' if key == "memory" else "a number"
        findings.append(finding("E203", f"{pointer}/{key}", f"{key} {value!r} in {pointer} is neither {unit} nor "
                                f"all (MARO's node agent would ignore it and offer all of the node's {key})"))
    return findings


def _port(section: dict[str, Any], key: str, default: int) -> int:
    value = section.get(key)
    return int(value["port"]) if isinstance(value, dict) and value.get("port") not in (None, "") else default


def _merge(parts: list[Cluster], paths: Sequence[str]) -> Cluster:
    """One cluster from a named file (ours or MARO's create file) and any number of node-join files."""
    from paictl.errors import UsageError

    named = [part for part in parts if not part.nodes_only]
    if len(named) != 1:
        raise UsageError(f"--cluster: give exactly one cluster file (paictl's, or MARO's create file) and any number "
                         f"of MARO node-join files; got {len(named)} of the first kind among {', '.join(paths)}")
    base = named[0]
    nodes = list(base.nodes)
    for part in parts:
        if part is base:
            continue
        nodes += part.nodes
    names = [node.name for node in nodes]
    clash = sorted({name for name in names if names.count(name) > 1})
    if clash:
        raise UsageError(f"--cluster: node {clash[0]!r} is described twice")
    return dataclasses.replace(base, nodes=tuple(nodes), source=", ".join(paths))
