"""The scripted controller: when a Framework, MarsJob or JobSet is created, run the scenario registered for it.

Each object gets a thread that writes what the real controller would write, in the order the references give
(FrameworkController: /work/shared/reference/frameworkcontroller.md b, d, g; KubeDL: marsjob.md 3, 4; JobSet:
jobset.md 1.2-1.4), sleeping simulated time between steps. The thread wakes early when its object changes (a Stop) and ends when the object is
gone. Objects without a registered scenario are left alone (status stays null, as with no controller running).
"""

from __future__ import annotations

import copy
import threading
from typing import Callable

from .store import Event

SCENARIOS = {
    "Framework": ("succeeded", "failed", "stopped", "stuck-pending", "running"),
    "MarsJob": ("succeeded", "failed", "stuck-pending", "running"),
    "JobSet": ("succeeded", "failed", "restarted", "stuck-pending", "running", "forbidden"),
}


class Gone(Exception):
    """The object the run drives was deleted (or replaced by a new one of the same name)."""


class Run:
    """Base of a scripted run: object access, simulated waits, logs."""

    manager = "controller"
    subresource = ""

    def __init__(self, emu, rt, namespace: str, name: str, uid: str, params: dict) -> None:
        self.emu, self.rt, self.namespace, self.name, self.uid = emu, rt, namespace, name, uid
        self.params = params
        self.wake = threading.Event()
        self.stopped = threading.Event()

    def current(self) -> dict:
        obj = self.emu.store.find(self.rt, self.namespace, self.name)
        if obj is None or obj["metadata"]["uid"] != self.uid or self.stopped.is_set():
            raise Gone
        return obj

    def write_status(self, status: dict) -> dict:
        snapshot = copy.deepcopy(status)

        def change(obj: dict) -> None:
            obj["status"] = snapshot

        with self.emu.store.lock:
            self.current()
            result = self.emu.store.mutate(self.rt, self.namespace, self.name, change, self.manager,
                                           self.subresource)
        if result is None:
            raise Gone
        return result

    def wait(self, sim_seconds: float, until: Callable[[dict], bool] | None = None) -> bool:
        """Sleep simulated time; returns True early when `until(object)` becomes true. Raises Gone."""
        remaining = sim_seconds
        clock = self.emu.clock
        while True:
            if until is not None and until(self.current()):
                return True
            if remaining is not None and remaining <= 0:
                self.current()
                return False
            started = clock.now()
            step = remaining if remaining is not None else 3600.0
            clock.sleep(step, self.wake)
            self.wake.clear()
            if self.stopped.is_set():
                raise Gone
            if remaining is not None:
                remaining -= (clock.now() - started).total_seconds()

    def set_log(self, pod: str, text: str) -> None:
        """The log so far of the current pod `pod`; kept per pod uid too, so that a follower still gets the last
        lines after the pod is deleted (or replaced by the next attempt's pod of the same name)."""
        found = self.emu.store.find(self.emu.registry.by_kind("v1", "Pod"), self.namespace, pod)
        with self.emu._lock:
            self.emu.pod_logs[(self.namespace, pod)] = text
            if found is not None:
                self.emu.log_archive[(self.namespace, pod, found["metadata"]["uid"])] = text

    def run(self) -> None:
        raise NotImplementedError

    def main(self) -> None:
        try:
            self.run()
        except Gone:
            pass


class Controller:
    def __init__(self, emu) -> None:
        self.emu = emu
        self.scenarios: dict[tuple[str, str], tuple[str, dict]] = {}
        self.runs: dict[tuple[str, str, str], Run] = {}
        self.lock = threading.Lock()
        emu.store.listeners.append(self.on_event)

    def register(self, kind: str, name: str, scenario: str, params: dict) -> None:
        if kind not in SCENARIOS:
            raise ValueError(f"no scripted controller for {kind}; choose one of {sorted(SCENARIOS)}")
        if scenario not in SCENARIOS[kind]:
            raise ValueError(f"unknown {kind} scenario {scenario!r}; choose one of {SCENARIOS[kind]}")
        self.scenarios[(kind, name)] = (scenario, params)

    def stop(self) -> None:
        with self.lock:
            for run in self.runs.values():
                run.stopped.set()
                run.wake.set()

    def on_event(self, event: Event) -> None:
        obj = event.obj
        kind = obj.get("kind")
        if kind not in SCENARIOS:
            return
        key = (kind, event.namespace, obj["metadata"]["name"])
        with self.lock:
            run = self.runs.get(key)
            if event.type == "ADDED":
                chosen = self.scenarios.get((kind, key[2])) or self.scenarios.get((kind, "*"))
                if chosen is None:
                    return
                if run is not None:
                    run.stopped.set()
                    run.wake.set()
                run = self._make(kind, obj, *chosen)
                self.runs[key] = run
                threading.Thread(target=run.main, name=f"emulator-{kind}-{key[2]}", daemon=True).start()
            elif run is not None:
                if event.type == "DELETED":
                    run.stopped.set()
                    self.runs.pop(key, None)
                run.wake.set()

    def _make(self, kind: str, obj: dict, scenario: str, params: dict) -> Run:
        from .framework_sim import FrameworkRun
        from .jobset_sim import JobSetRun
        from .mars_sim import MarsRun

        cls = {"Framework": FrameworkRun, "JobSet": JobSetRun}.get(kind, MarsRun)
        rt = self.emu.registry.by_kind(obj["apiVersion"], kind)
        meta = obj["metadata"]
        return cls(self.emu, rt, meta.get("namespace", ""), meta["name"], meta["uid"], dict(params, scenario=scenario))
