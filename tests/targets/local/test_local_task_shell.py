"""A local task's commands run in a shell of their own, as OpenPAI's user.sh runs in a process of its own: a fresh
`bash -o errexit -o nounset -o pipefail -c <commands> paictl-task` with that task's environment, nothing else.

These hold whatever way the runner starts tasks (posix_spawn now; a faster way, such as subshells forked from one
bash that already holds the shared environment, would have to pass them too): each task's shell state is that of
a fresh bash given the same environment, its `$$` is its own, its variables are its own and none leaks into another
task or into its next attempt, and `exit`, `set -e`, traps and standard input behave as in that fresh bash.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from paictl.targets.local.store import read_plan
from test_local_run import job_file, last_json, log, paictl, state

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")

#: What a shell shows of itself; run as a task and as a fresh bash, the two must print the same.
SHELL_STATE = r"""
out=$PWD/shell.$PAI_TASK_INDEX me=$BASHPID
read -r -a stat < /proc/$$/stat
{
  echo "zero=$0 argc=$# subshell=$BASH_SUBSHELL shlvl=$SHLVL opts=$- lineno=$LINENO"
  echo "own_pid=$([ "$$" = "$me" ] && echo yes)"
  echo "group_leader=$([ "${stat[4]}" = $$ ] && echo yes) session_leader=$([ "${stat[5]}" = $$ ] && echo yes)"
  fds=(/proc/$$/fd/*)  # read by this shell itself: a child's listing raced with the shell's own pipes
  echo "stdin=$(readlink /proc/$$/fd/0) descriptors=${fds[*]##*/}"
  if read -r line; then echo "read: a line"; else echo "read: end of input"; fi
  # ignored signals, the standard ones (not glibc's own); the blocked ones change while bash waits for a pipeline
  grep -E '^SigIgn' /proc/$$/status | while read -r name mask; do
    printf '%s %x\n' "$name" $(( 16#$mask & 16#7fffffff )); done
  shopt -p; set +o; trap -p; alias; declare -F
  compgen -v
} > "$out.state"
env -0 > "$out.env"
"""


def fresh_bash_state(tmp_path: Path, index: int) -> str:
    """SHELL_STATE printed by a bash started as the runner starts a task: the plan's command line, task `index`'s
    environment, a session of its own, standard input from /dev/null."""
    argv = read_plan(tmp_path / "state/paictl/runs/shellstate")["spec"]["taskRoles"][0]["command"]
    env = dict(item.split("=", 1) for item in (tmp_path / f"shell.{index}.env").read_text().split("\0") if item)
    env["SHLVL"] = str(int(env["SHLVL"]) - 1)  # the dump is the task shell's own, already counted
    env.pop("_", None)  # bash gave `env` its path there
    elsewhere = tmp_path / "fresh"
    elsewhere.mkdir(exist_ok=True)
    subprocess.run(argv, env=env, cwd=elsewhere, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, start_new_session=True, check=True)
    return (elsewhere / f"shell.{index}.state").read_text()


def test_each_task_shell_is_a_fresh_bash_with_its_own_environment(tmp_path):
    job = job_file(tmp_path, "shellstate", [SHELL_STATE], instances=3)
    paictl("submit", str(job), "--target", "local", "--follow", "--runtime", "host", "--run-dir",
           str(tmp_path / "state/paictl/runs"), cwd=tmp_path, check_code=0)
    for index in range(3):
        shown = (tmp_path / f"shell.{index}.state").read_text()
        assert shown == fresh_bash_state(tmp_path, index)
        first = shown.splitlines()[:5]
        assert first == [f"zero=paictl-task argc=0 subshell=0 shlvl={first[0].split('shlvl=')[1].split()[0]} "
                         "opts=ehuBc lineno=4", "own_pid=yes",
                         "group_leader=yes session_leader=yes",
                         "stdin=/dev/null descriptors=0 1 10 2 3",
                         "read: end of input"], shown


#: Variables whose values are a task's own (runtime.task_env; the plan's per-task env); `_` is bash's.
OWN = ("PAI_TASK_INDEX", "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX", "FC_TASK_INDEX", "FC_TASK_ATTEMPT_ID",
       "PAICTL_RUN_ID_TASK", "PAI_CURRENT_CONTAINER_PORT", "PAI_CONTAINER_HOST_PORT", "PAI_CONTAINER_SSH_PORT",
       "PAI_CONTAINER_HOST_PORT_LIST", "PAI_CONTAINER_HOST_http_PORT_LIST", "PAI_CONTAINER_HOST_ssh_PORT_LIST",
       "FC_POD_NAME", "FC_TASK_UID", "FC_POD_UID", "FC_TASK_ATTEMPT_INSTANCE_UID", "_")


def shared(values: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in values.items() if name not in OWN}


def task_values(tmp_path: Path, index: int, attempt: int) -> dict[str, str]:
    return dict(item.split("=", 1) for item in (tmp_path / f"env.{index}.{attempt}").read_text().split("\0")
                if item)


def test_no_variable_crosses_from_one_task_or_attempt_to_another(tmp_path):
    (tmp_path / "leak.yaml").write_text(
        "protocolVersion: 2\nname: leak\ntype: job\n"
        "prerequisites: [{name: img, type: dockerimage, uri: 'ubuntu:22.04'}]\n"
        "taskRoles:\n  work:\n    instances: 3\n    taskRetryCount: 1\n    dockerImage: img\n"
        "    resourcePerInstance: {cpu: 1, memoryMB: 64, gpu: 0}\n    commands:\n"
        + "".join(f"      - {json.dumps(line)}\n" for line in [
            'env -0 > "$PWD/env.$PAI_TASK_INDEX.$FC_TASK_ATTEMPT_ID"',
            'compgen -v > "$PWD/names.$PAI_TASK_INDEX.$FC_TASK_ATTEMPT_ID"',
            # the first attempt of each sets variables of every kind, then fails and is retried
            'if [ "$FC_TASK_ATTEMPT_ID" = 0 ]; then export "EXPORTED_BY_$PAI_TASK_INDEX=1"; '
            'PLAIN_BY_TASK=$PAI_TASK_INDEX; export PAI_TASK_INDEX=99; f() { :; }; alias a=true; exit 3; fi'])
        + "extras:\n  gangAllocation: false\n")
    result = paictl("submit", str(tmp_path / "leak.yaml"), "--target", "local", "--follow", "--runtime", "host",
                    "--format", "json", "--run-dir", str(tmp_path / "state/paictl/runs"), cwd=tmp_path, check_code=0)
    assert [task["attempt"] for task in last_json(result.stdout)["tasks"]] == [1, 1, 1]
    ports = json.loads((tmp_path / "state/paictl/runs/leak/0/ports.json").read_text())
    for index in range(3):
        for attempt in (0, 1):
            values = task_values(tmp_path, index, attempt)
            own = {"PAI_TASK_INDEX": str(index), "FC_TASK_ATTEMPT_ID": str(attempt),
                   "PAICTL_RUN_ID_TASK": f"work-{index}",
                   "PAI_CURRENT_CONTAINER_PORT": str(ports["work"][index]["http"][0]),
                   "PAI_CONTAINER_SSH_PORT": str(ports["work"][index]["ssh"][0])}
            assert {name: values.get(name) for name in own} == own
            assert not [name for name in values if name.startswith("EXPORTED_BY_")]
            names = (tmp_path / f"names.{index}.{attempt}").read_text().split()
            assert "PLAIN_BY_TASK" not in names and not [n for n in names if n.startswith("EXPORTED_BY_")]
    # every other variable is the same in every task and attempt: the shared environment
    assert len({json.dumps(shared(task_values(tmp_path, index, attempt)), sort_keys=True)
                for index in range(3) for attempt in (0, 1)}) == 1


def test_dollar_dollar_is_each_task_s_own_process_and_kill_of_it_ends_only_that_task(tmp_path):
    job = job_file(tmp_path, "ownpid", [
        'echo "$$ $BASHPID" > "$PWD/pid.$PAI_TASK_INDEX"',
        'if [ "$PAI_TASK_INDEX" = 0 ]; then until [ -s "$PWD/pid.1" ]; do sleep 0.05; done; kill -USR1 $$; fi',
        'sleep 0.5; echo "task $PAI_TASK_INDEX lived on"'], instances=2)
    # task 0 ends by SIGUSR1 (138: no rule, so 255, not retried); its role's minFailedTaskCount 1 then ends the
    # attempt: task 1 is either done (it lived on) or stopped, never killed by task 0's `kill $$`.
    result = paictl("submit", str(job), "--target", "local", "--follow", "--runtime", "host", "--format", "json",
                    "--run-dir", str(tmp_path / "state/paictl/runs"), cwd=tmp_path)
    tasks = last_json(result.stdout)["tasks"]
    pids = [(tmp_path / f"pid.{index}").read_text().split() for index in range(2)]
    assert pids[0][0] == pids[0][1] and pids[1][0] == pids[1][1] and pids[0][0] != pids[1][0]
    assert tasks[0]["exit_code"] == 138
    assert "lived on" not in log(tmp_path, "ownpid", "work-0")
    assert state(tmp_path, "ownpid")["view"]["tasks"][1]["state"] in ("succeeded", "stopped")


@pytest.mark.parametrize(("commands", "code", "shown", "not_shown"), [
    (["echo before", "exit 7", "echo after"], 7, ["before"], ["after"]),
    (["echo before", "false", "echo after"], 1, ["before"], ["after"]),  # errexit
    (["echo before", "false | true", "echo after"], 1, ["before"], ["after"]),  # pipefail
    (["echo ${NEVER_SET_ANYWHERE}", "echo after"], 1, ["NEVER_SET_ANYWHERE: unbound variable"], ["after"]),
    (["trap 'echo trap ran with $?' EXIT", "exit 5"], 5, ["trap ran with 5"], []),
    (["echo \"name=$0 args=$#\""], 0, ["name=paictl-task args=0"], []),
    (["cat; echo \"cat saw end of input\""], 0, ["cat saw end of input"], []),
    (["no_such_command_here"], 127, ["paictl-task: line 1: no_such_command_here: command not found"], []),
    (["echo one", "if"], 2, ["paictl-task: -c: line 3: syntax error: unexpected end of file"], []),
])
def test_commands_end_and_report_as_in_a_fresh_bash(tmp_path, commands, code, shown, not_shown):
    job = job_file(tmp_path, "semantics", commands)
    result = paictl("submit", str(job), "--target", "local", "--follow", "--runtime", "host", "--format", "json",
                    "--run-dir", str(tmp_path / "state/paictl/runs"), cwd=tmp_path)
    assert last_json(result.stdout)["tasks"][0]["exit_code"] == code
    text = log(tmp_path, "semantics", "work-0")
    fresh = subprocess.run(["bash", "-o", "errexit", "-o", "nounset", "-o", "pipefail", "-c", "\n".join(commands),
                            "paictl-task"], stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path)
    assert fresh.returncode == code
    for line in shown:
        assert line in text and line in fresh.stdout + fresh.stderr
    for line in not_shown:
        assert line not in text
