"""Hostile environments (issue 38): the files and folders the environment hands paictl, not the job. A broken
kubeconfig or clusters file, an item naming a file no OS can open, a folder that cannot be read: each answer is one
located line per problem with the documented exit status (docs/exit-codes.md), never a traceback, and no secret of
the broken file in any output.

Every case runs the real CLI in a child process, as a user would. Folders and files "the user cannot read" are made
unreadable by their mode; when the tests run as root (who reads everything), the child runs without the capabilities
that let root ignore modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: `setpriv --bounding-set`), so the mode holds.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import JOBS, ROOT

SECRET = "env-secret-4c1d9e"
PASSWORD = "env-password-77b2aa"
_HELD = socket.socket()
_HELD.bind(("127.0.0.1", 0))  # bound for the whole module and never listening: a connection is refused at once
LOOPBACK_CLOSED_PORT = _HELD.getsockname()[1]
JOB = JOBS / "kube" / "two-roles.yaml"
NO_PRIVILEGE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
TRACEBACK = "Traceback (most recent call last)"


def paictl(*args: str, home: Path, env: dict[str, str] | None = None, unprivileged: bool = False,
           cwd: Path | None = None) -> subprocess.CompletedProcess:
    environ = {key: value for key, value in os.environ.items()
               if key not in ("KUBECONFIG", "XDG_CONFIG_HOME", "KUBERNETES_SERVICE_HOST", "DOCKER_HOST")}
    environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                    "XDG_STATE_HOME": str(home / ".state"), **(env or {})})
    prefix = NO_PRIVILEGE if unprivileged else []
    return subprocess.run([*prefix, sys.executable, "-m", "paictl", *args], capture_output=True, text=True,
                          env=environ, timeout=120, cwd=cwd or home)


def assert_one_error_line(result: subprocess.CompletedProcess, code: int, *secrets: str) -> str:
    """The answer of a broken environment: exit `code`, one line on standard error, no traceback, no secret."""
    assert TRACEBACK not in result.stderr, result.stderr
    assert result.returncode == code, (result.returncode, result.stderr)
    # `submit` without --target first says which target it chose (one notice line), then the error
    lines = [line for line in result.stderr.splitlines() if not line.startswith("paictl: target ")]
    assert len(lines) == 1 and lines[0].startswith("paictl: error: "), result.stderr
    for secret in (SECRET, PASSWORD, *secrets):
        assert secret not in result.stdout + result.stderr, result.stderr
    return lines[0]


def needs_setpriv() -> None:
    if NO_PRIVILEGE and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv (util-linux): a mode cannot make a file unreadable to root")


# ----------------------------------------------------------------------------------------------------------------
# Kubeconfigs

def kubeconfig(server: str = f"https://127.0.0.1:{LOOPBACK_CLOSED_PORT}", user: str = f"token: {SECRET}") -> str:
    return textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        clusters:
        - name: c
          cluster:
            server: {server}
        contexts:
        - name: x
          context: {{cluster: c, user: u}}
        current-context: x
        users:
        - name: u
          user:
            {user}
        """)


#: name -> (file bytes, the line:col the error must name, or None when it names no position)
BROKEN_KUBECONFIGS = {
    "unclosed-flow-sequence": (kubeconfig(user=f"token: [{SECRET}").encode(), r"14:\d+"),
    "tab-indentation": (kubeconfig().replace("    token", "\ttoken").encode(), r"14:1"),
    "nul-byte": (kubeconfig(user=f"token: {SECRET}\0").encode(), r"14:\d+"),
    "invalid-utf8": (kubeconfig().encode().replace(SECRET.encode(), SECRET.encode() + b"\xff"), r"14:\d+"),
    "unclosed-quote": (kubeconfig(user=f'token: "{SECRET}').encode(), r"\d+:\d+"),
    "duplicate-key": (kubeconfig().replace("kind: Config", "kind: Config\nkind: Config").encode(), r"3:1"),
    "a-list": (f"- {SECRET}\n- b\n".encode(), r"1:1"),
    "too-deep": (b"a: " + b"[" * 5000 + b"\n", r"1:\d+"),
    "alias-bomb": (b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n".encode() for i in range(8)),
        r"\d+:\d+"),
}

#: (arguments, whether the command reads the kubeconfig through the default target or lookup) for every command
#: the issue names; NAME is a job no backend has.
KUBE_COMMANDS = {
    "status": ("status",),
    "status-name": ("status", "nosuchjob"),
    "logs": ("logs", "nosuchjob"),
    "stop": ("stop", "nosuchjob"),
    "submit": ("submit", str(JOB)),
    "submit-framework": ("submit", "--target", "framework", str(JOB)),
}


def covering(cases, commands, *, every_command_with: tuple[str, ...], every_case_with: tuple[str, ...]):
    """(case, command) pairs: every case through a few commands, every command with a few cases. The loader is
    one, so the full product (a child process each) would add run time and no new path."""
    pairs = {(case, command) for case in cases for command in every_case_with}
    pairs |= {(case, command) for case in every_command_with for command in commands}
    return sorted(pairs)


@pytest.mark.parametrize(("case", "command"), covering(
    BROKEN_KUBECONFIGS, KUBE_COMMANDS, every_case_with=("status", "submit"),
    every_command_with=("unclosed-flow-sequence", "nul-byte", "tab-indentation")))
def test_a_broken_kubeconfig_is_one_located_line_and_exit_3(tmp_path, case, command):
    content, position = BROKEN_KUBECONFIGS[case]
    config = tmp_path / ".kube" / "config"
    config.parent.mkdir()
    config.write_bytes(content)
    result = paictl(*KUBE_COMMANDS[command], home=tmp_path)  # ~/.kube/config: no KUBECONFIG, no --kubeconfig
    line = assert_one_error_line(result, 3)
    assert re.search(re.escape(str(config)) + ":" + position + ": the kubeconfig ", line), line


@pytest.mark.parametrize("content", [
    "contexts: [{name: x, context: 5}]\ncurrent-context: x\n",
    "clusters: [{name: c, cluster: {server: 5}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
    "current-context: x\n",
    "contexts: 5\n",
    "contexts: [5]\n",
])
def test_a_kubeconfig_of_the_wrong_shape_is_one_line_and_exit_3(tmp_path, content):
    (tmp_path / "kubeconfig").write_text(content)
    result = paictl("status", "nosuchjob", "--kubeconfig", str(tmp_path / "kubeconfig"), home=tmp_path)
    assert "kubeconfig" in assert_one_error_line(result, 3)


@pytest.mark.parametrize("command", ["status", "status-name", "submit"])
def test_every_file_of_a_kubeconfig_list_is_checked(tmp_path, command):
    good, broken = tmp_path / "good", tmp_path / "broken"
    good.write_text(kubeconfig())
    broken.write_text(kubeconfig(user=f"token: [{SECRET}"))
    result = paictl(*KUBE_COMMANDS[command], home=tmp_path,
                    env={"KUBECONFIG": os.pathsep.join([str(tmp_path / "absent"), str(good), str(broken)])})
    assert re.search(re.escape(str(broken)) + r":14:\d+: ", assert_one_error_line(result, 3))


@pytest.mark.parametrize("command", ["status", "status-name", "stop"])
def test_an_unreadable_kubeconfig_is_one_line_and_exit_3(tmp_path, command):
    needs_setpriv()
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig())
    config.chmod(0)
    result = paictl(*KUBE_COMMANDS[command], "--kubeconfig", str(config), home=tmp_path, unprivileged=True)
    assert "cannot read the kubeconfig" in assert_one_error_line(result, 3)


@pytest.mark.parametrize("how", ["--kubeconfig", "KUBECONFIG", "a list"])
@pytest.mark.parametrize("command", ["status", "status-name", "submit-framework"])
def test_a_kubeconfig_that_is_a_directory_is_said_so(tmp_path, command, how):
    """kubectl skips a missing file of a KUBECONFIG list, but a directory is a file it cannot read ("is a
    directory"), not "no kubeconfig at"."""
    folder = tmp_path / "configs"
    folder.mkdir()
    if how == "--kubeconfig":
        result = paictl(*KUBE_COMMANDS[command], "--kubeconfig", str(folder), home=tmp_path)
    else:
        listed = str(folder) if how == "KUBECONFIG" else os.pathsep.join([str(tmp_path / "absent"), str(folder)])
        result = paictl(*KUBE_COMMANDS[command], home=tmp_path, env={"KUBECONFIG": listed})
    assert f"cannot read the kubeconfig: {folder}: is a directory" in assert_one_error_line(result, 3)


@pytest.mark.parametrize("server", [f"https://admin:{PASSWORD}@127.0.0.1:{LOOPBACK_CLOSED_PORT}",
                                    f"https://127.0.0.1:{LOOPBACK_CLOSED_PORT}/?token={PASSWORD}",
                                    f"https://{PASSWORD}@127.0.0.1:{LOOPBACK_CLOSED_PORT}#{PASSWORD}"])
@pytest.mark.parametrize("command", ["status", "status-name", "logs", "stop", "submit"])
def test_credentials_in_the_server_url_are_never_printed(tmp_path, server, command):
    (tmp_path / "kubeconfig").write_text(kubeconfig(server=server))
    result = paictl(*KUBE_COMMANDS[command], home=tmp_path, env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    line = assert_one_error_line(result, 3)
    assert "cannot reach the cluster at https://" in line and "***" in line, line


# ----------------------------------------------------------------------------------------------------------------
# The OpenPAI clusters file

BROKEN_CLUSTERS_FILES = {
    "unclosed-flow-mapping": (f"clusters:\n  lab: {{url: http://127.0.0.1:9, user: u, token: {SECRET}\n", r"2:\d+"),
    "tab-indentation": (f"clusters:\n  lab:\n\turl: http://x\n    token: {SECRET}\n", r"3:1"),
    "nul-byte": (f"clusters:\n  lab: {{url: http://x, user: u, token: {SECRET}\0}}\n", r"2:\d+"),
    "token-then-colon": (f"clusters:\n  lab:\n    url: http://x\n    user: alice\n    token: {SECRET}: [\n",
                         r"5:\d+"),
    "not-a-mapping": (f"clusters: [{SECRET}]\n", r"1:11"),
    "entry-without-user": (f"clusters:\n  lab: {{url: http://x, token: {SECRET}}}\n", r"2:\d+"),
    "bad-token-store": (f"clusters:\n  lab: {{url: http://x, user: u, tokenStore: {SECRET}}}\n", r"2:\d+"),
}

OPENPAI_COMMANDS = {
    "clusters": ("openpai", "clusters"),
    "status": ("status", "--target", "openpai"),
    "status-name": ("status", "--target", "openpai", "nosuchjob"),
    "submit": ("submit", "--target", "openpai", str(JOB)),
    "login": ("openpai", "login", "lab", "--password-stdin"),
}


@pytest.mark.parametrize(("case", "command"), covering(
    BROKEN_CLUSTERS_FILES, OPENPAI_COMMANDS, every_case_with=("clusters", "submit"),
    every_command_with=("unclosed-flow-mapping", "token-then-colon")))
def test_a_broken_clusters_file_is_one_located_line_and_exit_3(tmp_path, case, command):
    content, position = BROKEN_CLUSTERS_FILES[case]
    clusters = tmp_path / ".config" / "paictl" / "openpai-clusters.yaml"
    clusters.parent.mkdir(parents=True)
    clusters.write_text(content)
    line = assert_one_error_line(paictl(*OPENPAI_COMMANDS[command], home=tmp_path), 3)
    assert re.search(re.escape(str(clusters)) + ":" + position + ": ", line), line


@pytest.mark.parametrize("url", [f"http://alice:{PASSWORD}@127.0.0.1:{LOOPBACK_CLOSED_PORT}",
                                 f"http://127.0.0.1:{LOOPBACK_CLOSED_PORT}/rest-server?token={PASSWORD}"])
def test_credentials_in_a_hand_edited_cluster_url_are_never_printed(tmp_path, url):
    clusters = tmp_path / ".config" / "paictl" / "openpai-clusters.yaml"
    clusters.parent.mkdir(parents=True)
    clusters.write_text(f"clusters:\n  lab: {{url: '{url}', user: alice, tokenEnv: LAB_TOKEN}}\n")
    for command in ("status", "status-name", "submit"):
        result = paictl(*OPENPAI_COMMANDS[command], home=tmp_path, env={"LAB_TOKEN": SECRET})
        assert "***" in assert_one_error_line(result, 3)
    listed = paictl("openpai", "clusters", home=tmp_path)
    assert listed.returncode == 0 and PASSWORD not in listed.stdout + listed.stderr and "***" in listed.stdout


# ----------------------------------------------------------------------------------------------------------------
# Marketplace items: every path an item names is checked before it is used

ITEM = textwrap.dedent("""\
    name: hostile-item
    author: alice
    type: template
    summary: an item naming a file it must not
    description: {description}
    protocol: {protocol}
    """)

#: name -> (description value, protocol value, the code each names)
HOSTILE_ITEM_PATHS = {
    "nul-in-protocol-file": ("text", '{file: "job\\0.yaml"}', "E880"),
    "nul-in-description-file": ('{file: "read\\0me.md"}', "{file: job.yaml}", "E880"),
    "control-in-protocol-file": ("text", '{file: "job\\e.yaml"}', "E880"),
    "absolute-protocol-file": ("text", "{file: /etc/passwd}", "E881"),
    "home-protocol-file": ("text", "{file: ~/job.yaml}", "E881"),
    "dotdot-protocol-file": ("text", "{file: ../outside/job.yaml}", "E881"),
    "dotdot-description-file": ("{file: ../../../../etc/hostname}", "{file: job.yaml}", "E881"),
    "symlink-out": ("text", "{file: link.yaml}", "E881"),
    "directory": ("text", "{file: sub}", "E880"),
}

ITEM_COMMANDS = {
    "validate": ("validate",),
    "marketplace-validate": ("marketplace", "validate"),
    "pack": ("marketplace", "pack"),
    "publish": ("marketplace", "publish", "--to", "index"),
}


def hostile_item(tmp_path: Path, case: str) -> Path:
    description, protocol, _ = HOSTILE_ITEM_PATHS[case]
    folder = tmp_path / "item"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "hello-world.yaml", folder / "job.yaml")
    (tmp_path / "outside").mkdir()
    shutil.copy(ROOT / "examples" / "hello-world.yaml", tmp_path / "outside" / "job.yaml")
    (folder / "link.yaml").symlink_to(tmp_path / "outside" / "job.yaml")
    (folder / "item.yaml").write_text(ITEM.format(description=description, protocol=protocol))
    return folder / "item.yaml"


@pytest.mark.parametrize(("case", "command"), covering(
    HOSTILE_ITEM_PATHS, ITEM_COMMANDS, every_case_with=("marketplace-validate", "publish"),
    every_command_with=("nul-in-protocol-file", "nul-in-description-file", "dotdot-protocol-file")))
def test_a_path_an_item_names_is_checked_before_use(tmp_path, case, command):
    item = hostile_item(tmp_path, case)
    result = paictl(*ITEM_COMMANDS[command], str(item), home=tmp_path)
    assert TRACEBACK not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr  # an invalid document: docs/exit-codes.md
    code = HOSTILE_ITEM_PATHS[case][2]
    located = re.findall(re.escape(str(item)) + rf":[56]:\d+: error\[{code}\]: .*", result.stdout + result.stderr)
    assert len(located) == 1, result.stdout + result.stderr
    assert not (tmp_path / "index").exists() or not any((tmp_path / "index").rglob("*.json"))  # nothing published


# ----------------------------------------------------------------------------------------------------------------
# Folders: what cannot be read is a warning, the search goes on, and the summary counts it

GOOD = (ROOT / "examples" / "hello-world.yaml").read_text()


def hostile_folder(tmp_path: Path, case: str) -> tuple[Path, int]:
    """A folder with one readable job and one hostile entry; (folder, entries that cannot be read: each case has
    one, a symlink loop included: it is a file name that cannot be opened)."""
    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "good.yaml").write_text(GOOD)
    if case == "unreadable-subfolder":
        (folder / "locked").mkdir()
        (folder / "locked" / "job.yaml").write_text(GOOD)
        (folder / "locked").chmod(0)
    elif case == "unreadable-file":
        (folder / "locked.yaml").write_text(GOOD)
        (folder / "locked.yaml").chmod(0)
    elif case == "untraversable-subfolder":
        (folder / "shut").mkdir()
        (folder / "shut" / "job.yaml").write_text(GOOD)
        (folder / "shut").chmod(0o600)  # listable but not enterable
    elif case == "symlink-out":
        (tmp_path / "elsewhere.yaml").write_text(GOOD)
        (folder / "out.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    elif case == "symlink-loop":
        (folder / "loop.yaml").symlink_to(folder / "loop.yaml")
    return folder, 1


FOLDER_CASES = ["unreadable-subfolder", "unreadable-file", "untraversable-subfolder", "symlink-out", "symlink-loop"]


@pytest.mark.parametrize("command", [("validate",), ("fix",), ("validate", "-o", "json")])
@pytest.mark.parametrize("case", FOLDER_CASES)
def test_a_folder_search_goes_on_past_what_it_cannot_read(tmp_path, case, command):
    needs_setpriv()
    folder, unread = hostile_folder(tmp_path, case)
    result = paictl(*command, str(folder), home=tmp_path, unprivileged=True)
    assert TRACEBACK not in result.stderr, result.stderr
    assert result.returncode == 0, result.stdout + result.stderr  # the readable job is valid; warnings only
    warnings = result.stderr.splitlines()
    assert len(warnings) == unread and all(w.startswith("paictl: warning: ") and w.endswith(("; skipped"))
                                           for w in warnings), result.stderr
    if "json" in command:
        assert f'"unread": {unread}' in result.stdout or not unread, result.stdout
    elif unread:
        assert result.stdout.rstrip().endswith(f"; {unread} entry not read (see the warnings)"), result.stdout
    strict = paictl("validate", "--strict", str(folder), home=tmp_path, unprivileged=True)
    assert strict.returncode == (2 if unread else 0), strict.stderr  # --strict: a folder not wholly read fails


def test_a_folder_of_items_goes_on_past_what_it_cannot_read(tmp_path):
    needs_setpriv()
    folder = tmp_path / "items"
    shutil.copytree(ROOT / "examples" / "marketplace", folder)
    (folder / "locked").mkdir()
    (folder / "locked").chmod(0)
    result = paictl("marketplace", "validate", str(folder), home=tmp_path, unprivileged=True)
    assert result.returncode == 0 and TRACEBACK not in result.stderr, result.stderr
    assert result.stderr.startswith("paictl: warning: ") and result.stderr.count("\n") == 1, result.stderr
    assert "1 entry not read" in result.stdout
    published = paictl("marketplace", "publish", "--to", str(tmp_path / "index"), str(folder), home=tmp_path,
                       unprivileged=True)  # all of a folder or nothing
    assert_one_error_line(published, 2)
    assert not (tmp_path / "index").exists() or not any((tmp_path / "index").rglob("*.json"))
