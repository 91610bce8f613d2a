"""`paictl submit --target local` with a real docker engine (tests/docker_engine.py): each task a container of its
image, with OpenPAI's contract inside, and nothing left behind after any ending: success, failure, retries, stop,
Ctrl-C, kill -9 of paictl. Images come from `docker import` (no registry is reachable) and, for pulls, from a real
registry on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from conftest import ROOT
from docker_engine import docker_engine, docker_registry, no_docker_engine  # noqa: F401 - fixtures
from test_local_run import job_file, last_json, log, paictl, run_processes, start, state, wait_for, wait_running

EXAMPLES = ROOT / "examples"
ONLY_IN_IMAGE = "/opt/paictl-only-in-image/data.txt"


@pytest.fixture
def engine(docker_engine, monkeypatch):
    """The session's engine, as DOCKER_HOST for paictl, with the images the jobs here name."""
    docker_engine.image("paictl-test/only:1", {ONLY_IN_IMAGE: "only in the image\n"}, workdir="/srv/app")
    for tag in ("ubuntu:22.04", "python:3.11-slim"):
        if not docker_engine.docker("image", "inspect", tag, check=False).returncode == 0:
            docker_engine.docker("tag", docker_engine.base_image(), tag)
    monkeypatch.setenv("DOCKER_HOST", docker_engine.host)
    yield docker_engine
    # whatever a test did, its runs left no container behind
    left = docker_engine.containers("label=paictl.run")
    assert left == [], left


def run_id(cwd: Path, name: str) -> str:
    return state(cwd, name)["run_id"]


def no_trace(engine, cwd: Path, name: str) -> None:
    """No container and no process of the run is left (docker ps -a, /proc)."""
    rid = run_id(cwd, name)
    wait_for(lambda: not engine.containers(f"label=paictl.run={rid}") and not run_processes(rid),
             f"the containers and processes of run {rid} to be gone", timeout=30)


# -- the contract -----------------------------------------------------------------------------------------------

def test_a_file_only_the_image_has_is_found_in_docker_and_not_on_the_host(engine, tmp_path):
    assert not Path(ONLY_IN_IMAGE).exists()
    job = tmp_path / "only.yaml"
    job.write_text("protocolVersion: 2\nname: only\ntype: job\n"
                   "prerequisites: [{name: img, type: dockerimage, uri: 'paictl-test/only:1'}]\n"
                   "taskRoles:\n  main:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0}\n"
                   f"    commands:\n      - cat {ONLY_IN_IMAGE}\n")
    result = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert f"paictl: runtime docker (engine {engine.host}; choose with --runtime docker|host)" in result.stderr
    assert "only in the image" in log(tmp_path, "only", "main-0")
    no_trace(engine, tmp_path, "only")
    on_host = paictl("submit", str(job), "--target", "local", "--follow", "--runtime", "host", cwd=tmp_path,
                     check_code=1)
    assert "paictl: runtime" not in on_host.stderr  # asked for, not chosen: nothing to say
    assert "No such file or directory" in log(tmp_path, "only", "main-0")


def test_the_pai_contract_inside_the_container(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("PAICTL_TEST_HOST_ONLY", "from the host")
    job = tmp_path / "contract.yaml"
    job.write_text("protocolVersion: 2\nname: contract\ntype: job\n"
                   "prerequisites: [{name: img, type: dockerimage, uri: 'paictl-test/only:1'}]\n"
                   "taskRoles:\n  work:\n    instances: 2\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 100, gpu: 0, ports: {api: 2}}\n"
                   "    extraContainerOptions: {shmMB: 128}\n"
                   "    commands:\n"
                   "      - echo \"wd=$PAI_WORK_DIR pwd=$(pwd) index=$PAI_TASK_INDEX role=$PAI_CURRENT_TASK_ROLE_NAME\"\n"
                   "      - echo \"api=$PAI_CONTAINER_HOST_api_PORT_LIST peers=$PAI_TASK_ROLE_work_HOST_LIST\"\n"
                   "      - echo \"host-only=${PAICTL_TEST_HOST_ONLY:-unset} job=$PAI_JOB_NAME\"\n"
                   "      - echo \"memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)\"\n"
                   "      - echo \"quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)\"\n"
                   "      - echo \"interfaces=$(grep -c [:] /proc/net/dev)\"\n"
                   "      - set +o errexit; bash -c 'echo $$ > /dev/null'; false\n")
    result = paictl("submit", str(job), "--target", "local", "--follow", "-o", "json", cwd=tmp_path, check_code=1)
    view = last_json(result.stdout)
    assert [t["exit_code"] for t in view["tasks"]] == [1, 1]  # the last command's status is the task's
    ports = json.loads((tmp_path / "state/paictl/runs/contract/0/ports.json").read_text())
    host_interfaces = sum(1 for line in Path("/proc/net/dev").read_text().splitlines() if ":" in line)
    assert result.stderr.count("paictl: runtime docker") == 1
    for index in (0, 1):
        text = log(tmp_path, "contract", f"work-{index}")
        assert f"wd=/srv/app pwd=/srv/app index={index} role=work" in text  # the image's WORKDIR
        api = ",".join(map(str, ports["work"][index]["api"]))
        peers = ",".join(f"127.0.0.1:{ports['work'][i]['http'][0]}" for i in (0, 1))
        assert f"api={api} peers={peers}" in text
        assert "host-only=unset job=paictl~contract" in text  # the image's environment, not the host's
        assert f"memory={100 * 1024 * 1024}" in text and "quota=100000" in text
        assert f"interfaces={host_interfaces}" in text  # the host network
    no_trace(engine, tmp_path, "contract")


def test_limits_secrets_and_labels_as_docker_inspect_shows_them(engine, tmp_path):
    secret = "hunter2-" + os.urandom(6).hex()
    job = tmp_path / "secretive.yaml"
    job.write_text("protocolVersion: 2\nname: secretive\ntype: job\n"
                   f"secrets: {{password: {secret}, nested: {{key: other-{secret}}}}}\n"
                   "prerequisites: [{name: img, type: dockerimage, uri: 'ubuntu:22.04'}]\n"
                   "taskRoles:\n  work:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}\n"
                   "    commands:\n" + "".join(f"      - {json.dumps(command)}\n" for command in [
                       'echo "<% $secrets.password %>" > /tmp/seen',
                       "test \"$(cat /tmp/seen)\" = \"$(sed -n 's/^password: //p' /usr/local/pai/secrets/secrets.yaml)\"",
                       "echo ready", "sleep 600"]))
    cli = start("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    wait_for(lambda: cli.poll() is not None or "ready" in log(tmp_path, "secretive", "work-0"), "the task to be ready",
             timeout=60)
    assert cli.poll() is None, cli.communicate()
    (container,) = engine.containers("label=paictl.task=work-0")
    details = json.loads(engine.docker("inspect", container["ID"]).stdout)[0]
    assert secret not in json.dumps(details)  # neither in the environment nor the command
    host = details["HostConfig"]
    assert (host["NanoCpus"], host["Memory"], host["ShmSize"]) == (10 ** 9, 64 * 2 ** 20, 512 * 2 ** 20)
    assert host["NetworkMode"] == "host" and host["Init"] is True
    assert [(m["Destination"], m["RW"]) for m in details["Mounts"]] == [("/usr/local/pai/secrets", False)]
    secrets_dir = Path(details["Mounts"][0]["Source"])
    assert oct(secrets_dir.parent.stat().st_mode & 0o777) == "0o700"
    assert details["Config"]["Labels"]["paictl.run"] == run_id(tmp_path, "secretive")
    assert "PAI_TASK_INDEX=0" in details["Config"]["Env"] and "NVIDIA_VISIBLE_DEVICES=none" in details["Config"]["Env"]
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == 130 and "interrupted; every task was stopped" in err
    assert secret not in out + err + log(tmp_path, "secretive", "work-0")
    no_trace(engine, tmp_path, "secretive")
    assert not secrets_dir.parent.exists()
    assert secret not in "".join(p.read_text(errors="replace") for p in
                                 (tmp_path / "state").rglob("*") if p.is_file())


# -- exit codes and retries -------------------------------------------------------------------------------------

def test_exit_codes_retries_and_the_oom_killer(engine, tmp_path):
    result = paictl("submit", str(EXAMPLES / "local-retry-without-gang.yaml"), "--target", "local", "--follow",
                    "-o", "json", cwd=tmp_path, check_code=0)
    view = last_json(result.stdout)
    assert view["tasks"][0]["exit_code"] == 0 and view["tasks"][0]["attempt"] == 2
    text = log(tmp_path, "local-retry", "worker-0")
    assert [f"worker attempt {n}" in text for n in range(3)] == [True] * 3 and "simulated flaky failure" in text
    assert text.count("exited 1") == 2
    no_trace(engine, tmp_path, "local-retry")
    hungry = job_file(tmp_path, "hungry", ["python3 -c 'x = bytearray(200 * 1024 * 1024); print(len(x))'"])
    result = paictl("submit", str(hungry), "--target", "local", "--follow", "-o", "json", cwd=tmp_path,
                    check_code=1)
    view = last_json(result.stdout)  # killed by the 64 MB limit: a permanent failure, as on a cluster
    assert (view["tasks"][0]["exit_code"], view["completion_code"]) == (137, -1200)
    assert view["tasks"][0]["diagnosis"] == "-1200 ContainerDockerOOMKilled" and view["attempt"] == 0
    missing = job_file(tmp_path, "missing", ["exec no-such-program"])
    result = paictl("submit", str(missing), "--target", "local", "--follow", "-o", "json", cwd=tmp_path,
                    check_code=1)
    assert last_json(result.stdout)["tasks"][0]["exit_code"] == 127
    no_trace(engine, tmp_path, "missing")


def test_the_ping_pong_example_runs_in_its_image(engine, tmp_path):
    result = paictl("submit", str(EXAMPLES / "local-ping-pong.yaml"), "--target", "local", "--follow",
                    "--format", "json", cwd=tmp_path, check_code=0)
    assert last_json(result.stdout)["triggered_by"] == {"role": "client", "index": 0}
    assert "client got: pong for ping from client-0" in log(tmp_path, "local-ping-pong", "client-0")
    assert "(containers)" in result.stderr
    no_trace(engine, tmp_path, "local-ping-pong")


# -- stopping -------------------------------------------------------------------------------------------------

def sleeper(tmp_path: Path, name: str, instances: int = 2) -> Path:
    # `trap '' TERM`: a task that ignores SIGTERM is killed after the grace period, like a pod
    return job_file(tmp_path, name, ["trap '' TERM", "echo up", "sleep 600 & wait; sleep 600"],
                    instances=instances)


def test_stop_leaves_no_container_and_no_process(engine, tmp_path):
    job = sleeper(tmp_path, "stoppable")
    paictl("submit", str(job), "--target", "local", cwd=tmp_path, check_code=0)
    wait_running(tmp_path, "stoppable", 2)
    wait_for(lambda: len(engine.containers("label=paictl.job=stoppable", "status=running")) == 2, "2 containers")
    started = time.monotonic()
    stopped = paictl("stop", "stoppable", cwd=tmp_path, check_code=0)
    assert "stoppable: stopped" in stopped.stdout
    assert time.monotonic() - started < 10 + 15  # the grace period, then SIGKILL and removal
    no_trace(engine, tmp_path, "stoppable")


def test_kill_9_of_paictl_leaves_no_container_and_no_process(engine, tmp_path):
    job = sleeper(tmp_path, "orphaned")
    cli = start("submit", str(job), "--target", "local", "--follow", cwd=tmp_path)
    wait_running(tmp_path, "orphaned", 2)
    wait_for(lambda: len(engine.containers("label=paictl.job=orphaned", "status=running")) == 2, "2 containers")
    secrets = list(Path("/dev/shm").glob(f"paictl-secrets-{run_id(tmp_path, 'orphaned')[:12]}-*"))
    inside = [pid for pid in run_processes(run_id(tmp_path, "orphaned"))
              if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0")]
    assert len(inside) == 2  # the containers' own processes carry the run's marker: /proc sees them go
    cli.kill()
    cli.communicate(timeout=30)
    no_trace(engine, tmp_path, "orphaned")  # the watchdog's work
    assert secrets == []  # this job has no secrets: nothing was written
    status = paictl("status", "orphaned", cwd=tmp_path, check_code=0)
    assert "abandoned" in status.stdout and "no process of the run is left" in status.stdout


# -- images -----------------------------------------------------------------------------------------------------

def test_an_image_absent_and_not_pullable_fails_before_any_task_starts(engine, tmp_path):
    job = job_file(tmp_path, "nowhere", ["echo never"])
    job.write_text(job.read_text().replace("ubuntu:22.04", "127.0.0.1:9/paictl-test/absent:1"))
    result = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=3)
    assert result.stderr.splitlines()[-1].startswith(
        "paictl: error: image 127.0.0.1:9/paictl-test/absent:1 (task role work) is not on this machine and cannot "
        "be pulled: ")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "state/paictl/runs/nowhere").exists()
    never = paictl("submit", str(job), "--target", "local", "--pull", "never", cwd=tmp_path, check_code=3)
    assert never.stderr.splitlines()[-1] == (
        f"paictl: error: image 127.0.0.1:9/paictl-test/absent:1 (task role work) is not on the docker engine at "
        f"{engine.host}, and --pull never forbids pulling it")
    dry = paictl("submit", str(job), "--target", "local", "--dry-run", cwd=tmp_path, check_code=0)
    assert "image 127.0.0.1:9/paictl-test/absent:1 is not on this machine: it would be pulled" in dry.stderr


def test_a_missing_image_is_pulled_and_pull_never_refuses_it(engine, docker_registry, tmp_path):
    remote = docker_registry.push(engine, engine.image("paictl-test/only:1"), "paictl-test/pulled:1")
    job = job_file(tmp_path, "pulled", [f"cat {ONLY_IN_IMAGE}"])
    job.write_text(job.read_text().replace("ubuntu:22.04", remote))
    refused = paictl("submit", str(job), "--target", "local", "--pull", "never", cwd=tmp_path, check_code=3)
    assert "--pull never forbids pulling it" in refused.stderr
    result = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert f"paictl: pulling image {remote} (task role work)" in result.stderr
    assert f"paictl: image {remote}: pulled" in result.stderr
    assert "\x1b[K" not in result.stderr and f"pulling {remote}:" not in result.stderr  # no progress in a pipe
    assert "only in the image" in log(tmp_path, "pulled", "work-0")
    again = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert "pulling" not in again.stderr  # present now: --pull missing does not pull it again
    always = paictl("submit", str(job), "--target", "local", "--follow", "--pull", "always", cwd=tmp_path,
                    check_code=0)
    assert f"paictl: image {remote}: pulled" in always.stderr


# -- refusals ---------------------------------------------------------------------------------------------------

def test_gpus_and_cpus_the_engine_cannot_give_are_refused_where_the_job_asks(engine, tmp_path):
    job = job_file(tmp_path, "greedy", ["echo never"])
    job.write_text(job.read_text().replace("{cpu: 1, memoryMB: 64, gpu: 0}", "{cpu: 4096, memoryMB: 64, gpu: 2}"))
    result = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=1)
    line = next(i for i, text in enumerate(job.read_text().splitlines(), 1) if "resourcePerInstance" in text)
    assert f"{job}:{line}:" in result.stdout + result.stderr
    assert "E611" in result.stdout + result.stderr
    assert "asks for 2 GPU(s)" in result.stdout + result.stderr and "asks for 4096 CPUs" in result.stdout + \
        result.stderr
    assert not (tmp_path / "state/paictl/runs/greedy").exists()


def test_runtime_choices(engine, tmp_path, monkeypatch):
    job = job_file(tmp_path, "choice", ["echo hi"])
    bad = paictl("submit", str(job), "--target", "local", "--runtime", "podman", cwd=tmp_path, check_code=2)
    assert bad.stderr.strip() == "paictl: error: --runtime 'podman': expected docker or host"
    bad = paictl("submit", str(job), "--target", "local", "--pull", "sometimes", cwd=tmp_path, check_code=2)
    assert bad.stderr.strip() == "paictl: error: --pull 'sometimes': expected never, missing, always"
    elsewhere = paictl("submit", str(job), "--target", "jobset", "--runtime", "docker", cwd=tmp_path, check_code=2)
    assert "--runtime and --pull choose how a local run runs its tasks" in elsewhere.stderr
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    absent = paictl("submit", str(job), "--target", "local", "--runtime", "docker", cwd=tmp_path, check_code=3)
    assert absent.stderr.strip() == (f"paictl: error: --runtime docker: no docker engine answers at unix://{tmp_path}"
                                     "/nothing.sock (No such file or directory); is dockerd running, and does "
                                     "DOCKER_HOST name it?")
    host = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert f"paictl: runtime host (no docker engine answers at unix://{tmp_path}/nothing.sock (No such file or " \
           "directory); choose with --runtime docker|host)" in host.stderr


def test_the_watchdog_loads_the_docker_runtime_without_site_packages():
    """It runs as `python -I -S watchdog.py`: the module it cleans containers with must load there."""
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, sys.argv[1]); import watchdog; "
            "print(watchdog._load_docker_runtime().Engine.__name__)")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(ROOT / "targets" / "local")],
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout.strip()) == (0, "Engine"), done.stderr


def test_without_the_docker_cli_the_host_runtime_is_chosen(engine, tmp_path, monkeypatch):
    import shutil
    import sys

    bin_dir = tmp_path / "bin"  # PATH with python but no docker
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash"))
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}")
    job = job_file(tmp_path, "no-cli", ["echo hi"])
    result = paictl("submit", str(job), "--target", "local", "--follow", cwd=tmp_path, check_code=0)
    assert "paictl: runtime host (no docker CLI on PATH; choose with --runtime docker|host)" in result.stderr
    refused = paictl("submit", str(job), "--target", "local", "--runtime", "docker", cwd=tmp_path, check_code=3)
    assert refused.stderr.startswith("paictl: error: --runtime docker: the docker CLI is not installed")


def test_a_pull_on_a_terminal_shows_its_progress_in_place(engine, docker_registry, tmp_path):
    import pty
    import subprocess
    import sys
    import threading

    local = engine.image("paictl-test/terminal-source:1", {"/opt/random.bin": os.urandom(2 * 2 ** 20)})
    remote = docker_registry.push(engine, local, "paictl-test/terminal:1")
    engine.docker("rmi", local)
    engine._images.pop(local)
    job = job_file(tmp_path, "terminal", ["true"])
    job.write_text(job.read_text().replace("ubuntu:22.04", remote))
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "paictl", "submit", str(job), "--target", "local"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal closed with the last writer
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    process.communicate(timeout=120)
    reader.join(timeout=30)
    os.close(master)
    shown = b"".join(chunks).decode(errors="replace")
    assert process.returncode == 0, shown
    assert f"pulling {remote}: " in shown and "\r\x1b[K" in shown  # drawn, then cleared in place
    assert f"paictl: image {remote}: pulled (" in shown
    wait_for(lambda: state(tmp_path, "terminal")["view"]["state"] == "succeeded", "the detached run's verdict")
    no_trace(engine, tmp_path, "terminal")
