"""The console script's fast path for `validate` (cli/entry.py) against the typer command it stands in for.

Both run as real processes on the same inputs; stdout, stderr and exit codes must be identical byte for byte, and
the fast path must really skip typer for the command lines it claims.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT

from paictl.cli.entry import parse_validate

EXAMPLES = ROOT / "examples"
CASES = ROOT / "tests" / "cases"
# typer's command, as `paictl` ran it before the fast path existed
TYPER = "import sys; from paictl.cli.app import main; sys.argv[0] = 'paictl'; main()"
FAST = ("import sys; from paictl.cli.entry import main; sys.argv[0] = 'paictl'\n"
        "try:\n    main()\nfinally:\n    sys.stderr.write('typer imported: %s' % ('typer' in sys.modules))")


def run(code: str, args: list[str], stdin: bytes) -> tuple[int, bytes, bytes]:
    done = subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True, timeout=60,
                          cwd=ROOT)
    return done.returncode, done.stdout, done.stderr


def cases(tmp_path):
    ansi = tmp_path / "ansi.yaml"
    ansi.write_bytes(b"protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {x: \"\x1b[31mred\x1b[0m\"}\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    loading = sorted(str(p.relative_to(ROOT)) for p in (CASES / "loading").glob("*.yaml"))
    semantic = sorted(str(p.relative_to(ROOT)) for p in (CASES / "semantic").glob("*.yaml"))  # errors, warnings
    broken = b"protocolVersion: 2\nname: demo\ntype: job\ntaskrole: {}\n"
    return [
        (["validate", "examples"], b""),
        (["validate", "--strict", "-q", *loading], b""),
        (["validate", "--format", "json", *loading, *semantic], b""),
        (["validate", "--format=json", "--strict", *semantic], b""),
        (["validate", *semantic, "-o", "text"], b""),
        (["validate", "--strict", *semantic], b""),
        (["validate", "--stdin-name", "jobs/demo.yaml", "-"], broken),
        (["validate", "--stdin-name=x.yaml", "--quiet", "-", "examples/hello-world.yaml"], broken),
        (["validate", "--", "no/such/file.yaml", "examples/hello-world.yaml"], b""),
        (["validate", str(empty), "examples/hello-world.yaml"], b""),
        (["validate", str(ansi)], b""),
    ]


def test_fast_path_prints_what_typer_prints(tmp_path):
    for args, stdin in cases(tmp_path):
        assert parse_validate(args[1:]) is not None, args
        code, out, err = run(TYPER, args, stdin)
        fast_code, fast_out, fast_err = run(FAST, args, stdin)
        fast_err, _, imported = fast_err.rpartition(b"typer imported: ")
        assert imported == b"False", args
        assert (fast_code, fast_out, fast_err) == (code, out, err), args


@pytest.mark.parametrize("args", [
    [], ["--help"], ["-h", "x.yaml"], ["x.yaml", "--format", "yaml"], ["x.yaml", "--format"], ["-ojson", "x.yaml"],
    ["-o=json", "x.yaml"], ["x.yaml", "--stdin-name", "--strict"], ["--nope", "x.yaml"], ["-qo", "json", "x.yaml"],
])
def test_anything_unusual_is_left_to_typer(args):
    assert parse_validate(args) is None


def test_typer_still_owns_usage_errors_and_help():
    for args in (["validate"], ["validate", "--format", "yaml", "x.yaml"], ["validate", "--help"]):
        assert run(FAST, args, b"")[:2] == run(TYPER, args, b"")[:2], args


def test_parsed_options():
    assert parse_validate(["a.yaml", "--strict", "-q", "--format", "json", "--stdin-name", "n", "-", "--", "-x"]) == {
        "paths": ["a.yaml", "-", "-x"], "format": "json", "strict": True, "quiet": True, "stdin_name": "n"}
