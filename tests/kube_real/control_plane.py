"""`ControlPlane`: a real Kubernetes control plane on 127.0.0.1 for the Kubernetes tests, from the binaries that
`.ci/provision-kube.sh` builds from the Go module proxy: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, kwok as the nodes (pods move through the stages in `stages.yaml`: no containers run), the JobSet
controller with its webhooks, FrameworkController, KubeDL's MarsJob CRD, and Kueue (on a plane of its own, for the
Kueue tests: `KUEUE_CONTROLLERS`; it sees its metrics certificate at a fixed path under /etc through a private mount
namespace, `_private_etc`).

One per test session: started in about ten seconds from cached binaries. Certificates come from one throwaway CA
(openssl); every component talks to the API server over TLS with a client certificate. Tests get the admin's
kubeconfig, or a user's (`user_kubeconfig`) whose rights RBAC decides.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any, Optional

import yaml

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("PAICTL_TESTS_CACHE") or Path.home() / ".cache" / "paictl-tests")
#: kwok's fake nodes: enough room for every test's pods at once
NODES = 3
#: What the session's plane starts (the `real_cluster` fixture). Kueue is not among them: its webhooks would see every
#: JobSet and Job of every test; the Kueue tests get a plane of their own (`KUEUE_CONTROLLERS`, the `kueue_cluster`
#: fixture), started only when one of them runs.
DEFAULT_CONTROLLERS = ("jobset", "frameworkcontroller", "kubedl-crd")
#: The Kueue tests' plane: JobSet and Kueue managing JobSets and batch Jobs.
KUEUE_CONTROLLERS = ("jobset", "kueue")
#: the processes without which nothing runs
CORE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
NODE_CAPACITY = {"cpu": "64", "memory": "512Gi", "pods": "250", "nvidia.com/gpu": "16"}


class ControlPlaneUnavailable(Exception):
    """A part is not built (or does not start): the tests needing it skip locally and fail under CI."""


def versions() -> dict[str, str]:
    """tests/kube_real/versions.env: the version of every part, as .ci/provision-kube.sh builds it."""
    pairs = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def part_dir(part: str) -> Path:
    """Where .ci/provision-kube.sh keeps a built part (an `ok` file inside once it is complete)."""
    key = {"kubernetes": "KUBERNETES", "etcd": "ETCD", "kwok": "KWOK", "jobset": "JOBSET", "kueue": "KUEUE",
           "frameworkcontroller": "FRAMEWORKCONTROLLER", "kubedl-crd": "KUBEDL"}[part]
    return CACHE / f"kube-{part}-{versions()[key + '_VERSION']}"


def missing(parts: tuple[str, ...] = ("etcd", "kubernetes", "kwok")) -> Optional[str]:
    """Why the control plane cannot start (None: the parts are built)."""
    absent = [part for part in parts if not (part_dir(part) / "ok").is_file()]
    if not absent:
        return None
    failed = [part for part in absent if part_dir(part).with_name(part_dir(part).name + ".failed").is_file()]
    said = f"not built: {', '.join(absent)} (run .ci/provision-kube.sh)"
    return said + (f"; failed to build: {', '.join(failed)}" if failed else "")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ControlPlane:
    def __init__(self, workdir: Path, *, controllers: tuple[str, ...] = DEFAULT_CONTROLLERS):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.wanted = controllers
        self.processes: dict[str, subprocess.Popen] = {}
        self.ports = {name: free_port() for name in ("etcd", "etcd-peer", "apiserver", "kcm", "scheduler",
                                                     "jobset-webhook", "jobset-health", "kueue-webhook",
                                                     "kueue-health")}
        self.server = f"https://127.0.0.1:{self.ports['apiserver']}"
        self.kubeconfig = self.dir / "admin.kubeconfig"
        self.installed: dict[str, Optional[str]] = {}  # controller -> None when running, else why not

    # -- start and stop ------------------------------------------------------------------------------------------

    def start(self) -> "ControlPlane":
        reason = missing()
        if reason:
            raise ControlPlaneUnavailable(reason)
        started = time.monotonic()
        self._certificates()
        self._start_etcd()
        self._start_apiserver()
        self._wait(lambda: self._ready("/readyz"), 60, "kube-apiserver /readyz")
        self._start("kube-controller-manager", self._kcm_args())
        self._start("kube-scheduler", [str(self._bin("kubernetes", "kube-scheduler")), "--leader-elect=false",
                                       f"--kubeconfig={self._kubeconfig('system:kube-scheduler')}",
                                       f"--authentication-kubeconfig={self.kubeconfig}",
                                       f"--authorization-kubeconfig={self.kubeconfig}",
                                       "--bind-address=127.0.0.1", f"--secure-port={self.ports['scheduler']}"])
        self._start_kwok()
        if "kubedl-crd" in self.wanted:
            self._install_part("kubedl-crd", self._apply_crds)
        if "jobset" in self.wanted:
            self._install_part("jobset", self._start_jobset)
        if "kueue" in self.wanted:
            self._install_part("kueue", self._start_kueue)
        if "frameworkcontroller" in self.wanted:
            self._install_part("frameworkcontroller", self._start_frameworkcontroller)
        # the token controller and the service account controller are running once `default` exists
        self._wait(lambda: self.get("/api/v1/namespaces/default/serviceaccounts/default"), 60,
                   "the default ServiceAccount")
        self._wait(self._nodes_ready, 60, "kwok's nodes Ready")
        for part, why in self.installed.items():
            if why is None and part in ("jobset", "kueue", "frameworkcontroller"):
                try:
                    self._wait(lambda part=part: self._controller_ready(part), 90, f"{part} ready", (part,))
                except ControlPlaneUnavailable as error:
                    self.installed[part] = str(error)
                    self._end(part)
        self.started_in = time.monotonic() - started
        return self

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            self._end(name)

    def __enter__(self) -> "ControlPlane":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port: its watch cache starts empty, so a
        resourceVersion or continue token from before is too old (410) where it was served from the cache. It is
        killed (`_end`), as a crashed server ends: what the restart is for (an empty watch cache, dropped watches)
        needs no goodbye, and everything it keeps is in etcd."""
        self._end("kube-apiserver")
        self._start_apiserver()
        self._wait(lambda: self._ready("/readyz"), 60, "kube-apiserver /readyz after a restart")

    def _start(self, name: str, args: list[str], cwd: Optional[Path] = None,
               env: Optional[dict[str, str]] = None) -> None:
        log = open(self.dir / f"{name}.log", "ab")
        self.processes[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=cwd or self.dir,
                                                env={**os.environ, **(env or {})}, start_new_session=True,
                                                preexec_fn=_end_with_parent)
        log.close()

    def _end(self, name: str) -> None:
        """SIGKILL, not a graceful stop: kube-apiserver did not end within 20 s of a SIGTERM even with its shutdown
        delays at 0 s (nor did the JobSet controller once the API server was gone), which made every restart and
        the session's teardown wait that long for nothing. No part keeps anything outside etcd and the plane's
        throwaway folder, and each already dies by SIGKILL with the test process (`_end_with_parent`)."""
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.kill()
        process.wait(timeout=10)

    def _wait(self, ready, seconds: float, what: str, watched: Optional[tuple[str, ...]] = None) -> None:
        """Poll `ready` until it is true; ControlPlaneUnavailable when time is up or a process ends (`watched`:
        the processes that matter here, by default the control plane's own)."""
        deadline = time.monotonic() + seconds
        watched = watched or CORE
        while time.monotonic() < deadline:
            dead = [name for name, process in self.processes.items() if name in watched and process.poll() is not None]
            if dead:
                raise ControlPlaneUnavailable(f"{', '.join(dead)} exited while waiting for {what}: "
                                              f"{self.log_tail(dead[0])}")
            with contextlib.suppress(OSError, ssl.SSLError, http.client.HTTPException):
                if ready():
                    return
            time.sleep(0.2)
        raise ControlPlaneUnavailable(f"{what} not reached in {seconds:g}s")

    def log_tail(self, name: str, lines: int = 5) -> str:
        path = self.dir / f"{name}.log"
        text = path.read_text(errors="replace") if path.is_file() else ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def _bin(self, part: str, name: str) -> Path:
        return part_dir(part) / "bin" / name

    def _install_part(self, part: str, install) -> None:
        reason = missing((part,))
        if reason:
            self.installed[part] = reason
            return
        try:
            install()
        except (OSError, RuntimeError, ControlPlaneUnavailable) as error:  # a part that does not start: its tests skip
            self.installed[part] = f"{part} did not start: {error}"
            self._end(part)
            return
        self.installed[part] = None

    # -- certificates and kubeconfigs ----------------------------------------------------------------------------

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.dir)

    def _certificate(self, name: str, subject: str, *, server: bool = False) -> tuple[Path, Path]:
        """An EC key and a certificate signed by the CA: a client's (subject CN=user/O=group) or a server's for
        127.0.0.1 (the API server's also for the names pods use)."""
        key, csr, crt = (self.dir / f"{name}.{ext}" for ext in ("key", "csr", "crt"))
        self._openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key))
        self._openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
        extensions = self.dir / f"{name}.ext"
        usage = "serverAuth" if server else "clientAuth"
        alt = ("\nsubjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
               "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" if server else "")
        extensions.write_text(f"basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                              f"extendedKeyUsage={usage}{alt}\n")
        self._openssl("x509", "-req", "-in", str(csr), "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                      "-days", "30", "-extfile", str(extensions), "-out", str(crt))
        return crt, key

    def _certificates(self) -> None:
        self._openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key")
        self._openssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=paictl-test-ca", "-days", "30",
                      "-out", "ca.crt")
        self.ca = self.dir / "ca.crt"
        self._openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key")
        self._openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        self._certificate("apiserver", "/CN=kube-apiserver", server=True)
        self._certificate("webhook", "/CN=webhooks", server=True)
        self.admin_cert = self._certificate("admin", "/CN=paictl-admin/O=system:masters")
        self._write_kubeconfig(self.kubeconfig, *self.admin_cert)

    def _kubeconfig(self, user: str, group: Optional[str] = None) -> Path:
        safe = user.replace(":", "-")
        path = self.dir / f"{safe}.kubeconfig"
        if not path.exists():
            crt, key = self._certificate(safe, f"/CN={user}" + (f"/O={group}" if group else ""))
            self._write_kubeconfig(path, crt, key)
        return path

    def _write_kubeconfig(self, path: Path, crt: Path, key: Path, namespace: str = "default") -> Path:
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "real",
                  "clusters": [{"name": "real", "cluster": {"server": self.server,
                                                            "certificate-authority": str(self.ca)}}],
                  "users": [{"name": "user", "user": {"client-certificate": str(crt), "client-key": str(key)}}],
                  "contexts": [{"name": "real", "context": {"cluster": "real", "user": "user",
                                                            "namespace": namespace}}]}
        path.write_text(yaml.safe_dump(config))
        return path

    def write_kubeconfig(self, path: Path, namespace: str = "default", user: Optional[str] = None) -> Path:
        """A kubeconfig for the admin (system:masters), or for `user` (no group: RBAC decides what it may do)."""
        if user is None:
            return self._write_kubeconfig(Path(path), *self.admin_cert, namespace=namespace)
        safe = user.replace(":", "-")
        self._kubeconfig(user)
        return self._write_kubeconfig(Path(path), self.dir / f"{safe}.crt", self.dir / f"{safe}.key",
                                      namespace=namespace)

    # -- the parts -----------------------------------------------------------------------------------------------

    def _start_etcd(self) -> None:
        data = self.dir / "etcd"
        self._start("etcd", [str(self._bin("etcd", "etcd")), "--data-dir", str(data), "--name", "paictl-test",
                             "--listen-client-urls", f"http://127.0.0.1:{self.ports['etcd']}",
                             "--advertise-client-urls", f"http://127.0.0.1:{self.ports['etcd']}",
                             "--listen-peer-urls", f"http://127.0.0.1:{self.ports['etcd-peer']}",
                             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.ports['etcd-peer']}",
                             "--initial-cluster", f"paictl-test=http://127.0.0.1:{self.ports['etcd-peer']}",
                             "--unsafe-no-fsync", "--log-level", "warn"])

    def _start_apiserver(self) -> None:
        d = self.dir
        self._start("kube-apiserver", [
            str(self._bin("kubernetes", "kube-apiserver")),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.ports['apiserver']}",
            f"--tls-cert-file={d / 'apiserver.crt'}", f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={d / 'ca.crt'}",
            f"--service-account-key-file={d / 'sa.pub'}", f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
            "--authorization-mode=Node,RBAC", "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-certificate-authority={d / 'ca.crt'}",
            f"--kubelet-client-certificate={d / 'admin.crt'}", f"--kubelet-client-key={d / 'admin.key'}",
            "--shutdown-delay-duration=0s", "--shutdown-watch-termination-grace-period=0s",
        ])

    def _kcm_args(self) -> list[str]:
        d = self.dir
        kubeconfig = self._kubeconfig("system:kube-controller-manager")
        return [str(self._bin("kubernetes", "kube-controller-manager")), f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
                "--use-service-account-credentials", f"--service-account-private-key-file={d / 'sa.key'}",
                f"--root-ca-file={d / 'ca.crt'}", f"--cluster-signing-cert-file={d / 'ca.crt'}",
                f"--cluster-signing-key-file={d / 'ca.key'}", "--leader-elect=false",
                "--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle-controller",
                "--bind-address=127.0.0.1", f"--secure-port={self.ports['kcm']}",
                "--concurrent-gc-syncs=5", "--node-monitor-grace-period=60s"]

    def _start_kwok(self) -> None:
        self._start("kwok", [str(self._bin("kwok", "kwok")), f"--kubeconfig={self.kubeconfig}",
                             "--manage-all-nodes=false",
                             "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                             "--node-ip=127.0.0.1", "--cidr=10.244.0.1/16",
                             f"--config={HERE / 'stages.yaml'}"])
        for index in range(NODES):
            name = f"kwok-node-{index}"
            self.request("POST", "/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                             "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                        "kubernetes.io/arch": "amd64", "type": "kwok"}},
                "status": {"allocatable": NODE_CAPACITY, "capacity": NODE_CAPACITY}})

    def _nodes_ready(self) -> bool:
        nodes = self.get("/api/v1/nodes")["items"]
        return len(nodes) == NODES and all(
            any(c.get("type") == "Ready" and c.get("status") == "True" for c in n["status"].get("conditions", []))
            for n in nodes)

    def _apply_crds(self, part: str = "kubedl-crd") -> None:
        for path in sorted((part_dir(part) / "crd").glob("*.yaml")):
            for crd in yaml.safe_load_all(path.read_text()):
                if crd:
                    self.apply(crd)
        names = [crd["metadata"]["name"] for path in sorted((part_dir(part) / "crd").glob("*.yaml"))
                 for crd in yaml.safe_load_all(path.read_text()) if crd]
        for name in names:
            self._wait(lambda name=name: _established(self.get(
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")), 30, f"CRD {name}")

    def _webhooks(self, part: str, port: int, paths: tuple[str, ...] = ("",)) -> None:
        """The part's webhook configurations (those whose path contains one of `paths`), pointed at its controller
        on 127.0.0.1 instead of a Service, and the conversion webhooks its CRDs' kustomization patches in."""
        bundle = base64.b64encode(self.ca.read_bytes()).decode()
        for doc in yaml.safe_load_all((part_dir(part) / "webhook" / "manifests.yaml").read_text()):
            if not doc:
                continue
            doc["metadata"]["name"] = f"{part}-{doc['metadata']['name']}"
            hooks = [hook for hook in doc.get("webhooks") or []
                     if any(p in hook["clientConfig"]["service"]["path"] for p in paths)]
            for hook in hooks:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
            doc["webhooks"] = hooks
            self.apply(doc)
        patches = part_dir(part) / "crd-patches"
        listed = (patches / "kustomization.yaml").read_text() if patches.is_dir() else ""
        for name in re.findall(r"^- path: patches/(webhook_in_\w+\.yaml)", listed, re.M):
            crd = yaml.safe_load((patches / name).read_text())["metadata"]["name"]
            self.request("PATCH", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}", {
                "spec": {"conversion": {"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": f"https://127.0.0.1:{port}/convert", "caBundle": bundle},
                    "conversionReviewVersions": ["v1"]}}}}, content_type="application/merge-patch+json")

    def _start_jobset(self) -> None:
        self._apply_crds("jobset")
        config = self.dir / "jobset-config.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
            "internalCertManagement": {"enable": False}, "leaderElection": {"leaderElect": False},
            "webhook": {"port": self.ports["jobset-webhook"], "host": "127.0.0.1",
                        "certDir": str(self._webhook_cert_dir())},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports['jobset-health']}"}}))
        self._start("jobset", [str(self._bin("jobset", "jobset")), f"--config={config}"],
                    env={"KUBECONFIG": str(self.kubeconfig)})
        self._webhooks("jobset", self.ports["jobset-webhook"])

    def _start_kueue(self) -> None:
        """Kueue with its own certificate management off (its certificates would name a Service, not 127.0.0.1):
        its webhooks serve the plane's certificate for 127.0.0.1, and it reads a metrics certificate from the fixed
        path /etc/kueue/metrics/certs (cmd/kueue/main.go), which the process finds in a private mount namespace
        (`_private_etc`). The metrics server itself is off; only the watcher of that certificate starts."""
        self._apply_crds("kueue")
        config = self.dir / "kueue-config.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": "kueue-system", "manageJobsWithoutQueueName": False,
            "internalCertManagement": {"enable": False}, "leaderElection": {"leaderElect": False},
            "webhook": {"port": self.ports["kueue-webhook"], "host": "127.0.0.1",
                        "certDir": str(self._webhook_cert_dir())},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports['kueue-health']}"},
            # the visibility API server would listen on every address of the machine (port 8082, one per machine)
            "featureGates": {"VisibilityOnDemand": False},
            "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}}))
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}})
        etc = self._private_etc(self._certificate("kueue-metrics", "/CN=kueue-metrics", server=True))
        self._start("kueue", [*etc, str(self._bin("kueue", "kueue")), f"--config={config}"],
                    env={"KUBECONFIG": str(self.kubeconfig)})
        # the webhooks of the two integrations and of Kueue's own objects (not those of pods, Deployments, ...)
        self._webhooks("kueue", self.ports["kueue-webhook"],
                       paths=("jobset-x-k8s-io", "kueue-x-k8s-io", "batch-v1-job"))

    def _private_etc(self, metrics_cert: tuple[Path, Path]) -> list[str]:
        """The command prefix that runs a program with `metrics_cert` at /etc/kueue/metrics/certs/tls.{crt,key}
        while the machine's /etc stays untouched: a private mount namespace (unshare -m as root; -Urm, a user
        namespace whose root may mount, for another user or a root without CAP_SYS_ADMIN) where /etc is an overlay
        of the real one, its upper layer on a tmpfs that exists only there. Each way is tried first with `test -s`
        in place of the program: ControlPlaneUnavailable when none works here (a container without the capability,
        user namespaces off), and the Kueue tests skip (fail under CI)."""
        layer = self.dir / "kueue-etc"
        layer.mkdir(exist_ok=True)
        failures = []
        for flags in (("-m", "-Urm") if os.geteuid() == 0 else ("-Urm",)):
            unshare = ["unshare", flags, "--propagation", "private"]
            prefix = [*unshare, "sh", "-c", _OVERLAY_ETC, "kueue-etc", str(layer), *map(str, metrics_cert)]
            try:
                probe = subprocess.run([*prefix, "test", "-s", f"/etc/{METRICS_CERTS}/tls.key"], capture_output=True,
                                       text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as error:
                failures.append(f"{' '.join(unshare)}: {error}")
                continue
            if probe.returncode == 0:
                return prefix
            failures.append(f"{' '.join(unshare)}: {probe.stderr.strip() or f'exit {probe.returncode}'}")
        raise ControlPlaneUnavailable(f"no private mount namespace for Kueue's /etc: {'; '.join(failures)}")

    def _webhook_cert_dir(self) -> Path:
        directory = self.dir / "webhook-certs"
        directory.mkdir(exist_ok=True)
        for source, target in (("webhook.crt", "tls.crt"), ("webhook.key", "tls.key")):
            (directory / target).write_bytes((self.dir / source).read_bytes())
        return directory

    def _start_frameworkcontroller(self) -> None:
        """FrameworkController reads ./frameworkcontroller.yaml and creates its CRD itself."""
        workdir = self.dir / "frameworkcontroller"
        workdir.mkdir(exist_ok=True)
        (workdir / "frameworkcontroller.yaml").write_text(yaml.safe_dump({
            "kubeConfigFilePath": str(self.kubeconfig), "frameworkMinRetryDelaySecForTransientConflictFailed": 1,
            "frameworkMaxRetryDelaySecForTransientConflictFailed": 2}))
        self._start("frameworkcontroller", [str(self._bin("frameworkcontroller", "frameworkcontroller"))],
                    cwd=workdir, env={"KUBECONFIG": str(self.kubeconfig)})

    def _controller_ready(self, part: str) -> bool:
        if part == "frameworkcontroller":
            return _established(self.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                         "frameworks.frameworkcontroller.microsoft.com"))
        port = self.ports[f"{part}-health"]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/readyz")
            return connection.getresponse().status == 200
        finally:
            connection.close()

    # -- REST --------------------------------------------------------------------------------------------------

    def _context(self, cert: Optional[tuple[Path, Path]] = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.dir / "ca.crt"))
        crt, key = cert or self.admin_cert
        context.load_cert_chain(str(crt), str(key))
        return context

    def raw(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
            headers: Optional[dict[str, str]] = None, timeout: float = 30,
            cert: Optional[tuple[Path, Path]] = None) -> tuple[int, dict[str, str], bytes]:
        """One request as the admin (or `cert`): (status, headers, body)."""
        connection = http.client.HTTPSConnection("127.0.0.1", self.ports["apiserver"], timeout=timeout,
                                                 context=self._context(cert))
        try:
            data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
            connection.request(method, path, body=data, headers={"Content-Type": content_type,
                                                                 "Accept": "application/json", **(headers or {})})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def request(self, method: str, path: str, body: Any = None, **options) -> dict:
        status, _, data = self.raw(method, path, body, **options)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {data[:500]!r}")
        return json.loads(data) if data else {}

    def get(self, path: str) -> Optional[dict]:
        status, _, data = self.raw("GET", path)
        return json.loads(data) if status == 200 else None

    def _ready(self, path: str) -> bool:
        return self.raw("GET", path, timeout=5)[0] == 200

    def apply(self, obj: dict, manager: str = "paictl-tests") -> dict:
        """Server-side apply as the test harness (not as paictl's field manager)."""
        path = api_path(obj["apiVersion"], obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        return self.request("PATCH", f"{path}?fieldManager={manager}&force=true", obj,
                            content_type="application/apply-patch+yaml")

    # -- test-side helpers (what the emulator's tests read) -------------------------------------------------------

    def namespace(self, name: str) -> str:
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._wait(lambda: self.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"), 30,
                   f"the default ServiceAccount in {name}")
        return name

    def get_object(self, api_version: str, kind: str, namespace: Optional[str], name: str) -> Optional[dict]:
        return self.get(api_path(api_version, kind, namespace, name))

    def list_objects(self, api_version: str, kind: str, namespace: Optional[str] = None) -> list[dict]:
        return (self.get(api_path(api_version, kind, namespace)) or {}).get("items") or []


#: Where Kueue reads its metrics certificate when its own certificate management is off (cmd/kueue/main.go), in /etc
METRICS_CERTS = "kueue/metrics/certs"
#: Run in the private mount namespace by `sh -c` ($1: a directory for the tmpfs, $2 and $3: the certificate and its
#: key, then the command): the upper layer is a tmpfs because an overlay cannot be the upper layer of another.
_OVERLAY_ETC = f"""set -e
mount -t tmpfs -o size=1m,mode=0700 kueue-etc "$1"
mkdir -p "$1/upper/{METRICS_CERTS}" "$1/work"
cp "$2" "$1/upper/{METRICS_CERTS}/tls.crt"
cp "$3" "$1/upper/{METRICS_CERTS}/tls.key"
mount -t overlay kueue-etc -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc
shift 3
exec "$@"
"""


def _end_with_parent() -> None:
    """In the child, before exec: SIGKILL when the test process dies (killed, or ended without its teardown), so
    that no control plane outlives its session (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _established(crd: Optional[dict]) -> bool:
    return bool(crd) and any(c.get("type") == "Established" and c.get("status") == "True"
                             for c in (crd.get("status") or {}).get("conditions") or [])


#: kind -> (plural, namespaced) for the harness's own objects (paictl's workloads go through its resource table)
_PLURALS = {"Namespace": ("namespaces", False), "CustomResourceDefinition": ("customresourcedefinitions", False),
            "MutatingWebhookConfiguration": ("mutatingwebhookconfigurations", False),
            "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", False),
            "ClusterQueue": ("clusterqueues", False), "ResourceFlavor": ("resourceflavors", False),
            "LocalQueue": ("localqueues", True), "Role": ("roles", True), "RoleBinding": ("rolebindings", True),
            "ClusterRole": ("clusterroles", False), "ClusterRoleBinding": ("clusterrolebindings", False),
            "Pod": ("pods", True), "Secret": ("secrets", True), "ConfigMap": ("configmaps", True),
            "ServiceAccount": ("serviceaccounts", True), "Service": ("services", True),
            "PriorityClass": ("priorityclasses", False), "Job": ("jobs", True), "Event": ("events", True),
            "Framework": ("frameworks", True), "JobSet": ("jobsets", True), "MarsJob": ("marsjobs", True),
            "Workload": ("workloads", True), "WorkloadPriorityClass": ("workloadpriorityclasses", False)}


def api_path(api_version: str, kind: str, namespace: Optional[str], name: Optional[str] = None) -> str:
    plural, namespaced = _PLURALS[kind]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    where = f"/namespaces/{namespace}" if namespaced and namespace else ""
    return f"{base}{where}/{plural}" + (f"/{name}" if name else "")

