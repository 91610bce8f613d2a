"""Semantic checks on documents that fail the schema: they still run, skip wrong shapes, and yield to the schema."""

from __future__ import annotations

import pytest

from paictl.protocol.loading import load_located
from paictl.protocol.semantics import check_semantics
from test_semantics import job


INVALID_JOB = """\
protocolVersion: 2
name: both
type: job
jobRetryCount: -1
prerequisites:
  - {name: img, type: dockerimage, uri: busybox}
taskRoles:
  worker:
    taskRetryCount: 3
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: [echo hi]
"""


def _codes_at(text: str) -> set[tuple[str, str]]:
    from paictl.protocol.validate import validate_text

    return {(d.code, d.pointer) for d in validate_text(text, "job.yaml").diagnostics}


def test_schema_errors_and_semantic_findings_are_reported_together():
    assert _codes_at(INVALID_JOB) == {("E206", "/jobRetryCount"), ("W405", "/taskRoles/worker/taskRetryCount")}


@pytest.mark.parametrize("old, new, hidden", [
    # E211 at the value itself hides the W408 at the same pointer
    ("instances: 1", "instances: <% $parameters.n %>", ("W408", "/taskRoles/worker/instances")),
    # E202 at an unknown top-level key hides the W408 below it
    ("jobRetryCount: -1", "jobRetryCount: -1\nfoo: {bar: <% $parameters.n %>}", ("W408", "/foo/bar")),
])
def test_a_schema_error_hides_semantic_findings_at_or_below_its_pointer(old, new, hidden):
    data = load_located(INVALID_JOB.replace(old, new), "job.yaml").data
    assert hidden in {(f.code, f.pointer) for f in check_semantics(data)}
    codes = _codes_at(INVALID_JOB.replace(old, new))
    assert hidden not in codes and ("W405", "/taskRoles/worker/taskRetryCount") in codes


def test_a_missing_key_hides_nothing_below_the_mapping_that_lacks_it():
    codes = _codes_at(INVALID_JOB.replace("gpu: 0", "gpu: 0, ports: {http: 0}").replace("name: both\n", ""))
    assert ("E201", "") in codes and ("W207", "/taskRoles/worker/resourcePerInstance/ports/http") in codes


def test_hidden_means_below_by_pointer_tokens_not_by_string_prefix():
    from paictl.protocol.validate import _at_or_below

    assert _at_or_below("/a/b", [["a", "b"]]) and _at_or_below("/a/b/0", [["a", "b"]])
    assert not _at_or_below("/a/bc", [["a", "b"]]) and not _at_or_below("/a", [["a", "b"]])


@pytest.mark.parametrize("changes, code", [
    ({"taskRoles__worker__instances": "2", "taskRoles__worker__completion__minFailedInstances": 3}, "W407"),
    ({"taskRoles__worker__instances": 0, "taskRoles__worker__completion__minFailedInstances": 3}, "W407"),
    ({"taskRoles__worker__taskRetryCount": True}, "W405"),
    ({"taskRoles__worker__completion__minFailedInstances": False}, "W203"),
    ({"taskRoles__worker__resourcePerInstance__cpu": "-1"}, "W207"),
    ({"prerequisites": {"image": {"type": "dockerimage"}}}, "E304"),
    ({"prerequisites__0__type": "docker"}, "E304"),
    ({"prerequisites__2__name": ["dataset"]}, "E304"),
    ({"taskRoles__worker__prerequisites": "code"}, "E303"),
    ({"deployments": {"prod": {}}}, "E305"),
    ({"taskRoles": ...}, "W206"),
    ({"parameters": ["lr"]}, "W401"),
    ({"secrets": "t0k"}, "W402"),
])
def test_values_of_the_wrong_shape_are_skipped_not_reported(changes, code):
    assert code not in {f.code for f in check_semantics(job(**changes))}
