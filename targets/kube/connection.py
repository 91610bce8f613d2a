"""Which cluster and how to reach it: kubectl's kubeconfig rules, a pod's service account, and a probe that fails
fast. The official client is imported only once the probe found a server to talk to (it costs half a second)."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from paictl.errors import ClusterError, ConfigFileError, NotFoundError, display_url

from paictl.protocol.diagnostics import one_line
from paictl.targets.config_files import load_config_file
from .client import REQUEST_TIMEOUT, Cluster


def _kubernetes():
    try:
        import kubernetes
    except ImportError:
        raise ClusterError("talking to Kubernetes needs the kubernetes package: "
                           "pip install 'paictl[kubernetes]'") from None
    import logging

    if CLIENT_LOG not in logging.getLogger().filters:
        logging.getLogger().addFilter(CLIENT_LOG)
    return kubernetes


class ClientLogLines:
    """Keeps the official client's log lines off standard error, for paictl to report as its own errors.

    The client reports an exec credential plugin that fails (or answers without a token) through the root logger
    (`logging.error` in kubernetes/config/kube_config.py), which prints `ERROR:root:...` and goes on without
    credentials, to a 401 or a misleading "not installed" later. kubectl stops there; so does `connect`, with the
    plugin's message as its one line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def filter(self, record) -> bool:
        if f"{os.sep}kubernetes{os.sep}" not in record.pathname:
            return True
        self.lines.append(" ".join(record.getMessage().split())[:500])
        return False


CLIENT_LOG = ClientLogLines()


def kubectl_current_context(config_file: str) -> Optional[str]:
    """The current context as kubectl merges a KUBECONFIG list: the first file that sets a non-empty
    `current-context` wins (the python client's merger lets the last one win). Named clusters, contexts and users
    are merged first-wins by both."""
    return _kubeconfig_entries(config_file)[0]


def _chosen_context(kubernetes: Any, config_file: str, context: Optional[str]) -> tuple[list, Optional[dict]]:
    contexts, current = kubernetes.config.list_kube_config_contexts(config_file)
    wanted = context if context is not None else kubectl_current_context(config_file)
    if wanted is None:
        return contexts, current
    return contexts, next((c for c in contexts if c.get("name") == wanted), None)


def _kubeconfig_entries(config_file: str) -> tuple[Optional[str], dict[str, dict], dict[str, dict]]:
    """(current context, contexts by name, clusters by name) merged as kubectl merges a KUBECONFIG list (first
    wins), read by the configuration-file loader: no kubernetes import, and a file that is not valid YAML (or cannot
    be read) is one located line and exit 3 here, before the official client would raise a PyYAML traceback. A file
    of the list that does not exist is skipped, as kubectl skips it."""
    current: Optional[str] = None
    contexts: dict[str, dict] = {}
    clusters: dict[str, dict] = {}
    for path in config_file.split(os.pathsep):
        path = os.path.expanduser(path)
        if not path or not os.path.lexists(path):
            continue
        data = load_config_file(path, "kubeconfig").data
        current = current or (str(data["current-context"]) if data.get("current-context") else None)
        for key, found in (("contexts", contexts), ("clusters", clusters)):
            entries = data.get(key)
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get(key[:-1]), dict):
                    found.setdefault(str(entry.get("name")), entry[key[:-1]])
    return current, contexts, clusters


def probe(config_file: str, context: Optional[str]) -> None:
    """Fail fast: resolve the chosen cluster's host and open one TCP connection to it before the official client
    (half a second to import) is loaded. An unknown host, a refused connection or a network that cannot be reached
    is then one line at once, as with kubectl; anything else (a proxy, a kubeconfig the probe cannot read) is left
    to the client, which says it in its own words."""
    current, contexts, clusters = _kubeconfig_entries(config_file)
    name = context if context is not None else current
    cluster = clusters.get(str((contexts.get(str(name)) or {}).get("cluster")))
    if not cluster or cluster.get("proxy-url") or not isinstance(cluster.get("server"), str):
        return
    _probe_server(cluster["server"], str(name))


def _probe_server(server: str, name: str) -> None:
    """One TCP connection to `server` (see `probe`); ClusterError when there is no server to talk to."""
    import socket
    from urllib.parse import urlsplit

    try:
        url = urlsplit(server)
        host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return
    if not host:
        return

    def unreachable(reason: str) -> ClusterError:
        return ClusterError(f"cannot reach the cluster at {display_url(server)} (context {name}): {reason}")

    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise unreachable(f"unknown host {host}") from None
    except (OSError, UnicodeError):
        return
    failure: Optional[OSError] = None
    for family, kind, protocol, _, address in addresses:
        try:
            with socket.socket(family, kind, protocol) as sock:
                sock.settimeout(REQUEST_TIMEOUT[0])
                sock.connect(address)
            return
        except OSError as exc:
            failure = exc
    if isinstance(failure, ConnectionRefusedError):
        raise unreachable("connection refused")
    if isinstance(failure, (socket.timeout, TimeoutError)):
        raise unreachable(f"no answer within {REQUEST_TIMEOUT[0]:g}s")
    if failure is not None:
        raise unreachable(" ".join((failure.strerror or str(failure)).lower().split()))


def kubeconfig_path(kubeconfig: Optional[str] = None) -> str:
    """kubectl's choice: --kubeconfig, else $KUBECONFIG (a list of files), else ~/.kube/config."""
    return kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


def connect(*, context: Optional[str] = None, namespace: Optional[str] = None,
            kubeconfig: Optional[str] = None, notice: Optional[Callable[[str], None]] = None,
            probed: bool = False) -> Cluster:
    """kubectl's precedence: --kubeconfig, else $KUBECONFIG (a list), else ~/.kube/config; --context, else the
    current context; --namespace, else the context's namespace, else `default`. `probed`: the caller has just
    run `probe` on the same kubeconfig and context, so it is not run again."""
    config_file = kubeconfig_path(kubeconfig)
    for path in config_file.split(os.pathsep):
        if path and os.path.isdir(path):  # kubectl skips a missing file of the list, but not one it cannot read
            raise ConfigFileError(f"cannot read the kubeconfig: {one_line(path)}: is a directory")
    if not any(os.path.isfile(path) for path in config_file.split(os.pathsep) if path):
        if in_cluster(kubeconfig, context):
            return _connect_in_cluster(namespace, notice)
        raise NotFoundError(f"no kubeconfig at {config_file}: give --kubeconfig FILE (or set KUBECONFIG), "
                           "or run the job on this machine with --target local")
    if not probed:
        probe(config_file, context)
    kubernetes = _kubernetes()
    import yaml
    from kubernetes.config.config_exception import ConfigException

    chosen_name = context
    try:
        contexts, chosen = _chosen_context(kubernetes, config_file, context)
        if chosen is None:
            raise ClusterError(f"kubeconfig {config_file}: no context named "
                               f"{context or kubectl_current_context(config_file)!r}")
        chosen_name = chosen["name"]
        configuration = kubernetes.client.Configuration()
        logged = len(CLIENT_LOG.lines)
        kubernetes.config.load_kube_config(config_file=config_file, context=chosen["name"],
                                           client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        raise ClusterError(f"kubeconfig {config_file}: {' '.join(str(exc).split())}") from None
    except (AttributeError, KeyError, IndexError):  # the client indexes what it reads without checking its shape
        which = f" (context {chosen_name!r})" if chosen_name else ""
        raise ConfigFileError(f"kubeconfig {config_file}{which}: not of the shape kubectl reads (contexts, clusters "
                              "and users are lists of {name, context|cluster|user} mappings, their fields "
                              "strings)") from None
    except yaml.YAMLError as exc:  # YAML the located loader reads but PyYAML (the client's reader) does not
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else config_file
        raise ConfigFileError(f"{where}: the kubeconfig is not valid YAML for the kubernetes client: "
                              f"{getattr(exc, 'problem', None) or 'cannot be parsed'}") from None
    if len(CLIENT_LOG.lines) > logged:
        raise ClusterError(f"kubeconfig {config_file}: context {chosen['name']!r}: getting credentials failed: "
                           f"{CLIENT_LOG.lines[logged]}")
    # Failures are retried by paictl's own loops (with backoff), never silently by urllib3.
    configuration.retries = False
    return Cluster(api=kubernetes.client.ApiClient(configuration),
                   namespace=namespace or (chosen.get("context") or {}).get("namespace") or "default",
                   context=chosen["name"], server=display_url(configuration.host),
                   kubectl="kubectl" + cluster_flags(kubeconfig=kubeconfig, context=context), notice=notice)


def cluster_flags(*, kubeconfig: Optional[str], context: Optional[str]) -> str:
    """` --kubeconfig FILE --context NAME`, shell-quoted, for what the user gave: what a printed kubectl or paictl
    command needs to reach the same cluster. kubectl and paictl read $KUBECONFIG and the current context alike, so
    only what was given on the command line needs saying again."""
    import shlex

    flags = [("--kubeconfig", kubeconfig), ("--context", context)]
    return "".join(f" {flag} {shlex.quote(value)}" for flag, value in flags if value)


def in_cluster(kubeconfig: Optional[str] = None, context: Optional[str] = None) -> bool:
    """Inside a pod, with no kubeconfig named or found: the pod's service account, as kubectl and the official
    client use it (client-go rest.InClusterConfig; kubernetes.config.load_incluster_config)."""
    return (not kubeconfig and not context and not os.environ.get("KUBECONFIG")
            and bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and bool(os.environ.get("KUBERNETES_SERVICE_PORT")))


def _in_cluster_namespace() -> str:
    """client-go's inClusterClientConfig.Namespace: $POD_NAMESPACE, else the service account's namespace file
    (beside its token), else `default`."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    from kubernetes.config import incluster_config

    try:
        with open(os.path.join(os.path.dirname(incluster_config.SERVICE_TOKEN_FILENAME), "namespace"),
                  encoding="utf-8") as handle:
            return handle.read().strip() or "default"
    except OSError:
        return "default"


def _connect_in_cluster(namespace: Optional[str], notice: Optional[Callable[[str], None]]) -> Cluster:
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    server = f"https://{f'[{host}]' if ':' in host else host}:{port}"
    _probe_server(server, "in-cluster")
    kubernetes = _kubernetes()
    from kubernetes.config import incluster_config
    from kubernetes.config.config_exception import ConfigException

    configuration = kubernetes.client.Configuration()
    try:  # the file names are read now, so that they can be pointed elsewhere (tests do)
        incluster_config.InClusterConfigLoader(token_filename=incluster_config.SERVICE_TOKEN_FILENAME,
                                               cert_filename=incluster_config.SERVICE_CERT_FILENAME,
                                               ).load_and_set(configuration)
    except (ConfigException, OSError, ValueError) as exc:
        raise ClusterError(f"in-cluster configuration (service account): {' '.join(str(exc).split())}") from None
    configuration.retries = False
    return Cluster(api=kubernetes.client.ApiClient(configuration), namespace=namespace or _in_cluster_namespace(),
                   context="in-cluster", server=display_url(configuration.host), notice=notice)


def context_namespace(*, context: Optional[str], kubeconfig: Optional[str]) -> Optional[str]:
    """The namespace the kubeconfig context names, or None (then the profile's namespace applies)."""
    config_file = kubeconfig_path(kubeconfig)
    if in_cluster(kubeconfig, context) and not any(os.path.isfile(p) for p in config_file.split(os.pathsep) if p):
        _kubernetes()
        return _in_cluster_namespace()
    kubernetes = _kubernetes()
    try:
        _, chosen = _chosen_context(kubernetes, config_file, context)
    except Exception:  # noqa: BLE001 - connect() reports a broken kubeconfig with its reason
        return None
    return ((chosen or {}).get("context") or {}).get("namespace")
