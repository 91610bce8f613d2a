"""paictl against OpenPAI's unchanged rest-server code, class by class (issue 13, "differences from OpenPAI").

Every expected value here is upstream's behaviour, written down from running microsoft/pai's rest-server code
(a95d9420: js-yaml 3, ajv 6, mustache 2.3.2, k8s.js, hived.js, under Node 20 with TZ=UTC and the golden settings of
shared/corpus/openpai/golden) on the same job, in a differential harness kept outside the project; it is not
paictl's output copied back. Where upstream crashes or builds something that cannot run, the expectation is
paictl's located refusal, listed in the README's "Deliberate differences from OpenPAI". Template names (mustache.js
lookups over JavaScript values) are tests/test_openpai_alignment_names.py.
"""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

import pytest

from paictl.compiler.profiles import load_profile
from paictl.errors import InvalidJobError
from paictl.protocol.loading import load_located
from paictl.protocol.validate import validate_text
from paictl.targets.compiled import compile_job

_PROFILES = Path(__file__).resolve().parents[1] / "compiler" / "profiles"

BASE = """\
protocolVersion: 2
name: facts
type: job
prerequisites:
  - {name: img, type: dockerimage, uri: ubuntu}
taskRoles:
  worker:
    instances: 2
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 1}
    commands: [echo hi]
  ps:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands: [echo ps]
"""


def compiled(extra: str, *, hived: bool = False) -> list[dict]:
    profile = "openpai"
    if hived:
        return _compile_hived(BASE + extra)
    return compile_job((BASE + extra).encode(), target="framework", profile=profile, name="job.yaml").objects


def _compile_hived(text: str) -> list[dict]:
    from paictl.protocol import job_from_data
    from paictl.protocol.compile_checks import compile_findings
    from paictl.targets.findings import raise_if_any
    from paictl.targets.framework.target import compile_framework

    result = validate_text(text, "job.yaml")
    if not result.ok:
        raise InvalidJobError(list(result.diagnostics))
    document = load_located(text, "job.yaml")
    raise_if_any([f for f in compile_findings(result.data) if f.severity.value == "error"], document, "job.yaml")
    profile = load_profile("openpai")
    profile = dataclasses.replace(profile, hived=dataclasses.replace(profile.hived, enabled=True))
    return compile_framework(job_from_data(result.data), profile, document=document)


def refused(extra: str, *, hived: bool = False) -> set[str]:
    with pytest.raises(InvalidJobError) as caught:
        compiled(extra, hived=hived)
    return {d.code for d in caught.value.diagnostics if d.is_error}


def framework(objects: list[dict]) -> dict:
    return next(o for o in objects if o["kind"] == "Framework")


def pod_spec(objects: list[dict], role: int = 0) -> dict:
    return framework(objects)["spec"]["taskRoles"][role]["task"]["pod"]["spec"]


def hived_spec(objects: list[dict], role: int = 0) -> str:
    return framework(objects)["spec"]["taskRoles"][role]["task"]["pod"]["metadata"]["annotations"][
        "hivedscheduler.microsoft.com/pod-scheduling-spec"]


# ----------------------------------------------------------------------------------------------------------------
# storages (k8s.js put/generateTaskRole)

def storages_of(objects: list[dict]) -> tuple[list[str], list[tuple]]:
    spec = pod_spec(objects)
    volumes = [v["name"] for v in spec["volumes"] if "persistentVolumeClaim" in v]
    mounts = [(m["name"], m["mountPath"], m.get("subPath")) for m in spec["containers"][0]["volumeMounts"]
              if m["name"].endswith("-volume")]
    return volumes, mounts


@pytest.mark.parametrize("extra, volumes, mounts", [
    # entries that are not mappings with a name are skipped; a string is walked character by character
    ("extras:\n  storages: [confignfs, nfs-storage]\n", [], []),
    ("extras:\n  storages: confignfs\n", [], []),
    # an empty list is the user's default storages (the profile's `default: true`, shared)
    ("extras:\n  storages: []\n", ["confignfs-volume"], [("confignfs-volume", "/mnt/confignfs", None)]),
    ("extras:\n  storages: [{name: nfs-storage, mountPath: /data}, {}, {name: ''}, 7, "
     "{name: confignfs-data, mountPath: ''}]\n", ["nfs-storage-volume", "confignfs-data-volume"],
     [("nfs-storage-volume", "/data", None), ("confignfs-data-volume", "/mnt/confignfs-data", "alice")]),
    # a falsy `storages` lets the teamwise_storage plugins decide, and the last one wins
    ("extras:\n  storages: null\n  com.microsoft.pai.runtimeplugin:\n"
     "    - {plugin: teamwise_storage, parameters: {storageConfigNames: [nfs-storage]}}\n"
     "    - {plugin: teamwise_storage, parameters: {storageConfigNames: [confignfs-data]}}\n",
     ["confignfs-data-volume"], [("confignfs-data-volume", "/mnt/confignfs-data", "alice")]),
    ("extras:\n  com.microsoft.pai.runtimeplugin:\n    - {plugin: teamwise_storage}\n",
     ["confignfs-volume"], [("confignfs-volume", "/mnt/confignfs", None)]),
    ("extras:\n  com.microsoft.pai.runtimeplugin:\n    - {plugin: teamwise_storage, parameters: "
     "{storageConfigNames: []}}\n", ["confignfs-volume"], [("confignfs-volume", "/mnt/confignfs", None)]),
    ("extras:\n  storages: [{name: confignfs}]\n  com.microsoft.pai.runtimeplugin:\n"
     "    - {plugin: teamwise_storage, parameters: {storageConfigNames: [nfs-storage]}}\n",
     ["confignfs-volume"], [("confignfs-volume", "/mnt/confignfs", None)]),
])
def test_storages_are_mounted_as_upstream_mounts_them(extra, volumes, mounts):
    assert storages_of(compiled(extra)) == (volumes, mounts)


@pytest.mark.parametrize("extra, code", [
    ("extras:\n  storages: {name: confignfs}\n", "E808"),  # upstream: storages is not iterable (500)
    ("extras:\n  storages: [null]\n", "E808"),  # upstream: reading 'name' of null (500)
    ("extras:\n  com.microsoft.pai.runtimeplugin:\n    - {plugin: teamwise_storage, parameters: null}\n", "E808"),
    ("extras:\n  com.microsoft.pai.runtimeplugin:\n    - {plugin: teamwise_storage, parameters: "
     "{storageConfigNames: confignfs}}\n", "E808"),  # upstream: storageConfigNames.map is not a function
    ("extras:\n  storages: [{name: confignfs}, {name: confignfs}]\n", "E808"),  # two volumes of one name
    ("extras:\n  storages: [{name: confignfs, mountPath: 5}]\n", "E808"),  # a mountPath that is a number
    ("extras:\n  storages: [{name: nope}]\n", "E601"),  # upstream 404: Storage nope is not found.
    ("extras:\n  storages: [{name: 1}]\n", "E601"),  # upstream 404: Storage 1 is not found.
])
def test_storages_upstream_fails_on_are_refused(extra, code):
    assert refused(extra) == {code}


def test_skipped_storage_entries_are_warned_about():
    result = validate_text(BASE + "extras:\n  storages: [confignfs, {name: nfs-storage}]\n", "job.yaml")
    assert result.ok and [(d.code, d.line, d.column) for d in result.warnings] == [("W208", 18, 14)]


# ----------------------------------------------------------------------------------------------------------------
# defaults.virtualCluster: `!= null ? it : 'default'` in k8s.js, lodash `get(..., 'default')` in hived.js

@pytest.mark.parametrize("value", ["''", "0", "false", "[]", "2020-01-01"])
def test_a_virtual_cluster_upstream_keeps_but_cannot_run_is_refused(value):
    # upstream labels the Framework '' (no such VC: 403 on a real cluster), 0, false, [] or a Date's ISO text
    assert refused(f"defaults: {{virtualCluster: {value}}}\n") == {"E806"}


def test_a_null_virtual_cluster_is_default_without_hived_and_refused_with_it():
    objects = compiled("defaults: {virtualCluster: null}\n")
    assert framework(objects)["metadata"]["labels"]["virtualCluster"] == "default"
    # with HiveD upstream schedules with virtual cluster null (scheduler hivedscheduler-ds-null)
    assert refused("defaults: {virtualCluster: null}\n", hived=True) == {"E806"}


def test_a_named_virtual_cluster_reaches_labels_env_and_scheduler():
    objects = compiled("defaults: {virtualCluster: vc1}\n", hived=True)
    assert framework(objects)["metadata"]["labels"]["virtualCluster"] == "vc1"
    assert pod_spec(objects)["schedulerName"] == "hivedscheduler-ds-vc1"
    assert hived_spec(objects).startswith("virtualCluster: vc1\n")


# ----------------------------------------------------------------------------------------------------------------
# HiveD: its schema, its 400s, and empty names (hived.js reads them with `get(..., null)` and tests `!= null`)

MEMBERS_BOTH = "  members:\n    - podNumber: 2\n      leafCellNumber: 1\n    - podNumber: 1\n      leafCellNumber: 1\n"


@pytest.mark.parametrize("extra, spec", [
    ("extras:\n  hivedScheduler:\n    taskRoles:\n      worker: {pinnedCellId: ''}\n",
     "virtualCluster: default\npriority: 10\npinnedCellId: ''\nleafCellType: null\nleafCellNumber: 1\n"
     "affinityGroup:\n  name: alice~facts/default\n" + MEMBERS_BOTH),
    ("extras:\n  hivedScheduler:\n    taskRoles:\n      worker: {affinityGroupName: ''}\n      ps: "
     "{affinityGroupName: ''}\n", "virtualCluster: default\npriority: 10\npinnedCellId: null\nleafCellType: null\n"
     "leafCellNumber: 1\naffinityGroup:\n  name: alice~facts/\n" + MEMBERS_BOTH),
    ("extras:\n  hivedScheduler:\n    taskRoles:\n      worker: {affinityGroupName: ''}\n",
     "virtualCluster: default\npriority: 10\npinnedCellId: null\nleafCellType: null\nleafCellNumber: 1\n"
     "affinityGroup:\n  name: alice~facts/\n  members:\n    - podNumber: 2\n      leafCellNumber: 1\n"),
    # the default group is made only when gangAllocation is absent or exactly true
    ("extras:\n  gangAllocation: 2\n", "virtualCluster: default\npriority: 10\npinnedCellId: null\n"
     "leafCellType: null\nleafCellNumber: 1\naffinityGroup: null\n"),
    ("extras:\n  hivedScheduler:\n    jobPriorityClass: oppo\n    taskRoles:\n      worker: {skuType: null, "
     "pinnedCellId: c1}\n", "virtualCluster: default\npriority: -1\npinnedCellId: c1\nleafCellType: null\n"
     "leafCellNumber: 1\naffinityGroup:\n  name: alice~facts/default\n" + MEMBERS_BOTH),
])
def test_hived_spec_keeps_what_upstream_keeps(extra, spec):
    assert hived_spec(compiled(extra, hived=True)) == spec


def test_the_default_group_is_shared_by_every_task_role_when_one_role_has_an_empty_group_name():
    objects = compiled("extras:\n  hivedScheduler:\n    taskRoles:\n      worker: {affinityGroupName: ''}\n",
                       hived=True)
    assert hived_spec(objects, 1).endswith("affinityGroup: null\n")  # ps is in no group


@pytest.mark.parametrize("extra, code", [
    ("extras:\n  hivedScheduler: null\n", "E306"),  # ajv: should be object
    ("extras:\n  hivedScheduler: {jobPriorityClass: crit}\n", "E306"),  # enum prod/test/oppo
    ("extras:\n  hivedScheduler: {jobPriorityClass: null}\n", "E306"),
    ("extras:\n  hivedScheduler: {taskRoles: {}}\n", "E306"),  # minProperties 1
    ("extras:\n  hivedScheduler: {taskRoles: {'a b': {}}}\n", "E306"),  # ^[A-Za-z0-9._~]+$
    ("extras:\n  hivedScheduler: {taskRoles: {worker: x}}\n", "E306"),  # an entry is an object
    ("extras:\n  hivedScheduler: {taskRoles: {worker: {affinityGroupName: 3}}}\n", "E306"),  # string or null
    ("extras:\n  hivedScheduler: {taskRoles: {worker: {skuType: 2020-01-01}}}\n", "E306"),  # a Date
    ("extras:\n  hivedScheduler: {taskRoles: abc}\n", "E307"),  # Taskrole 0 does not exist.
    ("extras:\n  hivedScheduler: {taskRoles: {chief: {}}}\n", "E307"),  # Taskrole chief does not exist.
    ("extras:\n  hivedScheduler: {taskRoles: {worker: {skuType: K80, pinnedCellId: ''}}}\n", "E307"),
    ("extras:\n  hivedScheduler: {taskRoles: {worker: {affinityGroupName: g, skuType: K80}, ps: "
     "{affinityGroupName: g}}}\n", "E307"),  # AffinityGroup g has inconsistent skuType or pinnedCellId.
])
def test_what_upstreams_hived_refuses_is_refused_with_hived_and_warned_without(extra, code, tmp_path):
    """Upstream checks HiveD settings only on a HiveD cluster and runs the job elsewhere (issue 30: a policy is a
    warning unless a profile asks for it)."""
    result = validate_text(BASE + extra, "job.yaml")
    warned = "W" + code[1:]
    assert result.ok and {d.code for d in result.warnings} >= {warned} and all(d.line for d in result.warnings)
    compile_job((BASE + extra).encode(), target="framework", profile="openpai", name="job.yaml")  # runs upstream
    text = Path(_PROFILES / "openpai.yaml").read_text().replace("  enabled: false\n", "  enabled: true\n", 1)
    (tmp_path / "hived.yaml").write_text(text)
    with pytest.raises(InvalidJobError) as caught:
        compile_job((BASE + extra).encode(), target="framework", profile=str(tmp_path / "hived.yaml"), name="job.yaml")
    assert {d.code for d in caught.value.diagnostics if d.is_error} == {code}


def test_hived_shapes_upstream_ignores_are_warned_and_those_it_crashes_on_refused():
    extra = "extras:\n  hivedScheduler: {taskRoles: 1}\n"  # silently no settings upstream: a warning
    assert {d.code for d in validate_text(BASE + extra, "job.yaml").diagnostics} == {"W805"}
    assert compiled(extra, hived=True)
    # upstream: resourceUnits[''] is undefined, a TypeError
    assert refused("extras:\n  hivedScheduler:\n    taskRoles:\n      worker: {skuType: ''}\n", hived=True) == {
        "E602"}


# ----------------------------------------------------------------------------------------------------------------
# unquoted dates: js-yaml reads a Date (YAML 1.1 timestamp)

@pytest.mark.parametrize("plain, shown", [
    ("2020-01-01", "Wed Jan 01 2020 00:00:00 GMT+0000 (Coordinated Universal Time)"),
    ("2001-12-14t21:59:43.10-05:00", "Sat Dec 15 2001 02:59:43 GMT+0000 (Coordinated Universal Time)"),
    ("2001-12-14 21:59:43.10 -5", "Sat Dec 15 2001 02:59:43 GMT+0000 (Coordinated Universal Time)"),
    ("2020-02-30", "Sun Mar 01 2020 00:00:00 GMT+0000 (Coordinated Universal Time)"),  # Date.UTC carries over
    ("0099-01-01", "Fri Jan 01 1999 00:00:00 GMT+0000 (Coordinated Universal Time)"),  # years 0-99 are 19xx
    ("2020-13-00", "Thu Dec 31 2020 00:00:00 GMT+0000 (Coordinated Universal Time)"),
    ("2002-1-1 1:2:3", "2002-1-1 1:2:3"),  # not a timestamp: minutes need two digits
    ("2020-1-1", "2020-1-1"),  # a date alone needs two-digit month and day
])
def test_a_date_parameter_renders_as_javascript_prints_a_date(plain, shown):
    text = BASE.replace("commands: [echo hi]", "commands: ['echo <% $parameters.when %>']") + \
        f"parameters: {{when: {plain}}}\n"
    objects = compile_job(text.encode(), target="framework", profile="openpai", name="j.yaml").objects
    assert pod_spec(objects)["initContainers"][0]["env"][0] == {"name": "USER_CMD", "value": f"echo {shown}"}


@pytest.mark.parametrize("key, value", [("version", "2020-01-01"), ("description", "2001-12-15T02:59:43.1Z"),
                                        ("name", "2020-01-01")])
def test_a_date_where_a_string_is_wanted_is_refused_with_a_hint_to_quote_it(key, value):
    text = BASE.replace("name: facts\n", "") + (f"name: facts\n" if key != "name" else "") + f"{key}: {value}\n"
    [error] = validate_text(text, "job.yaml").errors
    assert error.code == "E203" and f"the unquoted date {value}" in error.message
    assert error.hint.startswith(f"quote it ('{value}')") and error.line == text.count("\n")


def test_a_date_inside_a_command_list_is_refused_too():
    text = BASE.replace("commands: [echo hi]", "commands: [2020-01-01]")
    [error] = validate_text(text, "job.yaml").errors
    assert error.code == "E203" and error.pointer == "/taskRoles/worker/commands/0"


def test_a_quoted_date_is_a_string():
    assert validate_text(BASE + "version: '2020-01-01'\n", "job.yaml").ok


@pytest.mark.parametrize("extra", [
    "parameters: 2020-01-01\n",  # ajv takes a Date for an object: upstream accepts and ignores it
    "extras: 2020-01-01\n",
])
def test_a_date_where_a_mapping_belongs_is_warned_and_ignored_as_upstream_ignores_it(extra):
    result = validate_text(BASE + extra, "job.yaml")
    assert result.ok and {d.code for d in result.warnings} == {"W809"}
    assert compiled(extra)


def test_secrets_that_are_a_date_are_accepted_with_a_warning():
    """Upstream stores the date's text as the secrets file and the job runs (openpai-runtime reads the file only for a
    registry `auth`, and renders the commands with whatever it holds): no secret to name, so a warning (issue 37)."""
    result = validate_text(BASE + "secrets: 2020-01-01\n", "job.yaml")
    assert result.ok and {d.code for d in result.warnings} == {"W812"}
    assert "2020" not in " ".join(d.message for d in result.warnings)  # a secret's value is never shown
    assert compiled("secrets: 2020-01-01\n")


def test_a_date_secret_is_stored_as_a_timestamp():
    objects = compiled("secrets: {when: 2020-01-01}\n")
    secret = next(o for o in objects if o["kind"] == "Secret")
    import yaml

    stored = yaml.safe_load(base64.b64decode(secret["data"]["secrets.yaml"]))
    import datetime

    # js-yaml writes `when: 2020-01-01T00:00:00.000Z`, which the runtime's PyYAML reads as this instant
    assert stored == {"when": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)}


# ----------------------------------------------------------------------------------------------------------------
# found by the harness's random mutations

def test_a_default_deployment_whose_task_roles_are_a_list_adds_no_commands():
    # upstream's schema has no type for a deployment's taskRoles, and `'worker' in [...]` is false
    extra = "deployments: [{name: d, taskRoles: [null]}]\ndefaults: {deployment: d}\n"
    env = pod_spec(compiled(extra))["initContainers"][0]["env"]
    assert env[0] == {"name": "USER_CMD", "value": "echo hi"}
    assert refused("deployments: [{name: d, taskRoles: abc}]\ndefaults: {deployment: d}\n") == {"E801"}  # crash


def test_a_negative_gpu_count_gets_no_hived_device_variables():
    text = BASE.replace("gpu: 1}", "gpu: -1}")
    objects = _compile_hived(text)
    names = [e["name"] for e in pod_spec(objects)["containers"][0]["env"]]
    assert "NVIDIA_VISIBLE_DEVICES" not in names and "HIVED_VISIBLE_DEVICES" not in names  # `=== 0` nor `> 0`


# ----------------------------------------------------------------------------------------------------------------
# untuned jobs: features the corpus never combines

@pytest.mark.parametrize("retry", [-3, -100])
def test_a_task_retry_count_framework_controller_refuses_is_a_located_error(retry):
    # k8s.js generateTaskRole: with gangAllocation false, maxRetryCount = taskRetryCount || 0; FrameworkController's
    # CRD refuses a maxRetryCount below -2 (before: the output check called it a bug in paictl, exit 70)
    text = BASE.replace("    instances: 2\n", f"    instances: 2\n    taskRetryCount: {retry}\n", 1)
    with pytest.raises(InvalidJobError) as caught:
        compile_job((text + "extras: {gangAllocation: false}\n").encode(), profile="openpai", name="job.yaml")
    [error] = [d for d in caught.value.diagnostics if d.is_error]
    assert (error.code, error.line, error.column) == ("E802", 9, 21)
    assert f"taskRetryCount {retry} is below -2" in error.message
    assert "W202" not in {d.code for d in validate_text(text + "extras: {gangAllocation: false}\n", "j").diagnostics}


@pytest.mark.parametrize("retry, gang, expected", [
    (-2, "false", {"fancyRetryPolicy": True, "maxRetryCount": -2}),
    (-1, "false", {"fancyRetryPolicy": True, "maxRetryCount": -1}),
    (-7, "true", {"fancyRetryPolicy": False, "maxRetryCount": 0}),  # gang allocation on: the count is not used
])
def test_task_retry_counts_framework_controller_takes_are_compiled(retry, gang, expected):
    text = BASE.replace("    instances: 2\n", f"    instances: 2\n    taskRetryCount: {retry}\n", 1)
    objects = compile_job((text + f"extras: {{gangAllocation: {gang}}}\n").encode(), profile="openpai",
                          name="job.yaml").objects
    assert framework(objects)["spec"]["taskRoles"][0]["task"]["retryPolicy"] == expected


def test_affinity_group_members_follow_the_order_of_hived_task_roles():
    # hived.js pushes a group's members while walking `Object.keys(hivedConfig.taskRoles)`, not the job's task roles
    extra = ("extras:\n  hivedScheduler:\n    taskRoles:\n      ps: {affinityGroupName: g 1}\n"
             "      worker: {affinityGroupName: g 1}\n")
    spec = ("virtualCluster: default\npriority: 10\npinnedCellId: null\nleafCellType: null\nleafCellNumber: 1\n"
            "affinityGroup:\n  name: alice~facts/g 1\n  members:\n    - podNumber: 1\n      leafCellNumber: 1\n"
            "    - podNumber: 2\n      leafCellNumber: 1\n")
    objects = compiled(extra, hived=True)
    assert hived_spec(objects, 0) == spec == hived_spec(objects, 1)


@pytest.mark.parametrize("group, pinned, written", [
    # k8s.js stores yaml.safeDump(spec): js-yaml 3 quotes only what would not read back as the same string
    ("组", "组", "pinnedCellId: 组\nleafCellType: null\nleafCellNumber: 1\naffinityGroup:\n  name: alice~facts/组\n"),
    ("'1'", "'1'", "pinnedCellId: '1'\nleafCellType: null\nleafCellNumber: 1\naffinityGroup:\n"
     "  name: alice~facts/1\n"),
    ("'a: b'", "'#1'", "pinnedCellId: '#1'\nleafCellType: null\nleafCellNumber: 1\naffinityGroup:\n"
     "  name: 'alice~facts/a: b'\n"),
    ("'😀'", "'y'", "pinnedCellId: 'y'\nleafCellType: null\nleafCellNumber: 1\naffinityGroup:\n"
     "  name: \"alice~facts/\\U0001F600\"\n"),
])
def test_hived_spec_strings_are_quoted_as_js_yaml_quotes_them(group, pinned, written):
    extra = f"extras:\n  hivedScheduler:\n    taskRoles:\n      worker: {{affinityGroupName: {group}, " \
            f"pinnedCellId: {pinned}}}\n"
    assert written in hived_spec(compiled(extra, hived=True))


@pytest.mark.parametrize("resources", ["{cpu: 0, memoryMB: 0, gpu: 0}", "{cpu: -1, memoryMB: 0, gpu: 0}"])
def test_a_task_role_requesting_nothing_is_refused_with_hived(resources):
    # hived.js: leafCellNumber = max(0 or ceil(gpu/cell), ...) = 0 (it was written as 1); HiveD refuses it
    text = BASE.replace("{cpu: 1, memoryMB: 1024, gpu: 0}", resources)
    with pytest.raises(InvalidJobError) as caught:
        _compile_hived(text)
    [error] = caught.value.diagnostics
    assert (error.code, error.line) == ("E604", 15) and "leafCellNumber is 0" in error.message
    assert compiled("", hived=True)  # the base job, whose roles request something, compiles


def test_registry_credentials_are_collected_in_javascript_key_order_and_written_as_json_stringify_writes_them():
    # k8s.js put(): Object.values(prerequisites.dockerimage), an object keyed by name, so "2" and "10" come first;
    # for one registry the last credential wins; JSON.stringify leaves non-ASCII characters as they are
    extra = ("secrets: {p: 'pä:ss'}\nprerequisites:\n"
             "  - {name: img, type: dockerimage, uri: ubuntu, auth: {username: zed, password: '<% $secrets.p %>', "
             "registryuri: régistry.io}}\n"
             "  - {name: '10', type: dockerimage, uri: b, auth: {username: ten, password: x, "
             "registryuri: régistry.io}}\n"
             "  - {name: '2', type: dockerimage, uri: c, auth: {username: two, password: y}}\n")
    text = BASE.replace("prerequisites:\n  - {name: img, type: dockerimage, uri: ubuntu}\n", "") + extra
    objects = compile_job(text.encode(), profile="openpai", name="job.yaml").objects
    secret = next(o for o in objects if o.get("type") == "kubernetes.io/dockerconfigjson")
    b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    expected = ('{"auths":{"https://index.docker.io/v1/":{"auth":"%s"},"régistry.io":{"auth":"%s"}}}'
                % (b64("two:y"), b64("zed:pä:ss")))
    assert base64.b64decode(secret["data"][".dockerconfigjson"]).decode() == expected


@pytest.mark.parametrize("value, rdma", [("[]", True), ("{}", True), ("'false'", True), ("0", False), ("''", False),
                                         ("null", False), ("true", True)])
def test_infiniband_is_requested_when_javascript_finds_the_value_true(value, rdma):
    # k8s.js generateTaskRole: Boolean(extraContainerOptions.infiniband) adds rdma/hca: 1 (an empty list is true)
    options = f"    extraContainerOptions: {{infiniband: {value}}}\n"
    text = BASE.replace("    dockerImage: img\n", "    dockerImage: img\n" + options, 1)
    objects = compile_job(text.encode(), profile="openpai", name="job.yaml").objects
    assert ("rdma/hca" in pod_spec(objects)["containers"][0]["resources"]["limits"]) is rdma
