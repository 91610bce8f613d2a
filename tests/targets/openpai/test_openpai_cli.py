"""`paictl openpai ...` and `paictl compile --target openpai` as a user runs them: real processes, real HTTP, the
OpenPAI double behind its pylon stand-in (tests/openpai_server, held to the real server's recordings)."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import httpx
import pytest
import yaml
from openpai_server.accounts import PASSWORDS
from openpai_server.harness import TOKEN_ENV
from openpai_server.harness import write_job

ALIAS = "lab"
FAKE_KEYRING = Path(__file__).resolve().parents[2] / "openpai_server" / "fake_keyring"
PASSWORD = PASSWORDS["alice"]


@pytest.fixture
def pai(pai_user):
    return pai_user


def accepted(pai, token: str) -> bool:
    return httpx.get(f"{pai.server.url}/api/v2/users/alice", headers={"Authorization": f"Bearer {token}"}) \
        .status_code == 200


def _clusters(pai) -> dict:
    return yaml.safe_load(pai.clusters_file.read_text())["clusters"]


def test_clusters_prints_the_file_and_never_a_token(pai):
    done = pai.paictl("openpai", "clusters")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"clusters file: {pai.clusters_file}"
    assert lines[2].split() == [ALIAS, pai.server.api_url, "alice", "default", "env", f"${TOKEN_ENV}"]
    data = json.loads(pai.paictl("openpai", "clusters", "--format", "json").stdout)
    assert data == {"path": str(pai.clusters_file), "clusters": [
        {"alias": ALIAS, "url": pai.server.api_url, "user": "alice", "token": f"env ${TOKEN_ENV}",
         "virtualCluster": "default"}]}


def test_add_writes_a_private_file_and_remove_forgets(pai):
    done = pai.paictl("openpai", "add", "other", "https://pai.example.com/", "--user", "bob",
                      "--virtual-cluster", "gpu", "--no-check")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(pai.clusters_file.stat().st_mode) == 0o600
    assert _clusters(pai)["other"] == {"url": "https://pai.example.com", "user": "bob", "virtualCluster": "gpu"}
    assert pai.paictl("openpai", "remove", "other").returncode == 0
    assert set(_clusters(pai)) == {ALIAS}
    missing = pai.paictl("openpai", "remove", "other")
    assert (missing.returncode, missing.stderr) == (2, f"paictl: error: no OpenPAI cluster 'other' in "
                                                       f"{pai.clusters_file}; known: {ALIAS}\n")


@pytest.mark.parametrize(("args", "message"), [
    (("bad alias!", "https://x"), "cluster alias 'bad alias!': use letters, digits, '.', '_' or '-' (at most 63)"),
    (("ok", "ftp://x"), "'ftp://x' is not an http(s) URL of an OpenPAI cluster (e.g. https://pai.example.com)"),
    (("ok", "https://me:pw@x"), "put no credentials, query or fragment in the cluster URL (it would be stored and "
                                "shown): give the site, e.g. https://pai.example.com, and the token with `paictl "
                                "openpai login` or --token-env"),
])
def test_add_refuses_bad_input_in_one_line(pai, args, message):
    done = pai.paictl("openpai", "add", *args, "--user", "u")
    assert (done.returncode, done.stderr) == (2, f"paictl: error: {message}\n")


def test_login_without_a_keyring_asks_before_storing_plaintext(pai):
    done = pai.paictl("openpai", "login", ALIAS, "--password-stdin", input=PASSWORD + "\n")
    assert done.returncode == 2
    assert done.stderr.startswith("paictl: error: no OS keyring is available to keep the token")
    assert "--store-plaintext" in done.stderr
    assert _clusters(pai)[ALIAS]["tokenEnv"] == TOKEN_ENV  # nothing changed


def test_login_with_password_and_explicit_plaintext(pai):
    done = pai.paictl("openpai", "login", ALIAS, "--password-stdin", "--store-plaintext", input=PASSWORD + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"logged in to {ALIAS} ({pai.server.api_url}) as alice; token kept in the clusters file "
                           "(plaintext, mode 0600)\n")
    entry = _clusters(pai)[ALIAS]
    token = entry["token"]
    assert entry["tokenStore"] == "plaintext" and accepted(pai, token)
    assert token not in done.stdout + done.stderr and PASSWORD not in done.stdout + done.stderr
    assert stat.S_IMODE(pai.clusters_file.stat().st_mode) == 0o600
    login = next(r for r in pai.server.pylon.requests if r[1] == "/rest-server/api/v2/authn/basic/login")
    assert login[2]["Content-Type"] == "application/x-www-form-urlencoded"
    assert "Authorization" not in login[2]


def test_login_keeps_the_token_in_the_keyring(pai, tmp_path):
    store = tmp_path / "keyring.json"
    env = {"PYTHONPATH": str(FAKE_KEYRING), "FAKE_KEYRING_FILE": str(store)}
    done = pai.paictl("openpai", "login", ALIAS, "--password-stdin", input=PASSWORD + "\n", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("token kept in the OS keyring\n")
    entry = _clusters(pai)[ALIAS]
    assert entry.get("tokenStore") == "keyring" and "token" not in entry and "tokenEnv" not in entry
    (token,) = json.loads(store.read_text()).values()
    assert accepted(pai, token) and token not in pai.clusters_file.read_text()
    assert pai.paictl("openpai", "remove", ALIAS, env=env).returncode == 0
    assert json.loads(store.read_text()) == {}


def test_login_failures_are_one_line(pai):
    wrong = pai.paictl("openpai", "login", ALIAS, "--password-stdin", "--store-plaintext", input="guess-again\n")
    assert (wrong.returncode, wrong.stderr) == (3, f"paictl: error: OpenPAI {ALIAS}: log in as alice: HTTP 400 "
                                                   "IncorrectPasswordError: Password is incorrect.\n")
    assert "guess-again" not in wrong.stderr
    short = pai.paictl("openpai", "login", ALIAS, "--password-stdin", "--store-plaintext", input="guess\n")
    assert (short.returncode, short.stderr) == (3, f"paictl: error: OpenPAI {ALIAS}: log in as alice: HTTP 400 "
                                                   "InvalidParametersError: child \"password\" fails because "
                                                   "[\"password\" length must be at least 6 characters long]\n")
    bad_env = pai.paictl("openpai", "login", ALIAS, "--token-env", "OTHER_TOKEN", env={"OTHER_TOKEN": "nope"})
    assert bad_env.returncode == 3
    assert "HTTP 401 UnauthorizedUserError" in bad_env.stderr and bad_env.stderr.count("\n") == 1
    unset = pai.paictl("openpai", "login", ALIAS, "--token-env", "UNSET_TOKEN_VAR")
    assert (unset.returncode, unset.stderr) == (2, f"paictl: error: cluster '{ALIAS}' takes its token from "
                                                   "$UNSET_TOKEN_VAR, which is not set\n")


def test_login_with_an_application_token(pai):
    reply = httpx.post(f"{pai.server.url}/api/v2/tokens/application",
                       headers={"Authorization": f"Bearer {pai.token}"})
    assert reply.status_code == 200, reply.text
    app_token = reply.json()["token"]
    done = pai.paictl("openpai", "login", ALIAS, "--token-stdin", "--store-plaintext", input=app_token + "\n")
    assert done.returncode == 0, done.stderr
    assert app_token not in done.stdout + done.stderr
    assert _clusters(pai)[ALIAS]["token"] == app_token
    ok = pai.paictl("openpai", "login", ALIAS, "--token-env", TOKEN_ENV)
    assert ok.returncode == 0 and ok.stdout.endswith(f"token from ${TOKEN_ENV}\n")
    assert "token" not in _clusters(pai)[ALIAS]  # switching to an env var drops the stored token


def test_compile_prints_what_would_be_sent_with_secrets_masked(pai, tmp_path):
    job = write_job(tmp_path, "shown", secret="s3cr3t-value", registry_password="reg-pass-77")
    done = pai.paictl("compile", str(job), "--target", "openpai", "-p", "epochs=5")
    assert done.returncode == 0, done.stderr
    (document,) = list(yaml.safe_load_all(done.stdout))
    assert document["parameters"] == {"epochs": 5} and document["secrets"] == {"apiKey": "******"}
    assert "s3cr3t-value" not in done.stdout and "reg-pass-77" not in done.stdout
    out = tmp_path / "out"
    written = pai.paictl("compile", str(job), "--target", "openpai", "--output-dir", str(out))
    assert written.returncode == 0 and sorted(p.name for p in out.iterdir()) == ["job-shown.yaml"]


def test_token_canary_in_every_stream_and_file(pai, tmp_path):
    """The token is used by every command here; it must appear in no output and in no file paictl wrote."""
    TOKEN = pai.token
    job = write_job(tmp_path, "canary")
    runs = [
        pai.paictl("openpai", "clusters"),
        pai.paictl("openpai", "clusters", "--format", "json"),
        pai.paictl("openpai", "login", ALIAS, "--token-env", TOKEN_ENV),
        pai.paictl("openpai", "add", "second", pai.server.api_url, "--user", "alice", "--token-env", TOKEN_ENV),
        pai.paictl("compile", str(job), "--target", "openpai", "--output-dir", str(tmp_path / "compiled")),
        pai.paictl("openpai", "login", "second", "--token-env", "WRONG_TOKEN", env={"WRONG_TOKEN": TOKEN + "x"}),
    ]
    assert [run.returncode for run in runs] == [0, 0, 0, 0, 0, 3]
    for run in runs:
        assert TOKEN not in run.stdout and TOKEN not in run.stderr
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert pai.clusters_file in written
    for path in written:
        assert TOKEN.encode() not in path.read_bytes(), path


def test_login_never_reads_a_password_from_a_pipe_unasked(pai):
    # the prompt (no echo) is for terminals; from a pipe getpass would read with echo, so paictl asks for the flag
    before = len(pai.server.pylon.requests)
    done = pai.paictl("openpai", "login", ALIAS, "--store-plaintext", input=PASSWORD + "\n")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("paictl: error: standard input is not a terminal: pass --password-stdin to read the "
                           "password from it, or use --token-env\n")
    assert not [r for r in pai.server.pylon.requests[before:] if r[1] == "/rest-server/api/v2/authn/basic/login"]


def _in_a_terminal(argv: list[str], env: dict[str, str], answer: str, prompt: str) -> tuple[int, str]:
    """Run argv with a pseudo-terminal as its controlling terminal; type `answer` after `prompt` appears.
    Returns the exit status and everything the terminal showed (what a user would see, echo included)."""
    import os
    import pty
    import select
    import termios
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: its stdin/stdout/stderr and /dev/tty are the pseudo-terminal
        os.execve(argv[0], argv, env)
    shown, answered, deadline = b"", False, time.monotonic() + 20
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        # type only once the prompt is shown and the program has turned echo off (as a user types after it)
        if not answered and prompt.encode() in shown and not termios.tcgetattr(fd)[3] & termios.ECHO:
            os.write(fd, answer.encode() + b"\n")
            answered = True
    if time.monotonic() >= deadline:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), shown.decode(errors="replace")


def test_login_prompts_in_a_terminal_without_echo(pai):
    import sys

    argv = [sys.executable, "-m", "paictl", "openpai", "login", ALIAS, "--store-plaintext"]
    code, shown = _in_a_terminal(argv, pai.env, PASSWORD, "Password for alice at ")
    assert code == 0, shown
    assert f"Password for alice at {pai.server.api_url}: " in shown and f"logged in to {ALIAS}" in shown
    assert PASSWORD not in shown  # the terminal never displayed what was typed
    assert _clusters(pai)[ALIAS]["tokenStore"] == "plaintext"


def test_a_login_whose_token_cannot_be_kept_leaves_no_token_on_the_server(pai, tmp_path):
    """Every login makes a token on the server: without a keyring (and without --store-plaintext) paictl refuses
    before logging in, and a keyring that refuses the token gets it revoked again (it was left there per try)."""
    issued = list(pai.server.accounts.tokens.get("alice", []))
    no_keyring = pai.paictl("openpai", "login", ALIAS, "--password-stdin", input=PASSWORD + "\n",
                            env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"})
    assert no_keyring.returncode == 2 and "no OS keyring is available" in no_keyring.stderr
    assert no_keyring.stderr.count("\n") == 1
    assert pai.server.accounts.tokens.get("alice", []) == issued  # not even asked

    broken = tmp_path / "keyring-is-a-folder"
    broken.mkdir()
    # the server's tokens are JWTs of the user and the second they were made (recordings: tokens.jsonl): a login in
    # the fixture's second would get the fixture's own token back, and its revocation would revoke that one too
    time.sleep(1.05)
    refused = pai.paictl("openpai", "login", ALIAS, "--password-stdin", input=PASSWORD + "\n",
                         env={"PYTHONPATH": str(FAKE_KEYRING), "FAKE_KEYRING_FILE": str(broken)})
    assert refused.returncode == 2 and "the OS keyring refused the token" in refused.stderr
    assert "could not be revoked" not in refused.stderr
    logins = [r for r in pai.server.requests if r.method == "POST" and r.path.endswith("/authn/basic/login")]
    revoked = [r for r in pai.server.requests if r.method == "DELETE" and "/api/v2/tokens/" in r.path]
    assert logins and len(revoked) == 1  # the token this login made was revoked again
    assert pai.server.accounts.tokens.get("alice", []) == issued  # nothing usable is left on the server


@pytest.mark.parametrize("command", [("status", "{job}"), ("status",), ("stop", "{job}"), ("logs", "{job}"),
                                     ("submit", "{file}")])
def test_a_login_page_in_front_of_the_rest_server_is_one_line_for_every_command(pai, command):
    """Single sign-on in front of the REST API answers its page (200) to the first request of any command: one
    located line, exit 3, never a traceback, never the page read as a job, a list or a success."""
    job = pai.name("sso")
    file = pai.write_job(job)
    pai.server.faults.append(("/api/v2/", "login"))
    args = [part.format(job=job, file=file) for part in command]
    result = pai.paictl(*args, "--target", "openpai", "--cluster", ALIAS)
    assert result.returncode == 3, result.stderr
    line, = result.stderr.splitlines()
    assert line.startswith(f"paictl: error: OpenPAI {ALIAS}: ") and "Traceback" not in result.stderr
    assert ": HTTP 200, but the answer is not the REST server's JSON (text/html; charset=utf-8: Sign in); is " in line
    assert result.stdout == "" and pai.token not in result.stderr


def test_a_submission_answered_by_a_login_page_is_not_reported_submitted(pai):
    """The checks before it pass; the POST itself meets the login page: nothing reached the server."""
    job = pai.name("ssopost")
    pai.server.faults.append(("/api/v2/jobs", "login"))
    result = pai.paictl("submit", str(pai.write_job(job)), "--target", "openpai", "--cluster", ALIAS)
    assert result.returncode == 3, result.stdout
    assert "submitted" not in result.stdout and f"alice~{job}" not in pai.server.jobs
    assert result.stderr.startswith(f"paictl: error: OpenPAI {ALIAS}: submit alice~{job}: HTTP 200, but the answer "
                                    "is not the REST server's JSON")
