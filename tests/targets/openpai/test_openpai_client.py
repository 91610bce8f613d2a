"""The OpenPAI REST client over real HTTP: retries, dropped connections, 429/5xx, error bodies, the token guard.

Faults are injected through the test double (tests/openpai_server, held to the real server's recordings by its
test_contract.py): no recording drops a connection or answers 503 on a chosen request. Link resolution and failing
fast need no server at all."""

from __future__ import annotations

import logging
import socket

import pytest
from openpai_server import OpenPaiServer
from openpai_server.harness import TOKEN

from paictl.errors import ClusterError, NotFoundError
from paictl.targets.openpai.client import OpenPaiClient, Redactor, UnreachableError, resolve_link, server_error


@pytest.fixture
def server():
    with OpenPaiServer() as running:
        running.issue_token("alice", TOKEN)
        yield running


def _client(server, token=TOKEN, **options):
    return OpenPaiClient(url=server.url, token=token, alias="testpai", backoff=0.01, **options)


def test_a_get_is_retried_after_a_5xx(server):
    server.faults.append(("/api/v2/virtual-clusters", "503"))
    server.faults.append(("/api/v2/virtual-clusters", "500"))
    reply = _client(server).get("/api/v2/virtual-clusters")
    assert reply.status == 200 and sorted(reply.body) == ["default"]
    assert len([r for r in server.requests if r.path == "/api/v2/virtual-clusters"]) == 3


def test_a_get_is_retried_after_a_dropped_connection(server):
    server.faults.append(("/api/v2/storages", "drop"))
    assert _client(server).get("/api/v2/storages").body["storages"][0]["name"] == "confignfs"
    assert len([r for r in server.requests if r.path == "/api/v2/storages"]) == 2


def test_retries_give_up_with_the_last_5xx_as_one_line(server):
    server.faults.extend([("/api/v2/storages", "503")] * 4)
    with pytest.raises(ClusterError) as caught:
        _client(server).get("/api/v2/storages", what="list storages")
    assert str(caught.value) == "OpenPAI testpai: list storages: HTTP 503 UnknownError: Internal error message."
    assert caught.value.exit_code == 3


def test_a_post_is_never_repeated(server):
    server.faults.append(("/api/v2/jobs", "drop"))
    with pytest.raises(ClusterError) as caught:
        _client(server).post("/api/v2/jobs", content=b"name: x\n", content_type="text/yaml", what="submit x")
    message = str(caught.value)
    assert message.startswith(f"cannot reach the OpenPAI REST server testpai ({server.url}): submit x: ")
    assert message.endswith("the server may have acted on it: check with `paictl status` first")
    assert len([r for r in server.requests if r.path == "/api/v2/jobs"]) == 1
    server.faults.append(("/api/v2/jobs", "500"))
    with pytest.raises(ClusterError, match="HTTP 500 UnknownError"):
        _client(server).post("/api/v2/jobs", content=b"name: x\n", content_type="text/yaml")
    assert len([r for r in server.requests if r.path == "/api/v2/jobs"]) == 2


def _dead_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_refused_connection_is_one_line_at_once_without_the_token():
    port = _dead_port()
    slept = []
    client = OpenPaiClient(url=f"http://127.0.0.1:{port}", token=TOKEN, alias="gone", sleep=slept.append)
    with pytest.raises(UnreachableError) as caught:
        client.get("/api/v2/jobs", what="list jobs")
    message = str(caught.value)
    # the server, not the request: nothing was sent (and the CLI's early answer says the same, tests/test_cli_entry.py)
    assert message.startswith(f"cannot reach the OpenPAI REST server gone (http://127.0.0.1:{port}): [Errno ")
    assert "Connection refused" in message and "tried" not in message
    assert "\n" not in message and TOKEN not in message and caught.value.exit_code == 3
    assert slept == []  # never retried: nothing was sent, and the server is not there


def test_an_unknown_host_is_one_line_at_once():
    slept = []
    client = OpenPaiClient(url="http://no-such-host.invalid", token=TOKEN, alias="typo", sleep=slept.append)
    with pytest.raises(UnreachableError, match=r"^cannot reach the OpenPAI REST server typo "
                                               r"\(http://no-such-host\.invalid\): \[Errno [^\n]*$"):
        client.get("/api/v2/jobs", what="list jobs")
    assert slept == []


def test_429_is_retried_and_slow_retries_are_announced(server, caplog):
    server.faults.append(("/api/v2/virtual-clusters", "429"))
    server.faults.append(("/api/v2/virtual-clusters", "503"))
    slept = []
    client = OpenPaiClient(url=server.url, token=TOKEN, alias="testpai", backoff=0.6, sleep=slept.append)
    with caplog.at_level(logging.WARNING, logger="paictl.openpai"):
        assert client.get("/api/v2/virtual-clusters", what="list virtual clusters").status == 200
    assert slept == [0.6, 1.2]
    # the first retry comes within the first second: quiet; the second would pass it: announced
    assert [r.getMessage() for r in caplog.records] == [
        "paictl: OpenPAI testpai: list virtual clusters: HTTP 503; attempt 3 of 4 in 1.2s"]


@pytest.mark.parametrize(("rest", "link", "resolved"), [
    # a deployment: the REST API under /rest-server, links resolved against the site root (through pylon)
    ("https://pai.example.com/rest-server", "/log-manager/10.0.0.5:9103/api/v1/logs/user-all?token=t",
     "https://pai.example.com/log-manager/10.0.0.5:9103/api/v1/logs/user-all?token=t"),
    ("https://example.com/pai/rest-server/", "/log-manager/10.0.0.5:9103/x", "https://example.com/pai/log-manager/10.0.0.5:9103/x"),
    # a direct REST address: no proxy, so paictl does what pylon would
    ("http://10.0.0.1:9186", "/log-manager/10.0.0.5:9103/api/v1/logs/user-all?token=t",
     "http://10.0.0.5:9103/api/v1/logs/user-all?token=t"),
    ("http://10.0.0.1:9186", "/api/v2/jobs", "http://10.0.0.1:9186/api/v2/jobs"),
    # absolute links stay; relative ones are relative to the REST URL
    ("https://pai.example.com/rest-server", "https://blob.example.com/log?sig=1", "https://blob.example.com/log?sig=1"),
    ("https://pai.example.com/rest-server", "api/v2/jobs", "https://pai.example.com/rest-server/api/v2/jobs"),
])
def test_links_are_resolved_as_the_web_portal_resolves_them(rest, link, resolved):
    assert resolve_link(rest, link) == resolved


def test_the_token_goes_only_under_the_rest_servers_own_address():
    client = OpenPaiClient(url="https://pai.example.com/rest-server", token=TOKEN)
    assert client.owns("https://pai.example.com/rest-server/api/v2/jobs")
    assert client.owns("https://pai.example.com:443/rest-server/api/v2/jobs")
    assert not client.owns("https://pai.example.com/log-manager/10.0.0.5:9103/api/v1/logs")
    assert not client.owns("https://pai.example.com/rest-server-evil/api")
    assert not client.owns("http://pai.example.com/rest-server/api/v2/jobs")
    assert not client.owns("https://pai.example.com.evil.org/rest-server/api")
    assert not client.owns("https://other.example.com/rest-server/api/v2/jobs")
    direct = OpenPaiClient(url="http://10.0.0.1:9186", token=TOKEN)
    assert direct.owns("http://10.0.0.1:9186/api/v2/jobs") and not direct.owns("http://10.0.0.5:9103/api/v1/logs")


def test_a_wrong_token_says_to_log_in(server):
    with pytest.raises(ClusterError) as caught:
        _client(server, token="not-the-token").get("/api/v2/jobs", what="list jobs")
    assert str(caught.value) == ("OpenPAI testpai: list jobs: HTTP 401 UnauthorizedUserError: Your token is invalid; "
                                 "the token is missing, wrong or expired: run `paictl openpai login testpai`")


def test_404_is_not_found(server):
    with pytest.raises(NotFoundError, match=r"^OpenPAI testpai: read job: HTTP 404 NoJobError: Job alice~x is not "
                                            r"found\.$"):
        _client(server).get("/api/v2/jobs/alice~x", what="read job")


def test_an_echoed_token_is_redacted_from_the_error(server):
    # a server (or proxy) that quotes the request back must not make paictl print the token
    server.faults.append(("/api/v2/info", "drop"))
    client = _client(server, attempts=1)
    with pytest.raises(ClusterError) as caught:
        client.get("/api/v2/info", what=f"probe with {TOKEN}")
    assert TOKEN not in str(caught.value) and "probe with ***" in str(caught.value)


def test_httpx_debug_logs_are_redacted(server, caplog):
    client = _client(server)
    with caplog.at_level(logging.DEBUG):
        client.get("/api/v2/info")
        logging.getLogger("httpx").debug("header Authorization: Bearer %s", TOKEN)
    assert caplog.records and TOKEN not in caplog.text and "Bearer ***" in caplog.text


def test_redactor_covers_the_token_bearer_headers_and_url_tokens():
    redact = Redactor("abc123secret")
    assert redact("x abc123secret y") == "x *** y"
    assert redact("Authorization: Bearer anything.jwt") == "Authorization: Bearer ***"
    assert redact("https://h/logs?username=a&token=zz9&x=1") == "https://h/logs?username=a&token=***&x=1"
    assert redact("https://h/logs?token=zz9") == "https://h/logs?token=***"


def test_error_bodies():
    assert server_error('{"code": "NoJobError", "message": "Job a~b is not found."}') == (
        "NoJobError", "Job a~b is not found.")
    assert server_error('{"message": "bad\\n  yaml"}') == ("", "bad yaml")  # js-yaml errors come without a code
    # a proxy's page: its words, not its first line (`<html>`)
    assert server_error("<html>\n<body>Bad Gateway</body>") == ("", "Bad Gateway")
    nginx = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
             "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
    assert server_error(nginx) == ("", "502 Bad Gateway")
    assert server_error("") == ("", "(empty response)")


def test_a_rate_limit_longer_than_the_retries_is_one_line_at_once():
    """The HiveD server of the recordings lists a user's jobs 3 times a minute; the 4th answer is 429 with
    `retry-after: 60` (recordings: rate-limit): retrying within the window is useless, so paictl says when to try
    again, at once."""
    from openpai_server.server import HIVED_LIMITS

    with OpenPaiServer(hived=True, limits=HIVED_LIMITS) as hived:
        hived.issue_token("alice", TOKEN)
        slept: list[float] = []
        client = OpenPaiClient(url=hived.url, token=TOKEN, alias="testpai", sleep=slept.append)
        for _ in range(3):
            assert client.get("/api/v2/jobs", params={"username": "alice"}, expect=(list,)).status == 200
        with pytest.raises(ClusterError) as caught:
            client.get("/api/v2/jobs", params={"username": "alice"}, what="list jobs", expect=(list,))
    assert str(caught.value) == ("OpenPAI testpai: list jobs: HTTP 429: Too many requests, please try again later; "
                                 "the server's rate limit lets this through again in 60 s")
    assert slept == []


@pytest.mark.parametrize("fault, says", [
    ("login", "HTTP 200, but the answer is not the REST server's JSON (text/html; charset=utf-8: Sign in); is "),
    ("empty", "HTTP 200, but the answer is not the REST server's JSON (no content type: an empty body); is "),
    ("sso", "HTTP 302 redirects to https://sso.example.invalid/login?next=***&token=*** (paictl follows no "
            "redirect); if the cluster moved, give its new address to `paictl openpai add testpai`"),
])
def test_an_answer_from_something_in_front_of_the_rest_server_is_one_line(server, fault, says):
    """A login page, an empty 200 or a redirect to single sign-on (which quotes the token) is no REST answer:
    one ClusterError line, never the page taken for a value, never a redirect followed with the token."""
    server.faults.append(("/api/v2/jobs/alice~x", fault))
    with pytest.raises(ClusterError) as caught:
        _client(server).get("/api/v2/jobs/alice~x", what="read job alice~x")
    message = str(caught.value)
    assert message.startswith("OpenPAI testpai: read job alice~x: " + says), message
    assert "\n" not in message and TOKEN not in message and caught.value.exit_code == 3
    assert len([r for r in server.requests if r.path == "/api/v2/jobs/alice~x"]) == 1  # not retried, not followed


def test_a_json_answer_of_another_shape_is_one_line(server):
    """The job list is a JSON list (or `{totalCount, data}`); where a JSON object is the answer, a list is not."""
    client = _client(server)
    assert client.get("/api/v2/jobs", params={"username": "alice"}, expect=(list, dict)).body == []
    with pytest.raises(ClusterError) as caught:
        client.get("/api/v2/jobs", params={"username": "alice"}, what="list jobs")
    assert str(caught.value) == ("OpenPAI testpai: list jobs: HTTP 200, but the answer is a JSON list, not the "
                                 "JSON object the REST server sends")


def test_a_proxy_error_page_is_shown_by_its_title(server):
    server.faults.extend([("/api/v2/storages", "nginx502")] * 4)
    with pytest.raises(ClusterError) as caught:
        _client(server).get("/api/v2/storages", what="list storages")
    assert str(caught.value) == "OpenPAI testpai: list storages: HTTP 502: 502 Bad Gateway"


def test_an_answer_that_never_ends_times_out(server):
    """A byte every 0.1 s keeps each read within the read timeout; the whole answer has the client's timeout."""
    import time

    server.faults.append(("/api/v2/jobs/alice~x", "trickle"))
    started = time.monotonic()
    with pytest.raises(ClusterError) as caught:
        _client(server, timeout=1.0).get("/api/v2/jobs/alice~x", what="read job alice~x")
    assert time.monotonic() - started < 5
    assert str(caught.value) == (f"cannot reach the OpenPAI REST server testpai ({server.url}): read job alice~x: "
                                 "the answer was still arriving when the time allowed for it ran out")


def test_a_redirected_log_link_is_not_taken_for_the_log(server):
    """A log link answered 302 (a log-manager behind single sign-on) has no log in its body."""
    server.faults.append(("/log-manager-link", "sso"))
    with pytest.raises(ClusterError, match=r"^OpenPAI testpai: all log of main-0: HTTP 302 redirects to "
                                           r"https://sso\.example\.invalid/login\?next=\*\*\*&token=\*\*\* "):
        with _client(server).open_link(f"{server.url}/log-manager-link", what="all log of main-0"):
            pass


def test_a_link_to_another_server_that_cannot_be_read_is_named_as_that_server(server):
    """A log-manager link whose node refuses: the line names that node, not the REST server, which answered."""
    port = _dead_port()
    slept: list[float] = []
    client = _client(server, sleep=slept.append)
    with pytest.raises(UnreachableError) as caught:
        with client.open_link(f"/log-manager/127.0.0.1:{port}/api/v1/logs/user.pai.all?token=abc",
                              what="all log of main-0"):
            pass
    assert str(caught.value).startswith(f"cannot read from http://127.0.0.1:{port}, where a link of the OpenPAI REST "
                                        "server testpai points: all log of main-0: [Errno ")
    assert slept == []  # refused: nothing was sent, nothing to ask again


def test_a_link_dropped_before_its_answer_is_asked_again(server):
    server.faults.append(("/api/v2/info", "drop"))
    with _client(server).open_link(f"{server.url}/api/v2/info", what="all log of main-0") as response:
        assert response.status_code == 200 and b"PAI RESTful API" in response.read()
    assert len([r for r in server.requests if r.path == "/api/v2/info"]) == 2


@pytest.mark.parametrize("page", ["<html>" + "<script x" * 300_000, "<html>" + "<style " * 300_000,
                                  "<html><head>" * 300_000])
def test_a_huge_hostile_error_page_is_quoted_in_time(page):
    """Only the top of a page is read for its words: an unclosed tag repeated over megabytes made the pattern that
    drops scripts and styles take quadratic time (3 s for 64 KB of them)."""
    import time

    from paictl.http_answers import PAGE_TEXT_LIMIT, page_text

    started = time.process_time()
    line = page_text(page)
    assert time.process_time() - started < 1.0 and len(line) <= PAGE_TEXT_LIMIT
