"""Cluster files: paictl's own, MARO's on-premises create and node-join files, and located diagnostics."""

from __future__ import annotations

import pytest

from conftest import CORPUS, ROOT, needs_corpus
from paictl.errors import UsageError
from paictl.targets.grass.cluster import InvalidClusterError, load_cluster

EXAMPLE = str(ROOT / "clusters" / "grass-lab.yaml")
MARO = CORPUS / "maro"


def test_example_cluster():
    cluster = load_cluster(EXAMPLE)
    assert (cluster.name, cluster.id, cluster.redis_address) == ("lab", "maroa51146d3", "10.0.0.4:6379")
    assert [(n.name, n.hostname, n.api_port, n.cpu, n.memory, n.gpu) for n in cluster.nodes] == [
        ("node-a", "10.0.0.5", 51812, 8, 16384, 0), ("node-b", "10.0.0.6", 51812, 16, 32768, 2),
        ("node-c", "10.0.0.7", 51813, 8, 12288, 0)]
    assert cluster.check_interval == 5 and cluster.lost_after_seconds == 15


def test_secrets_stay_out_of_repr(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: c\ntoken: tok-0123456789abcdef\nmaster: {hostname: h, redis: {password: pw-secret}}\n"
                    "nodes: [{name: n, hostname: h, resources: {cpu: all, memory: all, gpu: all}}]\n")
    cluster = load_cluster(str(path))
    assert cluster.token == "tok-0123456789abcdef" and cluster.master.redis_password == "pw-secret"
    assert "pw-secret" not in repr(cluster) and "tok-" not in repr(cluster)


def test_bad_cluster_file_gets_every_problem_located(tmp_path, run_cli):
    path = tmp_path / "bad.yaml"
    path.write_text("name: c\nmaster: {hostname: h, redis: {port: 99999}}\nnodes:\n"
                    "  - {name: n1, hostname: h, resources: {cpu: 2, memory: lots, gpu: 0}}\n"
                    "  - {name: n1, hostname: h2, resources: {cpu: 2, memory: 1, gpu: 0}, colour: red}\n")
    with pytest.raises(InvalidClusterError) as caught:
        load_cluster(str(path))
    found = sorted((d.line, d.pointer) for d in caught.value.diagnostics)
    assert found == [(2, "/master/redis/port"), (4, "/nodes/0/resources/memory"), (5, "/nodes/1/colour")]
    assert caught.value.exit_code == 2
    code, out, err = run_cli("compile", str(ROOT / "examples" / "grass-hello.yaml"), "--target", "grass",
                             "--cluster", str(path))
    assert code == 2 and out == ""
    assert f"{path}:2:" in err and f"{path}:5:" in err


@pytest.mark.parametrize("command", [("status",), ("stop", "j"), ("logs", "j"),
                                     ("submit", str(ROOT / "examples" / "grass-hello.yaml")),
                                     ("compile", str(ROOT / "examples" / "grass-hello.yaml"))])
def test_every_command_reports_a_cluster_file_as_a_cluster_file_located(tmp_path, run_cli, command):
    """Not "the job is missing ..." (the schema phase's word for a job's root), and not one summarised line from
    the commands that talk to the cluster: each problem located, as `validate` shows a job's."""
    path = tmp_path / "c.yaml"
    path.write_text("x: 1\n")
    code, out, err = run_cli(*command, "--target", "grass", "--cluster", str(path))
    assert (code, out) == (2, ""), err
    for key in ("name", "master", "nodes"):
        assert f"{path}:1:1: error[E201]: the cluster file is missing the required key '{key}'\n" in err
    assert f"{path}:1:1: error[E202]: unknown key 'x' in the cluster file\n" in err and "the job" not in err


def test_a_profile_is_called_a_profile(tmp_path, run_cli):
    path = tmp_path / "p.yaml"
    path.write_text("x: 1\n")
    code, out, err = run_cli("compile", str(ROOT / "examples" / "grass-hello.yaml"), "--profile", str(path))
    assert code != 0 and out == "" and "the job" not in err
    assert f"{path}:1:1: error[E201]: the profile is missing the required key 'namespace'\n" in err


def test_duplicate_node_names_are_located(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("name: c\nmaster: {hostname: h}\nnodes:\n"
                    "  - {name: n1, hostname: a, resources: {cpu: 2, memory: 1, gpu: 0}}\n"
                    "  - {name: n1, hostname: b, resources: {cpu: 2, memory: 1, gpu: 0}}\n")
    with pytest.raises(InvalidClusterError) as caught:
        load_cluster(str(path))
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.line, diagnostic.message) == (5, "node 1 has the same name as node 0")


def test_yaml_errors_are_located(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: c\nmaster: [\n")
    with pytest.raises(InvalidClusterError) as caught:
        load_cluster(str(path))
    assert caught.value.diagnostics[0].code == "E101"


def test_missing_file_is_an_input_error(tmp_path):
    from paictl.errors import InputError

    with pytest.raises(InputError):
        load_cluster(str(tmp_path / "nope.yaml"))


def _maro(name):
    (path,) = [p for p in MARO.iterdir() if p.name.endswith(name)]
    return str(path)


@needs_corpus
def test_maro_create_and_join_files_make_one_cluster():
    cluster = load_cluster([_maro("external__grass_on_premises_create.yml"),
                            _maro("external__grass_on_premises_join_node.yml")])
    assert (cluster.name, cluster.master.hostname, cluster.master.redis_port) == ("clusterName", "10.0.0.4", 6379)
    (node,) = cluster.nodes
    assert (node.name, node.hostname, node.api_port, node.cpu, node.memory, node.gpu) == (
        "maroNode1", "10.0.0.5", 51812, "all", 2048, 0)


@needs_corpus
def test_maro_join_file_alone_is_not_a_cluster():
    with pytest.raises(UsageError, match="exactly one cluster file"):
        load_cluster([_maro("external__grass_on_premises_join_node.yml")])


@needs_corpus
def test_maro_files_with_empty_values_are_located():
    # MARO's CLI tests fill these templates in at run time: name and addresses are empty in the files.
    path = _maro("on_premises__grass_on_premises_create.yml")
    with pytest.raises(InvalidClusterError) as caught:
        load_cluster([path])
    assert sorted((d.line, d.message) for d in caught.value.diagnostics) == [
        (1, "MARO's file leaves 'name' empty"), (11, "MARO's file leaves 'private_ip_address' in /master empty")]


def test_maro_join_file_missing_the_master_address(tmp_path):
    path = tmp_path / "join.yml"
    path.write_text("mode: grass/on-premises\nmaster: {}\nnode: {username: u}\n")
    with pytest.raises(InvalidClusterError) as caught:
        load_cluster(str(path))
    assert sorted((d.line, d.message) for d in caught.value.diagnostics) == [
        (2, "MARO's file is missing the required key 'private_ip_address' in /master"),
        (3, "MARO's file is missing the required key 'hostname' in /node")]


def test_maro_files_with_values_maro_would_not_take_are_located(tmp_path, run_cli):
    # A join file's resources and both files' ports are read without a schema: each bad value is a located
    # diagnostic (exit 2), never a traceback, and "4g" is not silently read (MARO's agent would offer all memory).
    create = tmp_path / "create.yml"
    create.write_text("mode: grass/on-premises\nname: c\nmaster: {private_ip_address: 10.0.0.4, redis: {port: x}}\n")
    join = tmp_path / "join.yml"
    join.write_text("mode: grass/on-premises\nmaster: {private_ip_address: 10.0.0.4}\n"
                    "node:\n  hostname: n1\n  api_server: {port: 70000}\n"
                    "  resources: {cpu: -1, memory: 4g, gpu: x}\n")
    with pytest.raises(InvalidClusterError) as caught:
        load_cluster([str(create), str(join)])
    assert sorted((d.line, d.pointer, d.code) for d in caught.value.diagnostics) == [
        (3, "/master/redis/port", "E206"), (5, "/node/api_server/port", "E206"),
        (6, "/node/resources/cpu", "E206"), (6, "/node/resources/gpu", "E203"), (6, "/node/resources/memory", "E203")]
    join.write_text("mode: grass/on-premises\nmaster: {private_ip_address: 10.0.0.4}\n"
                    "node: {hostname: n1, resources: 4}\n")
    code, out, err = run_cli("compile", str(ROOT / "examples" / "grass-hello.yaml"), "--target", "grass",
                             "--cluster", str(create), "--cluster", str(join))
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{join}:3:" in err and f"{create}:3:" in err


def test_maro_join_file_memory_in_mb_is_read(tmp_path):
    create = tmp_path / "create.yml"
    create.write_text("mode: grass/on-premises\nname: c\nmaster: {private_ip_address: 10.0.0.4}\n")
    join = tmp_path / "join.yml"
    join.write_text("mode: grass/on-premises\nmaster: {private_ip_address: 10.0.0.4, redis: {port: '6380'}}\n"
                    "node: {hostname: n1, resources: {cpu: 2.5, memory: 3072m, gpu: 1}}\n")
    (node,) = load_cluster([str(create), str(join)]).nodes
    assert (node.cpu, node.memory, node.gpu) == (2.5, 3072, 1)
