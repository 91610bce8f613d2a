"""Item files: the examples and every upstream marketplace job validate; broken items get located diagnostics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import corpus_files, needs_corpus
from marketplace_helpers import EXAMPLE_ITEMS, VALID_JOB, write_item

from paictl.marketplace.checking import check_item_file
from paictl.protocol import validate_file

EXAMPLES = sorted(p for p in EXAMPLE_ITEMS.rglob("*.yaml") if p.name != "job.yaml")
UPSTREAM_MARKETPLACE_JOBS = [p for p in corpus_files("valid") if p.name.startswith("openpaimarketplace__")]


def located(path: Path) -> list[tuple[str, int | None, int | None, str]]:
    return [(d.code, d.line, d.column, Path(d.file).name) for d in check_item_file(path).result.diagnostics]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_items_are_clean(example, run_cli):
    assert check_item_file(example).result.diagnostics == ()
    assert check_item_file(example).item is not None
    code, out, err = run_cli("marketplace", "validate", "--strict", str(example))
    assert (code, out.strip(), err) == (0, "1 file valid", "")


def test_paictl_validate_recognises_items_and_jobs_in_one_folder(run_cli):
    code, out, _ = run_cli("validate", "--strict", str(EXAMPLE_ITEMS))
    assert code == 0
    assert out.strip() == f"{len(list(EXAMPLE_ITEMS.rglob('*.yaml')))} files valid"


@needs_corpus
@pytest.mark.parametrize("job", UPSTREAM_MARKETPLACE_JOBS, ids=lambda p: p.stem.removeprefix("openpaimarketplace__"))
def test_every_upstream_marketplace_job_wrapped_into_an_item_validates(job, tmp_path):
    """Three ways of embedding it; the item gets exactly the job's own diagnostics, moved to where the job sits."""
    text = job.read_text(encoding="utf-8")
    alone = validate_file(job)
    assert alone.ok
    expected = [(d.code, d.line, d.column) for d in alone.diagnostics]

    (tmp_path / "job.yaml").write_text(text, encoding="utf-8")
    by_file = tmp_path / "by-file.yaml"
    by_file.write_text("name: wrapped\nauthor: alice\ntype: template\nprotocol: {file: job.yaml}\n", encoding="utf-8")
    as_text = write_item(tmp_path, "wrapped", protocol=text, file_name="as-text.yaml")
    header_lines = 5  # name, author, type, summary, `protocol: |`
    as_mapping = tmp_path / "as-mapping.yaml"
    as_mapping.write_text("name: wrapped\nauthor: alice\ntype: template\nprotocol:\n" + textwrap.indent(text, "  "),
                          encoding="utf-8")

    for item in (by_file, as_text, as_mapping):
        check = check_item_file(item)
        assert check.result.ok, [d.message for d in check.result.errors]
        assert check.item is not None and validate_file_text_ok(check.item.protocol)
    assert [(d.code, d.line, d.column) for d in check_item_file(by_file).result.diagnostics] == expected
    assert {Path(d.file).name for d in check_item_file(by_file).result.diagnostics} <= {"job.yaml"}
    assert [(d.code, d.line, d.column) for d in check_item_file(as_text).result.diagnostics] == [
        (code, line + header_lines, column + 2) for code, line, column in expected]
    assert [d.code for d in check_item_file(as_mapping).result.diagnostics] == [code for code, _, _ in expected]


def validate_file_text_ok(text: str) -> bool:
    from paictl.protocol import validate_text

    return validate_text(text, "<packed>").ok


def test_bad_item_keys_are_located(tmp_path):
    item = write_item(tmp_path, extra="tagz: [a]\nisPublic: yes please\nsource: github\n")
    assert located(item) == [("E202", 5, 1, "item.yaml"), ("E203", 6, 11, "item.yaml"), ("E204", 7, 9, "item.yaml")]
    messages = [d.message for d in check_item_file(item).result.diagnostics]
    assert messages[0] == "unknown key 'tagz' in the item; did you mean 'tags'?"
    assert check_item_file(item).item is None


def test_missing_keys_and_data_items(tmp_path):
    item = tmp_path / "item.yaml"
    item.write_text("author: alice\ntype: data\nprotocol: {file: job.yaml}\n", encoding="utf-8")
    (tmp_path / "job.yaml").write_text(VALID_JOB, encoding="utf-8")
    found = check_item_file(item).result.diagnostics
    assert sorted((d.code, d.message) for d in found) == [
        ("E201", "the item is missing the required key 'dataType'"),
        ("E201", "the item is missing the required key 'dataUrl'"),
        ("E201", "the item is missing the required key 'name'"),
    ]
    hints = {d.message.split("'")[1]: d.hint for d in found}
    assert all(d.line == 1 for d in found) and hints["name"].startswith("add `name:")


def test_bad_protocol_as_yaml_text_is_located_in_the_item_file(tmp_path):
    broken = VALID_JOB.replace("instances: 1", "instances: one").replace("dockerImage: base", "dockerImage: nope")
    item = write_item(tmp_path, protocol=broken)
    lines = item.read_text().splitlines()
    found = check_item_file(item).result.diagnostics
    assert [(d.code, d.line, d.column) for d in found] == [("E203", 15, 18), ("E304", 16, 20)]
    assert lines[14][found[0].column - 1:].startswith("one") and lines[15][found[1].column - 1:].startswith("nope")
    assert found[0].pointer == "/protocol/taskRoles/main/instances"
    assert found[0].source_line == lines[14]


def test_bad_protocol_as_a_mapping_is_located_in_the_item_file(tmp_path):
    item = tmp_path / "item.yaml"
    item.write_text("name: x\nauthor: alice\ntype: template\nprotocol:\n  protocolVersion: 2\n  name: y\n"
                    "  type: job\n  taskrole: {}\n", encoding="utf-8")
    found = check_item_file(item).result.diagnostics
    assert [(d.code, d.line, d.column, d.pointer) for d in found] == [
        ("E201", 4, 1, "/protocol"), ("E202", 8, 3, "/protocol/taskrole")]
    assert "did you mean 'taskRoles'" in found[1].message


def test_bad_protocol_file_is_located_in_that_file(tmp_path, run_cli):
    (tmp_path / "job.yaml").write_text(VALID_JOB.replace("gpu: 0", "gpu: -1").replace("type: job", "type: jobb"))
    item = tmp_path / "item.yaml"
    item.write_text("name: x\nauthor: alice\ntype: template\nprotocol: {file: job.yaml}\n", encoding="utf-8")
    assert located(item) == [("E204", 3, 7, "job.yaml"), ("W207", 12, 55, "job.yaml")]
    code, out, _ = run_cli("validate", str(item))
    assert code == 1 and out.startswith(f"{tmp_path / 'job.yaml'}:3:7: error[E204]")


def test_protocol_text_written_as_a_quoted_string_points_at_the_value(tmp_path):
    item = tmp_path / "item.yaml"
    item.write_text('name: x\nauthor: alice\ntype: template\nprotocol: "protocolVersion: 2\\nname: y\\ntype: job\\n'
                    'taskRoles: {a: {instances: 1, dockerImage: i, resourcePerInstance: {cpu: 1, memoryMB: 1, '
                    'gpu: 0}, commands: [x]}}\\n"\n', encoding="utf-8")
    (diagnostic,) = check_item_file(item).result.diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.column) == ("E304", 4, 11)
    assert diagnostic.message.endswith("(line 4 of the embedded protocol)")


def test_yaml_syntax_error_inside_the_embedded_text(tmp_path):
    item = write_item(tmp_path, protocol="protocolVersion: 2\nname: [unclosed\n")
    (diagnostic,) = check_item_file(item).result.diagnostics
    assert diagnostic.code == "E101" and diagnostic.line in (7, 8) and diagnostic.file == str(item)


@pytest.mark.parametrize("reference, code", [
    ("../outside.md", "E881"),
    ("/etc/hostname", "E881"),
    ("link-out.md", "E881"),
    ("linked-dir/outside.md", "E881"),
    ("sub/../../outside.md", "E881"),
    ("missing.md", "E880"),
    ("folder", "E880"),
])
def test_files_outside_the_item_folder_or_missing_are_refused(tmp_path, reference, code, run_cli):
    (tmp_path / "outside.md").write_text("secret\n")
    folder = tmp_path / "item"
    (folder / "folder").mkdir(parents=True)
    (folder / "sub").mkdir()
    os.symlink(tmp_path / "outside.md", folder / "link-out.md")
    os.symlink(tmp_path, folder / "linked-dir")
    item = write_item(folder, extra=f"description: {{file: {json.dumps(reference)}}}\n")
    found = check_item_file(item).result.diagnostics
    assert [(d.code, d.line, d.pointer) for d in found] == [(code, 5, "/description/file")]
    assert check_item_file(item).item is None
    code_, out, _ = run_cli("marketplace", "pack", str(item))
    assert code_ == 1 and out == ""


def test_a_fifo_or_an_oversized_file_is_refused_without_reading_it(tmp_path):
    os.mkfifo(tmp_path / "pipe.yaml")  # reading it would block forever
    with open(tmp_path / "huge.md", "wb") as huge:
        huge.truncate(3 * 1024 * 1024)
    item = write_item(tmp_path, extra="description: {file: huge.md}\n", protocol=None)
    item.write_text(item.read_text().split("protocol: |")[0] + "protocol: {file: pipe.yaml}\n")
    found = check_item_file(item).result.diagnostics
    assert [(d.code, d.pointer) for d in found] == [("E880", "/description/file"), ("E880", "/protocol/file")]
    assert "the limit is 2097152 bytes" in found[0].message and "not a regular file" in found[1].message


def test_a_symlink_that_stays_inside_is_fine(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "readme.md").write_text("# Hello\n")
    os.symlink(tmp_path / "docs" / "readme.md", tmp_path / "readme.md")
    item = write_item(tmp_path, extra="description: {file: readme.md}\n")
    check = check_item_file(item)
    assert check.result.diagnostics == () and check.item.description == "# Hello\n"


def test_visibility_rules(tmp_path):
    both = write_item(tmp_path / "a", extra="isPublic: true\nisPrivate: true\n")
    assert [d.code for d in check_item_file(both).result.diagnostics] == ["E882"]
    dropped = write_item(tmp_path / "b", extra="groupList: [team]\n")
    assert [(d.code, d.line) for d in check_item_file(dropped).result.diagnostics] == [("W880", 5)]
    assert check_item_file(dropped).item.group_list == ()
    groups_only = write_item(tmp_path / "c", extra="isPublic: false\ngroupList: [team]\n")
    check = check_item_file(groups_only)
    assert [d.code for d in check.result.diagnostics] == ["W881"]
    assert (check.item.is_public, check.item.is_private, check.item.group_list) == (False, False, ("team",))
    private = write_item(tmp_path / "d", extra="isPrivate: true\n")
    assert (check_item_file(private).item.is_public, check_item_file(private).item.is_private) == (False, True)


def test_json_output_of_validate_names_the_item_file(tmp_path, run_cli):
    item = write_item(tmp_path, extra="tagz: [a]\n")
    code, out, _ = run_cli("validate", "--format", "json", str(item))
    (record,) = json.loads(out)["results"]
    assert code == 1 and record["valid"] is False and record["file"] == str(item)
    assert [(d["code"], d["line"]) for d in record["diagnostics"]] == [("E202", 5)]


def test_marketplace_validate_refuses_a_plain_job(run_cli):
    code, out, _ = run_cli("marketplace", "validate", str(EXAMPLE_ITEMS / "text-classifier" / "job.yaml"))
    assert code == 1 and "not a marketplace item" in out


def test_validating_a_job_imports_no_marketplace_code():
    # reported from an atexit handler: the console script ends with os._exit once those have run
    probe = ("import atexit, sys, runpy; sys.argv = ['paictl', 'validate', '--quiet', sys.argv[1]]\n"
             "atexit.register(lambda: print('loaded:', ','.join(sorted(m for m in sys.modules\n"
             "                if m.startswith('paictl.marketplace') or m == 'httpx'))))\n"
             "runpy.run_module('paictl', run_name='__main__')\n")
    job = EXAMPLE_ITEMS.parent / "hello-world.yaml"
    done = subprocess.run([sys.executable, "-c", probe, str(job)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, ["loaded:"]), done.stdout + done.stderr
    broken = subprocess.run([sys.executable, "-c", probe, "-"], input="protocolVersion: 2\nname: x\n",
                            capture_output=True, text=True, timeout=60)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert broken.stdout.splitlines()[-1] == "loaded: paictl.marketplace,paictl.marketplace.shape", broken.stdout


def test_the_item_schema_is_a_valid_draft_2020_12_schema(run_cli):
    import jsonschema

    from paictl.schemas import load_schema

    jsonschema.Draft202012Validator.check_schema(load_schema("marketplace-item"))
    code, out, _ = run_cli("schema", "marketplace-item")
    assert code == 0 and json.loads(out)["required"] == ["name", "author", "type", "protocol"]
