"""The kubelet's side of a scripted run: pod status as a container waits, runs and terminates.

Mixed into the runs that create their own pods (mars_sim, jobset_sim), which provide `pods_rt`, `params`, `_log`
and the Run base (`current`, `set_log`, `emu`, `namespace`).
"""

from __future__ import annotations

import copy
import uuid

from .pods import kubelet_event


class Kubelet:
    pod_ip = "10.244.1.10"
    host_ip = "10.0.0.11"
    #: Whether a failed container's log tail becomes its termination message (terminationMessagePolicy
    #: FallbackToLogsOnError).
    termination_message = False

    def _kubelet(self, name: str, change) -> None:
        self.current()
        self.emu.store.mutate(self.pods_rt, self.namespace, name, change, "kubelet", "status")

    @staticmethod
    def _statuses(pod: dict, state: dict, ready: bool) -> list[dict]:
        return [{"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": ready, "restartCount": 0,
                 "started": ready, "containerID": f"containerd://{uuid.uuid4().hex}", "state": copy.deepcopy(state)}
                for c in pod["spec"].get("containers") or []]

    def _waiting(self, reason: str):
        def change(pod: dict) -> None:
            pod["status"].update(phase="Pending", containerStatuses=self._statuses(pod, {"waiting": {
                "reason": reason, "message": "Back-off pulling image"}}, False))
        return change

    def _pull_backoff(self, pods: list[dict]) -> None:
        """Every pod waits on an image it cannot pull, with the kubelet's BackOff event."""
        for pod in pods:
            self._kubelet(pod["metadata"]["name"], self._waiting("ImagePullBackOff"))
            image = (pod["spec"].get("containers") or [{}])[0].get("image", "")
            kubelet_event(self.emu, pod, "BackOff", f'Back-off pulling image "{image}"', "Normal")

    def _running(self):
        now = self.emu.clock.stamp()

        def change(pod: dict) -> None:
            self.set_log(pod["metadata"]["name"], self._log(pod["metadata"]["name"], False))
            pod["spec"]["nodeName"] = pod["spec"].get("nodeName") or self.params.get("node", "node-0")
            pod["status"].update(phase="Running", startTime=now, podIP=self.pod_ip, hostIP=self.host_ip,
                                 containerStatuses=self._statuses(pod, {"running": {"startedAt": now}}, True))
        return change

    def _terminated(self, code: int, log: str):
        now = self.emu.clock.stamp()
        message = {"message": log[-4096:]} if self.termination_message and code and log else {}

        def change(pod: dict) -> None:
            self.set_log(pod["metadata"]["name"], log)
            pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
            pod["status"]["containerStatuses"] = self._statuses(pod, {"terminated": {
                "exitCode": code, "reason": "Completed" if code == 0 else "Error", "finishedAt": now,
                **message}}, False)
        return change
