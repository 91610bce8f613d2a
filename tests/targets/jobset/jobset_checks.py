"""Shared by the JobSet tests: compile a job for JobSet, and check a JobSet against the upstream CRD.

The CRD is read from ../shared/corpus/jobset (the JobSet repository's own `jobset.x-k8s.io_jobsets.yaml`), its
openAPIV3Schema made strict the way the API server's pruning is: a field the CRD does not declare would be dropped
silently, so here it is an error. Without the corpus `crd_errors` returns [] and the tests that need it skip.
"""

from __future__ import annotations

import functools

from conftest import CORPUS
from crd_schema import strict_validator
from paictl.compiler.profiles import load_profile
from paictl.protocol import load_job_text
from paictl.protocol.loading import load_located
from paictl.targets import get_target
from paictl.targets.output_check import check_objects

JOBSET_CORPUS = CORPUS / "jobset"
CRD = JOBSET_CORPUS / "jobset.x-k8s.io_jobsets.yaml"


@functools.lru_cache(maxsize=None)
def crd_validator():
    return strict_validator(CRD, "v1alpha2")


def crd_errors(jobset: dict) -> list[str]:
    """Violations of the upstream JobSet CRD; [] without the corpus."""
    if not CRD.is_file():
        return []
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in crd_validator().iter_errors(jobset)]


def compiled(text: str, profile=None, **options) -> list[dict]:
    """Compile `text` for JobSet, check every object (paictl's own check and the upstream CRD), return them."""
    job = load_job_text(text, "job.yaml")
    objects = get_target("jobset").compile(job, profile or load_profile("default"),
                                           document=load_located(text, "job.yaml"), **options)
    check_objects(objects)
    jobset = objects[-1]
    assert jobset["kind"] == "JobSet"
    assert crd_errors(jobset) == []
    return objects


def warnings_of(text: str, profile=None) -> list[str]:
    job = load_job_text(text, "job.yaml")
    notes = get_target("jobset").compile_warnings(job, profile or load_profile("default"),
                                                  load_located(text, "job.yaml"))
    return [f"{d.line}:{d.column} {d.code} {d.message}" for d in notes]


def rjob_specs(jobset: dict) -> dict[str, dict]:
    """replicatedJob name -> its Job spec (without the pod template)."""
    return {r["name"]: {k: v for k, v in r["template"]["spec"].items() if k != "template"}
            for r in jobset["spec"]["replicatedJobs"]}
