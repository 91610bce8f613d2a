"""Every feature of `paictl lsp` through a real client: diagnostics on open and change, hover, code actions,
completion, go to definition, settings, marketplace items; `paictl fix` making the same change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

if not os.environ.get("CI"):  # CI installs the `test` extra: there a missing pytest-lsp fails loudly
    pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (it is in the `test` extra)")

from lsprotocol import types as lsp  # noqa: E402

from lspclient import apply_text_edits, change_document, diagnostics_of, open_document  # noqa: E402
from lspfixtures import client, jobset_client  # noqa: E402,F401 - fixtures


pytestmark = pytest.mark.asyncio(loop_scope="module")

MISSPELT = textwrap.dedent("""\
    # yaml-language-server: $schema=../schemas/job.schema.json
    protocolVersion: 2
    name: held-out   # a comment that must survive
    type: job
    prerequisites:
      - name: trainer_image      # the image
        type: dockerimage
        uri: "python:3.11"
    parameters:
      epochs: 3
    taskRoles:
      learner:
        instances: 2
        dockerImage: trainer_image
        resourcePerInstance: {cpu: 2, memoryMB: 4096, gpu: 0}
        comands:                 # misspelt
          - python train.py --epochs <% $parameters.epochs %>
    """)


def paictl(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paictl", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


async def test_misspelt_key_diagnostic_hover_and_quick_fix_make_the_job_valid(client, tmp_path):
    job = tmp_path / "held-out.yaml"
    job.write_text(MISSPELT)
    diagnostics = await open_document(client, job)

    # The same diagnostic as `paictl validate`: code, severity, line and column.
    validate = paictl("validate", "-o", "json", str(job))
    expected = json.loads(validate.stdout)["results"][0]["diagnostics"]
    # The misspelt key, and the required key it leaves missing.
    assert [(d.code, d.range.start.line + 1, d.range.start.character + 1, d.message.split("\n")[0])
            for d in diagnostics] == [(e["code"], e["line"], e["column"], e["message"]) for e in expected]
    assert [d.code for d in diagnostics] == ["E201", "E202"]
    diagnostic = diagnostics[1]
    assert diagnostic.range.start.line == 15 and diagnostic.range.end.character == 11
    assert diagnostic.severity == lsp.DiagnosticSeverity.Error and diagnostic.source == "paictl"
    assert diagnostic.code_description is not None and "diagnostic-codes" in diagnostic.code_description.href

    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=job.as_uri()), position=lsp.Position(line=15, character=6)))
    assert hover is not None
    assert "E202" in hover.contents.value and "did you mean 'commands'?" in hover.contents.value
    assert "OpenPAI refuses the job" in hover.contents.value  # `paictl explain E202`'s explanation

    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=job.as_uri()), range=diagnostic.range,
        context=lsp.CodeActionContext(diagnostics=[diagnostic])))
    quick = [a for a in actions if a.kind == lsp.CodeActionKind.QuickFix]
    assert [a.title for a in quick] == ["Replace with 'commands' (E202)"]
    fixed = apply_text_edits(MISSPELT, quick[0].edit.changes[job.as_uri()])
    # The missing key it leaves is offered too, as a skeleton to fill in (not preferred: the rename is the fix).
    skeleton = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=job.as_uri()), range=diagnostics[0].range,
        context=lsp.CodeActionContext(diagnostics=[diagnostics[0]])))
    assert [(a.title, a.is_preferred) for a in skeleton] == [("Add the required key 'commands' (E201)", False)]
    assert skeleton[0].edit.changes[job.as_uri()][0].new_text == "\n    commands: [TODO]"
    assert fixed.replace("commands:", "comands:", 1) == MISSPELT  # only the key changed
    job.write_text(fixed)
    assert paictl("validate", str(job)).returncode == 0

    # `paictl fix` makes the same change and keeps every comment.
    other = tmp_path / "fix-me.yaml"
    other.write_text(MISSPELT)
    done = paictl("fix", str(other))
    assert done.returncode == 0, done.stdout + done.stderr
    assert other.read_text() == fixed
    assert [line for line in other.read_text().splitlines() if "#" in line] == \
        [line.replace("comands", "commands") for line in MISSPELT.splitlines() if "#" in line]


async def test_diagnostics_follow_changes(client, tmp_path):
    job = tmp_path / "changing.yaml"
    text = MISSPELT.replace("comands", "commands")
    assert await open_document(client, job, text) == []
    uri = job.as_uri()
    # Type a retry count while gang allocation is on (the default): W405, a semantic check, not the schema's.
    insert = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(start=lsp.Position(line=13, character=0), end=lsp.Position(line=13, character=0)),
        text="    taskRetryCount: 2\n")
    diagnostics = await change_document(client, uri, 2, [insert])
    assert [(d.code, d.range.start.line, d.severity) for d in diagnostics] == \
        [("W405", 13, lsp.DiagnosticSeverity.Warning)]
    # Misspell a placeholder: W401 underlines the placeholder, and its quick fix renames it back.
    line = 17
    old = "<% $parameters.epochs %>"
    start = text.splitlines()[line - 1].index(old)
    change = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(start=lsp.Position(line=line, character=start + 15),
                        end=lsp.Position(line=line, character=start + 21)), text="epoch")
    diagnostics = await change_document(client, uri, 3, [change])
    w401 = [d for d in diagnostics if d.code == "W401"]
    assert w401 and w401[0].range.start == lsp.Position(line=line, character=start)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=w401[0].range,
        context=lsp.CodeActionContext(diagnostics=w401)))
    rename = [a for a in actions if "W401" in a.title]
    assert rename and rename[0].title == "Replace with 'epochs' (W401)"
    edit = rename[0].edit.changes[uri][0]
    assert (edit.range.start.character, edit.range.end.character, edit.new_text) == (start + 15, start + 20, "epochs")
    # Saving checks again (files an item names may have changed on disk); closing clears the diagnostics.
    client.diagnostics.pop(uri)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert [d.code for d in await diagnostics_of(client, uri)] == [d.code for d in diagnostics]
    client.diagnostics.pop(uri)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert await diagnostics_of(client, uri) == []


async def test_fix_all_source_action_applies_every_safe_fix(client, tmp_path):
    text = textwrap.dedent("""\
        protocolVersion: 2
        name: many
        type: job
        prerequisites:
          - {name: img, type: dockerimage, uri: ubuntu}
        taskRoles:
          main:
            dockerImage: imgg          # near miss
            resourcePerInstance: {cpu: 1, memoryMB: 512}
            comands: [echo hi]
        """)
    job = tmp_path / "many.yaml"
    diagnostics = await open_document(client, job, text)
    assert sorted(d.code for d in diagnostics) == ["E201", "E201", "E202", "E304"]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=job.as_uri()),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
        context=lsp.CodeActionContext(diagnostics=[], only=["source.fixAll"])))
    (fix_all,) = actions
    fixed = apply_text_edits(text, fix_all.edit.changes[job.as_uri()])
    assert "dockerImage: img          # near miss" in fixed and "{cpu: 1, memoryMB: 512, gpu: 0}" in fixed
    job.write_text(fixed)
    assert paictl("validate", str(job)).returncode == 0


async def test_completion_keys_placeholders_and_prerequisite_names(client, tmp_path):
    job = tmp_path / "complete.yaml"
    text = MISSPELT.replace("comands", "commands")
    await open_document(client, job, text)
    uri = job.as_uri()

    async def labels(line: int, character: int) -> list[str]:
        result = await client.text_document_completion_async(lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=character)))
        return [item.label for item in result.items]

    # A task role's keys, minus those it already has.
    keys = await labels(12, 4)
    assert "taskRetryCount" in keys and "extraContainerOptions" in keys and "instances" not in keys
    # Top-level keys.
    assert "deployments" in await labels(4, 0)
    # A prerequisite's keys (the union of the four kinds), minus name, type and uri, which it has.
    prerequisite_keys = set(await labels(6, 4))
    assert "auth" in prerequisite_keys and not {"name", "type", "uri"} & prerequisite_keys
    # dockerImage names a dockerimage prerequisite.
    assert await labels(13, len("    dockerImage: ")) == ["trainer_image"]
    # Inside <% %>: the roots, then the parameters.
    line = text.splitlines()[16]
    at = line.index("$parameters.") + len("$parameters.")
    assert await labels(16, at) == ["epochs"]
    assert "$secrets" in await labels(16, line.index("$parameters"))
    # `type:` of the job offers the schema's one value.
    assert await labels(3, len("type: ")) == ["job"]


async def test_definition_of_references(client, tmp_path):
    job = tmp_path / "definition.yaml"
    text = MISSPELT.replace("comands", "commands")
    await open_document(client, job, text)
    uri = job.as_uri()

    async def target(line: int, character: int):
        return await client.text_document_definition_async(lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=character)))

    image = await target(13, 20)
    assert image.uri == uri and image.range.start.line == 5  # `- name: trainer_image`
    parameter = await target(16, text.splitlines()[16].index("epochs %>") + 2)
    assert parameter.range.start == lsp.Position(line=9, character=2)  # `  epochs: 3`
    assert await target(2, 8) is None  # a plain value names nothing


async def test_key_hover_shows_the_schema_description(client, tmp_path):
    job = tmp_path / "hover.yaml"
    await open_document(client, job, MISSPELT.replace("comands", "commands"))
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=job.as_uri()), position=lsp.Position(line=13, character=6)))
    assert "NAME of a top-level prerequisite of type dockerimage" in hover.contents.value


async def test_marketplace_item_inline_job(client, tmp_path):
    item = tmp_path / "item.yaml"
    text = textwrap.dedent("""\
        name: demo-item
        author: alice
        type: template
        protocol:
          protocolVersion: 2
          name: demo
          type: job
          prerequisites:
            - {name: img, type: dockerimage, uri: ubuntu}
          taskRoles:
            main:
              dockerImage: img
              resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
              commands: [echo hi]
              instancess: 1

        """)
    diagnostics = await open_document(client, item, text)
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("E202", 14)]
    # At the item's root, the item schema's keys (those it has left out); inside its job, the job's.
    completions = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=item.as_uri()), position=lsp.Position(line=15, character=0)))
    labels = {entry.label for entry in completions.items}
    assert "isPublic" in labels and "author" not in labels and "taskRoles" not in labels
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=item.as_uri()), range=diagnostics[0].range,
        context=lsp.CodeActionContext(diagnostics=diagnostics)))
    fixed = apply_text_edits(text, actions[0].edit.changes[item.as_uri()])
    assert "      instances: 1\n" in fixed


async def test_other_yaml_is_left_alone(client, tmp_path):
    manifest = tmp_path / "deployment.yaml"
    diagnostics = await open_document(client, manifest, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
    assert diagnostics == []


async def test_target_setting_adds_the_targets_warnings(jobset_client, tmp_path):
    job = tmp_path / "jobset.yaml"
    text = MISSPELT.replace("comands", "commands").replace(
        "    instances: 2\n", "    instances: 2\n    completion: {minFailedInstances: 2}\n")
    diagnostics = await open_document(jobset_client, job, text)
    assert "W901" in [d.code for d in diagnostics]
    # The editor switches to the Framework target: JobSet's warning goes.
    jobset_client.diagnostics.pop(job.as_uri())
    jobset_client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"paictl": {"target": "framework"}}))
    assert "W901" not in [d.code for d in await diagnostics_of(jobset_client, job.as_uri())]
    # A client that only says "changed" is asked for its `paictl` settings (workspace/configuration).
    jobset_client.set_configuration({"target": "jobset"}, section="paictl")
    jobset_client.diagnostics.pop(job.as_uri())
    jobset_client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    assert "W901" in [d.code for d in await diagnostics_of(jobset_client, job.as_uri())]


SCRIPTED = textwrap.dedent("""\
    protocolVersion: 2
    name: scripted
    type: job
    prerequisites:
      - {name: img, type: dockerimage, uri: ubuntu}
      - name: prep
        type: script
        uri: https://example.com/prep.sh
        entry: prep.sh
    secrets: {token: hunter2-secret-value}
    taskRoles:
      main:
        dockerImage: img
        script: prep
        resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
        commands:
          - bash <% $script.entry %> <% $secrets.token %>
    deployments:
      - name: dep
        taskRoles:
          main:
            preCommands: [echo pre]
    defaults:
      deployment: dep
    """)


async def test_script_fields_secrets_and_deployments(client, tmp_path):
    job = tmp_path / "scripted.yaml"
    assert await open_document(client, job, SCRIPTED) == []
    uri = job.as_uri()
    lines = SCRIPTED.splitlines()

    async def labels(line: int, character: int):
        result = await client.text_document_completion_async(lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=character)))
        return result.items

    async def target(line: int, character: int):
        return await client.text_document_definition_async(lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=character)))

    command = lines[16]
    # `$script.` lists the fields of the role's script prerequisite.
    fields = [item.label for item in await labels(16, command.index("$script.") + len("$script."))]
    assert {"name", "type", "uri", "entry"} <= set(fields)
    # `$secrets.` lists the names, never the values.
    secrets = await labels(16, command.index("$secrets.") + len("$secrets."))
    assert [item.label for item in secrets] == ["token"]
    assert "hunter2" not in repr(secrets)
    # `script: ` offers only script prerequisites.
    assert [item.label for item in await labels(13, len("    script: "))] == ["prep"]
    # Hover on a placeholder: what it renders to; a secret's value never.
    async def hover(line: int, character: int) -> str:
        found = await client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=line, character=character)))
        return found.contents.value

    assert '`$script.entry`: `"prep.sh"`' in await hover(16, command.index("entry"))
    secret = await hover(16, command.index("token"))
    assert "a secret" in secret and "hunter2" not in secret
    # Definitions: the script field, the script prerequisite, the deployment, a deployment's task role.
    field = await target(16, command.index("entry"))
    assert field.range.start.line == 8  # `    entry: prep.sh`
    assert (await target(13, len("    script: p"))).range.start.line == 5
    assert (await target(23, len("  deployment: d"))).range.start.line == 18
    assert (await target(20, 7)).range.start.line == 11  # deployments[0].taskRoles.main -> taskRoles.main
    # Under a deployment's taskRoles (and HiveD's), the job's task role names not set there yet.
    two = SCRIPTED.replace("taskRoles:\n  main:\n", "taskRoles:\n  other:\n    dockerImage: img\n    resourcePerInstance: "
                           "{cpu: 1, memoryMB: 512, gpu: 0}\n    commands: [echo]\n  main:\n", 1)
    two = two.replace("        preCommands: [echo pre]\n", "        preCommands: [echo pre]\n\n")
    job2 = tmp_path / "two.yaml"
    await open_document(client, job2, two)
    blank = two.splitlines().index("", 20)
    result = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=job2.as_uri()), position=lsp.Position(line=blank, character=6)))
    assert [item.label for item in result.items] == ["other"]
