"""The library face: load_job gives the typed, frozen model with OpenPAI's defaults; bad jobs raise with diagnostics."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import ROOT, corpus_files, needs_corpus
from paictl.errors import InputError, InvalidJobError
from paictl.protocol import Job, load_job, load_job_text, validate_file

EXAMPLES = ROOT / "examples"


def test_parameter_server_example_model():
    job = load_job(EXAMPLES / "parameter-server.yaml")
    assert isinstance(job, Job) and job.name == "ps-training" and job.protocol_version == "2"
    assert [r.name for r in job.task_roles] == ["server", "worker"]
    worker = job.task_role("worker")
    assert worker.instances == 3 and worker.resources.gpu == 1 and worker.resources.memory_mb == 16384
    assert worker.completion.min_failed_instances == 2 and worker.completion.min_succeeded_instances == 3
    assert worker.shm_mb == 2048 and worker.data == "cifar" and worker.script is None
    assert job.task_role("server").resources.ports == {"grpc": 1}
    assert job.prerequisite("data", "cifar").uri == ("https://example.org/datasets/cifar-10-python.tar.gz",)
    assert job.default_deployment().task_roles["worker"].pre_commands == ("pip install -r requirements.txt",)
    assert job.defaults.virtual_cluster == "default" and job.job_retry_count == 1 and job.gang_allocation


def test_openpai_defaults_are_applied():
    job = load_job(EXAMPLES / "hello-world.yaml")
    (role,) = job.task_roles
    assert role.instances == 1 and role.task_retry_count == 0
    assert role.completion.min_failed_instances is None and role.resources.ports == {}
    assert job.job_retry_count == 0 and job.deployments == () and job.default_deployment() is None


def test_gang_allocation_is_off_only_when_exactly_false():
    assert load_job(EXAMPLES / "retry-without-gang.yaml").gang_allocation is False


def test_model_is_frozen():
    job = load_job(EXAMPLES / "hello-world.yaml")
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        job.parameters["x"] = 1  # type: ignore[index]


SECRET_JOB = """\
protocolVersion: 2
name: secretive
type: job
secrets: {token: s3cr3t-value}
prerequisites:
  - name: img
    type: dockerimage
    uri: registry.example.org/img
    auth: {username: bob, password: hunter2-password, registryuri: registry.example.org}
taskRoles:
  main:
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}
    commands: ['curl -H "token: <% $secrets.token %>" example.org']
"""


def test_secrets_never_appear_in_repr():
    job = load_job_text(SECRET_JOB)
    text = repr(job)
    assert "s3cr3t-value" not in text and "hunter2-password" not in text
    assert job.secrets["token"] == "s3cr3t-value"
    assert job.prerequisites[0].auth.password == "hunter2-password"
    assert "auth" not in job.prerequisites[0].fields


def test_invalid_job_raises_with_every_diagnostic():
    with pytest.raises(InvalidJobError) as caught:
        load_job_text("protocolVersion: 2\nname: x\ntype: job\ntaskrole: {}\n", "x.yaml")
    assert [d.code for d in caught.value.diagnostics] == ["E201", "E202"]
    assert caught.value.exit_code == 1


def test_strict_load_refuses_warnings(tmp_path):
    job = tmp_path / "j.yaml"
    job.write_text((EXAMPLES / "retry-without-gang.yaml").read_text().replace("gangAllocation: false", "x: 1"))
    assert load_job(job).task_roles[0].task_retry_count == 2
    with pytest.raises(InvalidJobError) as caught:
        load_job(job, strict=True)
    assert [d.code for d in caught.value.diagnostics] == ["W405"]


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as caught:
        validate_file(tmp_path / "nope.yaml")
    assert caught.value.exit_code == 2


@needs_corpus
def test_every_valid_corpus_job_builds_a_model():
    for path in corpus_files("valid"):
        job = load_job(path)
        assert job.task_roles, path.name
        for role in job.task_roles:
            assert role.instances >= 1 and role.commands and role.docker_image
