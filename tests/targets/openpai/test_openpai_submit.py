"""Submissions the OpenPAI double judges (tests/openpai_server, held to the real server's recordings): the examples
and real upstream jobs, what the pre-checks refuse before anything is sent, the server's own refusals as one line,
parameters, and HiveD mode.

The double checks what the recordings show the server checking (the body's YAML, the schema's first complaints,
the virtual cluster, the name); it builds no Framework, so whether the real server turns a job into the right
Framework (pod annotations, HiveD's pod-scheduling-spec) is not tested here."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml
from openpai_server.accounts import Group, Storage

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO.parent / "shared" / "corpus" / "openpai" / "valid"


def job_config(pai_user, job: str) -> dict:
    """What the server kept of the job: `/config` is `text/yaml` with a JSON body (recordings: job-config)."""
    reply = httpx.get(f"{pai_user.server.url}/api/v2/jobs/{pai_user.user}~{job}/config",
                      headers={"Authorization": f"Bearer {pai_user.token}"})
    assert reply.status_code == 200 and reply.headers["content-type"] == "text/yaml; charset=utf-8", reply.text
    return json.loads(reply.text)


def renamed(path: Path, name: str, folder: Path) -> Path:
    data = yaml.safe_load(path.read_text())
    data["name"] = name
    out = folder / f"{name}.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


@pytest.mark.parametrize("example", ["hello-world.yaml", "parameter-server.yaml", "retry-without-gang.yaml"])
def test_the_examples_are_accepted(pai_user, example):
    job = pai_user.name("ex")
    result = pai_user.paictl("submit", str(renamed(REPO / "examples" / example, job, pai_user.folder)),
                             "--target", "openpai")
    assert result.returncode == 0, result.stderr
    assert job_config(pai_user, job)["name"] == job


def test_real_upstream_jobs_paictl_accepts_are_accepted_by_the_server(pai_user):
    """Corpus jobs paictl validates go to the server, which must accept each (202). A fixed third of the corpus (every
    third file by name) keeps the test's time small."""
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    from paictl.errors import PaictlError
    from paictl.targets.compiled import compile_job

    # the storages upstream's examples name are alice's team's; the jobs name their authors' virtual clusters
    pai_user.server.accounts.add_group(Group("team", "alice's team", ("default",), ("nfs-storage", "confignfs-data")),
                                       "alice")
    backend = pai_user.backend(virtual_cluster="default")
    sent, refused = [], []
    for path in sorted(CORPUS.glob("*.yaml"))[::3]:
        name = pai_user.name("c")
        try:
            data = yaml.safe_load(path.read_text())
            if not isinstance(data, dict):
                raise ValueError("not a mapping")
            copy = renamed(path, name, pai_user.folder)
            compiled = compile_job(str(copy), target="openpai")
        except (PaictlError, ValueError, yaml.YAMLError):
            refused.append(path.name)
            continue
        try:
            backend.submit(compiled)
        except PaictlError as error:  # the server refused what paictl passed: the difference under test
            pytest.fail(f"{path.name}: paictl accepts it, the server refuses: {error}")
        sent.append(name)
    print(f"sent {len(sent)}, refused by paictl {len(refused)}")
    assert len(sent) >= 30 and not refused, (sent, refused)
    for name in sent[:5]:  # the server kept each, under its name
        assert job_config(pai_user, name)["name"] == name


def test_an_unknown_virtual_cluster_is_one_line_before_anything_is_sent(pai_user):
    job = pai_user.name("vc")
    result = pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai",
                             "--virtual-cluster", "nope")
    assert result.returncode == 3
    assert result.stderr.strip().splitlines() == [
        f"paictl: error: OpenPAI lab ({pai_user.server.api_url}): virtual cluster 'nope' does not exist; "
        "available: default (choose with --virtual-cluster)"]
    assert f"alice~{job}" not in pai_user.server.jobs


@pytest.mark.parametrize("syntax", ["storages", "teamwise"])
def test_storages_are_checked_in_both_syntaxes(pai_user, syntax):
    def extras(name: str) -> str:
        if syntax == "storages":
            return f"extras:\n  storages:\n    - name: {name}\n"
        return ("extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: teamwise_storage\n      parameters:\n"
                f"        storageConfigNames: [{name}]\n")

    accounts = pai_user.server.accounts  # alice's team has a storage of its own; bob is not in the team
    accounts.storages["teamnfs"] = Storage(name="teamnfs", server="10.0.0.3", path="/data/team")
    accounts.add_group(Group("team", "alice's team", ("default",), ("teamnfs",)), "alice")
    bob = pai_user.other("bob")
    job = bob.name("st")
    refused = bob.paictl("submit", str(bob.write_job(job, extras=extras("teamnfs"))), "--target", "openpai")
    assert refused.returncode == 3, refused.stderr
    where = "extras.storages" if syntax == "storages" else "the teamwise_storage plugin's storageConfigNames"
    assert refused.stderr.strip().splitlines() == [
        f"paictl: error: OpenPAI lab ({bob.server.api_url}): storage 'teamnfs' named in {where} does not exist "
        "for user bob; available: confignfs"]
    assert f"bob~{job}" not in pai_user.server.jobs
    accepted = pai_user.paictl("submit", str(pai_user.write_job(job, extras=extras("teamnfs"))), "--target",
                               "openpai")
    assert accepted.returncode == 0, accepted.stderr


def test_parameter_overrides_send_only_what_the_job_defines(pai_user):
    job = pai_user.name("params")
    result = pai_user.paictl("submit", str(pai_user.write_job(job)), "--target", "openpai",
                             "-p", "epochs=5", "-p", "dataset.shards=8")
    assert result.returncode == 0, result.stderr
    assert "W510" in result.stderr and "'dataset.shards'" in result.stderr and "changes nothing" in result.stderr
    config = job_config(pai_user, job)
    assert config["parameters"] == {"epochs": 5}


def test_the_server_refusals_are_one_line(pai_user):
    job = pai_user.name("dup")
    path = pai_user.write_job(job)
    assert pai_user.paictl("submit", str(path), "--target", "openpai").returncode == 0
    again = pai_user.paictl("submit", str(path), "--target", "openpai")
    assert again.returncode == 3
    assert again.stderr.startswith(f"paictl: error: OpenPAI lab: submit alice~{job}: HTTP 409 ConflictJobError: "
                                   f"Job alice~{job} already exists; OpenPAI never reuses a job name")
    assert len(again.stderr.strip().splitlines()) == 1

    missing = pai_user.paictl("status", "nosuchjob", "--target", "openpai")
    assert missing.returncode == 3 and "HTTP 404 NoJobError" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1

    wrong = pai_user.paictl("status", job, "--target", "openpai", env={"PAICTL_TEST_OPENPAI_TOKEN": "not-a-token"})
    assert wrong.returncode == 3
    assert "HTTP 401 UnauthorizedUserError: Your token is invalid; " in wrong.stderr
    assert "paictl openpai login lab" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1

    bob = pai_user.other("bob")
    forbidden = bob.paictl("stop", f"alice~{job}", "--target", "openpai")
    assert forbidden.returncode == 3, forbidden.stderr
    assert f"HTTP 403 ForbiddenUserError: User bob is not allowed to execute job alice~{job}" in forbidden.stderr
    assert len(forbidden.stderr.strip().splitlines()) == 1
    for result in (again, missing, wrong, forbidden):
        assert pai_user.token not in result.stdout + result.stderr
        assert bob.token not in result.stdout + result.stderr


def test_hived_mode_submit_and_status(hived_user):
    server = hived_user.server
    job = hived_user.name("hv")
    extras = "extras:\n  hivedScheduler:\n    jobPriorityClass: prod\n"
    result = hived_user.paictl("submit", str(hived_user.write_job(job, gpu=1, extras=extras)), "--target", "openpai",
                               "--virtual-cluster", "vc1")
    assert result.returncode == 0, result.stderr
    assert "virtual cluster vc1" in result.stdout
    assert job_config(hived_user, job)["defaults"] == {"virtualCluster": "vc1"}
    with server.lock:
        hived_user.job(job).fc_run()
    status = hived_user.paictl("status", job, "--target", "openpai", "-o", "json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout.splitlines()[-1])["state"] == "running"

    bob = hived_user.other("bob")
    refused = bob.paictl("submit", str(bob.write_job(bob.name("hv"), gpu=1)), "--target", "openpai",
                         "--virtual-cluster", "vc1")
    assert refused.returncode == 3
    assert refused.stderr.strip().splitlines() == [
        f"paictl: error: OpenPAI lab ({server.api_url}): user bob may not submit to virtual cluster 'vc1'; theirs: "
        "default"]
    unknown = hived_user.paictl("submit", str(hived_user.write_job(hived_user.name("hv"))), "--target", "openpai",
                                "--virtual-cluster", "cpu")
    assert unknown.returncode == 3 and "available: default, vc1" in unknown.stderr
