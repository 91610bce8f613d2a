"""`paictl openpai add|login|clusters` against the OpenPAI double behind its pylon stand-in (tests/openpai_server, held
to the real server's recordings), and the token canary: the user's real token appears in no output stream and no
file of any `openpai` or `--target openpai` command, error paths included."""

from __future__ import annotations

import json
import re
import socket

import yaml
from canary import PASSWORD, SECRET

from openpai_server.accounts import PASSWORDS
from openpai_server.harness import TOKEN_ENV

ALIAS = "lab"


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def stored(pai_user, alias: str) -> dict:
    return yaml.safe_load(pai_user.clusters_file.read_text())["clusters"][alias]


def test_add_finds_the_rest_api_under_the_site_root(pai_user):
    server = pai_user.server
    site = pai_user.paictl("openpai", "add", "site", server.site_url, "--user", "alice", "--token-env", TOKEN_ENV)
    assert site.returncode == 0, site.stderr
    assert stored(pai_user, "site")["url"] == server.api_url
    assert f"cluster site: {server.api_url} (the REST API of {server.site_url}) as alice" in site.stdout
    direct = pai_user.paictl("openpai", "add", "direct", server.url, "--user", "alice")
    assert direct.returncode == 0 and stored(pai_user, "direct")["url"] == server.url
    api = pai_user.paictl("openpai", "add", "api", server.api_url + "/", "--user", "alice")
    assert api.returncode == 0 and stored(pai_user, "api")["url"] == server.api_url
    status = pai_user.paictl("status", "--target", "openpai", "--cluster", "site")
    assert status.returncode == 0, status.stderr


def test_a_site_root_stored_unchecked_says_what_to_do(pai_user):
    site = pai_user.server.site_url
    assert pai_user.paictl("openpai", "add", ALIAS, site, "--user", "alice", "--token-env", TOKEN_ENV,
                           "--no-check").returncode == 0
    result = pai_user.paictl("status", "--target", "openpai")
    assert result.returncode == 3
    line, = result.stderr.strip().splitlines()
    # the page's words (its title), not its first line (`<html>`)
    assert line.startswith(f"paictl: error: OpenPAI {ALIAS}: list jobs: HTTP 404: 404 Not Found; ")
    assert line.endswith(f"; {site} answers, but not as an OpenPAI REST API: give the cluster's address to "
                         "`paictl openpai add` again (it finds the API, e.g. under /rest-server)")


def test_add_says_what_to_type_when_the_address_is_not_openpai(pai_user):
    other = pai_user.server.log_manager.url  # a web server, but not OpenPAI's
    result = pai_user.paictl("openpai", "add", "other", other, "--user", "alice")
    assert result.returncode == 2
    line, = result.stderr.strip().splitlines()
    assert line.startswith(f"paictl: error: no OpenPAI REST server at {other} (")
    assert "give the web portal's address (https://HOST, whose API is https://HOST/rest-server)" in line
    assert "other" not in yaml.safe_load(pai_user.clusters_file.read_text())["clusters"]


def test_add_says_where_an_address_redirects(pai_user):
    """A site that sends every request to single sign-on (302, the token in the query) is not followed, and `add`
    says where it points: the whole answer, not the last clause of the line."""
    server = pai_user.server
    server.faults.append(("/api/v2/info", "sso"))
    result = pai_user.paictl("openpai", "add", "sso", server.url, "--user", "alice")
    assert result.returncode == 2
    line, = result.stderr.strip().splitlines()
    assert line.startswith(f"paictl: error: no OpenPAI REST server at {server.url} ({server.url}/api/v2/info: HTTP "
                           "302 redirects to https://sso.example.invalid/login?next=***&token=*** (paictl follows no "
                           f"redirect); {server.url}/rest-server/api/v2/info: HTTP 404 NoApiError: "), line


def test_add_stores_an_unreachable_url_as_given_and_says_so(pai_user):
    url = dead_url()
    result = pai_user.paictl("openpai", "add", "later", url, "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert stored(pai_user, "later")["url"] == url
    assert "could not ask the server where its REST API is" in result.stderr
    assert "Connection refused" in result.stderr and "stored the URL as given" in result.stderr


def test_credentials_in_a_url_are_refused_and_never_shown(pai_user):
    secret = "url-token-5e1c9d"
    for url in (f"{pai_user.server.site_url}/?token={secret}", f"http://alice:{secret}@127.0.0.1:9",
                f"{pai_user.server.site_url}#{secret}"):
        result = pai_user.paictl("openpai", "add", "leak", url, "--user", "alice")
        assert result.returncode == 2
        assert secret not in result.stdout + result.stderr
        assert "put no credentials, query or fragment in the cluster URL" in result.stderr
    # a hand-edited file with a token in the URL: listed redacted
    data = yaml.safe_load(pai_user.clusters_file.read_text())
    data["clusters"]["edited"] = {"url": f"{pai_user.server.api_url}?token={secret}", "user": "alice"}
    pai_user.clusters_file.write_text(yaml.safe_dump(data))
    for args in (("openpai", "clusters"), ("openpai", "clusters", "--format", "json")):
        listed = pai_user.paictl(*args)
        assert listed.returncode == 0 and secret not in listed.stdout + listed.stderr
        assert "token=***" in listed.stdout


def test_a_clusters_file_that_is_not_yaml_never_quotes_its_token(pai_user):
    secret = "file-token-0b7a44"
    pai_user.clusters_file.write_text(f"clusters:\n  lab:\n    url: http://x\n    user: alice\n    token: {secret}: [\n")
    for args in (("openpai", "clusters"), ("status", "--target", "openpai"), ("openpai", "login", ALIAS)):
        result = pai_user.paictl(*args)
        assert result.returncode == 3, result.stderr  # the environment's file is broken (docs/exit-codes.md)
        assert secret not in result.stdout + result.stderr
        assert re.search(r"openpai-clusters\.yaml:5:\d+: the clusters file is not valid YAML", result.stderr)
        assert len(result.stderr.splitlines()) == 1, result.stderr


def test_login_with_a_password_and_with_an_application_token(pai_user):
    password = PASSWORDS["alice"]
    logged = pai_user.paictl("openpai", "login", ALIAS, "--password-stdin", "--store-plaintext",
                             input=password + "\n")
    assert logged.returncode == 0, logged.stderr
    assert "token kept in the clusters file (plaintext, mode 0600)" in logged.stdout
    entry = stored(pai_user, ALIAS)
    assert "tokenEnv" not in entry and entry["tokenStore"] == "plaintext"
    assert pai_user.paictl("status", "--target", "openpai", env={TOKEN_ENV: ""}).returncode == 0
    wrong = pai_user.paictl("openpai", "login", ALIAS, "--password-stdin", "--store-plaintext", input="nope\n")
    assert wrong.returncode == 3 and len(wrong.stderr.strip().splitlines()) == 1
    assert "nope" not in wrong.stderr
    token = pai_user.token
    app = pai_user.paictl("openpai", "login", ALIAS, "--token-stdin", "--store-plaintext", input=token + "\n")
    assert app.returncode == 0, app.stderr
    assert "application token kept in the clusters file" in app.stdout and "not checked" not in app.stdout
    for result in (logged, wrong, app):
        assert password not in result.stdout + result.stderr and token not in result.stdout + result.stderr


def test_login_token_env_checks_the_token_and_works_without_a_server(pai_user):
    checked = pai_user.paictl("openpai", "login", ALIAS, "--token-env", TOKEN_ENV)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip().endswith(f"token from ${TOKEN_ENV}")
    refused = pai_user.paictl("openpai", "login", ALIAS, "--token-env", "WRONG", env={"WRONG": "x" * 20})
    assert refused.returncode == 3 and "HTTP 401" in refused.stderr
    offline = pai_user.paictl("openpai", "add", "offline", dead_url(), "--user", "alice", "--no-check")
    assert offline.returncode == 0
    saved = pai_user.paictl("openpai", "login", "offline", "--token-env", TOKEN_ENV)
    assert saved.returncode == 0, saved.stderr
    assert f"token from ${TOKEN_ENV} (not checked: cannot reach the OpenPAI REST server offline" in saved.stdout
    assert stored(pai_user, "offline")["tokenEnv"] == TOKEN_ENV


def test_token_canary_in_every_openpai_command(pai_user):
    """Every `openpai` command and every `--target openpai` command, successes and failures: the token is in no
    output stream and in no file paictl wrote."""
    token = pai_user.token
    ok, failing, long = (pai_user.name(base) for base in ("cok", "cbad", "clong"))
    for name, scenario in ((ok, "succeed"), (failing, "fail"), (long, "long")):
        pai_user.write_job(name, secret=SECRET, registry_password=PASSWORD)
        pai_user.server.scenarios[name] = scenario
    target = ("--target", "openpai", "--cluster", ALIAS)
    runs = {
        "submit ok": pai_user.paictl("submit", f"{ok}.yaml", *target, "--follow"),
        "submit failing": pai_user.paictl("submit", f"{failing}.yaml", *target, "--follow", "-o", "json"),
        "submit long": pai_user.paictl("submit", f"{long}.yaml", *target),
    }
    assert pai_user.paictl("openpai", "add", "gone", dead_url(), "--user", "alice", "--no-check",
                           "--token-env", TOKEN_ENV).returncode == 0
    runs.update({
        "dry run": pai_user.paictl("submit", f"{ok}.yaml", *target, "--dry-run"),
        "compile": pai_user.paictl("compile", f"{ok}.yaml", "--target", "openpai"),
        "status list": pai_user.paictl("status", *target),
        "status json": pai_user.paictl("status", *target, "-o", "json"),
        "status one": pai_user.paictl("status", failing, *target),
        "status follow": pai_user.paictl("status", ok, *target, "--follow"),
        "logs": pai_user.paictl("logs", failing, *target),
        "logs follow": pai_user.paictl("logs", ok, *target, "--follow"),
        "stop": pai_user.paictl("stop", long, *target),
        "clusters": pai_user.paictl("openpai", "clusters"),
        "clusters json": pai_user.paictl("openpai", "clusters", "--format", "json"),
        "login env": pai_user.paictl("openpai", "login", ALIAS, "--token-env", TOKEN_ENV),
        "add": pai_user.paictl("openpai", "add", "second", pai_user.server.site_url, "--user", "alice",
                               "--token-env", TOKEN_ENV),
        # error paths
        "409": pai_user.paictl("submit", f"{ok}.yaml", *target),
        "404": pai_user.paictl("status", "nosuch", *target),
        "404 logs": pai_user.paictl("logs", "nosuch", *target),
        "404 stop": pai_user.paictl("stop", "nosuch", *target),
        "unknown vc": pai_user.paictl("submit", f"{long}.yaml", *target, "--virtual-cluster", "nope"),
        "401": pai_user.paictl("status", ok, *target, env={TOKEN_ENV: token[:-4] + "abcd"}),
        "unreachable": pai_user.paictl("status", "--target", "openpai", "--cluster", "gone"),
        "unknown alias": pai_user.paictl("status", "--target", "openpai", "--cluster", "nosuchalias"),
        "no role": pai_user.paictl("logs", ok, "nosuchrole", *target),
        "bad login": pai_user.paictl("openpai", "login", ALIAS, "--token-env", "WRONG",
                                     env={"WRONG": token + "x"}),
    })
    runs["remove"] = pai_user.paictl("openpai", "remove", "second")
    codes = {name: run.returncode for name, run in runs.items()}
    assert codes == {
        "submit ok": 0, "submit failing": 1, "submit long": 0, "dry run": 0, "compile": 0, "status list": 0,
        "status json": 0, "status one": 0, "status follow": 0, "logs": 0, "logs follow": 0, "stop": 0,
        "clusters": 0, "clusters json": 0, "login env": 0, "add": 0, "409": 3, "404": 3, "404 logs": 3,
        "404 stop": 3, "unknown vc": 3, "401": 3, "unreachable": 3, "unknown alias": 2, "no role": 2,
        "bad login": 3, "remove": 0}, {name: run.stderr for name, run in runs.items()}
    for name, run in runs.items():
        assert token not in run.stdout + run.stderr, name
        assert SECRET not in run.stdout + run.stderr and PASSWORD not in run.stdout + run.stderr, name
    assert "SyntaxError: invalid syntax" in runs["logs"].stdout and "epoch 2 done" in runs["logs follow"].stdout
    for path, data in pai_user.files().items():
        assert token.encode() not in data, path
        if path.suffix != ".yaml" or path.parent != pai_user.folder:  # the job files themselves hold the secrets
            assert SECRET.encode() not in data and PASSWORD.encode() not in data, path
    assert json.loads(runs["status json"].stdout.splitlines()[0])
