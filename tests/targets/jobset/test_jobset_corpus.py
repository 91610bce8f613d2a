"""Every valid upstream corpus job compiles to a JobSet the upstream CRD accepts, or is refused with a located error
that names the limit it hit (the secrets canary for JobSet output is test_jobset_canary.py).

Under the `default` profile, jobs naming storages it does not have are refused (E601), as for the other targets;
under `openpai` every job must compile unless a name cannot fit JobSet's 63-character budget (E901).
"""

from __future__ import annotations

import pytest

from conftest import corpus_files, needs_corpus
from jobset_checks import crd_errors
from paictl.compiler.profiles import load_profile
from paictl.errors import InvalidJobError
from paictl.protocol import job_from_data
from paictl.protocol.loading import load_located
from paictl.protocol.validate import validate_text
from paictl.targets import get_target
from paictl.targets.output_check import check_objects

#: Refusals allowed per profile, and what their message must name.
LIMITS = {"E901": "63", "E601": "Storage"}


def compile_text(text: str, name: str, profile: str):
    result = validate_text(text, name)
    assert result.ok, [d.message for d in result.errors]
    return get_target("jobset").compile(job_from_data(result.data), load_profile(profile),
                                        document=load_located(text, name))


@needs_corpus
@pytest.mark.parametrize("path", corpus_files("valid"), ids=lambda p: p.stem)
@pytest.mark.parametrize("profile", ["default", "openpai"])
def test_compiles_to_a_valid_jobset_or_is_refused_with_the_limit(path, profile):
    text = path.read_text(encoding="utf-8")
    try:
        objects = compile_text(text, path.name, profile)
    except InvalidJobError as error:
        allowed = {"E901"} | ({"E601"} if profile == "default" else set())
        for diagnostic in error.diagnostics:
            assert diagnostic.code in allowed, diagnostic.message
            assert diagnostic.line is not None and diagnostic.file == path.name  # located in the job file
            assert LIMITS[diagnostic.code] in diagnostic.message
        return
    check_objects(objects)
    jobset = objects[-1]
    assert crd_errors(jobset) == []
    roles = [r["name"] for r in jobset["spec"]["replicatedJobs"]]
    assert len(roles) == len(set(roles)) and all(len(r) <= 63 for r in roles)
