"""A Kubernetes API server emulator for paictl's tests (test code only, never shipped).

No real API server can run where the tests run, so this one answers on 127.0.0.1 with the REST dialect that the
official python client and real `kubectl` speak (tests/test_kubectl_crosscheck.py proves the latter), and a
scripted controller moves Frameworks, MarsJobs and JobSets, their ConfigMaps, Jobs, pods and services through the
state sequences in /work/shared/reference (frameworkcontroller.md, marsjob.md, jobset.md).

    with Emulator(speed=200) as emu:
        emu.scenario("Framework", "demo", "failed", exit_code=137)
        emu.write_kubeconfig(tmp_path / "kubeconfig")
        ...
        assert emu.count(watch=True) == 1

Faithful: discovery (legacy documents: kubectl falls back from aggregated discovery; a minimal OpenAPI v3 that
tells kubectl the server validates fields, so `kubectl apply` works with its default validation), Status errors
(NotFound, AlreadyExists, Conflict, Forbidden, Gone/Expired, Invalid, BadRequest, UnsupportedMediaType), one
global resourceVersion, generation, managedFields, server-side apply with conflicts and force, merge / JSON patch
(strategic merge patch is refused with 415 for custom resources, as the real server does), dryRun=All, optimistic
concurrency on PUT, finalizers, graceful pod deletion (deletionTimestamp + grace period, registry/core/pod
strategy.go), ownerReferences with Background / Foreground / Orphan deletion where a foreground deletion waits only
for `blockOwnerDeletion` dependents and the collector reaches the others after `store.gc_lag_seconds`, list with
selectors and limit/continue (later pages of the first page's snapshot), chunked watch streams with bookmarks, 410
ERROR events and timeoutSeconds, pod logs with container / tailLines / limitBytes / follow (204 for a pod on no
node), 422 for refused options, finalizers added to a deleting object and annotations over 256 KiB, 413 for a body
over 3 MiB, a Job's default `orphan` deletion, kubelet Events for pods stuck pulling their image, JobSet's
validating webhook on update, etcd's 1.5 MiB value limit and the 1 MiB Secret/ConfigMap data limit, optional TLS
(`tls=(cert, key)`). Test levers: `fail_next` (an error before acting), `throttle_next` (429 + Retry-After: 1, as
maxinflight.go), `lose_next` (the answer lost after acting), `forbid()`, `uninstall()`, `expire_history()`,
`drop_watches()`. Kueue is not emulated: its tests run on the real control plane (tests/kube_real).

Known differences from a real API server (tests/kube_emulator/test_parity.py sends the same requests to both and
lists them in DIFFERENCES; bookmarks come every `bookmark_interval` seconds, a real server's once a minute, which
the tests' fixture shortens to 0.5 s):
- field sets are leaf paths; all lists are atomic (real built-in kinds merge some lists by key, e.g. containers);
- OpenAPI documents carry no schemas (`kubectl explain` fails; `fieldValidation=Strict` is accepted, unknown
  fields are not reported); no Table responses (kubectl prints from the object itself); no protobuf;
- no kubelet beyond the scripted controllers: pods not created by them stay Pending; a terminating pod's containers
  are not shown stopping, the pod just goes when its grace period ends (or `store.termination_seconds`);
- the scripted controllers write a few status updates per step where the real ones batch theirs differently;
- only the validation a client can trip over is implemented (names, the CRDs' enums/ranges, required fields);
- timestamps come from the emulator's clock, which runs `speed` times faster than real time;
- authentication is absent (the Authorization header is recorded, never checked); `forbid()` turns individual
  verbs on resources into 403s.
"""

from .emulator import Emulator
from .server import RequestRecord

__all__ = ["Emulator", "RequestRecord"]
