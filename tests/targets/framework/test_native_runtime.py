"""The native runtime (profile `default`): the generated pod, and its script run for real with bash.

The execution tests play the kubelet: they give the app container's command and args to the local bash with the
env the pod would get (downward-API values filled in), a FrameworkBarrier `injector.sh` as the barrier writes it,
and the secrets Secret's keys as files, the mount paths rewritten to a temporary directory.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from paictl.compiler.profiles import load_profile
from paictl.errors import InvalidJobError
from paictl.protocol import load_job_text
from paictl.protocol.loading import load_located
from paictl.targets.framework.target import compile_framework, compile_framework_file
from paictl.targets.framework.native import BARRIER_MOUNT
from paictl.targets.framework.pod import SECRETS_MOUNT

TOKEN = "s3cr3t-canary-91f2"
ODD = """a<b&"c' d"""  # openpai.md b: pystache gives a&lt;b&amp;&quot;c&#x27;

JOB = f"""\
protocolVersion: 2
name: native-check
type: job
secrets:
  token: {TOKEN}
  odd: '{ODD.replace("'", "''")}'
prerequisites:
  - {{name: img, type: dockerimage, uri: ubuntu:22.04}}
taskRoles:
  master:
    instances: 1
    dockerImage: img
    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 0, ports: {{api: 2}}}}
    commands:
      - echo master
  Worker_1:
    instances: 2
    dockerImage: img
    resourcePerInstance: {{cpu: 2, memoryMB: 1024, gpu: 0}}
    commands:
      - echo "token=<% $secrets.token %>" > out.txt
      - echo "odd=<% $secrets.odd %>" >> out.txt
      - echo "missing=<% $parameters.nope %>|" >> out.txt
      - env | grep -E '^(PAI|FB)_' | sort > env.txt
"""

INJECTOR = """\
#!/bin/bash
echo "/mnt/frameworkbarrier/injector.sh: Start to inject environment variables"
export FB_MASTER_IPS=10.1.0.1
export FB_MASTER_ADDRESSES=10.1.0.1:${FB_MASTER_PORT}
export FB_WORKER1_IPS=10.1.0.2,10.1.0.3
export FB_WORKER1_ADDRESSES=10.1.0.2:${FB_WORKER1_PORT},10.1.0.3:${FB_WORKER1_PORT}
echo "/mnt/frameworkbarrier/injector.sh: Succeeded to inject environment variables"
"""

POD_IP = "10.1.0.3"

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def compile_text(text: str, profile_name: str = "default", **options) -> list[dict]:
    job = load_job_text(text, "job.yaml")
    return compile_framework(job, load_profile(profile_name), document=load_located(text, "job.yaml"), **options)


def pod(objects: list[dict], role: str) -> dict:
    framework = objects[-1]
    return next(r for r in framework["spec"]["taskRoles"] if r["name"] == role)["task"]["pod"]


def app(objects: list[dict], role: str) -> dict:
    return pod(objects, role)["spec"]["containers"][0]


def secret_data(objects: list[dict]) -> dict[str, str]:
    secret = next(o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"].endswith("-configcred"))
    return {k: base64.b64decode(v).decode("utf-8") for k, v in secret["data"].items()}


def one_role_job(*commands: str, gang: bool = False, secrets: str = "") -> str:
    listed = "\n".join(f"      - {json.dumps(c)}" for c in commands)
    return (f"protocolVersion: 2\nname: one\ntype: job\n{secrets}"
            "prerequisites:\n  - {name: img, type: dockerimage, uri: ubuntu:22.04}\n"
            "taskRoles:\n  main:\n    instances: 1\n    dockerImage: img\n"
            "    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}\n"
            f"    commands:\n{listed}\nextras:\n  gangAllocation: {'true' if gang else 'false'}\n")


def run_container(container: dict, tmp_path, *, index: int = 0, secrets: dict[str, str] | None = None,
                  injector: str | None = INJECTOR) -> subprocess.CompletedProcess:
    """Run the app container's command + args as the kubelet would, in `tmp_path/work`."""
    work, secret_dir, barrier_dir, bin_dir = (tmp_path / d for d in ("work", "secrets", "barrier", "bin"))
    for directory in (work, secret_dir, barrier_dir, bin_dir):
        directory.mkdir(exist_ok=True)
    for key, value in (secrets or {}).items():
        (secret_dir / key).write_text(value)
    if injector is not None:
        (barrier_dir / "injector.sh").write_text(injector)
    for tool in ("pip", "python"):  # the example's commands, recorded instead of run
        (bin_dir / tool).write_text(f'#!/bin/bash\necho "{tool} $*" >> "$PWD/calls.txt"\n')
        (bin_dir / tool).chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FC_TASK_INDEX": str(index)}
    for item in container["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            field = item["valueFrom"]["fieldRef"]["fieldPath"]
            env[item["name"]] = {"metadata.annotations['FC_TASK_INDEX']": str(index), "status.podIP": POD_IP}[field]
    argv = [*container["command"], *container.get("args", [])]
    argv = [a.replace(SECRETS_MOUNT, str(secret_dir)).replace(BARRIER_MOUNT, str(barrier_dir)) for a in argv]
    return subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=30)


def env_file(tmp_path) -> dict[str, str]:
    lines = (tmp_path / "work" / "env.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


# -- the generated pod ---------------------------------------------------------------------------------------------

def test_app_container_is_bash_with_the_runtime_options():
    container = app(compile_text(JOB), "worker1")
    assert container["command"][:7] == ["bash", "-o", "errexit", "-o", "nounset", "-o", "pipefail"]
    assert container["command"][7] == "-c"
    assert 'exec bash -o errexit -o nounset -o pipefail -c "$cmd" "$0"' in container["command"][8]
    # the user's commands are the args, as rest-server renders them, the secret tags still literal
    assert container["args"] == ['echo "token=<% $secrets.token %>" > out.txt\n'
                                 'echo "odd=<% $secrets.odd %>" >> out.txt\n'
                                 'echo "missing=|" >> out.txt\n'
                                 "env | grep -E '^(PAI|FB)_' | sort > env.txt"]


def test_env_names_and_downward_api_sources():
    container = app(compile_text(JOB), "worker1")
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    index = {"fieldRef": {"fieldPath": "metadata.annotations['FC_TASK_INDEX']"}}
    pod_ip = {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["PAI_TASK_INDEX"] == env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == index
    assert env["PAI_CURRENT_CONTAINER_IP"] == env["PAI_CONTAINER_HOST_IP"] == pod_ip
    assert env["PAI_CURRENT_TASK_ROLE_NAME"] == "Worker_1"  # rest-server's variables use the original name
    assert env["PAI_TASK_ROLE_TASK_COUNT_Worker_1"] == "2" and env["PAI_RESOURCE_Worker_1"] == "0,2,1024,0"
    assert env["PAI_JOB_NAME"] == "paictl~native-check" and env["PAI_TASK_ROLE_LIST"] == "master,Worker_1"
    # fixed ports, job-wide from portRange's start: master api 15000-15001, ssh 15002, http 15003; worker1 next
    assert (env["PAI_CONTAINER_SSH_PORT"], env["PAI_CURRENT_CONTAINER_PORT"]) == ("15004", "15005")
    assert env["PAI_CONTAINER_HOST_PORT_LIST"] == "ssh:15004;http:15005"
    assert app(compile_text(JOB), "master")["ports"] == [{"containerPort": p} for p in range(15000, 15004)]
    assert container["ports"] == [{"containerPort": 15004}, {"containerPort": 15005}]


def test_barrier_init_container_iff_gang_allocation():
    spec = pod(compile_text(JOB), "master")["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["frameworkbarrier"]
    assert spec["initContainers"][0]["image"] == "frameworkcontroller/frameworkbarrier"
    assert spec["serviceAccountName"] == "frameworkbarrier"
    volume = {"name": "frameworkbarrier-volume", "mountPath": BARRIER_MOUNT}
    assert volume in spec["initContainers"][0]["volumeMounts"] and volume in spec["containers"][0]["volumeMounts"]
    assert {"name": "frameworkbarrier-volume", "emptyDir": {}} in spec["volumes"]
    assert "injector.sh" in spec["containers"][0]["command"][8]

    spec = pod(compile_text(one_role_job("true")), "main")["spec"]
    assert "initContainers" not in spec and "serviceAccountName" not in spec
    assert "injector.sh" not in spec["containers"][0]["command"][8]
    assert all("frameworkbarrier" not in json.dumps(v) for v in spec["volumes"])


def test_no_secret_value_outside_secret_objects():
    objects = compile_text(JOB)
    assert [o["kind"] for o in objects] == ["Secret", "Framework"]
    for obj in objects[1:]:
        text = json.dumps(obj)
        assert TOKEN not in text and "a<b" not in text and "a\\u003cb" not in text
    data = secret_data(objects)
    assert data["secret.token"] == TOKEN and data["secret.odd"] == ODD and "secrets.yaml" in data
    assert set(data) == {"secrets.yaml", "secret.token", "secret.odd"}  # only the secrets commands use


def test_openpai_runtime_secret_has_no_extra_keys():
    assert set(secret_data(compile_text(JOB, "openpai"))) == {"secrets.yaml"}


def test_without_secrets_leftover_tags_stay_literal():
    container = app(compile_text(one_role_job("echo '<% $parameters.nope %>'")), "main")
    assert container["args"] == ["echo '<% $parameters.nope %>'"] and "secret " not in container["command"][8]


def test_colliding_or_empty_task_role_names_are_located_errors():
    text = JOB.replace("  Worker_1:", "  worker1:\n    instances: 1\n    dockerImage: img\n"
                       "    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}\n    commands: [x]\n  Worker_1:")
    with pytest.raises(InvalidJobError) as caught:
        compile_text(text)
    [error] = [d for d in caught.value.diagnostics if d.code == "E606"]
    assert "'worker1' and 'Worker_1' both become 'worker1'" in error.message
    assert (error.line, error.file) == (text.splitlines().index("  Worker_1:") + 1, "job.yaml")
    with pytest.raises(InvalidJobError, match="no letter or digit"):
        compile_text(JOB.replace("  Worker_1:", "  ___:"), "openpai")


def test_ports_beyond_the_port_range_are_an_error():
    with pytest.raises(InvalidJobError) as caught:
        compile_text(JOB.replace("ports: {api: 2}", "ports: {api: 30000}"))
    assert [d.code for d in caught.value.diagnostics] == ["E607"]


def test_ports_are_counted_before_any_is_numbered():
    # 100,000 labels of 20,000 ports each: refused from the sum, never two billion numbers made (issue 13).
    labels = ", ".join(f"p{i}: 20000" for i in range(100_000))
    with pytest.raises(InvalidJobError) as caught:
        compile_text(JOB.replace("ports: {api: 2}", "ports: {" + labels + "}"))
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.code == "E607" and "needs 2000000004 ports" in diagnostic.message


def _roles(count: int) -> str:
    role = ("  r{i}:\n    instances: 1\n    dockerImage: img\n    resourcePerInstance: {{cpu: 1, memoryMB: 100, gpu: 0}}\n"
            "    commands: [echo]\n")
    return ("protocolVersion: 2\nname: many-roles\ntype: job\nprerequisites:\n  - {type: dockerimage, name: img, uri: u}\n"
            "taskRoles:\n" + "".join(role.format(i=i) for i in range(count)))


def test_a_framework_whose_port_variables_exceed_what_kubernetes_stores_is_refused():
    # Every pod exports every task's ports: the object grows with roles x roles (5,000 roles took 20 s and 2 GB).
    with pytest.raises(InvalidJobError) as caught:
        compile_text(_roles(400))
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.code == "E608" and "400 task roles" in diagnostic.message
    assert compile_text(_roles(40))[-1]["kind"] == "Framework"  # 40 roles: about 1 MiB of port variables
    with pytest.raises(InvalidJobError) as caught:  # 60 roles: 2 MiB, under E608's 3 MiB but over etcd's 1.5 MiB
        compile_text(_roles(60))
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.code == "E610" and "etcd stores at most 1.5 MiB per object" in diagnostic.message


# -- the script, run for real --------------------------------------------------------------------------------------

@needs_bash
def test_script_runs_with_the_documented_variables_and_resolved_secrets(tmp_path):
    objects = compile_text(JOB)
    files = {k: v for k, v in secret_data(objects).items() if k != "secrets.yaml"}
    result = run_container(app(objects, "worker1"), tmp_path, index=1, secrets=files)
    assert result.returncode == 0, result.stderr
    out = (tmp_path / "work" / "out.txt").read_text()
    assert out == f"token={TOKEN}\nodd=a&lt;b&amp;&quot;c&#x27; d\nmissing=|\n"  # pystache escapes
    env = env_file(tmp_path)
    assert env["PAI_TASK_INDEX"] == env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "1"
    assert env["PAI_CURRENT_CONTAINER_IP"] == POD_IP and env["PAI_WORK_DIR"] == str(tmp_path / "work")
    assert env["PAI_TASK_ROLE_master_HOST_LIST"] == "10.1.0.1:15003"
    assert env["PAI_TASK_ROLE_worker1_HOST_LIST"] == "10.1.0.2:15005,10.1.0.3:15005"
    assert (env["PAI_HOST_IP_master_0"], env["PAI_HOST_IP_worker1_0"], env["PAI_HOST_IP_worker1_1"]) == (
        "10.1.0.1", "10.1.0.2", "10.1.0.3")
    assert env["PAI_PORT_LIST_master_0_api"] == env["PAI_master_0_api_PORT"] == "15000,15001"
    assert env["PAI_PORT_LIST_worker1_1_http"] == "15005" and env["PAI_PORT_LIST_master_0_ssh"] == "15002"
    assert env["PAI_TASK_ROLE_INSTANCES"] == "master:0,worker1:0,worker1:1"
    assert env["PAI_CONTAINER_HOST_PORT_LIST"] == "ssh:15004;http:15005"
    assert not any(k in env for k in ("cmd", "instances")) and "secret" not in result.stdout


@needs_bash
def test_the_parameter_server_example_finds_its_server(tmp_path):
    objects = compile_framework_file(ROOT / "examples" / "parameter-server.yaml", load_profile("default"))
    files = {k: v for k, v in secret_data(objects).items() if k != "secrets.yaml"}
    injector = ("export FB_SERVER_IPS=10.2.0.9\nexport FB_SERVER_ADDRESSES=10.2.0.9:${FB_SERVER_PORT}\n"
                "export FB_WORKER_IPS=10.2.0.1,10.2.0.2,10.2.0.3\n"
                "export FB_WORKER_ADDRESSES=10.2.0.1:${FB_WORKER_PORT},10.2.0.2:${FB_WORKER_PORT},"
                "10.2.0.3:${FB_WORKER_PORT}\n")
    result = run_container(app(objects, "worker"), tmp_path, index=2, secrets=files, injector=injector)
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "work" / "calls.txt").read_text().splitlines()
    assert calls[0] == "pip install -r requirements.txt"
    assert calls[1].startswith("python worker.py --servers=10.2.0.9:15002 --epochs=10 --lr=0.05")
    assert result.stdout.endswith("worker 2 done\n")

    result = run_container(app(objects, "server"), tmp_path / "work", injector=injector)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "work" / "work" / "calls.txt").read_text() == \
        "python server.py --port=15000 --out=/mnt/results/ps-training\n"


@needs_bash
def test_a_missing_secret_key_is_reported_and_renders_empty(tmp_path):
    objects = compile_text(one_role_job('echo "[<% $secrets.absent %>]"'), secrets_from="team-secrets")
    assert [o["kind"] for o in objects] == ["Framework"]
    result = run_container(app(objects, "main"), tmp_path, injector=None)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\n" and "has no key secret.absent" in result.stderr


@needs_bash
@pytest.mark.parametrize("commands", [
    ("false", "echo after"),                  # errexit
    ("false | cat", "echo after"),            # pipefail
    ('echo "$SURELY_UNDEFINED_9"', "echo after"),  # nounset
], ids=["errexit", "pipefail", "nounset"])
def test_a_failing_command_ends_the_task(tmp_path, commands):
    result = run_container(app(compile_text(one_role_job(*commands)), "main"), tmp_path, injector=None)
    assert result.returncode != 0 and "after" not in result.stdout
    if "UNDEFINED" in commands[0]:
        assert "SURELY_UNDEFINED_9: unbound variable" in result.stderr


@needs_bash
def test_the_barrier_output_is_required_with_gang_allocation(tmp_path):
    result = run_container(app(compile_text(one_role_job("echo ran", gang=True)), "main"), tmp_path, injector=None)
    assert result.returncode != 0 and "ran" not in result.stdout
    result = run_container(app(compile_text(one_role_job("echo ran", gang=True)), "main"), tmp_path,
                           injector="export FB_MAIN_IPS=10.0.0.5\nexport FB_MAIN_ADDRESSES=10.0.0.5:${FB_MAIN_PORT}\n")
    assert result.returncode == 0 and result.stdout == "ran\n"
