"""The `paictl` console script: `validate` starts without typer, everything else goes to the typer app.

`paictl validate` is the pre-commit and editor case, run once per commit or save, where start-up is most of the
cost: typer and every command module took longer to import than a file takes to validate. A command line that is
plainly `validate` with its own options (the forms below) runs `validate_cmd.run_validate` directly; anything else
(`--help`, a misspelt option, a missing path, shell completion) goes through typer, which owns every message about
usage. Both paths print the same bytes and exit with the same codes (tests/test_cli_entry.py).
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

_FLAGS = {"--strict": "strict", "--quiet": "quiet", "-q": "quiet"}
_VALUED = {"--format": "format", "-o": "format", "--stdin-name": "stdin_name"}
_FORMATS = ("text", "json")


def parse_validate(args: Sequence[str]) -> dict | None:
    """The options of `paictl validate ARGS`, or None when typer must decide (help, errors, unusual spellings)."""
    options: dict = {"paths": [], "format": "text", "strict": False, "quiet": False, "stdin_name": "<stdin>"}
    index, only_paths = 0, False
    while index < len(args):
        arg = args[index]
        index += 1
        if only_paths or arg == "-" or not arg.startswith("-"):
            options["paths"].append(arg)
        elif arg == "--":
            only_paths = True
        elif arg in _FLAGS:
            options[_FLAGS[arg]] = True
        else:
            name, sep, value = arg.partition("=")
            if name not in _VALUED or (sep and not name.startswith("--")):
                return None
            if not sep:
                if index >= len(args):
                    return None
                value = args[index]
                index += 1
            if value.startswith("-") and value != "-":
                return None  # click's own rules for values that look like options: let it apply them
            options[_VALUED[name]] = value
    if not options["paths"] or options["format"] not in _FORMATS:
        return None
    return options


def _interrupted(signum: int, frame: object) -> None:
    raise SystemExit(130)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["validate"] and "_PAICTL_COMPLETE" not in os.environ:
        options = parse_validate(args[1:])
        if options is not None:
            sys.exit(_validate(options))
    from .app import main as typer_main

    typer_main()


def _validate(options: dict) -> int:
    import signal

    from .validate_cmd import plain_echo, run_validate

    signal.signal(signal.SIGINT, _interrupted)  # 130, as app.main documents
    from .output import flush_stdout, output_error_exit

    try:
        status = run_validate(options["paths"], json_output=options["format"] == "json", strict=options["strict"],
                              stdin_name=options["stdin_name"], quiet=options["quiet"], echo=plain_echo)
        flush_stdout()
        return status
    except OSError as error:  # standard output closed or full: the same statuses as the typer path (output.py)
        return output_error_exit(error)
