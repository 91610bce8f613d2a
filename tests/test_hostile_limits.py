"""Bounded time and memory for any input of at most 2 MiB, and bounded reading of inputs that have no end.

Each shape runs `paictl validate` (and `compile` where the job is valid) in a child process with an address-space
limit and a generous timeout: a hang, a crash (the Rust fast path used to segfault on deep nesting), a traceback or
unbounded memory fails the test; how fast a loaded machine happens to be does not. The figures measured on an idle
machine are in the README ("Hostile input").
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from paictl.protocol.source import MAX_FILE_BYTES

#: The memory any input may cost, with the interpreter and its imports (README: 200 MB for the work itself).
ADDRESS_SPACE = 400 * 1024 * 1024
#: Far above the 2 s target; only a hang or superlinear blow-up reaches it.
TIMEOUT = 60

ROLE = ("  r{i}:\n    instances: 1\n    dockerImage: img\n    resourcePerInstance:\n      cpu: 1\n      memoryMB: 100\n"
        "      gpu: 0\n    commands:\n      - echo hi\n")
HEAD = "protocolVersion: 2\nname: big\ntype: job\nprerequisites:\n  - {type: dockerimage, name: img, uri: ubuntu}\n"


def many_roles(count: int, typo: bool = False) -> str:
    roles = "".join(ROLE.format(i=i) for i in range(count))
    if typo:
        roles = roles.replace("    instances: 1\n", "    instancez: 1\n", 1)
    return HEAD + "taskRoles:\n" + roles


SHAPES = {
    "newlines": "\n" * (MAX_FILE_BYTES - 16) + "protocolVersion: 2\n",
    "roles-10000": many_roles(10_000),
    "roles-10000-one-typo": many_roles(10_000, typo=True),
    "nested-dashes-24kb": "- " * 12_000 + "a\n",
    "nested-block-mappings-350": "".join("  " * i + "k:\n" for i in range(350)),
    "nested-flow-100k": "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "nested-flow-maps": "a: " + "{b: " * 50_000 + "c" + "}" * 50_000 + "\n",
    "alias-of-long-string": "a: &a " + "x" * 100_000 + "\nb: [" + ", ".join(["*a"] * 10_000) + "]\n",
    "alias-bomb-nodes": "a: &a [l, l, l, l, l, l, l, l, l]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)),
    "alias-bomb-near-limit": "a: &a " + "y" * 1_000_000 + "\nb: [" + ", ".join(["*a"] * 200) + "]\n",
    "long-number": "a: " + "9" * 5_000 + "\n",
    "python-tuple": "a: !!python/tuple [1, 2]\n",
    "int-tag-empty": "a: !!int ''\n",
    "self-merge": "a: &a\n  <<: *a\n",
    "yaml-1.3": "%YAML 1.3\n---\na: 1\n",
    "yaml-2.0": "%YAML 2.0\n---\na: 1\n",
    "many-flow-items": "a: [" + ",".join(["1"] * 1_000_000) + "]\n",
    "one-long-line": "a: " + "z" * (MAX_FILE_BYTES - 8) + "\n",
    "many-keys": "".join(f"k{i}: {i}\n" for i in range(120_000)),
    "many-small-anchors": "".join(f"k{i}: &a{i} v\n" for i in range(100_000)),
    "deep-indent-commands": HEAD + "taskRoles:\n  a:\n    commands:\n      - |\n" + "".join(
        " " * (8 + i % 200) + "x\n" for i in range(19_000)),
    "tabs-and-breaks": ("a:\tb\n" + "k: v\u2028w\u0085x\n") * 30_000,
    "control-characters": "a: b\x01c\n" * 1000,
    "unclosed-quote": 'a: "' + "q" * (MAX_FILE_BYTES - 16) + "\n",
    "unclosed-brackets-small": "a: " + "[" * 1000 + "\n",
}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_bounded(args: list[str], data: bytes | None = None, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paictl", *args], input=data, stdin=stdin, capture_output=True,
                          timeout=TIMEOUT, preexec_fn=_limits)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_is_answered_within_bounds(shape, tmp_path):
    text = SHAPES[shape]
    assert len(text.encode()) <= MAX_FILE_BYTES + 8
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    done = run_bounded(["validate", "--format", "json", str(path)])
    assert done.returncode in (0, 1), done.stderr.decode()[-2000:]
    assert b"Traceback" not in done.stderr
    report = json.loads(done.stdout)
    for diagnostic in report["results"][0]["diagnostics"]:
        assert diagnostic["code"][0] in "EW"
        if diagnostic["severity"] == "error" and diagnostic["code"] not in ("E107",):
            assert diagnostic["line"] is not None, diagnostic
    if done.returncode == 0:
        compiled = run_bounded(["compile", "--target", "local", str(path)])
        assert compiled.returncode in (0, 1), compiled.stderr.decode()[-2000:]


def test_ten_thousand_roles_with_a_typo_point_at_the_typo(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(SHAPES["roles-10000-one-typo"], encoding="utf-8")
    done = run_bounded(["validate", "--format", "json", str(path)])
    [diagnostic] = json.loads(done.stdout)["results"][0]["diagnostics"]
    assert (diagnostic["code"], diagnostic["line"], diagnostic["pointer"]) == ("E202", 8, "/taskRoles/r0/instancez")


def test_a_file_over_the_limit_is_read_only_to_the_limit(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as stream:  # sparse: 3 GiB that cost nothing on disk
        stream.truncate(3 * 1024 ** 3)
    done = run_bounded(["validate", str(path)])
    assert done.returncode == 1 and b"E107" in done.stdout


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_before_reading(device):
    if not Path(device).exists():
        pytest.skip(f"{device} is absent")
    done = run_bounded(["validate", device, "--quiet"])
    assert done.returncode == 2 and b"not a regular file" in done.stderr


def test_an_endless_standard_input_is_cut_at_the_limit():
    with open("/dev/zero", "rb") as endless:
        done = run_bounded(["validate", "-"], stdin=endless)
    assert done.returncode == 1 and b"E107" in done.stdout


def test_a_fifo_with_an_endless_writer_is_cut_at_the_limit(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer():
        try:
            with open(fifo, "wb") as stream:
                while not stop.is_set():
                    stream.write(b"# endless\n" * 1000)
        except BrokenPipeError:
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        done = run_bounded(["validate", str(fifo)])
    finally:
        stop.set()
    assert done.returncode == 1 and b"E107" in done.stdout


def test_a_fifo_nobody_writes_to_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    done = run_bounded(["validate", str(fifo)])
    assert done.returncode == 1 and b"E104" in done.stdout  # an empty document


def test_multi_file_validate_goes_on_past_every_bad_file(tmp_path):
    bad = {"tuple.yaml": SHAPES["python-tuple"], "deep.yaml": SHAPES["nested-dashes-24kb"],
           "number.yaml": SHAPES["long-number"], "version.yaml": SHAPES["yaml-1.3"],
           "merge.yaml": SHAPES["self-merge"]}
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
    good = tmp_path / "zz-good.yaml"
    good.write_text(many_roles(1))
    too_long = str(tmp_path / ("n" * 5000 + ".yaml"))
    done = run_bounded(["validate", "--format", "json", *[str(tmp_path / n) for n in bad], too_long, str(good)])
    assert done.returncode == 2 and b"Traceback" not in done.stderr  # 2: one name could not be read
    results = {Path(r["file"]).name: r for r in json.loads(done.stdout)["results"]}
    assert set(results) == {*bad, "zz-good.yaml"}
    assert results["zz-good.yaml"]["valid"] and not any(results[n]["valid"] for n in bad)
    assert b"File name too long" in done.stderr and len(done.stderr) < 1000
