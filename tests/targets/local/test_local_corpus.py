"""Running upstream corpus jobs locally, and the runner's stop escalation, in process (no CLI start-up cost).

"Shell only" (the jobs that can run with no image): every command word of every task role's rendered entrypoint is
a bash builtin or keyword, or one of a few coreutils present on this machine (SHELL_TOOLS); no interpreter, no
network tool (wget, git, pip...), no script path. Variable assignments before a command are skipped. A job whose
entrypoint cannot be tokenised is not shell only.

What such a job's verdict must be is decided independently of paictl: each task's entrypoint is run directly with
`bash -o errexit -o nounset -o pipefail -c` and the same static PAI_* variables, for a few seconds. Every task
exiting 0 means the job succeeds; a task exiting non-zero means it fails with that task's exit code (these jobs keep
the default minFailedInstances 1); a task still running at the deadline (`sleep infinity`) means the local run is
still running at its deadline too, and stopping it gives a stopped verdict.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time

import pytest

from conftest import corpus_files, needs_corpus
from paictl.compiler.exit_rules import load_rule_set
from paictl.compiler.profiles import load_profile
from paictl.protocol import load_job
from paictl.targets.local.target import compile_local
from paictl.targets.local.runner import LocalRunner
from paictl.targets.local.store import prepare_run
from paictl.targets.states import JobState
from docker_engine import no_docker_engine  # noqa: F401 - autouse: these runs take the host runtime

BASH_WORDS = set("""alias bg break builtin cd command continue declare echo eval exec exit export false getopts hash
kill let local printf pwd read readonly return set shift shopt source test trap true type typeset ulimit umask unset
wait if then else elif fi for in do done while until case esac function time [ [[ ]] ] { } !""".split())
SHELL_TOOLS = set("cat ls mkdir rm cp mv env printenv sleep date hostname grep sort head tail wc tr seq touch "
                  "basename dirname uname whoami nproc".split())
_OPERATORS = set(";&|()\n")
#: Seconds a shell-only job may run before it counts as "never ends" (both for bash alone and for paictl).
DEADLINE = 2.0


def command_words(script: str) -> list[str] | None:
    """The first word of every simple command, or None if the text cannot be tokenised."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|()")
    lexer.whitespace = " \t\r"
    lexer.commenters = "#"
    words, first = [], True
    try:
        for token in lexer:
            if set(token) <= _OPERATORS:
                first = True
            elif first:
                if "=" in token and token.split("=", 1)[0].isidentifier():
                    continue
                words.append(token)
                first = token in ("if", "then", "else", "elif", "do", "while", "until", "!", "time", "{")
    except ValueError:
        return None
    return words


def is_shell_only(plan: dict) -> bool:
    for role in plan["spec"]["taskRoles"]:
        words = command_words(role["command"][-2])
        if words is None or any(w not in BASH_WORDS and not (w in SHELL_TOOLS and shutil.which(w)) for w in words):
            return False
    return True


def _plans():
    profile = load_profile("default")
    return [(path.name, compile_local(load_job(str(path)), profile)[0]) for path in corpus_files("valid")]


SHELL_ONLY = [pytest.param(plan, id=name) for name, plan in _plans() if is_shell_only(plan)]


def test_the_criterion_selects_what_it_should():
    assert command_words("A=1 echo hi && sleep 2 | wc -l; if true; then ls; fi") == \
        ["echo", "sleep", "wc", "if", "true", "then", "ls", "fi"]
    assert command_words("echo 'unterminated") is None
    assert not is_shell_only({"spec": {"taskRoles": [{"command": ["bash", "-c", "wget x && echo", "t"]}]}})


def start_oracle(plan: dict, cwd) -> dict[tuple[str, int], subprocess.Popen]:
    """Every task's entrypoint under plain bash, started now (alongside paictl's run, to save time)."""
    processes = {}
    for role in plan["spec"]["taskRoles"]:
        for task in role["tasks"]:
            env = {**os.environ, **plan["spec"]["env"], **task["env"]}
            processes[(role["name"], task["index"])] = subprocess.Popen(
                role["command"], env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
    return processes


def oracle_codes(processes: dict, deadline: float) -> dict[tuple[str, int], int | None]:
    """Each task's exit status under plain bash (None: still running at the deadline)."""
    while time.monotonic() < deadline and any(p.poll() is None for p in processes.values()):
        time.sleep(0.05)
    codes = {key: p.poll() for key, p in processes.items()}
    for process in processes.values():
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()
    return codes


@needs_corpus
@pytest.mark.parametrize("plan", SHELL_ONLY)
def test_shell_only_corpus_jobs_run_to_the_verdict_their_commands_imply(plan, tmp_path):
    (tmp_path / "oracle").mkdir()
    deadline = time.monotonic() + DEADLINE
    bash_alone = start_oracle(plan, tmp_path / "oracle")
    folder, lock = prepare_run(tmp_path / "runs", plan["metadata"]["name"], plan)
    (tmp_path / "work").mkdir()
    runner = LocalRunner(folder, plan, secrets={}, rules=load_rule_set(), work_dir=str(tmp_path / "work"),
                         grace_seconds=1, lock=lock)
    view = None
    try:
        for view in runner.views():
            if view.state.is_final or time.monotonic() > deadline:
                break
    finally:
        if not view.state.is_final:
            view = runner.interrupt("test deadline")
        runner.close()
    expected = oracle_codes(bash_alone, deadline)
    codes = {(t.role, t.index): t.exit_code for t in view.tasks}
    if any(code not in (0, None) for code in expected.values()):
        failed = {key for key, code in expected.items() if code not in (0, None)}
        assert view.state is JobState.FAILED and view.triggered_by in failed
        assert codes[view.triggered_by] == expected[view.triggered_by]
    elif None in expected.values():
        assert view.state is JobState.STOPPED and view.completion_code == -210
    else:
        assert view.state is JobState.SUCCEEDED and set(codes.values()) == {0}


def test_the_corpus_has_shell_only_jobs_of_every_verdict():
    """The criterion is not vacuous: echo jobs, `sleep infinity` jobs and upstream's `sleep infinty` typo."""
    if not SHELL_ONLY:
        pytest.skip("no corpus")
    scripts = " ".join(p.values[0]["spec"]["taskRoles"][0]["command"][-2] for p in SHELL_ONLY)
    assert "echo" in scripts and "sleep infinity" in scripts and "sleep infinty" in scripts


# -- stopping: SIGTERM, the grace period, SIGKILL -------------------------------------------------------------------

RESOURCES = {"cpu": 1, "memoryMB": 1, "gpu": 0}


def test_a_task_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path):
    from paictl.protocol import job_from_data

    job = job_from_data({
        "protocolVersion": 2, "name": "stubborn", "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "busybox"}],
        "taskRoles": {
            "polite": {"dockerImage": "img", "resourcePerInstance": RESOURCES, "commands": ["sleep 300"]},
            "stubborn": {"dockerImage": "img", "resourcePerInstance": RESOURCES,
                         "commands": ["trap '' TERM", "echo ignoring TERM", "while true; do sleep 0.1; done"]},
        }})
    plan = compile_local(job, load_profile("default"))[0]
    folder, lock = prepare_run(tmp_path, "stubborn", plan)
    runner = LocalRunner(folder, plan, secrets={}, rules=load_rule_set(), work_dir=str(tmp_path), grace_seconds=0.5,
                         lock=lock)
    views = runner.views()
    try:
        for view in views:
            if view.state is JobState.RUNNING and "ignoring TERM" in (folder / "0" / "stubborn-0.log").read_text():
                break
        final = runner.interrupt("test")
    finally:
        runner.close()
    codes = {t.role: (t.state, t.exit_code, t.diagnosis) for t in final.tasks}
    assert codes == {"polite": ("stopped", 143, "-210 StopFrameworkRequested"),
                     "stubborn": ("stopped", 137, "-210 StopFrameworkRequested")}
    assert final.state is JobState.STOPPED
