"""What FrameworkController creates (reference g) and what a kubelet reports, plus the completion-code and retry
rules (reference b, c) the scripted Framework run applies.

Pods: `{framework}-{role}-{index}`, owned by the `{framework}-attempt` ConfigMap (controller, blockOwnerDeletion),
which is owned by the Framework and carries the `foregroundDeletion` finalizer. Labels FC_FRAMEWORK_NAME,
FC_TASKROLE_NAME, FC_TASK_INDEX; the FC_* annotations; FC_* env vars prepended to every container; the
`{{FC_...}}` placeholders replaced; terminationMessagePolicy defaulted to FallbackToLogsOnError. Pods are deleted
at once (no graceful termination): no kubelet runs here.
"""

from __future__ import annotations

import copy
import json
import time
import uuid

from . import errors

# exit code -> (completion code, phrase, attributes): the predefined codes and the default config's container codes.
EXIT_CODES = {
    200: (200, "ContainerTransientFailed", ["Transient"]),
    201: (201, "ContainerTransientConflictFailed", ["Transient", "Conflict"]),
    210: (210, "ContainerPermanentFailed", ["Permanent"]),
    125: (-1201, "ContainerDockerCreationError", []),
    126: (-1202, "ContainerDockerStartCmdPermissionDenied", ["Permanent"]),
    127: (-1203, "ContainerDockerStartCmdNotFound", ["Permanent"]),
    128: (-1204, "ContainerDockerStartUnknownError", []),
    130: (130, "SigInt", ["Transient"]), 131: (131, "SigQuit", ["Transient"]), 132: (132, "SigIll", ["Permanent"]),
    134: (134, "SigAbrt", []), 135: (135, "SigBus", ["Permanent"]), 136: (136, "SigFpe", ["Permanent"]),
    137: (137, "SigKill", ["Transient"]), 139: (139, "SigSegv", ["Permanent"]), 141: (141, "SigPipe", ["Permanent"]),
    143: (143, "SigTerm", ["Transient"]),
}
NEVER_RETRIED = (-210, -220, -230)


def completion_code(exit_code: int, pod: str, container: str) -> dict:
    if exit_code == 0:
        return {"code": 0, "phrase": "Succeeded", "type": {"name": "Succeeded", "attributes": []},
                "diagnostics": "Pod succeeded", "pod": {"containers": [{"name": container, "reason": "Completed",
                                                                        "code": 0}]}}
    pod_status = {"reason": "", "message": "",
                  "containers": [{"name": container, "reason": "Error", "code": exit_code}]}
    if exit_code in EXIT_CODES:
        code, phrase, attributes = EXIT_CODES[exit_code]
        diagnostics = "Pod failed: PodPattern matched: " + json.dumps(
            {"containers": [{"name": container, "code": exit_code}]}, separators=(",", ":"))
    else:
        code, phrase, attributes = exit_code, "ContainerUnrecognizedFailed", []
        diagnostics = "Pod failed: PodPattern unmatched: " + json.dumps(pod_status, separators=(",", ":"))
    return {"code": code, "phrase": phrase, "type": {"name": "Failed", "attributes": list(attributes)},
            "diagnostics": diagnostics, "pod": pod_status}


def should_retry(policy: dict, completion: dict, retried: dict) -> tuple[bool, bool]:
    """(retry?, accountable?) as RetryPolicySpec.ShouldRetry decides (reference c)."""
    if completion["code"] in NEVER_RETRIED:
        return False, False
    failed = completion["type"]["name"] == "Failed"
    attributes = completion["type"].get("attributes") or []
    if policy.get("fancyRetryPolicy") and failed:
        if "Transient" in attributes:
            return True, False
        if "Permanent" in attributes:
            return False, False
    maximum = policy.get("maxRetryCount", 0)
    if maximum == -2 or (failed and (maximum == -1 or retried["accountableRetriedCount"] < maximum)):
        return True, True
    return False, False


def kubelet_event(emu, pod: dict, reason: str, message: str, kind: str = "Warning") -> None:
    """An Event about `pod` as the kubelet records one (what `kubectl describe pod` shows)."""
    meta = pod["metadata"]
    node = pod["spec"].get("nodeName") or "node-0"
    container = (pod["spec"].get("containers") or [{"name": "main"}])[0]["name"]
    now = emu.clock.stamp()
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
             "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                "namespace": meta["namespace"], "uid": meta["uid"],
                                "fieldPath": f"spec.containers{{{container}}}"},
             "reason": reason, "message": message, "type": kind, "count": 1, "firstTimestamp": now,
             "lastTimestamp": now, "source": {"component": "kubelet", "host": node},
             "reportingComponent": "kubelet", "reportingInstance": node}
    emu.store.create(emu.registry.by_kind("v1", "Event"), meta["namespace"], event, "kubelet")


class PodMaker:
    """Creates and drives the ConfigMap and pods of one Framework on behalf of FC, the scheduler and the kubelet."""

    def __init__(self, run, framework: dict) -> None:
        self.run = run
        self.store = run.emu.store
        self.framework = framework
        self.pods_rt = run.emu.registry.by_kind("v1", "Pod")
        self.cm_rt = run.emu.registry.by_kind("v1", "ConfigMap")
        self.node = run.params.get("node", "node-0")
        self.configmap: dict | None = None

    @property
    def namespace(self) -> str:
        return self.run.namespace

    def create_configmap(self, attempt_id: int) -> dict:
        fw = self.framework["metadata"]
        name = f"{fw['name']}-attempt"
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "namespace": self.namespace, "labels": {"FC_FRAMEWORK_NAME": fw["name"]},
            "annotations": {"FC_FRAMEWORK_NAMESPACE": self.namespace, "FC_FRAMEWORK_NAME": fw["name"],
                            "FC_CONFIGMAP_NAME": name, "FC_FRAMEWORK_UID": fw["uid"],
                            "FC_FRAMEWORK_ATTEMPT_ID": str(attempt_id)},
            "finalizers": ["foregroundDeletion"],
            "ownerReferences": [{"apiVersion": "frameworkcontroller.microsoft.com/v1", "kind": "Framework",
                                 "name": fw["name"], "uid": fw["uid"], "controller": True,
                                 "blockOwnerDeletion": True}]}}
        self.run.current()
        self.configmap = self.store.create(self.cm_rt, self.namespace, body, "frameworkcontroller")
        return self.configmap

    def delete_configmap(self) -> None:
        if self.configmap is None:
            return
        name = self.configmap["metadata"]["name"]
        for pod in self.store.list(self.pods_rt, self.namespace,
                                   lambda o: o["metadata"]["labels"].get("FC_FRAMEWORK_NAME") ==
                                   self.framework["metadata"]["name"])[0]:
            self.delete_pod(pod["metadata"]["name"])
        try:
            self.store.delete(self.cm_rt, self.namespace, name, propagation="Foreground")
        except errors.ApiError:
            pass

    def wait_configmap_gone(self) -> None:
        """FC moves on (AttemptCompleted) only once the garbage collector has removed the ConfigMap."""
        if self.configmap is None:
            return
        for _ in range(500):
            if self.store.find(self.cm_rt, self.namespace, self.configmap["metadata"]["name"]) is None:
                break
            time.sleep(0.01)
        self.configmap = None

    def create_pod(self, role: str, task: dict, configmap: dict, status: dict) -> dict:
        fw = self.framework["metadata"]
        index = task["index"]
        name = f"{fw['name']}-{role}-{index}"
        attempt_id = status["attemptStatus"]["id"]
        role_status = next(r for r in status["attemptStatus"]["taskRoleStatuses"] if r["name"] == role)
        values = {
            "FC_FRAMEWORK_NAMESPACE": self.namespace, "FC_FRAMEWORK_NAME": fw["name"], "FC_TASKROLE_NAME": role,
            "FC_TASK_INDEX": str(index), "FC_CONFIGMAP_NAME": configmap["metadata"]["name"], "FC_POD_NAME": name,
            "FC_FRAMEWORK_UID": fw["uid"], "FC_FRAMEWORK_ATTEMPT_ID": str(attempt_id),
            "FC_FRAMEWORK_ATTEMPT_INSTANCE_UID": status["attemptStatus"]["instanceUID"],
            "FC_CONFIGMAP_UID": configmap["metadata"]["uid"],
            "FC_TASKROLE_UID": role_status.get("instanceUID") or str(uuid.uuid4()),
            "FC_TASK_UID": task.get("instanceUID") or str(uuid.uuid4()),
            "FC_TASK_ATTEMPT_ID": str(task["attemptStatus"]["id"]),
        }
        role_status["instanceUID"] = values["FC_TASKROLE_UID"]
        task["instanceUID"] = values["FC_TASK_UID"]
        spec = next(r for r in self.framework["spec"]["taskRoles"] if r["name"] == role)
        text = json.dumps((spec.get("task") or {}).get("pod") or {})
        for key in ("FC_FRAMEWORK_NAMESPACE", "FC_FRAMEWORK_NAME", "FC_TASKROLE_NAME", "FC_TASK_INDEX",
                    "FC_CONFIGMAP_NAME", "FC_POD_NAME"):
            text = text.replace("{{%s}}" % key, values[key])
        pod = json.loads(text)
        meta = pod.setdefault("metadata", {})
        meta.update(name=name, namespace=self.namespace)
        meta.setdefault("labels", {}).update(FC_FRAMEWORK_NAME=fw["name"], FC_TASKROLE_NAME=role,
                                             FC_TASK_INDEX=str(index))
        meta.setdefault("annotations", {}).update(values)
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": configmap["metadata"]["name"],
                                    "uid": configmap["metadata"]["uid"], "controller": True,
                                    "blockOwnerDeletion": True}]
        env = [{"name": k, "value": v} for k, v in values.items()]
        env += [{"name": "FC_POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                {"name": "FC_TASK_ATTEMPT_INSTANCE_UID", "value": f"{values['FC_TASK_ATTEMPT_ID']}_$(FC_POD_UID)"}]
        pod_spec = pod.setdefault("spec", {})
        for container in pod_spec.get("containers", []) + pod_spec.get("initContainers", []):
            container["env"] = copy.deepcopy(env) + (container.get("env") or [])
            container.setdefault("terminationMessagePolicy", "FallbackToLogsOnError")
        pod["apiVersion"], pod["kind"] = "v1", "Pod"
        self.run.current()
        created = self.store.create(self.pods_rt, self.namespace, pod, "frameworkcontroller")
        self.run.set_log(name, "")
        return created

    def main_container(self, pod_name: str) -> str:
        pod = self.store.find(self.pods_rt, self.namespace, pod_name)
        containers = (pod or {}).get("spec", {}).get("containers") or [{"name": "main"}]
        return containers[0]["name"]

    def _kubelet(self, pod_name: str, change) -> dict:
        result = self.store.mutate(self.pods_rt, self.namespace, pod_name, change, "kubelet", "status")
        if result is None:
            raise errors.not_found(self.pods_rt, pod_name)
        return result

    def _containers(self, pod: dict, state: dict, ready: bool) -> list[dict]:
        out = []
        for container in pod["spec"].get("containers") or []:
            out.append({"name": container["name"], "image": container.get("image", ""), "imageID": "",
                        "containerID": f"containerd://{uuid.uuid4().hex}", "ready": ready, "restartCount": 0,
                        "started": ready, "state": copy.deepcopy(state)})
        return out

    def _bind(self, pod_name: str) -> None:
        def bind(pod: dict) -> None:
            pod["spec"]["nodeName"] = self.node

        self.store.mutate(self.pods_rt, self.namespace, pod_name, bind, "default-scheduler")

    def pull_backoff(self, pod: dict) -> None:
        name = pod["metadata"]["name"]
        self._bind(name)
        image = (pod["spec"].get("containers") or [{}])[0].get("image", "")

        def change(obj: dict) -> None:
            waiting = {"waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}}
            obj["status"].update(phase="Pending", hostIP="10.0.0.10", startTime=self.run.emu.clock.stamp(),
                                 conditions=[{"type": "PodScheduled", "status": "True"},
                                             {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
                                 containerStatuses=self._containers(obj, waiting, False))

        pod = self._kubelet(name, change)
        kubelet_event(self.run.emu, pod, "Failed", f'Failed to pull image "{image}": rpc error: code = NotFound '
                      f'desc = failed to pull and unpack image "{image}": not found')
        kubelet_event(self.run.emu, pod, "BackOff", f'Back-off pulling image "{image}"', "Normal")

    def set_running(self, pod_name: str, log: str) -> dict:
        self._bind(pod_name)
        now = self.run.emu.clock.stamp()
        index = sum(1 for _ in self.store.list(self.pods_rt, self.namespace)[0]) % 200 + 20

        def change(obj: dict) -> None:
            obj["status"].update(phase="Running", hostIP="10.0.0.10", podIP=f"10.244.0.{index}", startTime=now,
                                 podIPs=[{"ip": f"10.244.0.{index}"}],
                                 conditions=[{"type": "PodScheduled", "status": "True"},
                                             {"type": "Initialized", "status": "True"},
                                             {"type": "ContainersReady", "status": "True"},
                                             {"type": "Ready", "status": "True"}],
                                 containerStatuses=self._containers(obj, {"running": {"startedAt": now}}, True))

        self.run.set_log(pod_name, log)
        return self._kubelet(pod_name, change)

    def set_terminated(self, pod_name: str, exit_code: int, log: str) -> dict:
        now = self.run.emu.clock.stamp()
        self.run.set_log(pod_name, log)

        def change(obj: dict) -> None:
            previous = (obj["status"].get("containerStatuses") or [{}])[0].get("state", {}).get("running", {})
            terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                          "startedAt": previous.get("startedAt", now), "finishedAt": now,
                          "containerID": f"containerd://{uuid.uuid4().hex}"}
            if exit_code:
                terminated["message"] = "".join(log.splitlines(keepends=True)[-80:])
            obj["status"]["phase"] = "Succeeded" if exit_code == 0 else "Failed"
            obj["status"]["containerStatuses"] = self._containers(obj, {"terminated": terminated}, False)
            for condition in obj["status"].get("conditions") or []:
                if condition["type"] in ("Ready", "ContainersReady"):
                    condition.update(status="False", reason="PodCompleted")

        return self._kubelet(pod_name, change)

    def delete_pod(self, pod_name: str) -> None:
        try:
            self.store.delete(self.pods_rt, self.namespace, pod_name)
        except errors.ApiError:
            pass
