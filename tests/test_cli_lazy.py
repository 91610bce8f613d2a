"""`paictl` builds a command only when it is used (cli/lazy_group.py), yet prints what typer's build of the whole
app prints: every help (on a pipe, and rich's on a terminal), every usage error, `--version` and shell completion,
for every command path. The lazy command (`app.lazy_command`, what the console script runs) is compared byte for byte
with `typer.main.get_command(app.full_app(...))`, typer building every command up front as it did before.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest
import typer.main
from typer.core import TyperGroup

from conftest import ROOT

from paictl.cli.app import COMMANDS, full_app, lazy_command
from paictl.cli.lazy_group import LazyGroup, lazy_group_from_info

MODES = {"pipe": None, "terminal": "rich"}


@pytest.fixture(params=sorted(MODES))
def markup(request, monkeypatch):
    """typer's markup mode of the help (plain on a pipe, rich on a terminal); rich draws in colour, 100 wide."""
    if MODES[request.param] == "rich":
        import typer.rich_utils

        monkeypatch.setattr(typer.rich_utils, "FORCE_TERMINAL", True)
        monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 100)
    monkeypatch.setenv("COLUMNS", "100")
    return MODES[request.param]


def run(command, args: list[str]) -> tuple[object, str, str]:
    """(exit status, stdout, stderr) of `paictl ARGS` run by this click command as the console script runs it."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            command.main(args, prog_name="paictl")
            status = 0
        except SystemExit as done:
            status = done.code
    return status, out.getvalue(), err.getvalue()


def command_paths(group, prefix=()):
    """Every command path of the whole app with its click command: the root, the groups, the commands."""
    yield prefix, group
    for name, command in getattr(group, "commands", {}).items():
        yield from command_paths(command, (*prefix, name))


def bad_values(command) -> list[list[str]]:
    """Option values typer refuses for this command (a choice or a number that is not one)."""
    refused = []
    for param in command.params:
        if param.param_type_name == "option" and param.type.name in ("choice", "integer", "float"):
            refused.append([param.opts[0], "bogus"])
    return refused


def command_lines(eager) -> list[list[str]]:
    """The command lines compared: help and usage errors of every path; for a group also no command, an unknown
    one and a misspelt one (typer suggests the right one); for a command with a required argument or option, a
    command line without it."""
    lines = [["--version"], ["--help", "--bogus"]]
    for path, command in command_paths(eager):
        lines += [[*path, "--help"], [*path, "-h"], [*path, "--no-such-option"]]
        lines += [[*path, *values] for values in bad_values(command)]
        if hasattr(command, "commands"):
            first = next(iter(command.commands))
            lines += [list(path), [*path, "nosuch"], [*path, first[:-1] + "x"]]
        elif any(param.required for param in command.params):
            lines.append(list(path))
    return lines


def test_every_help_and_usage_error_is_typers(markup):
    eager = typer.main.get_command(full_app(markup))
    lines = command_lines(eager)
    assert len(lines) > 100
    for args in lines:
        lazy = run(lazy_command(markup), args)  # a fresh one each time: the first lookup is the one that builds
        assert lazy == run(eager, args), args
        assert lazy[0] in (0, 2), args


def test_the_help_is_rich_on_a_terminal_and_plain_on_a_pipe(markup):
    status, out, _ = run(lazy_command(markup), ["--help"])
    assert status == 0 and ("\x1b[" in out) == (markup == "rich") and ("─" in out) == (markup == "rich")
    text = re.sub(r"\x1b\[[0-9;]*m", "", out)
    for name, (_, _, short_help) in COMMANDS.items():
        assert re.search(rf"^[ │]*{name} +{re.escape(short_help)}", text, re.MULTILINE), name


COMPLETIONS = ["paictl ", "paictl v", "paictl marketplace ", "paictl marketplace p", "paictl validate --",
               "paictl schema ", "paictl schema m", "paictl compile --target ", "paictl grass plan --",
               "paictl openpai ", "paictl status -", "paictl --", "paictl lsp --t", "paictl grass node --containers ",
               "paictl marketplace list -o ", "paictl openpai login --u"]


def completion_lines(eager) -> list[str]:
    """The command lines completed: those above, and for every group its command names (all, and those starting
    with its first command's letter), for every command of a group its options."""
    lines = list(COMPLETIONS)
    for path, command in command_paths(eager):
        words = " ".join(("paictl", *path))
        if hasattr(command, "commands"):
            lines += [f"{words} ", f"{words} {next(iter(command.commands))[0]}"]
        elif len(path) > 1:
            lines.append(f"{words} --")
    return lines


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_is_typers(shell, monkeypatch):
    eager = typer.main.get_command(full_app(None))
    for words in completion_lines(eager):
        if shell == "bash":
            monkeypatch.setenv("COMP_WORDS", words)
            monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - (0 if words.endswith(" ") else 1)))
        else:
            monkeypatch.setenv("_TYPER_COMPLETE_ARGS", words)
            monkeypatch.setenv("_TYPER_COMPLETE_FISH_ACTION", "get-args")
        monkeypatch.setenv("_PAICTL_COMPLETE", f"complete_{shell}")
        lazy = run(lazy_command(None), [])
        assert lazy == run(eager, []), words
        assert lazy[0] == 0 and lazy[1], words


def test_a_stand_in_that_differs_from_its_command_is_seen():
    """The comparisons above can fail: a listed short help that is not the command's own shows, in `paictl --help`
    and in a group's help."""
    eager = typer.main.get_command(full_app(None))
    lazy = lazy_command(None)
    lazy.commands["stop"].short_help = "Stop a job now."
    assert run(lazy, ["--help"]) != run(eager, ["--help"])
    lazy = lazy_command(None)
    lazy.get_command(None, "grass").commands["plan"].short_help = "Plan a job."
    assert run(lazy, ["grass", "--help"]) != run(eager, ["grass", "--help"])


def test_a_command_is_built_by_typer_when_it_is_looked_up():
    lazy = lazy_command(None)
    listed = lazy.commands["compile"]
    assert listed.params == []  # a stand-in: its name and short help only
    built = lazy.get_command(None, "compile")
    assert built is lazy.commands["compile"] and built is not listed
    eager = typer.main.get_command(full_app(None)).commands["compile"]
    assert [p.opts for p in built.params] == [p.opts for p in eager.params] and built.help == eager.help


GROUPS = [name for name, (module, attribute, _) in COMMANDS.items() if attribute.endswith("_app")]


@pytest.mark.parametrize("group", GROUPS)
def test_a_group_builds_only_the_command_it_runs(group):
    """`paictl GROUP COMMAND --help` builds COMMAND alone: its siblings stay stand-ins, as `paictl GROUP --help`
    leaves all of them."""
    eager = typer.main.get_command(full_app(None)).commands[group]
    assert len(eager.commands) > 1
    lazy = lazy_command(None)
    assert run(lazy, [group, "--help"])[0] == 0
    assert {name: command.params for name, command in lazy.commands[group].commands.items()} == {
        name: [] for name in eager.commands}
    for name, command in eager.commands.items():
        lazy = lazy_command(None)
        assert run(lazy, [group, name, "--help"])[0] == 0
        built = {other for other, listed in lazy.commands[group].commands.items() if listed.callback is not None}
        assert built == {name}
        assert [p.opts for p in lazy.commands[group].commands[name].params] == [p.opts for p in command.params]


def nested_groups_app() -> typer.Typer:
    """A group holding what paictl's groups do not (yet): options of its own, a group in it, a hidden, a deprecated,
    a command without short help (its help's first sentence is listed), help given as text, rich help panels."""
    tools = typer.Typer(no_args_is_help=True)

    @tools.callback()
    def options(verbose: bool = typer.Option(False, "--verbose", "-v", help="Say more.")) -> None:
        """Tools, with an option of the group's own."""

    @tools.command("build", short_help="Build it.", rich_help_panel="Making")
    def build(target: str = typer.Argument(...), jobs: int = typer.Option(1, "--jobs", "-j")) -> None:
        """Build TARGET with JOBS jobs."""

    @tools.command()
    def clean_all(force: bool = typer.Option(False, "--force")) -> None:
        """Remove every built file. Nothing else is touched, ever, by this command."""

    @tools.command("old", deprecated=True, help="The old way.\n\n  Kept for scripts.")
    def old() -> None:
        pass

    @tools.command("secret", hidden=True)
    def secret() -> None:
        """Not listed."""

    nested = typer.Typer(help="Nested tools: a group in the group.")

    @nested.command("deep", short_help="Go deep.")
    def deep(level: int = typer.Option(..., "--level")) -> None:
        """Go LEVEL deep."""

    @nested.command("wide")
    def wide() -> None:
        """Go wide."""

    tools.add_typer(nested, name="nested", short_help="The nested group.", rich_help_panel="Making")
    outer = typer.Typer()
    outer.add_typer(tools, name="tools")
    return outer


def test_any_typer_group_is_built_lazily_as_typer_builds_it(markup):
    """lazy_group_from_info on a group with a nested group and every listed attribute: the same bytes as typer's
    eager build for every help, usage error and completion, and only what was looked up is built."""
    info = nested_groups_app().registered_groups[0]
    options = {"pretty_exceptions_short": True, "suggest_commands": True, "rich_markup_mode": markup}
    eager = typer.main.get_group_from_info(info, **options)
    lines = [line for line in command_lines(eager) if "--version" not in line]
    assert ["nested", "deep"] in lines and ["old", "--help"] in lines
    for args in lines:
        lazy = lazy_group_from_info(info, **options)
        assert run(lazy, args) == run(eager, args), args
    lazy = lazy_group_from_info(info, **options)
    assert run(lazy, ["nested", "deep", "--help"])[0] == 0
    assert {name for name, command in lazy.commands.items() if isinstance(command, LazyGroup)} == {"nested"}
    assert not any(command.callback for command in lazy.commands.values())  # stand-ins: no command was built
    assert {name for name, command in lazy.commands["nested"].commands.items() if command.callback} == {"deep"}


def test_a_group_with_a_class_of_its_own_is_built_by_typer_whole():
    """A group's own `cls` decides how its commands are found: it is kept, and typer builds the group eagerly."""
    class Listed(TyperGroup):
        pass

    outer = typer.Typer()
    outer.add_typer(typer.Typer(cls=Listed), name="own")
    own = outer.registered_groups[0].typer_instance

    @own.command("one")
    def one(count: int = typer.Option(1)) -> None:
        """One."""

    @own.command("two")
    def two() -> None:
        """Two."""

    group = lazy_group_from_info(outer.registered_groups[0], pretty_exceptions_short=True, suggest_commands=True,
                                 rich_markup_mode=None)
    assert type(group) is Listed and [p.opts for p in group.commands["one"].params] == [["--count"]]


def test_any_typer_group_completes_as_typer_does(monkeypatch):
    import typer.completion

    typer.completion.completion_init()  # typer's shells, as an app with completion installs them
    info = nested_groups_app().registered_groups[0]
    options = {"pretty_exceptions_short": True, "suggest_commands": True, "rich_markup_mode": None}
    monkeypatch.setenv("_TYPER_COMPLETE_FISH_ACTION", "get-args")
    monkeypatch.setenv("_PAICTL_COMPLETE", "complete_fish")
    for words in ["paictl ", "paictl c", "paictl -", "paictl nested ", "paictl nested deep --", "paictl build --j"]:
        monkeypatch.setenv("_TYPER_COMPLETE_ARGS", words)
        lazy = run(lazy_group_from_info(info, **options), [])
        assert lazy == run(typer.main.get_group_from_info(info, **options), []), words
        assert lazy[0] == 0 and lazy[1], words


#: The console script's `main`, then the paictl modules it imported, written to the file named by argv[1].
SCRIPT_THEN_MODULES = ("import sys\nfrom paictl.cli.entry import main\nrecord = sys.argv.pop(1)\n"
                       "sys.argv[0] = 'paictl'\ntry:\n    main()\nfinally:\n"
                       "    open(record, 'w').write(' '.join(m for m in sys.modules if m.startswith('paictl.')))\n")
EAGER = "import sys, typer.main\nfrom paictl.cli.app import app\nsys.argv[0] = 'paictl'\ntyper.main.get_command(app)()\n"


@pytest.mark.parametrize("args", [["--help"], ["--version"], [], ["marketplace", "--help"], ["stop", "-h"],
                                  ["marketplace", "publish", "--help"], ["grass", "--help"], ["grass", "plan", "-h"],
                                  ["openpai", "login", "--help"]])
def test_the_console_script_imports_no_command_it_does_not_run(args, tmp_path):
    """`paictl --help` (standard output a pipe) prints typer's bytes and imports no other command's module."""
    record = tmp_path / "modules"
    done = subprocess.run([sys.executable, "-c", SCRIPT_THEN_MODULES, str(record), *args], capture_output=True,
                          cwd=ROOT, timeout=60)
    eager = subprocess.run([sys.executable, "-c", EAGER, *args], capture_output=True, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (eager.returncode, eager.stdout, eager.stderr)
    assert (done.stdout or done.stderr).startswith((b"Usage: paictl", b"paictl "))
    modules = set(record.read_text().split())
    used = {COMMANDS[args[0]][0]} if args and args[0] in COMMANDS else set()
    unused = {module for module, _, _ in COMMANDS.values()} - {"paictl.cli.app"} - used
    assert "paictl.cli.app" in modules and used <= modules and not modules & unused, sorted(modules & unused)


#: A command of each group run for real (offline), and what its siblings import when they run (their machinery:
#: the marketplace server and index client, Grass's master and node agents, the OpenPAI REST client), which this
#: command must not import. The group's declarations are one module, so it is the module each command imports.
SIBLINGS = {
    "marketplace pack": (["marketplace", "pack", "examples/marketplace/text-classifier/item.yaml"],
                         {"publish, list, search, pull": "paictl.marketplace.targets",
                          "list, search": "paictl.marketplace.query"}),
    "grass plan": (["grass", "plan", "examples/grass-hello.yaml", "--cluster", "clusters/grass-lab.yaml"],
                   {"master": "paictl.targets.grass.master", "node": "paictl.targets.grass.node"}),
    "openpai clusters": (["openpai", "clusters"], {"add, login, remove": "paictl.targets.openpai.client"}),
}


@pytest.mark.parametrize("command", sorted(SIBLINGS))
def test_a_group_command_imports_none_of_its_siblings_machinery(command, tmp_path):
    import importlib.util
    import os

    args, siblings = SIBLINGS[command]
    record = tmp_path / "modules"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}  # openpai: no clusters file yet
    done = subprocess.run([sys.executable, "-c", SCRIPT_THEN_MODULES, str(record), *args], capture_output=True,
                          cwd=ROOT, timeout=60, env=env)
    assert done.returncode == 0 and done.stdout, done.stderr
    modules = set(record.read_text().split())
    assert COMMANDS[args[0]][0] in modules
    for module in siblings.values():
        assert importlib.util.find_spec(module) is not None, module  # a module that exists: its absence means something
    assert not modules & set(siblings.values()), sorted(modules & set(siblings.values()))
