"""The kinds the emulator serves, and the discovery documents built from them.

The facts (group, version, kind, plural, scope, subresources) are hard-coded so that the emulator works without
../shared: they come from the FrameworkController, KubeDL and JobSet CRDs and from the core API. Discovery is served in the
legacy (unaggregated) form only: kubectl asks for aggregated discovery in its Accept header and falls back to the
legacy documents when the answer is plain `application/json`, as it does against any server older than 1.26.
"""

from __future__ import annotations

from dataclasses import dataclass, field

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.4",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-04-22T00:00:00Z",
    "goVersion": "go1.23.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass(frozen=True, kw_only=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    custom: bool = False  # served by a CRD: lists carry kind/apiVersion per item, no strategic merge patch
    extra_subresources: tuple[str, ...] = field(default=())
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """How Kubernetes names the resource in error messages: `frameworks.frameworkcontroller.microsoft.com`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_version(self) -> tuple[str, str]:
        return self.group, self.version


BUILTIN: tuple[ResourceType, ...] = (
    ResourceType(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False, short_names=("ns",),
                 status_subresource=True),
    ResourceType(group="", version="v1", kind="Pod", plural="pods", short_names=("po",), status_subresource=True,
                 extra_subresources=("log",), categories=("all",)),
    ResourceType(group="", version="v1", kind="Secret", plural="secrets"),
    ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps", short_names=("cm",)),
    ResourceType(group="", version="v1", kind="Service", plural="services", short_names=("svc",),
                 status_subresource=True, categories=("all",)),
    ResourceType(group="", version="v1", kind="Event", plural="events", short_names=("ev",)),
    ResourceType(group="scheduling.k8s.io", version="v1", kind="PriorityClass", plural="priorityclasses",
                 namespaced=False, short_names=("pc",)),
    # What `paictl compile --barrier-rbac` emits for the FrameworkBarrier's pods.
    ResourceType(group="", version="v1", kind="ServiceAccount", plural="serviceaccounts", short_names=("sa",)),
    ResourceType(group="rbac.authorization.k8s.io", version="v1", kind="Role", plural="roles"),
    ResourceType(group="rbac.authorization.k8s.io", version="v1", kind="RoleBinding", plural="rolebindings"),
    # FrameworkController: no status subresource (+genclient:noStatus), no short names.
    ResourceType(group="frameworkcontroller.microsoft.com", version="v1", kind="Framework", plural="frameworks",
                 custom=True),
    # KubeDL: status subresource enabled.
    ResourceType(group="training.kubedl.io", version="v1alpha1", kind="MarsJob", plural="marsjobs", custom=True,
                 status_subresource=True),
    # Kubernetes JobSet (its CRD: status subresource, no short names) and the batch Jobs it creates.
    ResourceType(group="jobset.x-k8s.io", version="v1alpha2", kind="JobSet", plural="jobsets", custom=True,
                 status_subresource=True),
    ResourceType(group="batch", version="v1", kind="Job", plural="jobs", status_subresource=True,
                 categories=("all",)),
)


class Registry:
    """The installed kinds; `uninstall` removes a CRD as deleting it would."""

    def __init__(self) -> None:
        self.types: list[ResourceType] = list(BUILTIN)

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        for rt in self.types:
            if rt.group == group and rt.version == version and rt.plural == plural:
                return rt
        return None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        for rt in self.types:
            if rt.api_version == api_version and rt.kind == kind:
                return rt
        return None

    def by_plural(self, plural: str) -> ResourceType | None:
        for rt in self.types:
            if rt.plural == plural or rt.qualified == plural:
                return rt
        return None

    def uninstall(self, plural: str) -> ResourceType:
        rt = self.by_plural(plural)
        if rt is None:
            raise KeyError(plural)
        self.types.remove(rt)
        return rt

    def install(self, rt: ResourceType) -> None:
        if rt not in self.types:
            self.types.append(rt)

    def group_versions(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for rt in self.types:
            versions = groups.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        return groups

    # -- discovery documents -------------------------------------------------------------------------------------

    def core_versions(self, server_address: str) -> dict:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        }

    def group_list(self) -> dict:
        groups = []
        for group, versions in self.group_versions().items():
            if group:
                groups.append(self.group_doc(group, versions))
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def group_doc(self, group: str, versions: list[str] | None = None) -> dict:
        versions = versions or self.group_versions().get(group, [])
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
                "preferredVersion": entries[0]}

    def resource_list(self, group: str, version: str) -> dict | None:
        found = [rt for rt in self.types if rt.group == group and rt.version == version]
        if not found:
            return None
        resources = []
        for rt in found:
            entry = {"name": rt.plural, "singularName": rt.singular or rt.kind.lower(), "namespaced": rt.namespaced,
                     "kind": rt.kind, "verbs": VERBS}
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            if rt.categories:
                entry["categories"] = list(rt.categories)
            if not rt.custom:
                entry["storageVersionHash"] = "emulator"
            resources.append(entry)
            if rt.status_subresource:
                resources.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                                  "kind": rt.kind, "verbs": ["get", "patch", "update"]})
            for sub in rt.extra_subresources:
                resources.append({"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced,
                                  "kind": rt.kind, "verbs": ["get"]})
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
