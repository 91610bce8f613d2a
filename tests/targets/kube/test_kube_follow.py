"""Following survives a flaky API server and costs a handful of requests: counted in the emulator.

The emulator runs 200 times faster than real time, so a job whose running phase lasts a simulated ten minutes is
followed for three real seconds; a poller would have sent hundreds of GETs in that time, a watcher sends one watch
per watched collection, plus one per connection the server drops.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from test_kube_cli import FC, HELLO, last_job_line, paictl, start, submit, wait_for

from conftest import JOBS

pytest.importorskip("kubernetes")

MARS = "training.kubedl.io/v1alpha1"
MARS_JOB = str(JOBS / "kube" / "mars-job.yaml")


def running(emu, name: str) -> bool:
    framework = emu.get_object(FC, "Framework", "default", name) or {}
    return (framework.get("status") or {}).get("state") == "AttemptRunning"


def open_watches(emu, count: int) -> None:
    """Wait until `count` watch requests have been answered with a stream (status 200, still open or not)."""
    wait_for(lambda: sum(1 for r in list(emu.requests) if r.watch and r.status == 200) >= count)


@pytest.mark.parametrize("disconnects", [0, 3])
def test_ten_simulated_minutes_cost_one_watch_per_collection_plus_one_per_disconnect(emulator, disconnects):
    """Load-independent: the job runs until the test stops it, after the last disconnect (a fixed run time let a
    slow machine finish the job before the third one)."""
    emulator.scenario("Framework", "*", "stopped")
    done, name = submit(emulator, HELLO)
    wait_for(lambda: running(emulator, name))
    follower = start(emulator, "status", name, "--follow", "--format", "json")
    open_watches(emulator, 2)
    for dropped in range(1, disconnects + 1):
        time.sleep(0.4)
        emulator.drop_watches()
        open_watches(emulator, 2 + 2 * dropped)
    time.sleep(3)  # ten simulated minutes of following, with nothing but the open watches
    gets = [r for r in list(emulator.requests) if r.method == "GET" and not r.watch]
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 4, err
    assert json.loads(out.splitlines()[-1])["state"] == "stopped"
    assert emulator.count(watch=True, path_contains="/frameworks") == 1 + disconnects
    assert emulator.count(watch=True, path_contains="/pods") == 1 + disconnects
    # submit: two GETs (a finished job of that name? the object before the apply) and the PATCH; status: one GET
    # to find the job, one for its state; follow: one list of each collection. Nothing grows with the time
    # followed; the verdict costs one more pod list.
    assert len(gets) <= 6, [(r.path, r.query) for r in gets]
    pod_lists = [r for r in list(emulator.requests) if r.method == "GET" and not r.watch and r.path.endswith("/pods")]
    assert len(pod_lists) == 2  # the follower's list, and its final one before the verdict
    # every resumed watch starts from a version it was given, never from scratch
    watches = [r for r in emulator.requests if r.watch]
    assert all(r.query.get("resourceVersion") not in (None, "", "0") for r in watches)
    assert all(r.query.get("allowWatchBookmarks") == "true" for r in watches)


@pytest.mark.parametrize("history_expires", [False, True])
def test_server_errors_are_retried_with_backoff_and_410_lists_again(emulator, history_expires):
    """Load-independent: the job runs until the test stops it, once every injected failure has been met, so a slow
    machine cannot let the job finish before the third 503 (as a fixed run time did)."""
    emulator.scenario("Framework", "*", "stopped")
    done, name = submit(emulator, HELLO)
    wait_for(lambda: running(emulator, name))
    follower = start(emulator, "status", name, "--follow")
    open_watches(emulator, 2)
    # Three 503s keep the Framework watch away (backing off). Meanwhile the cluster may move on and compact its
    # history: the version the watch resumes from is then gone (410), and it must list again.
    emulator.fail_next(3, status=503, path_contains="/frameworks")
    emulator.drop_watches()
    if history_expires:
        emulator.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "bump", "namespace": "default"}})
        emulator.expire_history()

    def framework_watches() -> list[int]:
        return [r.status for r in list(emulator.requests) if r.watch and "/frameworks" in r.path]

    # after the 503s, a watch that streamed one ERROR event (410 Expired), then the one after the new list
    expected = [200, 503, 503, 503, 200] + ([200] if history_expires else [])
    wait_for(lambda: framework_watches() == expected)
    framework_lists = [r for r in emulator.requests if not r.watch and "fieldSelector" in r.query]
    assert len(framework_lists) == (2 if history_expires else 1)
    assert follower.poll() is None  # still following
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 4, err
    assert last_job_line(out, name).startswith(f"{name}: stopped")
    assert framework_watches() == expected


def test_mars_job_follow_stop_and_logs(emulator):
    emulator.scenario("MarsJob", "*", "running", seconds=100000, logs={"kube-mars-51819241-worker-1": "ready\n"})
    done = paictl(emulator, "submit", MARS_JOB, "--target", "mars")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "marsjob.training.kubedl.io/kube-mars-51819241 created\n"
    name = "kube-mars-51819241"
    wait_for(lambda: len(emulator.list_objects("v1", "Pod", "default")) == 4)
    logs = paictl(emulator, "logs", name, "worker", "1")
    assert logs.returncode == 0 and logs.stdout == "ready\n", logs.stderr
    follower = start(emulator, "status", name, "--follow")  # no --target: a Framework is looked for first
    open_watches(emulator, 2)
    stopped = paictl(emulator, "stop", name)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"marsjob.training.kubedl.io/{name} deleted (foreground)\n"
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 4, err
    assert last_job_line(out, name) == f"{name}: stopped (attempt 0): the MarsJob was deleted"
    delete = next(r for r in emulator.requests if r.method == "DELETE")
    assert "/marsjobs/" in delete.path
    # foreground: the MarsJob goes only after its pods, so nothing of the job outlives what `stop` reports
    assert json.loads(delete.body)["propagationPolicy"] == "Foreground"


def test_mars_job_failed_names_the_scheduler(emulator):
    emulator.scenario("MarsJob", "*", "failed", exit_code=127, log="bash: mars-scheduler: command not found\n")
    done = paictl(emulator, "submit", MARS_JOB, "--target", "mars", "--follow")
    assert done.returncode == 1, done.stderr
    assert "Scheduler-0  Error  attempt 0  on node-0  exit 127  220 UserCommandExitWithError" in done.stdout
    assert last_job_line(done.stdout, "kube-mars-51819241").startswith(
        "kube-mars-51819241: failed (attempt 0), code 127, decided by Scheduler-0: MarsJobFailed")


def test_a_recreated_mars_worker_loses_its_predecessors_exit_code(emulator):
    emulator.scenario("MarsJob", "*", "succeeded", worker_restarts=1)
    done = paictl(emulator, "submit", MARS_JOB, "--target", "mars", "--follow", "--format", "json")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    views = [r for r in records if "tasks" in r]  # after the applied objects, the state changes
    worker = [next((t for t in v["tasks"] if (t["role"], t["index"]) == ("Worker", 0)), None) for v in views]
    seen = [(t["state"], t["exit_code"]) for t in worker if t is not None]
    assert ("Error", 137) in seen  # KubeDL's ExitCode policy: 137 is retryable, the pod is made again
    failed_at = seen.index(("Error", 137))
    again = next(i for i in range(failed_at, len(seen)) if seen[i][0] != "Error")  # the new pod
    assert all(code is None for _, code in seen[again:]), seen
    assert "restarting" in [v["state"] for v in views] and views[-1]["state"] == "succeeded"


def test_missing_kubedl_is_named(emulator):
    emulator.uninstall("marsjobs")
    done = paictl(emulator, "submit", MARS_JOB, "--target", "mars")
    assert done.returncode == 3
    assert done.stderr == ("paictl: error: KubeDL is not installed in this cluster: no marsjobs.training.kubedl.io "
                           "resource\n")


def test_paictl_compile_does_not_import_the_kubernetes_client():
    import subprocess

    from conftest import ROOT

    code = ("import sys; from paictl.cli.app import main; sys.argv=['paictl','compile','examples/hello-world.yaml'];\n"
            "import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: main()\n"
            "    except SystemExit: pass\n"
            "print('kubernetes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr


def test_a_server_that_keeps_failing_is_given_up_with_one_line(emulator):
    """In-process, with a short backoff and a limit (a follower has none by default: it rides out an outage)."""
    from paictl.targets.kube.workloads import workload
    from paictl.errors import ClusterError
    from paictl.targets.kube.connection import connect
    from paictl.targets.kube.follow import Backoff, follow_job

    emulator.scenario("Framework", "*", "running", seconds=100000)
    done, name = submit(emulator, HELLO)
    emulator.fail_next(100, status=500, path_contains="/frameworks")
    cluster = connect(kubeconfig=str(emulator.kubeconfig))
    views = follow_job(cluster, workload("framework"), name, "default", backoff=Backoff(initial=0.01, attempts=4))
    with pytest.raises(ClusterError) as raised:
        list(views)
    assert str(raised.value).startswith("watch frameworks.frameworkcontroller.microsoft.com in namespace default: "
                                        "the cluster answered 500")
    framework_gets = [r for r in emulator.requests if r.method == "GET" and "/frameworks" in r.path]
    # submit's two GETs (is there a finished job of that name? the object before the apply), then four failed
    # lists: the watch has its own backoff, so its lists are not retried by the request as well
    assert len(framework_gets) == 2 + 4


def test_a_follower_rides_out_an_api_outage_and_shows_it(emulator):
    """client-go's reflector (tools/cache/reflector.go ListAndWatch, wait.BackoffUntil) never gives up on a
    failing server, it backs off and keeps trying; a follower does the same, saying meanwhile that it cannot reach
    the server, and goes on to the verdict once the server answers again."""
    from paictl.targets.kube.connection import connect
    from paictl.targets.kube.follow import Backoff, follow_job
    from paictl.targets.kube.workloads import workload

    emulator.scenario("Framework", "*", "succeeded", run_seconds=600)  # 3 real seconds of running
    done, name = submit(emulator, HELLO)
    cluster = connect(kubeconfig=str(emulator.kubeconfig))
    views = follow_job(cluster, workload("framework"), name, "default", backoff=Backoff(initial=0.01, cap=0.05))
    seen = [next(views)]
    emulator.fail_next(40, status=503, path_contains="/frameworks")  # about a second of failing lists
    emulator.drop_watches()
    seen += list(views)
    messages = [view.message or "" for view in seen]
    assert any("the cluster answered 503" in m and "following on since" in m for m in messages), messages
    assert seen[-1].state.value == "succeeded"
    assert emulator.count("GET", "/frameworks") > 40
