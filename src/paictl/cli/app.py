"""The `paictl` command line. The only place that prints or exits.

Every command imports its machinery lazily: `paictl --help` and `paictl validate` must not pay for ruamel.yaml,
kubernetes or the Python jsonschema package unless they are used. The commands themselves are imported and built
when they are used, too (`COMMANDS`, lazy_group.py): `paictl --help` lists them from their short help alone.
"""

import enum
import sys
from typing import List, Optional

import typer

from paictl import __version__
from paictl.errors import PaictlError, UsageError

from .errors import fail
from .lazy_group import LazyGroup, lazy_group_from_info


def new_app(*, rich_markup_mode: Optional[str], cls: Optional[type] = None) -> typer.Typer:
    """paictl's typer app with its own options and help, before any command is declared on it."""
    root = typer.Typer(
        name="paictl",
        help="Validate, compile and submit OpenPAI job protocol v2 jobs.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=rich_markup_mode,
        context_settings={"help_option_names": ["-h", "--help"]},
        cls=cls,
    )
    root.callback()(_root)
    return root


def help_markup() -> Optional[str]:
    """typer's rich help imports rich, markdown-it and pygments (~100 ms): it is worth that on a terminal only."""
    return "rich" if sys.stdout.isatty() else None


class OutputFormat(str, enum.Enum):
    text = "text"
    json = "json"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"paictl {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Validate, compile and submit OpenPAI job protocol v2 jobs.

    Exit codes: 0 success; 1 invalid job; 2 usage or I/O error; 3 cluster error; 4 job stopped.
    """


def validate(
    paths: List[str] = typer.Argument(..., metavar="PATH...",
                                      help="Job files, directories (searched for *.yaml/*.yml: the jobs and "
                                           "marketplace items among them are checked), or - for stdin."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--output", "-o", "--format",
                                               help="text: compiler-style lines; json: the same records as JSON."),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as failures (exit 1)."),
    stdin_name: str = typer.Option("<stdin>", "--stdin-name", metavar="NAME",
                                   help="File name to report for input read from '-' (for editors)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print diagnostics only, no summary line."),
    all_files: bool = typer.Option(False, "--all-files",
                                   help="Check every YAML file found in a directory, not only those shaped like a "
                                        "job or a marketplace item."),
    by_shape: bool = typer.Option(False, "--by-shape",
                                  help="Pick the files named on the command line by their shape too, as those found "
                                       "in directories (the pre-commit hook: it is handed every staged YAML file)."),
    target: Optional[str] = typer.Option(None, "--target", metavar="TARGET",
                                         help="Also check what this compile target refuses (framework, jobset, mars, "
                                              "local, grass, openpai): the verdict `compile --target` gives."),
    profile: Optional[str] = typer.Option(None, "--profile", metavar="NAME_OR_FILE",
                                          help="The cluster profile to check against (e.g. one with HiveD on); "
                                               "implies --target framework unless --target is given."),
) -> None:
    """Check OpenPAI job files: YAML, the OpenPAI schema, OpenPAI's semantic rules and known pitfalls.

    Marketplace items are recognised by their shape and checked with their embedded job. In a directory, YAML
    files that are neither (a CI config, a chart) are skipped and counted; --all-files checks them too. With
    --target or --profile, a job is also compiled (nothing is printed or written) so the verdict is `compile`'s.

    Exit status: 0 all valid; 1 any invalid (or any warning with --strict); 2 usage or I/O error.
    """
    from .validate_cmd import run_validate

    raise typer.Exit(run_validate(paths, json_output=output_format is OutputFormat.json, strict=strict,
                                  stdin_name=stdin_name, quiet=quiet, echo=typer.echo, all_files=all_files,
                                  by_shape=by_shape, target=target, profile=profile))


#: `paictl schema NAME`, as its help lists them (a test holds this to the schemas the package ships).
SCHEMA_HELP = ("job (a job file; the default), marketplace-item, profile (a cluster profile), exit-rules, "
               "grass-cluster (a Grass cluster file), search-space (a sweep's space); what compile's output is checked against: framework, jobset, "
               "marsjob, localplan, grass-job, grass-plan")


def _schema_names(incomplete: str) -> list[str]:
    from paictl.schemas import schema_names

    return [name for name in schema_names() if name.startswith(incomplete)]


def schema(
    name: str = typer.Argument("job", help=f"Which schema: {SCHEMA_HELP}.", autocompletion=_schema_names),
    output_format: str = typer.Option("json", "--output", "-o", "--format", metavar="FORMAT",
                                      help="json, or yaml (the same schema)."),
) -> None:
    """Print a JSON Schema (Draft 2020-12) paictl validates with (for editors: yaml-language-server, VS Code)."""
    import json

    from paictl.schemas import load_schema, schema_names

    from .formats import check_output, record_text

    try:
        check_output(output_format, ("json", "yaml"))
    except UsageError as error:
        fail(error)
    if name not in schema_names():
        fail(UsageError(f"unknown schema {name!r}; available: {', '.join(schema_names())}"))
    if output_format == "yaml":
        typer.echo(record_text(load_schema(name), "yaml"))
    else:
        typer.echo(json.dumps(load_schema(name), indent=2, ensure_ascii=False))


def explain(
    code: Optional[str] = typer.Argument(None, help="A diagnostic code such as E202; omit to list them all."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--output", "-o", "--format", help="text or json."),
) -> None:
    """Describe diagnostic codes: without CODE, one line each; with CODE, why it fires, an example and the fix."""
    import json

    from paictl.protocol.codes import CODES
    from paictl.protocol.explanations import EXPLANATIONS

    if code is not None and code.upper() not in CODES:
        fail(UsageError(f"unknown code {code!r}; run `paictl explain` for the list"))
    selected = {code.upper(): CODES[code.upper()]} if code else CODES
    if output_format is OutputFormat.json:
        typer.echo(json.dumps([{"code": c, "severity": s.value, "title": t,
                                **dict(zip(("explanation", "example", "fix"), EXPLANATIONS[c]))}
                               for c, (s, t) in selected.items()], indent=2))
    elif code is None:
        for c, (severity, title) in selected.items():
            typer.echo(f"{c}  {severity.value:<7}  {title}")
    else:
        (c, (severity, title)), = selected.items()
        explanation, example, fix = EXPLANATIONS[c]
        typer.echo(f"{c}  {severity.value}: {title}\n\n{explanation}\n\nexample:\n"
                   + "".join(f"    {line}\n" for line in example.splitlines()) + f"\nfix: {fix}")


#: Every command of `paictl`, in the order its help lists them: where its typer declaration is (a function, or the
#: typer app of a group of commands) and its line in that list. A command's module is imported when it is used.
COMMANDS = {
    "validate": ("paictl.cli.app", "validate", "Check job and marketplace item files, every problem at once."),
    "schema": ("paictl.cli.app", "schema", "Print a JSON Schema paictl validates with."),
    "explain": ("paictl.cli.app", "explain", "Explain a diagnostic code, or list them all."),
    "compile": ("paictl.cli.compile_cmd", "compile_command", "Compile a job into the objects a target runs."),
    "submit": ("paictl.cli.run_cmds", "submit_command", "Compile a job and run it; --follow to its verdict."),
    "status": ("paictl.cli.run_cmds", "status_command", "Show a job's state and tasks, or list the jobs."),
    "stop": ("paictl.cli.run_cmds", "stop_command", "Stop a job."),
    "logs": ("paictl.cli.run_cmds", "logs_command", "Print task logs."),
    "sweep": ("paictl.cli.sweep_cmd", "sweep_command", "Run a job once per parameter set of a search space."),
    "diagnose": ("paictl.cli.diagnose_cmd", "diagnose_command", "Say which failure rule an exit code and log match."),
    "fix": ("paictl.cli.lsp_cmd", "fix_command", "Apply the fixes the diagnostics' hints state."),
    "lsp": ("paictl.cli.lsp_cmd", "lsp_command", "Run the language server for editors."),
    "marketplace": ("paictl.cli.marketplace_cmd", "marketplace_app",
                    "Check, pack, publish and find marketplace items."),
    "grass": ("paictl.cli.grass_cmd", "grass_app", "Run a Grass cluster's master or node; plan a job."),
    "openpai": ("paictl.cli.openpai_cmd", "openpai_app", "Name OpenPAI clusters by alias and log in to them."),
}


def declare(root: typer.Typer, name: str) -> bool:
    """Declare the command `name` on `root` as typer would have it (`root.command` or `root.add_typer`); True for a
    group of commands."""
    import importlib

    module, attribute, short_help = COMMANDS[name]
    declared = getattr(importlib.import_module(module), attribute)
    if isinstance(declared, typer.Typer):
        root.add_typer(declared, name=name, short_help=short_help)
        return True
    root.command(name, short_help=short_help)(declared)
    return False


def full_app(rich_markup_mode: Optional[str]) -> typer.Typer:
    """The typer app with every command declared, for what takes a typer app: `typer.main.get_command` (built whole),
    typer's CliRunner in the tests and the generated command reference."""
    root = new_app(rich_markup_mode=rich_markup_mode)
    for name in COMMANDS:
        declare(root, name)
    return root


def lazy_command(rich_markup_mode: Optional[str]) -> LazyGroup:
    """The click command `paictl` runs: typer's own build of the app, whose commands are each declared and built
    by typer when they are looked up, and so are the commands of its groups (`lazy_group_from_info`); a test holds
    every help, usage error and completion to `full_app`'s."""
    root = new_app(rich_markup_mode=rich_markup_mode, cls=LazyGroup)
    group = typer.main.get_command(root)
    for name, (_, _, short_help) in COMMANDS.items():
        group.add_lazily(name, lambda name=name: _built(root, name), short_help=short_help)
    return group


def _built(root: typer.Typer, name: str):
    if declare(root, name):
        return lazy_group_from_info(root.registered_groups[-1], pretty_exceptions_short=root.pretty_exceptions_short,
                                    suggest_commands=root.suggest_commands, rich_markup_mode=root.rich_markup_mode)
    return typer.main.get_command_from_info(root.registered_commands[-1],
                                            pretty_exceptions_short=root.pretty_exceptions_short,
                                            rich_markup_mode=root.rich_markup_mode)


def __getattr__(name: str):
    """`app`: the whole typer app (`full_app`), made when first asked for; `paictl` itself runs `lazy_command`."""
    if name == "app":
        global app
        app = full_app(help_markup())
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console entry point: the one place errors become messages and exit codes.

    Click would turn Ctrl-C into "Aborted!" with exit status 1; paictl documents 130, so SIGINT exits directly
    (SystemExit passes through click untouched). SIGTERM is the same request from another process (`kill`, a
    supervisor, CI cancelling a step): it exits 130 too, through the same clean-up, never 143 mid-write. Standard
    output that cannot be written is not a bug either: a reader that went away (`paictl ... | head`) exits 141, as a
    shell reports SIGPIPE, and a full disk or another write error exits 74 (EX_IOERR) with one line on standard error.
    """
    from .output import EXIT_BROKEN_PIPE, flush_stdout, output_error_exit, silence_stdout
    from .process_exit import take_signals

    take_signals()
    try:
        try:  # as typer's `app()` runs it, less its exception hook: with pretty exceptions off it is Python's own
            lazy_command(help_markup())()
        except SystemExit as done:
            if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click's sign that it met EPIPE on stdout
                raise BrokenPipeError from None
            flush_stdout()
            raise done from None
        flush_stdout()
    except PaictlError as error:  # pragma: no cover - commands normally route through errors.fail
        typer.echo(f"paictl: error: {_one_line(str(error))}", err=True)
        sys.exit(error.exit_code)
    except BrokenPipeError:
        silence_stdout()
        sys.exit(EXIT_BROKEN_PIPE)
    except OSError as error:
        sys.exit(output_error_exit(error))


def _one_line(text: str) -> str:
    from paictl.protocol.diagnostics import one_line

    return one_line(text)
