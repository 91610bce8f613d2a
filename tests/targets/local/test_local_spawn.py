"""Starting a task: posix_spawn where it can, with what subprocess.Popen would give the task (runtime.Spawner)."""

from __future__ import annotations

import os
import sys

from paictl.targets.local.runtime import SpawnedTask, Spawner
from docker_engine import no_docker_engine  # noqa: F401 - autouse: these runs take the host runtime

PROBE = ("import os, sys; print(os.environ['PAI_X'], os.getsid(0) == os.getpid(), sys.stdin.read() == '', "
         "sorted(int(f) for f in os.listdir('/proc/self/fd'))); print('to stderr', file=sys.stderr)")


def run(tmp_path, work_dir: str):
    leaked_read, leaked_write = os.pipe()
    os.set_inheritable(leaked_write, True)  # a descriptor this process holds without close-on-exec
    try:
        spawner = Spawner(work_dir, os.environ.get("PATH", os.defpath))
        log = tmp_path / "task.log"
        with open(log, "ab") as handle:
            process = spawner.spawn([sys.executable, "-c", PROBE], {**os.environ, "PAI_X": "42"}, handle.fileno())
        assert process.wait() == 0 and process.poll() == 0 and process.returncode == 0
        return type(process), log.read_text().splitlines()
    finally:
        os.close(leaked_read)
        os.close(leaked_write)


def test_posix_spawn_gives_what_popen_gives(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kind, lines = run(tmp_path, str(tmp_path))
    assert kind is SpawnedTask
    value, new_session, empty_stdin, descriptors = lines[0].split(" ", 3)
    assert (value, new_session, empty_stdin) == ("42", "True", "True")
    assert [fd for fd in eval(descriptors) if fd > 2] in ([], [3])  # at most the probe's own listdir handle
    assert lines[1] == "to stderr"


def test_another_working_directory_falls_back_to_popen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    kind, lines = run(tmp_path, str(other))
    assert kind is not SpawnedTask
    assert lines[0].startswith("42 True True ") and lines[1] == "to stderr"


def test_exit_status_and_signals_read_as_popen_reads_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spawner = Spawner(str(tmp_path), os.environ.get("PATH", os.defpath))
    with open(tmp_path / "log", "ab") as log:
        failed = spawner.spawn(["sh", "-c", "exit 3"], dict(os.environ), log.fileno())
        killed = spawner.spawn(["sh", "-c", "kill -9 $$"], dict(os.environ), log.fileno())
    assert failed.wait() == 3 and killed.wait() == -9


def test_sigpipe_is_not_left_ignored(tmp_path, monkeypatch):
    """This process ignores SIGPIPE (Python does); a task must not inherit that, or `yes | head` never ends."""
    monkeypatch.chdir(tmp_path)
    spawner = Spawner(str(tmp_path), os.environ.get("PATH", os.defpath))
    with open(tmp_path / "log", "ab") as log:
        process = spawner.spawn(["grep", "SigIgn", "/proc/self/status"], dict(os.environ), log.fileno())
    assert isinstance(process, SpawnedTask) and process.wait() == 0
    ignored = int((tmp_path / "log").read_text().split()[1], 16)
    assert not ignored & (1 << (13 - 1))  # SIGPIPE is signal 13


def test_an_environment_already_encoded_reaches_the_task_as_it_is(tmp_path, monkeypatch):
    """The runner encodes the shared environment once and passes bytes; both ways of starting take them."""
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    env = {b"PATH": os.environ.get("PATH", os.defpath).encode(),
           b"PAI_X": "café \udcff".encode("utf-8", "surrogateescape")}
    for work_dir in (tmp_path, other):  # posix_spawn here, Popen in another directory
        spawner = Spawner(str(work_dir), os.environ.get("PATH", os.defpath))
        with open(tmp_path / "log", "wb") as log:
            process = spawner.spawn(["sh", "-c", 'printf %s "$PAI_X"'], env, log.fileno())
        assert process.wait() == 0 and isinstance(process, SpawnedTask) == (work_dir == tmp_path)
        assert (tmp_path / "log").read_bytes() == env[b"PAI_X"]
