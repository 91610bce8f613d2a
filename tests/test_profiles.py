"""Cluster profiles: the built-ins load, and a broken profile is reported like a broken job (file:line:col)."""

from __future__ import annotations

import dataclasses

import pytest

from paictl.compiler.profiles import BUILTIN_PROFILES, load_profile
from paictl.errors import InvalidJobError, UsageError

GOOD = """\
namespace: team-a
user: bob
runtime: openpai
runtimeImage: openpai/openpai-runtime:v1.8.0
runtimeImagePullSecrets: []
naming: readable
gpuResource: amd.com/gpu
priorityClasses: false
portRange: [20000, 30000]
hived:
  enabled: true
  skus: {V100: {cpu: 8, memoryMB: 65536, gpu: 1, cellsPerNode: 8}}
storages:
  - {name: home, share: false, default: true}
"""


@pytest.mark.parametrize("name", BUILTIN_PROFILES)
def test_builtins_pass_every_check_and_the_trusted_load_agrees(name):
    """Built-in profiles are trusted at run time (parsed, not re-validated): this is where they are checked."""
    from importlib.resources import files

    from paictl.compiler.profiles import profile_from_text

    text = files("paictl.compiler").joinpath("profiles", f"{name}.yaml").read_text(encoding="utf-8")
    checked = profile_from_text(text, f"<profile {name}>")  # schema + consistency rules; raises if broken
    assert load_profile(name) == checked


@pytest.mark.parametrize("name", BUILTIN_PROFILES)
def test_builtins_load(name):
    profile = load_profile(name)
    assert profile.namespace == "default"
    assert not profile.hived.enabled


def test_openpai_builtin_has_the_golden_settings():
    profile = load_profile("openpai")
    assert (profile.user, profile.runtime, profile.naming, profile.runtime_image) == (
        "alice", "openpai", "openpai", "openpai/openpai-runtime:v1.8.0")
    assert profile.runtime_image_pull_secrets == ("pai-secret",) and profile.priority_classes
    assert {n: (s.cpu, s.memory_mb, s.gpu) for n, s in profile.hived.skus.items()} == {
        "K80": (4, 30720, 1), "M60": (6, 56320, 1)}
    assert [(s.name, s.share, s.default, s.read_only) for s in profile.storages] == [
        ("confignfs", True, True, False), ("nfs-storage", True, False, False), ("confignfs-data", False, False, True)]


def test_default_builtin_is_a_plain_cluster():
    profile = load_profile("default")
    assert (profile.runtime, profile.naming, profile.priority_classes, profile.service_account) == (
        "native", "readable", False, None)
    assert not profile.node_affinity and not profile.extra_limits and not profile.host_network


def test_profile_file(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(GOOD)
    profile = load_profile(path)
    assert profile.source == str(path) and profile.namespace == "team-a" and profile.port_range == (20000, 30000)
    assert profile.hived.skus["V100"].cells_per_node == 8
    assert profile.with_user("carol").user == "carol" and profile.with_user(None) is profile
    assert dataclasses.replace(profile, user="x").user == "x"


def _errors(tmp_path, text):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InvalidJobError) as caught:
        load_profile(path)
    return [(d.code, d.file == str(path), d.line, d.column, f"{d.message} {d.hint}") for d in caught.value.diagnostics]


def test_schema_errors_are_located(tmp_path):
    text = GOOD.replace("runtime: openpai", "runtime: openpa").replace("gpuResource: amd.com/gpu\n", "")
    errors = _errors(tmp_path, text + "extra: 1\n")
    codes = {(code, line, column) for code, in_file, line, column, _ in errors if in_file}
    assert ("E204", 3, 10) in codes            # runtime value
    assert ("E202", 14, 1) in codes            # unknown key
    assert any(code == "E201" for code, *_ in errors)  # gpuResource missing
    assert any("did you mean 'openpai'" in message for *_, message in errors)


@pytest.mark.parametrize("user", ["_alice", "alice.", "alice~bob", "u" * 64])
def test_a_user_that_is_not_a_label_value_is_located(tmp_path, user):
    """The user is the objects' `userName` label value: a profile that says otherwise is refused where it says it."""
    (error,) = _errors(tmp_path, GOOD.replace("user: bob", f"user: '{user}'"))
    assert error[:4] == ("E205", True, 2, 7), error


def test_consistency_errors_are_located(tmp_path):
    text = GOOD.replace("[20000, 30000]", "[30000, 20000]").replace("  - {name: home, share: false, default: true}",
                                                                      "  - {name: home}\n  - {name: home}")
    errors = _errors(tmp_path, text)
    assert [(code, line) for code, _, line, *_ in errors] == [("E501", 9), ("E501", 15)]


def test_yaml_errors_are_located(tmp_path):
    errors = _errors(tmp_path, "namespace: [\n")
    assert errors[0][0] == "E101" and errors[0][2] is not None


def test_missing_profile_file():
    with pytest.raises(UsageError, match="built-in profiles: default, openpai"):
        load_profile("no/such/profile.yaml")
