"""The `paictl` console script: `validate`, `compile`, `submit`, `marketplace validate`, `fix` and `lsp` start
without typer, everything else goes to the typer app.

`paictl validate` is the pre-commit and editor case, run once per commit or save, and `paictl compile job.yaml |
kubectl apply -f -` a pipe or CI step per job: for both, start-up is most of the cost, and typer with every command
module took longer to import than a job takes to check or compile. A command line that is plainly one of these
commands with its own options (the forms below) runs the command's typer-free body (`validate_cmd.run_validate`,
`compile_run.run_compile`, `submit_run.run_submit`) directly; `submit` is here because a local run of a short job
is mostly start-up, and a run of many tasks cannot start its first task before it; `fix` is `validate`'s pre-commit
twin, and `lsp` starts with every editor (its own imports, pygls and lsprotocol, are most of its start-up: typer would
add a fifth). Anything else (`--help`, a
misspelt option, a missing argument, a value typer would refuse, shell completion) goes through typer, which owns
every message about usage. Both paths print the same bytes and exit with the same codes (tests/test_cli_entry.py).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, a tenth of an early answer's time
if TYPE_CHECKING:
    from typing import Sequence


class _Form:
    """The options of one command as typer declares them: flags, options taking one value, repeatable options."""

    def __init__(self, *, flags: dict[str, str], valued: dict[str, str], repeated: dict[str, str],
                 choices: dict[str, tuple[str, ...]], defaults: dict, positional: str | None, one_positional: bool):
        self.flags, self.valued, self.repeated, self.choices = flags, valued, repeated, choices
        self.defaults, self.positional, self.one_positional = defaults, positional, one_positional


_VALIDATE = _Form(
    flags={"--strict": "strict", "--quiet": "quiet", "-q": "quiet", "--all-files": "all_files",
           "--by-shape": "by_shape"},
    valued={"--output": "format", "--format": "format", "-o": "format", "--stdin-name": "stdin_name"},
    repeated={}, choices={"format": ("text", "json")},
    defaults={"format": "text", "strict": False, "quiet": False, "stdin_name": "<stdin>", "all_files": False,
              "by_shape": False},
    positional="paths", one_positional=False)

_COMPILE = _Form(
    flags={"--strict": "strict", "--barrier-rbac": "barrier_rbac"},
    valued={"--target": "target", "-t": "target", "--profile": "profile", "--user": "user",
            "--namespace": "namespace", "-n": "namespace", "--secrets-from": "secrets_from",
            "--output": "output_format", "-o": "output_format", "--format": "output_format",
            "--output-dir": "output_dir", "--stdin-name": "stdin_name", "--strategy": "strategy", "--seed": "seed",
            "--max-trials": "max_trials"},
    repeated={"--parameter": "parameter", "-p": "parameter", "--parameters": "parameter_files",
              "--cluster": "cluster", "--space": "space"},
    choices={"output_format": ("yaml", "json")},
    defaults={"target": "framework", "profile": "default", "user": None, "namespace": None, "secrets_from": None,
              "output_format": "yaml", "output_dir": None, "stdin_name": "<stdin>", "strict": False,
              "barrier_rbac": False, "strategy": None, "seed": None, "max_trials": None},
    positional="job_path", one_positional=True)


_SUBMIT = _Form(
    flags={"--strict": "strict", "--dry-run": "dry_run", "--replace": "replace", "--follow": "follow",
           "-f": "follow"},
    valued={"--target": "target", "-t": "target", "--profile": "profile", "--user": "user",
            "--secrets-from": "secrets_from", "--context": "context", "--namespace": "namespace", "-n": "namespace",
            "--kubeconfig": "kubeconfig", "--virtual-cluster": "virtual_cluster", "--output": "output_format",
            "-o": "output_format", "--format": "output_format", "--pending-timeout": "pending_timeout",
            "--exit-spec": "exit_spec", "--run-dir": "run_dir", "--stdin-name": "stdin_name",
            "--runtime": "runtime", "--pull": "pull"},
    repeated={"--parameter": "parameter", "-p": "parameter", "--parameters": "parameter_files",
              "--cluster": "cluster"},
    choices={},  # --output, --runtime and --pull are checked by the command itself (exit 2), on both paths
    defaults={"target": None, "profile": "default", "user": None, "secrets_from": None, "context": None,
              "namespace": None, "kubeconfig": None, "virtual_cluster": None, "output_format": "text",
              "pending_timeout": None, "exit_spec": None, "run_dir": None, "stdin_name": "<stdin>", "strict": False,
              "dry_run": False, "replace": False, "follow": False, "runtime": None, "pull": None},
    positional="job_path", one_positional=True)


def _parse(form: _Form, args: Sequence[str]) -> dict | None:
    """The options of a plain command line of `form`, or None when typer must decide (help, errors, unusual
    spellings such as `-ojson` or `-o=json`)."""
    options: dict = {**form.defaults, **{name: [] for name in form.repeated.values()}}
    positionals: list[str] = []
    index, only_positionals = 0, False
    while index < len(args):
        arg = args[index]
        index += 1
        if only_positionals or arg == "-" or not arg.startswith("-"):
            positionals.append(arg)
        elif arg == "--":
            only_positionals = True
        elif arg in form.flags:
            options[form.flags[arg]] = True
        else:
            name, sep, value = arg.partition("=")
            known = name in form.valued or name in form.repeated
            if not known or (sep and not name.startswith("--")):
                return None
            if not sep:
                if index >= len(args):
                    return None
                value = args[index]
                index += 1
            if value.startswith("-") and value != "-":
                return None  # click's own rules for values that look like options: let it apply them
            if name in form.repeated:
                options[form.repeated[name]].append(value)
            else:
                options[form.valued[name]] = value
    if form.positional is None:  # a command without arguments
        return None if positionals else options
    if not positionals or (form.one_positional and len(positionals) != 1):
        return None
    if any(options[key] not in allowed for key, allowed in form.choices.items()):
        return None
    options[form.positional] = positionals[0] if form.one_positional else positionals
    return options


def parse_validate(args: Sequence[str]) -> dict | None:
    """The options of `paictl validate ARGS`, or None when typer must decide."""
    return _parse(_VALIDATE, args)


def parse_compile(args: Sequence[str]) -> dict | None:
    """The options of `paictl compile ARGS`, or None when typer must decide."""
    from pathlib import Path

    options = _parse(_COMPILE, args)
    if options is None:
        return None
    # typer's types for these: Path for files and folders; no --cluster is None, not an empty list
    options["parameter_files"] = [Path(value) for value in options["parameter_files"]]
    options["output_dir"] = Path(options["output_dir"]) if options["output_dir"] is not None else None
    options["cluster"] = options["cluster"] or None
    for key in ("seed", "max_trials"):  # typer's INT; a value it refuses is its usage error
        if options[key] is not None:
            if not options[key].isdigit():
                return None
            options[key] = int(options[key])
    return options


def _plain_submit(args: Sequence[str]) -> dict | None:
    """`parse_submit` before its values become typer's types (pathlib is not needed to see the command line)."""
    options = _parse(_SUBMIT, args)
    if options is not None and options["pending_timeout"] is not None:
        try:  # click's FLOAT is `float(value)`; a value it refuses is typer's usage error
            options["pending_timeout"] = float(options["pending_timeout"])
        except ValueError:
            return None
    return options


def parse_submit(args: Sequence[str]) -> dict | None:
    """The options of `paictl submit ARGS`, or None when typer must decide."""
    from pathlib import Path

    options = _plain_submit(args)
    if options is None:
        return None
    options["parameter_files"] = [Path(value) for value in options["parameter_files"]]
    for key in ("exit_spec", "run_dir"):
        options[key] = Path(options[key]) if options[key] is not None else None
    options["cluster"] = options["cluster"] or None
    return options


_MARKETPLACE_VALIDATE = _Form(
    flags={"--strict": "strict"},
    valued={"--output": "output", "-o": "output", "--format": "output"},
    repeated={}, choices={"output": ("text", "json", "yaml")},
    defaults={"output": "text", "strict": False}, positional="paths", one_positional=False)


def parse_marketplace_validate(args: Sequence[str]) -> dict | None:
    """The options of `paictl marketplace validate ARGS`, or None when typer must decide."""
    if not args or args[0] != "validate":
        return None
    return _parse(_MARKETPLACE_VALIDATE, args[1:])


_FIX = _Form(
    flags={"--diff": "diff", "--unsafe-fixes": "unsafe_fixes", "--strict": "strict"},
    valued={"--output": "output_format", "-o": "output_format", "--format": "output_format",
            "--stdin-name": "stdin_name"},
    repeated={}, choices={"output_format": ("text", "json")},
    defaults={"diff": False, "unsafe_fixes": False, "strict": False, "output_format": "text",
              "stdin_name": "<stdin>"},
    positional="paths", one_positional=False)


def parse_fix(args: Sequence[str]) -> dict | None:
    """The options of `paictl fix ARGS`, or None when typer must decide."""
    return _parse(_FIX, args)


_LSP = _Form(flags={"--stdio": "stdio"}, valued={"--target": "target", "-t": "target", "--profile": "profile"},
             repeated={}, choices={}, defaults={"stdio": True, "target": None, "profile": None}, positional=None,
             one_positional=False)


def parse_lsp(args: Sequence[str]) -> dict | None:
    """The options of `paictl lsp ARGS`, or None when typer must decide."""
    return _parse(_LSP, args)


_PARSERS = {"validate": parse_validate, "compile": parse_compile, "submit": parse_submit,
            "marketplace": parse_marketplace_validate, "fix": parse_fix, "lsp": parse_lsp}


_ON_A_JOB = {"status", "stop", "logs"}
_JOB_OPTIONS = {"--target": "target", "-t": "target", "--kubeconfig": "kubeconfig", "--context": "context",
                "--run-dir": "run_dir", "--cluster": "cluster", "-n": "namespace", "--namespace": "namespace",
                "-o": "output", "--output": "output", "--format": "output"}
#: The -o values each command takes (run_cmds.py, submit_run.OUTPUT_FORMATS): another one is a usage error (exit 2),
#: not this answer.
_JOB_FORMATS = {"status": ("text", "json", "yaml"), "stop": ("text", "json", "yaml"), "logs": ("text", "json"),
                "submit": ("text", "json", "yaml")}
#: `status --target T` without NAME lists T's jobs; as json or yaml it prints the empty list before the error.
_LIST_FORMATS = ("text", "wide", "name")
#: Following a job makes the same first request as showing it once.
_FOLLOW_FLAGS = {"status": ("-f", "--follow", "-w", "--watch"), "logs": ("-f", "--follow"), "stop": ()}


def unreachable_cluster(args: Sequence[str]) -> str | None:
    """`status|stop|logs NAME` (and `status --target T`, a listing) that will ask a cluster while that cluster
    cannot be reached, or `submit --target openpai` to a cluster that cannot be reached: its one-line error, found
    before typer is imported (most of the answer's time), else None (the command runs, and its first request, or
    `submit_run.ensure_reachable`, raises the same line). The cluster is the one `run_cmds._backend_for` would open:
    the --target's (a Kubernetes one, or openpai with --cluster ALIAS), or without --target the Kubernetes cluster
    when there is no local run of that name. Any backend with a `check_reachable` takes part, once: a cluster found
    reachable is not probed again by the command (submit_run.note_reachable). A backend with an early probe
    (`targets.EARLY_PROBES`: OpenPAI's) is asked that first, which needs only what Python has loaded already. Only
    plain command lines: anything unusual goes to typer."""
    if args and args[0] == "submit":
        return _unreachable_submission(args[1:])
    if not args or args[0] not in _ON_A_JOB:
        return None
    name = args[1] if len(args) > 1 and not args[1].startswith("-") else None
    rest = args[2:] if name is not None else args[1:]
    if name is None and args[0] != "status":
        return None
    given: dict[str, str] = {}
    index = 0
    while index < len(rest):
        if name is not None and rest[index] in _FOLLOW_FLAGS[args[0]]:
            index += 1
            continue
        key = _JOB_OPTIONS.get(rest[index])
        if key is None or key in given or index + 1 == len(rest) or rest[index + 1].startswith("-"):
            return None  # another option, a repeated one or a value like an option: typer's rules apply
        given[key] = rest[index + 1]
        index += 2
    if given.get("output", "text") not in (_JOB_FORMATS[args[0]] if name is not None else _LIST_FORMATS):
        return None
    from paictl.targets import RUNS_ON

    target = given.get("target")
    if (target is not None and target not in RUNS_ON) or (name is None and target is None):
        return None  # a listing without --target shows the local runs before any cluster's error
    flags = {"kubeconfig": given.get("kubeconfig"), "context": given.get("context"),
             "cluster": [given["cluster"]] if "cluster" in given else None}
    answer = _early_answer(RUNS_ON[target], flags) if target is not None else None
    if answer is not None:
        return answer or None
    from paictl.errors import ClusterError, PaictlError

    from .submit_run import backend_options, ensure_reachable, open_target

    try:
        if target is None:
            from pathlib import Path

            run_dir = Path(given["run_dir"]) if "run_dir" in given else None
            if open_target("local", backend_options(run_dir=run_dir)).has_job(name):
                return None
        ensure_reachable(target or "framework", **flags)
    except PaictlError as error:
        return str(error) if isinstance(error, ClusterError) else None
    return None


def _unreachable_submission(args: Sequence[str]) -> str | None:
    """`submit JOB --target T` to a cluster that cannot be reached, when T's backend has an early probe: the line
    `submit_run.run_submit` raises (it asks before it reads the job, `ensure_reachable`), else None. What run_submit
    refuses first (an output format, --runtime or --pull) is left to it."""
    from paictl.targets import RUNS_ON

    options = _plain_submit(args)
    if (options is None or options["target"] not in RUNS_ON or options["output_format"] not in _JOB_FORMATS["submit"]
            or options["runtime"] is not None or options["pull"] is not None):
        return None
    answer = _early_answer(RUNS_ON[options["target"]], {"kubeconfig": options["kubeconfig"],
                                                         "context": options["context"],
                                                         "cluster": options["cluster"] or None})
    return answer or None


def _early_answer(backend: str, flags: dict) -> str | None:
    """The early probe of `backend`'s cluster for these flags (`targets.early_probe`): its line when the cluster
    cannot be reached; "" when it can (noted, so the command does not probe again); None when there is no early
    probe or it cannot tell (the backend's own `check_reachable` then asks)."""
    from paictl.targets import early_probe

    answer = early_probe(backend, flags["cluster"][0] if flags["cluster"] else None)
    if answer == "":
        from .submit_run import note_reachable

        note_reachable(backend, **flags)
    return answer


def main() -> None:
    from .process_exit import exit_now, whole_writes

    whole_writes()
    args = sys.argv[1:]
    completing = "_PAICTL_COMPLETE" in os.environ
    if args and (args[0] in _ON_A_JOB or args[0] == "submit") and not completing:
        error = unreachable_cluster(args)
        if error is not None:
            from .errors import error_line

            sys.stderr.write(error_line(error) + "\n")
            exit_now(3)
    if args and args[0] in _PARSERS and not completing:
        options = _PARSERS[args[0]](args[1:])
        if options is not None:
            exit_now(_run(args[0], options))
    from .app import main as typer_main

    typer_main()


def _run(command: str, options: dict) -> int:
    """Run a typer-free command body with the signal handling and output-error statuses of app.main."""
    from .output import flush_stdout, output_error_exit, plain_echo
    from .process_exit import take_signals

    take_signals()  # as app.main does
    try:
        if command == "marketplace":
            from .marketplace_run import run_marketplace_validate

            status = run_marketplace_validate(options["paths"], output=options["output"], strict=options["strict"],
                                              echo=plain_echo)
        elif command == "validate":
            from .validate_cmd import run_validate

            status = run_validate(options["paths"], json_output=options["format"] == "json",
                                  strict=options["strict"], stdin_name=options["stdin_name"],
                                  quiet=options["quiet"], echo=plain_echo, all_files=options["all_files"],
                                  by_shape=options["by_shape"])
        elif command == "compile":
            from .compile_run import run_compile

            status = run_compile(**options, echo=plain_echo)
        elif command == "fix":
            from .fix_cmd import run_fix

            status = run_fix(options["paths"], diff=options["diff"], unsafe=options["unsafe_fixes"],
                             json_output=options["output_format"] == "json", strict=options["strict"],
                             stdin_name=options["stdin_name"], echo=plain_echo)
        elif command == "lsp":
            from .lsp_run import run_lsp

            status = run_lsp(target=options["target"], profile=options["profile"], echo=plain_echo)
        else:
            from .submit_run import run_submit

            status = run_submit(**options, echo=plain_echo)
        flush_stdout()
        return status
    except OSError as error:  # standard output closed or full: the same statuses as the typer path (output.py)
        return output_error_exit(error)
