"""`--target grass`: the MARO job file and the plan (goldens), their schema, corpus files, and refused jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import CORPUS, ROOT, corpus_files, needs_corpus
from paictl.compiler.profiles import load_profile
from paictl.errors import InvalidJobError
from paictl.protocol import load_job_text
from paictl.protocol.loading import load_located
from paictl.schemas import fast_validator
from paictl.targets.grass.cluster import load_cluster
from paictl.targets.grass.placement import PlacementError
from paictl.targets.grass.target import compile_grass

EXAMPLES = ROOT / "examples"
CLUSTER = str(ROOT / "clusters" / "grass-lab.yaml")
MARO = CORPUS / "maro"
#: MARO's job deployment examples: its templates (external/), its CLI tests' jobs, and v0.1's template.
GRASS_JOB_FILES = ["deployments__external__grass_azure_start_job.yml", "deployments__external__grass_local_start_job.yml",
                   "azure__grass_azure_start_job_dqn.yml", "on_premises__grass_on_premises_start_job_dqn.yml",
                   "external__grass-azure-start-job.yml"]


def compiled(text: str, cluster=None):
    return compile_grass(load_job_text(text), load_profile("default"), document=load_located(text, "job.yaml"),
                         cluster=cluster)


@pytest.mark.parametrize("example", ["grass-actor-learner.yaml", "grass-hello.yaml"])
def test_job_file_golden(example, run_cli, snapshot):
    code, out, err = run_cli("compile", str(EXAMPLES / example), "--target", "grass")
    assert (code, err) == (0, "")
    assert out == snapshot
    (job_file,) = list(yaml.safe_load_all(out))
    assert fast_validator("grass-job").is_valid(job_file)


@pytest.mark.parametrize("example", ["grass-actor-learner.yaml", "grass-hello.yaml"])
def test_plan_golden(example, run_cli, snapshot):
    code, out, err = run_cli("compile", str(EXAMPLES / example), "--target", "grass", "--cluster", CLUSTER,
                             "--format", "json")
    assert (code, err) == (0, "")
    job_file, plan = json.loads(out)["items"]
    assert plan == snapshot
    assert fast_validator("grass-plan").is_valid(plan)


def test_example_plan_is_packed_by_memory_as_maro_would():
    text = (EXAMPLES / "grass-actor-learner.yaml").read_text()
    _, plan = compiled(text, load_cluster(CLUSTER))
    # Compacted on memory; nodes a 16384, b 32768, c 12288 MB. The learner (8192) goes first, to c (the least
    # that fits) -> 4096 left. The actors (4096 each) are popped in heap order 1, 0, 2: actor 1 fits c exactly
    # (-> 0); actor 0 does not fit c any more, a (16384) is next -> 12288; actor 2: c no, a yes.
    placed = {(c["component"], c["index"]): c["node"] for c in plan["containers"]}
    assert placed == {("learner", 0): "node-c", ("actor", 1): "node-c", ("actor", 0): "node-a",
                      ("actor", 2): "node-a"}
    learner = plan["containers"][0]
    assert plan["env"]["PAI_HOST_IP_learner_0"] == "10.0.0.7"
    assert plan["env"]["PAI_TASK_ROLE_actor_HOST_LIST"] == "10.0.0.5,10.0.0.7,10.0.0.5"
    assert plan["env"]["MASTER_HOSTNAME"] == "10.0.0.4" and plan["env"]["MASTER_REDIS_PORT"] == "6379"
    assert learner["env"]["PAI_TASK_INDEX"] == "0" and learner["env"]["COMPONENT_TYPE"] == "learner"
    assert learner["env"]["PAI_CURRENT_CONTAINER_IP"] == "10.0.0.7" and learner["task"] == "learner-0"
    # MARO draws the ids at submit: the plan says so rather than showing names that will not run
    assert plan["job"]["id"] == learner["env"]["CONTAINER_NAME"] == "(assigned at submit)"


def test_plans_are_deterministic():
    text = (EXAMPLES / "grass-hello.yaml").read_text()
    cluster = load_cluster(CLUSTER)
    assert compiled(text, cluster) == compiled(text, cluster)


def test_the_command_runs_the_entrypoint_with_the_pai_variables(tmp_path):
    import subprocess

    text = (EXAMPLES / "grass-hello.yaml").read_text()
    (job_file,) = compiled(text)
    command = job_file["components"]["main"]["command"]
    # as paictl's master starts it: every variable given, so the wrapper needs no Redis
    env = {"PATH": "/usr/bin:/bin", "COMPONENT_INDEX": "1", "CONTAINER_NAME": "x", "NODE_NAME": "n1",
           "PAICTL_MASTER": "paictl"}
    done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (0, "hello from x (main 1) on n1\n")
    # a command that fails keeps its status under paictl's master
    failing = command.replace("echo \"hello", "exit 3; echo \"hello", 1)
    assert subprocess.run(["sh", "-c", failing], env=env, capture_output=True, timeout=30).returncode == 3


def test_secrets_in_commands_are_refused_and_never_printed():
    text = """\
protocolVersion: 2
name: s
type: job
secrets: {token: hunter2-very-secret}
taskRoles:
  main:
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: ["curl -H 'x: <% $secrets.token %>' http://x"]
prerequisites: [{name: img, type: dockerimage, uri: busybox}]
"""
    with pytest.raises(InvalidJobError) as caught:
        compiled(text)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.line) == ("E821", 9)
    assert "hunter2" not in repr(caught.value.diagnostics)


def test_bad_extras_are_located():
    text = (EXAMPLES / "grass-hello.yaml").read_text() + """\
extras:
  grass:
    allocation: {mode: multi-metric, metric: disk}
    colour: red
"""
    with pytest.raises(InvalidJobError) as caught:
        compiled(text)
    found = sorted((d.code, d.pointer, d.line) for d in caught.value.diagnostics)
    assert found == [("E822", "/extras/grass/allocation/metric", 17), ("E822", "/extras/grass/allocation/mode", 17),
                     ("E822", "/extras/grass/colour", 18)]


def test_a_job_too_big_for_the_cluster_says_what_fell_short(run_cli):
    text = (EXAMPLES / "grass-hello.yaml").read_text().replace("cpu: 1,", "cpu: 17,")
    with pytest.raises(PlacementError) as caught:
        compiled(text, load_cluster(CLUSTER))
    assert str(caught.value) == ("component 'main' (container 1 of 2) does not fit: on the best node 'node-b', cpu "
                                 "short by 1 cores (free 16, needs 17) (every container of a job is placed at once "
                                 "or none)")


def test_cluster_option_is_refused_by_other_targets(run_cli):
    code, out, err = run_cli("compile", str(EXAMPLES / "grass-hello.yaml"), "--target", "mars", "--cluster", CLUSTER)
    assert code == 2 and "--cluster is not used by --target mars" in err


@needs_corpus
@pytest.mark.parametrize("name", GRASS_JOB_FILES)
def test_maro_job_files_validate_as_grass_job_files(name):
    (path,) = [p for p in MARO.iterdir() if p.name.endswith("__" + name)]
    assert fast_validator("grass-job").is_valid(yaml.safe_load(path.read_text()))


@needs_corpus
def test_maro_templates_and_k8s_job_files_do_not():
    for path in MARO.iterdir():
        if "internal__grass_azure_start_job" in path.name or path.name.endswith("k8s_aks_start_job_dqn.yml"):
            assert not fast_validator("grass-job").is_valid(yaml.safe_load(path.read_text())), path.name


@needs_corpus
def test_every_valid_corpus_job_compiles_to_a_valid_job_file_or_is_refused_for_secrets():
    from paictl.protocol import validate_file

    paths = [p for folder in ("valid", "golden", "nonconforming") for p in corpus_files(folder)]
    files = refused = 0
    for path in paths:
        result = validate_file(path)
        if not result.ok:
            continue
        text = Path(path).read_text(encoding="utf-8-sig")
        try:
            (job_file,) = compiled(text)
        except InvalidJobError as error:
            assert {d.code for d in error.diagnostics} == {"E821"}, path
            refused += 1
            continue
        assert fast_validator("grass-job").is_valid(job_file), path
        files += 1
    assert files > 10


def test_grass_plan_command_text_and_json(run_cli):
    code, out, err = run_cli("grass", "plan", str(EXAMPLES / "grass-actor-learner.yaml"), "--cluster", CLUSTER)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == ("grass-actor-learner on lab: single-metric-compacted on memory (job, component "
                                   "and container ids are drawn at submit)")
    assert out.splitlines()[1] == "  learner-0  node-c (10.0.0.7)  cpu 4 memory 8192m gpu 0"
    code, out, err = run_cli("grass", "plan", str(EXAMPLES / "grass-actor-learner.yaml"), "--cluster", CLUSTER,
                             "--format", "json")
    assert code == 0 and json.loads(out)["kind"] == "GrassPlan"


def test_a_misfit_is_a_cluster_error_on_the_command_line(run_cli, tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text((EXAMPLES / "grass-hello.yaml").read_text().replace("cpu: 1,", "cpu: 17,"))
    code, out, err = run_cli("grass", "plan", str(big), "--cluster", CLUSTER)
    assert (code, out) == (3, "")
    assert err.startswith("paictl: error: component 'main' (container 1 of 2) does not fit: on the best node 'node-b'")


def test_output_dir_writes_the_job_file_and_the_plan(run_cli, tmp_path):
    code, out, err = run_cli("compile", str(EXAMPLES / "grass-hello.yaml"), "--target", "grass", "--cluster", CLUSTER,
                             "--output-dir", str(tmp_path / "out"))
    assert code == 0
    assert out.split() == [str(tmp_path / "out" / "job-grass-hello.yaml"), str(tmp_path / "out" / "grassplan-grass-hello.yaml")]
    job_file = yaml.safe_load((tmp_path / "out" / "job-grass-hello.yaml").read_text())
    assert fast_validator("grass-job").is_valid(job_file)


def test_the_backend_has_every_method_of_the_backend_protocol():
    from paictl.targets.backend import Backend
    from paictl.targets.grass.backend import GrassBackend

    wanted = {name for name in dir(Backend) if not name.startswith("_")}
    assert wanted <= set(dir(GrassBackend)), wanted - set(dir(GrassBackend))


def test_nodes_whose_resources_only_their_agent_knows_are_left_out_of_the_plan(tmp_path):
    cluster = tmp_path / "c.yaml"
    cluster.write_text("name: c\nmaster: {hostname: m}\nnodes:\n"
                       "  - {name: auto, hostname: a, resources: {cpu: all, memory: all, gpu: all}}\n"
                       "  - {name: fixed, hostname: b, resources: {cpu: 4, memory: 4096, gpu: 0}}\n")
    _, plan = compiled((EXAMPLES / "grass-hello.yaml").read_text(), load_cluster(str(cluster)))
    assert plan["notes"] == ["node auto is left out: its resources are 'all', known only to its agent"]
    assert {c["node"] for c in plan["containers"]} == {"fixed"}


def test_standardised_job_is_maros_record():
    from paictl.targets.grass.redis_records import container_name, standardise

    (job_file,) = compiled((EXAMPLES / "grass-actor-learner.yaml").read_text())
    record = standardise(job_file, seed="s1")
    assert record["status"] == "pending" and record["containers"] == {} and record["tags"] == job_file["tags"]
    assert record["tags"]["paictl_env"].startswith("PAI_TASK_ROLE_LIST=learner,actor ")
    assert record["id"].startswith("job") and len(record["id"]) == 11
    assert all(c["id"].startswith("component") and len(c["id"]) == 17 for c in record["components"].values())
    assert standardise(job_file, seed="s2")["id"] != record["id"]
    assert job_file.get("id") is None  # the job file itself is untouched
    name = container_name(record, "actor", 2)
    assert name.startswith(f"{record['id']}-{record['components']['actor']['id']}-2-") and len(name.split("-")[3]) == 6


def test_the_redis_password_and_the_token_never_reach_the_output(run_cli, tmp_path):
    cluster = tmp_path / "c.yaml"
    cluster.write_text("name: c\ntoken: tok-very-secret-0123456789\n"
                       "master: {hostname: m, redis: {password: pw-very-secret}}\n"
                       "nodes: [{name: n, hostname: h, resources: {cpu: 8, memory: 8192, gpu: 0}}]\n")
    for output in ("yaml", "json"):
        code, out, err = run_cli("compile", str(EXAMPLES / "grass-hello.yaml"), "--target", "grass", "--cluster",
                                 str(cluster), "--format", output)
        assert code == 0 and "very-secret" not in out + err


def test_the_python_api_opens_a_grass_backend_from_a_cluster_file_without_connecting():
    import paictl

    backend = paictl.open_backend("grass", cluster=CLUSTER)
    assert backend.is_configured() and backend.where == "grass cluster lab (redis 10.0.0.4:6379)"
    assert backend.not_found("x") == "no job 'x' on grass cluster lab (redis 10.0.0.4:6379)"
    backend.close()
    compiled = paictl.compile_job(str(EXAMPLES / "grass-hello.yaml"), target="grass", cluster=[CLUSTER])
    assert [obj.get("kind") for obj in compiled.objects] == [None, "GrassPlan"]
