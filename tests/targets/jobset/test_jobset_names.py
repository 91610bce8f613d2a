"""Names, for any name OpenPAI accepts: either every name JobSet builds from them is a DNS-1035 label of at most 63
characters (JobSet, Service, replicatedJobs, Jobs, pod hostnames and pod names), or the job is refused (E901)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from paictl.compiler.profiles import load_profile
from paictl.protocol.model import Completion, Job, Resources, TaskRole
from paictl.targets.jobset.names import hostname, jobset_name, name_findings, replicated_job_names

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
ROLE_NAMES = st.from_regex(r"\A[a-zA-Z_][a-zA-Z0-9_]{0,70}\Z")
JOB_NAMES = st.from_regex(r"\A[a-zA-Z0-9_-]{1,120}\Z")


def make_job(name: str, roles: list[tuple[str, int]]) -> Job:
    return Job(name=name, task_roles=tuple(
        TaskRole(name=role, docker_image="img", resources=Resources(cpu=1, memory_mb=1, gpu=0), commands=("run",),
                 instances=instances, completion=Completion()) for role, instances in roles))


@settings(max_examples=500, deadline=2000, derandomize=True)
@given(JOB_NAMES, st.lists(st.tuples(ROLE_NAMES, st.integers(1, 100000)), min_size=1, max_size=4,
                           unique_by=lambda r: r[0]),
       st.sampled_from(["paictl", "alice", "a" * 40]))
def test_every_generated_name_is_a_short_dns_label_or_the_job_is_refused(job_name, roles, user):
    job = make_job(job_name, roles)
    if name_findings(job):
        return
    name = jobset_name(job, load_profile("default").with_user(user))
    assert DNS1035.match(name) and len(name) <= 63
    for role, rjob in replicated_job_names(job).items():
        instances = dict(roles)[role]
        assert DNS1035.match(rjob)
        last = hostname(name, rjob, instances - 1)
        assert DNS1035.match(last) and len(last + "-abcde") <= 63  # the pod name with its random suffix
