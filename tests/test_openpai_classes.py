"""Issue 30's classes, each from cases written here: where upstream runs the job paictl accepts it and builds the
same, where upstream fails paictl refuses it in `validate` as in every target's `compile`.

Upstream's behaviour for each case was read from the differential oracle (tests/openpai_oracle: the unchanged
rest-server submission path), which test_differential.py runs over generated jobs.
"""

from __future__ import annotations

import json

import pytest

from paictl.compiler.render import render_entrypoint
from paictl.protocol.validate import validate_text
from paictl.targets.compiled import compile_job

#: The Mars target also needs task roles named for MarsJob's replica types (E702), which these jobs do not have.
TARGETS = ["framework", "jobset", "local", "grass", "openpai"]

BASE = """\
protocolVersion: 2
name: classes
type: job
parameters: {xs: [a, b], word: hi}
prerequisites:
  - {name: img, type: dockerimage, uri: ubuntu}
taskRoles:
  worker:
    instances: 1
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands:
COMMANDS
"""


def job(commands: list[str], extra: str = "") -> str:
    return BASE.replace("COMMANDS\n", "".join(f"      - {json.dumps(c)}\n" for c in commands)) + extra


def verdicts(text: str) -> dict[str, bool]:
    """Whether each target compiles the job, and whether validate accepts it."""
    from paictl.errors import InvalidJobError

    found = {"validate": validate_text(text, "job.yaml").ok}
    for target in TARGETS:
        try:
            compile_job(text.encode(), target=target, profile="openpai" if target == "framework" else "default",
                        name="job.yaml")
            found[target] = True
        except InvalidJobError:
            found[target] = False
    return found


# --- a mustache section opened in one command and closed in a later one ---------------------------------------------

@pytest.mark.parametrize("commands, entrypoint", [
    (["<% #$parameters.xs %>", "echo inside", "<% /$parameters.xs %>", "echo after"], "echo after"),
    (["echo a <% ^$parameters.none %>", "echo b", "<% /$parameters.none %> echo c"], "echo a  echo c"),
    (["<% !a comment", "still the comment %>", "echo <% $parameters.word %>"], "echo hi"),
])
def test_a_section_spanning_commands_is_rendered_as_one_template(commands, entrypoint):
    text = job(commands)
    assert set(verdicts(text).values()) == {True}
    compiled = compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    assert render_entrypoint(compiled.job, "worker") == entrypoint


def test_a_section_closed_in_the_default_deployment_post_commands_parses():
    text = job(["<% #$parameters.xs %>", "echo inside"], "defaults: {deployment: d}\ndeployments:\n  - name: d\n"
               "    taskRoles:\n      worker: {postCommands: ['<% /$parameters.xs %>', 'echo post']}\n")
    assert set(verdicts(text).values()) == {True}


@pytest.mark.parametrize("commands", [["<% #$parameters.xs %>", "echo never closed"],
                                      ["echo a", "<% /$parameters.xs %>"], ["echo <% unclosed"]])
def test_an_unparsable_template_is_refused_by_validate_and_every_target(commands):
    text = job(commands)
    result = validate_text(text, "job.yaml")
    assert [d.code for d in result.errors] == ["E803"]
    assert not any(d.code == "W409" and "fails" in d.message for d in result.diagnostics)  # said once, as E803
    assert set(verdicts(text).values()) == {False}


def test_a_section_left_open_in_another_deployment_is_not_rendered_so_not_refused():
    text = job(["echo hi"], "deployments:\n  - name: other\n    taskRoles:\n"
               "      worker: {preCommands: ['<% #$parameters.xs %>']}\n")
    assert verdicts(text)["validate"] and verdicts(text)["framework"]
