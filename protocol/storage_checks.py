"""`extras.storages` (and the deprecated teamwise_storage plugin) read as OpenPAI's rest-server reads them.

Upstream (`put` and `generateTaskRole` in src/models/v2/job/k8s.js, openpai.md a.4):
- a falsy `storages` (absent, null, 0, "", false) lets the last `teamwise_storage` runtime plugin decide: its
  `parameters.storageConfigNames` become `[{name}, ...]`, or `[]` when it has none;
- an empty list means the user's default storages;
- every other entry is looked up by `name`, and an entry without a truthy name (a string, a number, `{}`, an empty
  name) is skipped without a word; a string `storages` is walked character by character, so nothing is mounted;
- it crashes (HTTP 500) on a `storages` that is a mapping, a number or true, on a null entry, on plugin
  parameters that are null, and on storageConfigNames that are truthy but not a list.
`storage_problems` gives E808 for the crashes and for what Kubernetes refuses (a mountPath that is not a string, two
entries mounting one storage); `storage_warnings` gives W208 for the entries upstream silently skips. The
Framework target mounts exactly what upstream mounts (targets/framework/target.py).
"""

from __future__ import annotations

from typing import Any, Iterator

from .codes import finding
from .diagnostics import Finding, kind_of, pointer_of
from .jsstring import js_truthy
from .placeholders import PLUGIN_KEY
from .timestamps import is_timestamp


def requested_storages(extras: Any) -> tuple[Any, tuple[Any, ...]]:
    """(the storages list upstream ends up with, or None for no storages; the pointer tokens it came from).

    The value is returned as found (any shape); callers check its shape. Plugin names become `{"name": n}`.
    """
    if not isinstance(extras, dict):
        return None, ()
    storages = extras.get("storages")
    if is_timestamp(storages):  # a truthy Date: upstream iterates it and crashes
        return Crash(f"storages is the unquoted date {storages}"), ("extras", "storages")
    if js_truthy(storages):
        return storages, ("extras", "storages")
    plugins = extras.get(PLUGIN_KEY)
    found: tuple[Any, tuple[Any, ...]] = (None, ())
    for index, plugin in enumerate(plugins if isinstance(plugins, list) else []):
        if isinstance(plugin, dict) and plugin.get("plugin") == "teamwise_storage":  # the last one wins
            base = ("extras", PLUGIN_KEY, index, "parameters")
            parameters = plugin.get("parameters", {})
            if parameters is None:  # upstream reads `null.storageConfigNames` and crashes
                return Crash("the teamwise_storage plugin's parameters are null"), base
            names = parameters.get("storageConfigNames") if isinstance(parameters, dict) else None
            if js_truthy(names):
                if not isinstance(names, list):  # upstream calls `names.map` and crashes
                    shown = f"the unquoted date {names}" if is_timestamp(names) else kind_of(names)
                    return Crash(f"storageConfigNames is {shown}"), (*base, "storageConfigNames")
                found = ([{"name": n} for n in names], (*base, "storageConfigNames"))
            else:
                found = ([], (*base, "storageConfigNames"))
    return found


class Crash(str):
    """What upstream crashes on while reading the storages (the text says what it is)."""


def storage_name(entry: Any) -> Any:
    """The entry's name if upstream mounts it (a truthy `name`), else None (skipped)."""
    if isinstance(entry, dict) and js_truthy(entry.get("name")):
        return entry["name"]
    return None


def storage_problems(data: dict[str, Any]) -> Iterator[Finding]:
    storages, base = requested_storages(data.get("extras"))
    if storages is None or (isinstance(storages, str) and not isinstance(storages, Crash)):
        return
    if isinstance(storages, Crash) or not isinstance(storages, list):
        what = storages if isinstance(storages, Crash) else f"storages is {kind_of(storages)}"
        yield finding("E808", pointer_of(*base), f"{what}; OpenPAI's rest-server crashes on it (it expects a list "
                      "of storages)", "write `storages: [{name: <storage>}]`")
        return
    seen: dict[str, int] = {}
    for index, entry in enumerate(storages):
        where = (*base, index)
        if entry is None:
            yield finding("E808", pointer_of(*where), f"storage {index} is null; OpenPAI's rest-server crashes on "
                          "it", "remove the entry, or write `{name: <storage>}`")
            continue
        name = storage_name(entry)
        if name is None:
            continue
        mount_path = entry.get("mountPath")
        if js_truthy(mount_path) and (not isinstance(mount_path, str) or is_timestamp(mount_path)):
            yield finding("E808", pointer_of(*where, "mountPath"), f"mountPath of storage {index} is "
                          f"{kind_of(mount_path)}; Kubernetes refuses a mount path that is not a string",
                          "quote the path")
        key = name if isinstance(name, str) else repr(name)
        if key in seen:
            yield finding("E808", pointer_of(*where), f"storage '{key}' is listed twice; OpenPAI would give the pod "
                          "two volumes of the same name, which Kubernetes refuses", "list each storage once")
        seen.setdefault(key, index)


def storage_warnings(data: dict[str, Any]) -> Iterator[Finding]:
    storages, base = requested_storages(data.get("extras"))
    if isinstance(storages, Crash):
        return
    if isinstance(storages, str):
        yield finding("W208", pointer_of(*base), "storages is a string; OpenPAI walks it character by character "
                      "and mounts nothing", f"write a list: `storages: [{{name: {storages}}}]`")
        return
    if not isinstance(storages, list):
        return
    for index, entry in enumerate(storages):
        if entry is None or storage_name(entry) is not None:
            continue
        where = pointer_of(*base, index)
        shown = f"the unquoted date {entry}" if is_timestamp(entry) else f"the string {entry!r}" if isinstance(
            entry, str) else kind_of(entry) if not isinstance(
            entry, dict) else "a mapping without a name"
        yield finding("W208", where, f"storage {index} is {shown}; OpenPAI skips an entry that is not a mapping "
                      "with a name, so nothing is mounted for it",
                      f"write `{{name: {entry}}}`" if isinstance(entry, str) and entry else "give the entry a name")
