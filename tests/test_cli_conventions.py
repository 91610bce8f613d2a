"""kubectl's conventions on every command: `-o/--output` is the format of the data printed (never a file name) with
`--format` as its alias, `status` lists as `kubectl get` (AGE, -o wide|name), completion offers values without
asking a cluster, and the schema names agree between `schema`, its help and the files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

EXAMPLES = ROOT / "examples"


def _commands(group, prefix=()):
    import typer.main

    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, prefix + (name,))
        else:
            yield prefix + (name,), command


def test_every_o_option_is_the_output_format_with_format_as_its_alias():
    import typer.main

    from paictl.cli.app import app

    checked = []
    for path, command in _commands(typer.main.get_command(app)):
        if path[0] == "marketplace":  # issue 26 moves the marketplace commands to the same convention
            continue
        for param in command.params:
            names = set(param.opts) | set(param.secondary_opts)
            if "-o" in names or "--format" in names or "--output" in names:
                assert {"-o", "--output", "--format"} <= names, (path, names)
                checked.append(" ".join(path))
    assert {"validate", "compile", "submit", "status", "stop", "logs", "diagnose", "explain", "schema",
            "grass plan", "openpai clusters"} <= set(checked)


@pytest.mark.parametrize("args", [
    ["validate", str(EXAMPLES / "hello-world.yaml")], ["compile", str(EXAMPLES / "hello-world.yaml")],
    ["submit", str(EXAMPLES / "hello-world.yaml"), "--target", "local"], ["status"], ["stop", "x"], ["logs", "x"],
    ["diagnose", "--exit-code", "1"], ["explain"], ["schema"], ["openpai", "clusters"],
    ["grass", "plan", str(EXAMPLES / "hello-world.yaml"), "--cluster", str(ROOT / "clusters" / "grass-lab.yaml")],
])
def test_o_with_a_file_name_is_a_usage_error_and_writes_nothing(args, tmp_path):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-m", "paictl", *args, "-o", "out.yaml"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert list(work.iterdir()) == [] and done.stdout == ""
    assert "out.yaml" in done.stderr and "Traceback" not in done.stderr


def test_logs_and_status_of_a_local_run_as_data(tmp_path):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))

    def paictl(*args):
        done = subprocess.run([sys.executable, "-m", "paictl", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    paictl("submit", str(EXAMPLES / "local-ping-pong.yaml"), "--target", "local", "--follow")
    records = [json.loads(line) for line in paictl("logs", "local-ping-pong", "-o", "json").splitlines()]
    assert {(r["task"], r["stream"]) for r in records} == {("server-0", "out"), ("client-0", "out")}
    assert all(r["task"] == f"{r['role']}-{r['index']}" and isinstance(r["text"], str) for r in records)
    assert any(r["text"].startswith("client got: pong") for r in records if r["role"] == "client")
    plain = paictl("logs", "local-ping-pong").splitlines()
    assert plain == [f"[{r['task']}] {r['text']}" for r in records]  # the same lines, the same order

    table = paictl("status").splitlines()
    assert table[0].split() == ["NAME", "WHERE", "STATE", "ATTEMPT", "CODE", "AGE"]
    assert table[1].split()[0] == "local-ping-pong" and table[1].split()[-1].endswith("s")
    wide = paictl("status", "-o", "wide").splitlines()
    # the client's success completes the job; the server has exited 0 by then, or is stopped (README): TASKS counts
    # the succeeded tasks the job's own record shows
    tasks = json.loads(paictl("status", "local-ping-pong", "-o", "json"))["tasks"]
    succeeded = sum(task["state"] == "succeeded" for task in tasks)
    assert len(tasks) == 2 and succeeded in (1, 2) and any(t["role"] == "client" and t["state"] == "succeeded"
                                                           for t in tasks)
    assert wide[0].split()[-2:] == ["TASKS", "MESSAGE"] and f" {succeeded}/2 " in wide[1]
    assert paictl("status", "-o", "name") == "local-ping-pong\n"
    import yaml

    (listed,) = list(yaml.safe_load_all(paictl("status", "-o", "yaml")))
    assert listed["name"] == "local-ping-pong" and listed["created"].endswith("Z")
    described = yaml.safe_load(paictl("status", "local-ping-pong", "-o", "yaml"))
    assert described == json.loads(paictl("status", "local-ping-pong", "-o", "json"))


@pytest.mark.parametrize("seconds, shown", [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (59, "59s"), (119, "119s"), (120, "2m"), (150, "2m30s"),
    (599, "9m59s"), (600, "10m"), (10799, "179m"), (10800, "3h"), (11100, "3h5m"), (8 * 3600, "8h"),
    (47 * 3600 + 59 * 60, "47h"), (48 * 3600, "2d"), (50 * 3600, "2d2h"), (8 * 86400, "8d"), (729 * 86400, "729d"),
    (730 * 86400, "2y"), (731 * 86400, "2y1d"), (8 * 365 * 86400, "8y"),
])
def test_age_is_kubectl_s(seconds, shown):
    from paictl.cli.formats import age

    created = "2026-01-01T00:00:00Z"
    import calendar
    import time

    now = calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) + seconds
    assert age(created, now) == shown
    assert age(None, now) == age("yesterday", now) == "<unknown>"


def test_age_reads_a_time_as_strptime_reads_rfc3339_and_nothing_else():
    """formats.age parses the stamp by hand (no _strptime import): the same instant as strptime for every
    well-formed stamp, "<unknown>" for the ill-formed (unicode digits, a space for T, a field out of range)."""
    import calendar
    import time

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from paictl.cli.formats import age

    def reference(stamp: str, now: float) -> str:
        try:
            made = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            return "<unknown>"
        return age(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(made)), now)

    @settings(max_examples=400, deadline=None)
    @given(st.datetimes(min_value=__import__("datetime").datetime(1971, 1, 1)), st.integers(-10, 10 ** 9),
           st.sampled_from(["Z", "", ".123456Z", "+00:00"]))
    def same_instant(when, seconds, suffix):
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S") + suffix
        now = calendar.timegm(when.timetuple()) + seconds
        assert age(stamp, now) == reference(stamp, now)

    same_instant()
    for stamp in ["2026-01-01T00:00:0\u0661Z", "2026-01-01 00:00:00Z", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
                  "2026-01-01T24:00:00Z", "2026/01/01T00:00:00Z", "2026-01-01T00:00", "+026-01-01T00:00:00Z", ""]:
        assert age(stamp, 2e9) == "<unknown>", stamp


def test_schema_names_agree_between_the_command_its_help_and_the_files():
    from paictl.cli.app import SCHEMA_HELP
    from paictl.schemas import load_schema, schema_names

    listed = {word.strip(" ,;:()") for word in SCHEMA_HELP.replace("the default", "").split()}
    for name in schema_names():
        assert name in listed, name
        assert load_schema(name)["$id"] == f"https://paictl.dev/schemas/{name}.schema.json"
        assert (ROOT / "schemas" / f"{name}.schema.json").is_file()
    docs = (ROOT / "docs" / "reference" / "commands.md").read_text()
    assert all(f"`{name}`" in docs for name in schema_names())


def test_completion_offers_values_without_asking_a_cluster(tmp_path, monkeypatch):
    from paictl.cli import completion

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "unreachable"))  # a cluster call would fail or hang
    monkeypatch.chdir(tmp_path)
    for run in ("mnist", "mars-test", ".hidden"):
        (tmp_path / "state" / "paictl" / "runs" / run).mkdir(parents=True)
    (tmp_path / "config" / "paictl").mkdir(parents=True)
    (tmp_path / "config" / "paictl" / "openpai-clusters.yaml").write_text(
        "clusters:\n  prod: {url: 'https://pai.example.com', user: alice}\n"
        "  lab: {url: 'https://lab.example.com', user: alice}\n")
    (tmp_path / "my-profile.yaml").write_text("{}\n")
    assert completion.complete_target("j") == ["jobset"]
    assert completion.complete_compile_target("") == sorted(completion.complete_compile_target(""))
    assert completion.complete_profile("") == ["default", "openpai", "my-profile.yaml"]
    assert completion.complete_cluster("") == ["lab", "prod", "my-profile.yaml"]
    assert completion.complete_job("m") == ["mars-test", "mnist"]
    # through the shell protocol, as bash asks
    env = dict(os.environ, COMP_WORDS="paictl logs mn", COMP_CWORD="2", _PAICTL_COMPLETE="complete_bash")
    script = os.path.join(os.path.dirname(sys.executable), "paictl")  # the console script, named as the shell knows it
    done = subprocess.run([script], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["mnist"], done.stderr
