"""targets/openpai/reach.py, the light answer to "is the OpenPAI cluster there?", held to the full path it stands in
for: the clusters file as the YAML reader reads it (clusters.load_clusters), URLs as urllib.parse splits them
(errors.display_url), redaction with both patterns always applied, a connection as socket.create_connection makes it,
and the line the backend's own check raises. Whatever the light reading accepts, it must read as the full path does;
whatever it cannot tell is None, never a guess.
"""

from __future__ import annotations

import re
import socket
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paictl.errors import UsageError, display_url
from paictl.targets.openpai.backend import OpenPaiBackend
from paictl.targets.openpai.clusters import ClusterEntry, load_clusters, save_clusters
from paictl.targets.openpai.client import UnreachableError
from paictl.targets.openpai.reach import (REACHABLE, Redactor, connect_error, http_address, plain_clusters,
                                          probe_alias, shown_url)
from paictl.targets.backend import BackendOptions

WORDS = st.text("abcXYZ019-._~/:%+=@[]", min_size=1, max_size=12)
VALUES = st.one_of(WORDS, st.sampled_from(["yes", "No", "true", "null", "on", "y", "12", "0x1F", "1e3", "a b",
                                           "it's", "#x", "a: b", "x:", "-a", "é", "2020-01-01", "~", ""]))
URLS = st.one_of(
    st.builds(lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
              st.sampled_from(["http", "https", "HTTP", "ftp"]),
              st.sampled_from(["127.0.0.1", "pai.example.com", "Pai.Example.COM", "[::1]", "", "a_b", "u:p@h",
                               "a..b", "a.", ".a", "x" * 63 + ".y", "y." + "x" * 64, "bücher.de"]),
              st.sampled_from(["", ":9186", ":0", ":080", ":65536", ":x", ":"]),
              st.sampled_from(["", "/", "/rest-server", "/a?token=s", "/a#f", "/a b", "/%41"])),
    st.text(max_size=30))


def _as_data(entries: dict[str, ClusterEntry]) -> dict[str, dict]:
    """What `plain_clusters` returns for these entries (the file's keys)."""
    data = {}
    for alias, entry in entries.items():
        item = {"url": entry.url, "user": entry.user, "tokenEnv": entry.token_env, "tokenStore": entry.token_store,
                "token": entry.token, "virtualCluster": entry.virtual_cluster}
        item = {key: value for key, value in item.items() if value is not None}
        if entry.min_poll_interval != 1.0:
            item["minPollInterval"] = entry.min_poll_interval
        data[alias] = item
    return data


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.dictionaries(st.text("abcXY09_.-", min_size=1, max_size=8), st.tuples(
    VALUES, VALUES, st.one_of(st.none(), VALUES), st.one_of(st.none(), VALUES), st.one_of(st.none(), VALUES),
    st.sampled_from([1.0, 2.5, 10.0, 0.25])), min_size=1, max_size=3))
def test_what_the_light_reading_accepts_it_reads_as_the_yaml_reader_does(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("clusters") / "openpai-clusters.yaml"
    entries = {alias: ClusterEntry(alias=alias, url=url, user=user, token_env=env,
                                   token_store="plaintext" if token is not None else None, token=token,
                                   virtual_cluster=vc, min_poll_interval=interval)
               for alias, (url, user, env, token, vc, interval) in raw.items()}
    save_clusters(entries, path)
    plain = plain_clusters(path.read_text(encoding="utf-8"))
    if plain is not None:
        assert plain == _as_data(load_clusters(path))


def test_the_files_paictl_writes_are_read_the_light_way(tmp_path):
    """Otherwise the early answer would never be taken: a usual file must be in the light reading's shape."""
    path = tmp_path / "openpai-clusters.yaml"
    entries = {"prod": ClusterEntry(alias="prod", url="https://pai.example.com/rest-server", user="alice",
                                    token_env="PAI_TOKEN", virtual_cluster="default", min_poll_interval=2.5),
               "lab": ClusterEntry(alias="lab", url="http://10.0.0.5:9186", user="bob", token_store="keyring"),
               "ci": ClusterEntry(alias="ci", url="http://pai-ci:9186", user="ci", token_store="plaintext",
                                  token="zq-Secret-9")}
    save_clusters(entries, path)
    assert plain_clusters(path.read_text()) == _as_data(load_clusters(path)) == _as_data(entries)


@pytest.mark.parametrize("text", [
    "clusters:\n  a:\n    url: 'http://x'\n    user: u\n",                 # quoted
    "clusters:\n  a: {url: http://x, user: u}\n",                          # flow mapping
    "clusters:\n  a:\n    url: http://x # comment\n    user: u\n",         # a comment after a value
    "clusters:\n  a:\n    url: http://x\n    user: yes\n",                 # a boolean to some readers
    "clusters:\n  a:\n    url: http://x\n    user: 123\n",                 # a number
    "clusters:\n  a:\n    url: http://x\n",                                # no user: the full path says so
    "clusters:\n  a:\n    url: http://x\n    user: u\n    url: http://y\n",  # a duplicate key
    "clusters:\n  a:\n    url: http://x\n    user: u\n  a:\n    url: http://y\n    user: u\n",
    "clusters:\n  a:\n    url: http://x\n    user: u\n    port: 9\n",      # a key it does not know
    "clusters:\n  a:\n    url: http://x\n    user: u\n    tokenStore: vault\n",
    "clusters:\n  a:\n    url: http://x\n    user: u\n    minPollInterval: 0\n",
    "clusters:\n  a:\n    url: http://x\n    user: u\n    minPollInterval: 010\n",
    "clusters:\n  a:\n\turl: http://x\n    user: u\n",                    # a tab
    "clusters:\r\n  a:\r\n    url: http://x\r\n    user: u\r\n",          # CRLF
    "\ufeffclusters:\n  a:\n    url: http://x\n    user: u\n",             # a BOM
    "clusters:\n  true:\n    url: http://x\n    user: u\n",                # an alias YAML reads as a boolean
    "clusters:\n  1a:\n    url: http://x\n    user: u\n",
    "clusters:\n  a:\n   url: http://x\n    user: u\n",                    # three spaces
    "clusters:\n  a:\n    url: http://x\n    user: u\n# \x1b[31m\n",       # a control character in a comment
    "clusters: {}\n", "clusters:\n", "", "# only a comment\n", "---\nclusters:\n  a:\n    url: x\n    user: u\n",
    "other: 1\nclusters:\n  a:\n    url: x\n    user: u\n",
])
def test_anything_else_is_left_to_the_yaml_reader(text):
    assert plain_clusters(text) is None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(URLS)
def test_a_plain_url_splits_as_urllib_splits_it(url):
    address = http_address(url)
    assert shown_url(url) == display_url(url)
    if address is not None:
        parts = urlsplit(url)
        assert address == (parts.hostname, parts.port or {"http": 80, "https": 443}[parts.scheme])
        assert display_url(url) == url
        assert address[0].encode("idna") == address[0].encode("ascii")  # what socket would resolve


def test_common_urls_are_plain():
    assert http_address("https://Pai.Example.com/rest-server") == ("pai.example.com", 443)
    assert http_address("http://127.0.0.1:9186") == ("127.0.0.1", 9186)
    assert http_address("http://[::1]:9186") is None and http_address("http://u:p@h") is None


_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/-]+=*", re.IGNORECASE)
_URL_TOKEN = re.compile(r"((?:^|[?&])(?:token|access_token)=)[^&#\s]*", re.IGNORECASE)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(list("Bearer TOKEN=tokn?&#ab\u212a\u017f ") + ["bearer ", "?token=", "&access_token="]),
                max_size=20).map("".join), st.sampled_from(["", "ab", "sec"]))
def test_redaction_skips_the_patterns_only_where_they_cannot_match(text, secret):
    expected = text.replace(secret, "***") if secret else text
    expected = _URL_TOKEN.sub(lambda m: m.group(1) + "***", _BEARER.sub(lambda m: m.group(1) + "***", expected))
    assert Redactor(secret)(text) == expected


def _refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_connection_fails_as_socket_create_connection_fails(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    port = _refused_port()
    with pytest.raises(OSError) as raised:
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
    light = connect_error(f"http://127.0.0.1:{port}/rest-server")  # a plain URL: through _socket
    assert (type(light), str(light)) == (type(raised.value), str(raised.value))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        assert connect_error(f"http://LocalHost:{server.getsockname()[1]}") is None


@pytest.fixture
def clusters(tmp_path, monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("PAICTL_TEST_TOKEN", "tok-3c1d")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    entries = {"refused": f"http://127.0.0.1:{_refused_port()}/", "open": f"http://127.0.0.1:{server.getsockname()[1]}",
               "odd": f"http://[::1]:{_refused_port()}"}
    save_clusters({alias: ClusterEntry(alias=alias, url=url, user="alice", token_env="PAICTL_TEST_TOKEN")
                   for alias, url in entries.items()}, tmp_path / "paictl" / "openpai-clusters.yaml")
    yield monkeypatch
    server.close()


def test_the_light_probe_says_what_the_backend_says(clusters):
    line = probe_alias("refused")
    with pytest.raises(UnreachableError) as raised:
        OpenPaiBackend(BackendOptions(cluster="refused")).check_reachable()
    assert line == str(raised.value) and "Connection refused" in line
    assert probe_alias("open") == REACHABLE
    OpenPaiBackend(BackendOptions(cluster="open")).check_reachable()  # the full path agrees


def test_what_the_light_probe_cannot_tell_is_none(clusters):
    assert probe_alias("odd") is None            # an IPv6 literal: urllib.parse reads it
    assert probe_alias("nowhere") is None        # no such alias: the full path's usage error
    assert probe_alias(None) is None             # several aliases: the full path asks to choose
    clusters.delenv("PAICTL_TEST_TOKEN")
    assert probe_alias("refused") is None        # no token: the full path's usage error comes first
    with pytest.raises(UsageError):
        OpenPaiBackend(BackendOptions(cluster="refused")).check_reachable()
    clusters.setenv("PAICTL_TEST_TOKEN", "tok-3c1d")
    clusters.setenv("https_proxy", "http://proxy.invalid:3128")
    assert probe_alias("refused") is None        # through a proxy, httpx decides
    assert connect_error("http://127.0.0.1:1") is None


def test_one_entry_it_cannot_read_leaves_the_whole_file_to_the_yaml_reader(clusters, tmp_path):
    """The full path reads every alias (a broken one fails them all), so the light one must have read them all."""
    path = tmp_path / "paictl" / "openpai-clusters.yaml"
    path.write_text(path.read_text() + "  quoted:\n    url: 'http://127.0.0.1:1'\n    user: alice\n")
    assert len(load_clusters(path)) == 4 and probe_alias("refused") is None
