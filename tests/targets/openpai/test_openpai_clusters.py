"""The clusters file: where it lives (XDG), what it keeps, and where tokens come from."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from paictl.errors import ConfigFileError, InputError, UsageError
from paictl.targets.openpai.clusters import (ClusterEntry, clusters_path, get_cluster, load_clusters,
                                             resolve_token, save_clusters)


def test_path_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert clusters_path() == tmp_path / "paictl" / "openpai-clusters.yaml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")  # the spec says relative paths are invalid
    assert clusters_path() == Path.home() / ".config" / "paictl" / "openpai-clusters.yaml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert clusters_path() == Path.home() / ".config" / "paictl" / "openpai-clusters.yaml"


def test_round_trip_and_mode(tmp_path):
    path = tmp_path / "deep" / "openpai-clusters.yaml"
    entries = {"a": ClusterEntry(alias="a", url="https://a", user="u", token_env="A_TOKEN", virtual_cluster="vc",
                                 min_poll_interval=2.5),
               "b": ClusterEntry(alias="b", url="http://b:9186", user="v", token_store="plaintext",
                                 token="zq-secret-9")}
    save_clusters(entries, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_clusters(path) == entries
    assert "zq-secret-9" not in repr(entries["b"])


def test_a_missing_file_is_empty_and_a_broken_one_is_one_line(tmp_path):
    assert load_clusters(tmp_path / "none.yaml") == {}
    broken = tmp_path / "broken.yaml"
    broken.write_text("clusters: [1, 2]\n")
    # the environment's file is broken: exit 3 (ConfigFileError), located at the value at fault
    with pytest.raises(ConfigFileError, match=r"broken.yaml:1:11: expected a mapping `clusters:` of alias to cluster$"):
        load_clusters(broken)
    broken.write_text("clusters:\n  x: {url: https://x}\n")
    with pytest.raises(ConfigFileError, match=r"broken.yaml:2:6: cluster 'x' needs a `url` and a `user` \(strings\)$"):
        load_clusters(broken)
    broken.write_text("clusters:\n  x: {url: https://x, user: u, minPollInterval: 0}\n")
    with pytest.raises(ConfigFileError, match=r"broken.yaml:2:49: cluster 'x': minPollInterval must be a positive"):
        load_clusters(broken)


def test_choosing_a_cluster(tmp_path):
    path = tmp_path / "c.yaml"
    with pytest.raises(UsageError, match="no OpenPAI cluster configured in .*; add one with"):
        get_cluster(None, path)
    one = ClusterEntry(alias="one", url="https://1", user="u")
    save_clusters({"one": one}, path)
    assert get_cluster(None, path) == one  # the only one needs no --cluster
    save_clusters({"one": one, "two": ClusterEntry(alias="two", url="https://2", user="u")}, path)
    with pytest.raises(UsageError, match=r"several OpenPAI clusters in .* \(one, two\); choose one with --cluster"):
        get_cluster(None, path)


def test_token_sources(monkeypatch):
    monkeypatch.setenv("MY_PAI_TOKEN", " tok-from-env \n")
    assert resolve_token(ClusterEntry(alias="a", url="https://a", user="u", token_env="MY_PAI_TOKEN")) == \
        "tok-from-env"
    assert resolve_token(ClusterEntry(alias="a", url="https://a", user="u", token_store="plaintext",
                                      token="tok")) == "tok"
    with pytest.raises(UsageError, match=r"cluster 'a' has no token; run `paictl openpai login a`"):
        resolve_token(ClusterEntry(alias="a", url="https://a", user="u"))
    with pytest.raises(UsageError, match="keeps its token in the OS keyring, but no keyring is available"):
        resolve_token(ClusterEntry(alias="a", url="https://a", user="u", token_store="keyring"))


@pytest.mark.parametrize("text", [
    "# written by paictl\nclusters:\n  a:\n    tokenEnv: A_TOKEN\n    url: https://a/rest-server\n    user: alice\n",
    "clusters:\n  b: {url: 'http://b:9186', user: bob, tokenStore: keyring, minPollInterval: 2}\n",
    "clusters:\n  c:\n    url: http://c\n    user: yes\n    virtualCluster: 2020-01-01\n",   # 1.2: a string; a date
    "clusters:\n  d:\n    url: http://d\n    user: 0o17\n",                            # 1.2 octal: not a string
    "clusters:\n  e:\n    url: http://e\n    user: u\n    minPollInterval: .inf\n    token: 1_000\n",
    "clusters:\n  f:\n    url: http://f\n    user: u\n  f:\n    url: http://g\n    user: v\n",  # duplicate key
    "clusters:\n  g: &x {url: http://g, user: u}\n  h: *x\n",                          # anchors: ruamel decides
    "%YAML 1.1\n---\nclusters:\n  i: {url: http://i, user: yes}\n",                   # 1.1: user is a boolean
    "clusters:\n  j: {url: http://j, user: !!str 12}\n",
    "clusters: [1, 2]\n",
    "clusters:\n  k: {url: http://k, user: u\n",                                      # bad syntax
    "",
])
def test_the_fast_reader_agrees_with_the_located_one(tmp_path, monkeypatch, text):
    """The clusters file is read through yaml-rs when it can be (an unreachable cluster's answer is mostly start-up),
    else through the located loader (targets/config_files.py): both readings give the same entries, or the same
    error."""
    from paictl.protocol import loading

    path = tmp_path / "openpai-clusters.yaml"
    path.write_text(text)

    def outcome():
        try:
            return load_clusters(path)
        except ConfigFileError as error:
            return str(error)

    fast = outcome()
    monkeypatch.setattr(loading, "load_fast", lambda text: None)
    assert fast == outcome()


def test_what_paictl_writes_is_read_by_the_fast_reader(tmp_path):
    from paictl.protocol.loading import load_fast as _load_fast

    path = tmp_path / "openpai-clusters.yaml"
    save_clusters({"a": ClusterEntry(alias="a", url="https://a/rest-server", user="u", token_env="A_TOKEN",
                                     virtual_cluster="vc", min_poll_interval=2.5)}, path)
    assert _load_fast(path.read_text()) == {"clusters": {"a": {"url": "https://a/rest-server", "user": "u",
                                                               "tokenEnv": "A_TOKEN", "virtualCluster": "vc",
                                                               "minPollInterval": 2.5}}}
