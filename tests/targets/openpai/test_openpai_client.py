"""The OpenPAI REST client over real HTTP: retries, dropped connections, 5xx, error bodies, the token guard."""

from __future__ import annotations

import logging
import socket

import pytest
from openpai_server import OpenPaiServer
from openpai_server.harness import TOKEN

from paictl.errors import ClusterError, NotFoundError
from paictl.targets.openpai.client import OpenPaiClient, Redactor, server_error


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
    assert reply.status == 200 and sorted(reply.body) == ["default", "gpu", "restricted"]
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


def test_an_unreachable_server_is_one_line_without_the_token():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenPaiClient(url=f"http://127.0.0.1:{port}", token=TOKEN, alias="gone", backoff=0.01)
    with pytest.raises(ClusterError) as caught:
        client.get("/api/v2/jobs", what="list jobs")
    message = str(caught.value)
    assert message.startswith(f"cannot reach the OpenPAI REST server gone (http://127.0.0.1:{port}) (tried 4 "
                              "times): list jobs: ")
    assert "\n" not in message and TOKEN not in message and caught.value.exit_code == 3


def test_a_wrong_token_says_to_log_in(server):
    with pytest.raises(ClusterError) as caught:
        _client(server, token="not-the-token").get("/api/v2/jobs", what="list jobs")
    assert str(caught.value) == ("OpenPAI testpai: list jobs: HTTP 401 UnauthorizedUserError: Guest is not allowed "
                                 "to do this operation; the token is missing, wrong or expired: run "
                                 "`paictl openpai login testpai`")


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
    assert server_error("<html>\n<body>Bad Gateway</body>") == ("", "<html>")
    assert server_error("") == ("", "(empty response)")
