"""R3 (issue 36): a job whose compiled objects no API server would store is refused when it is compiled (E610,
located in the job file), not by the cluster after `validate` and `compile` said it was fine.

The limits are checked twice: at the byte where paictl starts refusing, and against the real kube-apiserver (the
object paictl accepts at the limit is stored; one byte more is what the server refuses), so that the numbers in
targets/kube/limits.py are the server's own.
"""

from __future__ import annotations

import base64
import copy
import json

import pytest

from conftest import ROOT

HELLO = (ROOT / "examples" / "hello-world.yaml").read_text()
MARKER = "      - env | grep ^PAI_ | sort\n"


def _job(padding: int) -> bytes:
    """hello-world with one more command, `echo` and `padding` x's: that many more bytes in the config annotation."""
    assert MARKER in HELLO
    return HELLO.replace(MARKER, MARKER + "      - echo " + "x" * padding + "\n").encode()


def _framework(padding: int) -> dict:
    from paictl.targets.compiled import compile_job

    objects = compile_job(_job(padding), target="framework", name="big.yaml").objects
    return next(obj for obj in objects if obj["kind"] == "Framework")


def _padding_at_the_limit() -> int:
    """The padding that makes the Framework's annotations exactly 256 KiB (each x is one byte of the config)."""
    from paictl.targets.kube.limits import MAX_ANNOTATIONS_BYTES, annotations_size

    start = 200_000
    return start + MAX_ANNOTATIONS_BYTES - annotations_size(_framework(start))


def test_a_framework_over_256_kib_of_annotations_is_refused_at_compile(run_cli, tmp_path):
    padding = _padding_at_the_limit()
    from paictl.targets.kube.limits import annotations_size

    assert annotations_size(_framework(padding)) == 256 * 1024  # the limit itself compiles
    job = tmp_path / "big.yaml"
    job.write_bytes(_job(padding + 1))
    for command in (["compile", str(job), "--target", "framework"],
                    ["validate", str(job), "--target", "framework"]):
        code, out, err = run_cli(*command)
        assert code == 1, (command, out[:200])
        first = (out + err).splitlines()
        line = next(text for text in first if "E610" in text)
        assert line.startswith(f"{job}:22:9: error[E610]: the compiled Framework ")
        assert "its annotations take 262145 bytes; the API server accepts at most 262144 (256 KiB) in all" in line
        assert "the largest part of the job is taskRoles.main.commands.2" in line
    assert run_cli("validate", str(job))[0] == 0  # the job itself is valid: only a Kubernetes target refuses it


@pytest.mark.parametrize("target", ["jobset", "mars"])
def test_an_object_over_etcds_limit_is_refused_at_compile(run_cli, tmp_path, target):
    from conftest import JOBS

    source = (JOBS / "kube" / f"{'jobset-job' if target == 'jobset' else 'mars-job'}.yaml").read_text()
    command = next(line for line in source.splitlines() if line.strip().startswith("- python"))
    job = tmp_path / "huge.yaml"
    job.write_text(source.replace(command, command + "\n" + command.split("- ")[0] + "- echo " + "y" * 1_700_000, 1))
    code, out, err = run_cli("compile", str(job), "--target", target)
    assert code == 1
    line = next(text for text in (out + err).splitlines() if "E610" in text)
    assert "etcd stores at most 1.5 MiB per object" in line and "yyyy" not in line


def test_secret_data_over_one_mib_is_refused_at_compile_by_size_only(run_cli, tmp_path):
    secret = "s" * (1024 * 1024 + 10)
    job = tmp_path / "secret.yaml"
    job.write_text(HELLO + f"secrets:\n  blob: {secret}\n")
    code, out, err = run_cli("compile", str(job), "--target", "framework")
    assert code == 1
    line = next(text for text in (out + err).splitlines() if "E610" in text)
    assert ": error[E610]: the compiled Secret " in line and "Kubernetes keeps at most 1048576 bytes" in line
    assert "sss" not in out + err


# -- the same limits on the real kube-apiserver ------------------------------------------------------------------


def _dry_run_create(cluster, obj: dict) -> tuple[int, str]:
    status, _, body = cluster.plane.raw("POST", _collection(obj, cluster.namespace) + "?dryRun=All", obj)
    return status, body.decode(errors="replace")


def _collection(obj: dict, namespace: str) -> str:
    plural = {"Framework": "frameworks", "Secret": "secrets", "ConfigMap": "configmaps"}[obj["kind"]]
    api = obj["apiVersion"]
    base = f"/apis/{api}" if "/" in api else f"/api/{api}"
    return f"{base}/namespaces/{namespace}/{plural}"


def test_the_real_api_server_stores_the_framework_at_the_limit_and_refuses_one_byte_more(real_cluster):
    real_cluster.require("frameworkcontroller")
    framework = _framework(_padding_at_the_limit())
    framework["metadata"]["namespace"] = real_cluster.namespace
    status, body = _dry_run_create(real_cluster, framework)
    assert status == 201, body[:300]
    bigger = copy.deepcopy(framework)
    bigger["metadata"]["annotations"]["config"] += "x"
    status, body = _dry_run_create(real_cluster, bigger)
    assert status == 422 and "metadata.annotations: Too long: " in body and "262144 bytes" in body, \
        (status, body[:300])
    from paictl.targets.kube.limits import oversize

    assert oversize(framework) is None and "annotations take 262145 bytes" in oversize(bigger)


def test_the_real_api_server_keeps_one_mib_of_secret_data_and_no_more(real_cluster):
    from paictl.targets.kube.limits import oversize

    def secret(size: int) -> dict:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": real_cluster.namespace},
                "data": {"blob": base64.b64encode(b"s" * size).decode()}}

    assert _dry_run_create(real_cluster, secret(1024 * 1024))[0] == 201 and oversize(secret(1024 * 1024)) is None
    status, body = _dry_run_create(real_cluster, secret(1024 * 1024 + 1))
    assert status == 422 and "1048576" in body, (status, body[:300])
    assert "its data is 1048577 bytes" in oversize(secret(1024 * 1024 + 1))


def test_the_real_api_server_refuses_a_request_over_3_mib(real_cluster):
    """Over maxRequestBodyBytes the server answers 413 before decoding: an object under etcd's limit, which paictl
    checks, is always under it."""
    from paictl.targets.kube.limits import MAX_OBJECT_BYTES, MAX_REQUEST_BYTES

    assert MAX_OBJECT_BYTES < MAX_REQUEST_BYTES
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                       "data": {"a": "z" * (MAX_REQUEST_BYTES + 10)}})
    status, _, _ = real_cluster.plane.raw("POST", f"/api/v1/namespaces/{real_cluster.namespace}/configmaps",
                                          body.encode())
    assert status == 413
