"""`paictl fix`: the hints' fixes applied in place, everything else byte for byte; --diff; exit codes; stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

JOB = textwrap.dedent("""\
    # Training job for the nightly run.
    protocolVersion: 2
    name: nightly            # keep in sync with the dashboard
    type: job
    prerequisites:
      - name: 'base'         # quoted on purpose
        type: dockerimage
        uri: "python:3.11"
    parameters: {lr: 0.1}
    taskRoles:
      trainer:
        dockerImage: bsae     # typo
        resourcePerInstance:
          cpu: 4
          memoryMB: 8192
          # gpu intentionally left out
        comands:
          - python train.py --lr <% $parameters.lr %>   # the command
    defaults:
      virtualClusterr: default
    """)

def paictl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paictl", *args], capture_output=True, text=True, input=stdin,
                          timeout=120)


def comments(text: str) -> list[str]:
    return [line[line.index("#"):] for line in text.splitlines() if "#" in line and "<%" not in line.split("#")[0]]


def test_fix_in_place_keeps_every_comment_and_is_idempotent(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    done = paictl("fix", str(job))
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = job.read_text()
    assert comments(fixed) == comments(JOB)
    # Exactly the hinted edits: the misspelt reference, key and defaults key, and the gpu the hint names.
    assert "dockerImage: base     # typo" in fixed and "    commands:\n" in fixed
    assert "  virtualCluster: default" in fixed
    # The new entry goes after the mapping's last entry, at its indentation, before the comment that follows.
    assert "      memoryMB: 8192\n      gpu: 0\n      # gpu intentionally left out\n" in fixed
    assert "- name: 'base'" in fixed and 'uri: "python:3.11"' in fixed  # quoting untouched
    assert paictl("validate", str(job)).returncode == 0
    assert "4 fixes applied in 1 file" in done.stdout
    again = paictl("fix", str(job))
    assert again.returncode == 0 and job.read_text() == fixed and "0 fixes applied in 0 files" in again.stdout


def test_diff_writes_nothing_and_exits_as_validate_would_after_fixing(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    done = paictl("fix", "--diff", str(job))
    assert job.read_text() == JOB
    assert done.returncode == 0
    assert "-    dockerImage: bsae     # typo\n+    dockerImage: base     # typo" in done.stdout
    assert "fixes to apply" in done.stderr


def test_a_diff_never_shows_a_secret_value(tmp_path):
    """The fixes touch the task role; the diff's context reaches the secrets and a registry's auth, which it shows
    as *** (as every report of a job does), and says so; `patch` still applies it (the masked lines are context)."""
    secret, password = "hunter2-the-secret", "reg-pass-0042"
    text = JOB.replace("parameters: {lr: 0.1}\n", "") + f"parameters: {{lr: 0.1}}\nsecrets:\n  token: {secret}\n"
    text = text.replace('uri: "python:3.11"', f'uri: "python:3.11"\n    auth: {{username: u, password: {password}}}')
    job = tmp_path / "job.yaml"
    job.write_text(text)
    done = paictl("fix", "--diff", str(job))
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr and password not in done.stdout + done.stderr
    assert "   token: ***\n" in done.stdout + "\n" and "password: ***" in done.stdout
    assert "secret values in the diff are shown as ***" in done.stderr
    copy = tmp_path / "copy.yaml"
    copy.write_text(text)
    subprocess.run(["patch", str(copy)], input=done.stdout + "\n", text=True, check=True, capture_output=True)
    paictl("fix", str(job))
    assert copy.read_text() == job.read_text()


def test_what_cannot_be_fixed_remains_and_exits_1(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB.replace("comands", "zzzzzz"))  # no close spelling: nothing to rename it to
    done = paictl("fix", "-o", "json", str(job))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["summary"]["invalid"] == 1
    assert {d["code"] for d in report["results"][0]["diagnostics"]} == {"E202", "E201"}
    assert {f["code"] for f in report["results"][0]["fixes"]} == {"E304", "W204", "E201"}


def test_unsafe_fixes_add_skeletons(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB.replace("comands", "zzzzzz"))
    assert paictl("fix", str(job)).returncode == 1
    assert "commands: [TODO]" not in job.read_text()
    paictl("fix", "--unsafe-fixes", str(job))
    assert "commands: [TODO]" in job.read_text()


def test_unsafe_fixes_never_call_made_up_values_valid(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("protocolVersion: 2\nname: demo\ntype: job\nprerequisites:\n  - {type: dockerimage, name: img, "
                   "uri: 'python:3.11'}\ntaskRoles:\n  train:\n    dockerImage: img\n"
                   "    resourcePerInstance: {gpu: 1}\n")
    done = paictl("fix", "--unsafe-fixes", str(job))
    # The file now passes the checks, but with values nobody chose: the report names them, never says "valid"
    # alone, and exits 1.
    assert "cpu: 0" in job.read_text() and "commands: [TODO]" in job.read_text()
    assert done.returncode == 1, done.stdout
    assert "train.commands: [TODO] was made up by --unsafe-fixes" in done.stdout
    assert "train.resourcePerInstance.cpu: 0 was made up by --unsafe-fixes" in done.stdout
    assert done.stdout.endswith("remaining: 3 made-up values to replace in 1 file; the checks: 1 file valid\n")
    again = paictl("fix", "--unsafe-fixes", "-o", "json", str(job))
    assert again.returncode == 0
    assert json.loads(again.stdout)["results"][0]["made_up"] == []  # nothing made up by this run


def test_stdin_prints_the_fixed_text_exactly(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB.removesuffix("\n"))  # no final newline: none is added
    paictl("fix", str(job))
    done = paictl("fix", "-", "--stdin-name", "job.yaml", stdin=JOB.removesuffix("\n"))
    assert done.returncode == 0
    assert done.stdout == job.read_text() and not done.stdout.endswith("\n") and "dockerImage: base" in done.stdout
    assert "fixes applied" in done.stderr


def test_crlf_and_bom_are_kept(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_bytes(b"\xef\xbb\xbf" + JOB.replace("\n", "\r\n").encode())
    assert paictl("fix", str(job)).returncode == 0
    raw = job.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\n" not in raw.replace(b"\r\n", b"")
    assert b"dockerImage: base     # typo\r\n" in raw


def test_a_symlink_stays_a_symlink(tmp_path):
    real = tmp_path / "real.yaml"
    real.write_text(JOB)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    assert paictl("fix", str(link)).returncode == 0
    assert link.is_symlink() and "dockerImage: base" in real.read_text()


def test_a_failed_write_is_an_io_error_and_leaves_the_file_whole(tmp_path):
    """A full disk, made real: the process may write at most 100 bytes per file (RLIMIT_FSIZE; Python ignores
    SIGXFSZ, so the write fails with EFBIG), as root too."""
    import resource

    job = tmp_path / "job.yaml"
    job.write_text(JOB)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    done = subprocess.run([sys.executable, "-m", "paictl", "fix", str(job)], capture_output=True, text=True,
                          timeout=120, preexec_fn=small_files)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("paictl: error: ") and done.stderr.count("\n") == 1
    assert job.read_text() == JOB and [p.name for p in tmp_path.iterdir()] == ["job.yaml"]


def test_missing_file_and_bad_format_exit_2(tmp_path):
    assert paictl("fix", str(tmp_path / "absent.yaml")).returncode == 2
    assert paictl("fix", "-o", "xml", str(tmp_path)).returncode == 2


def test_not_yaml_is_reported_not_changed(tmp_path):
    job = tmp_path / "broken.yaml"
    job.write_text("name: [unclosed\n")
    done = paictl("fix", str(job))
    assert done.returncode == 1 and "E101" in done.stdout and job.read_text() == "name: [unclosed\n"


def test_yaml_that_is_not_a_job_is_never_changed(tmp_path):
    manifest = tmp_path / "deployment.yaml"
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nversion: 1\n"
    manifest.write_text(text)
    done = paictl("fix", str(tmp_path))
    assert manifest.read_text() == text
    assert done.returncode == 1  # validate's verdict on it, as `paictl validate` gives


# What `fix DIR` writes (issue 38): decided as black and ruff do, and kept atomic (write-then-rename).

def _fixable(folder) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "job.yaml").write_text(JOB)


def test_fix_dir_does_not_follow_a_symlink_out_of_the_folder(tmp_path):
    outside = tmp_path / "outside.yaml"
    outside.write_text(JOB)
    _fixable(tmp_path / "jobs")
    (tmp_path / "jobs" / "link.yaml").symlink_to(outside)
    done = paictl("fix", str(tmp_path / "jobs"))
    assert outside.read_text() == JOB, "a file outside the folder was rewritten"
    assert "dockerImage: base" in (tmp_path / "jobs" / "job.yaml").read_text()
    assert (tmp_path / "jobs" / "link.yaml").is_symlink()
    assert done.stderr.splitlines() == [f"paictl: warning: {tmp_path / 'jobs' / 'link.yaml'}: a symbolic link out "
                                        "of the folder searched (name the file itself to check it); skipped"]
    assert "1 entry not read" in done.stdout


def test_fix_leaves_a_read_only_file_alone_even_as_root(tmp_path):
    _fixable(tmp_path / "jobs")
    job = tmp_path / "jobs" / "job.yaml"
    job.chmod(0o444)
    done = paictl("fix", str(tmp_path / "jobs"))
    assert job.read_text() == JOB and (job.stat().st_mode & 0o777) == 0o444
    assert done.returncode == 1  # its problems remain, and are reported
    assert "read-only" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "(1 not written: see the warnings)" in done.stdout


def test_fix_does_not_split_hard_links(tmp_path):
    _fixable(tmp_path / "jobs")
    job = tmp_path / "jobs" / "job.yaml"
    other = tmp_path / "other-name.yaml"
    os.link(job, other)
    inode = job.stat().st_ino
    done = paictl("fix", str(job))
    assert job.stat().st_ino == inode == other.stat().st_ino and job.stat().st_nlink == 2
    assert job.read_text() == JOB == other.read_text()
    assert "hard links" in done.stderr and done.returncode == 1, done.stderr


def test_fix_keeps_the_mode(tmp_path):
    _fixable(tmp_path / "jobs")
    job = tmp_path / "jobs" / "job.yaml"
    job.chmod(0o640)
    assert paictl("fix", str(job)).returncode == 0
    assert "dockerImage: base" in job.read_text() and (job.stat().st_mode & 0o7777) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_root_fixing_another_users_file_leaves_it_theirs(tmp_path):
    _fixable(tmp_path / "jobs")
    job = tmp_path / "jobs" / "job.yaml"
    os.chown(job, 65534, 65534)
    job.chmod(0o664)
    assert paictl("fix", str(job)).returncode == 0
    status = job.stat()
    assert "dockerImage: base" in job.read_text()
    assert (status.st_uid, status.st_gid, status.st_mode & 0o7777) == (65534, 65534, 0o664)
