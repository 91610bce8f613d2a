"""A typer group that builds a subcommand only when it is used.

typer turns every command of an app into a click command before it parses anything, reading each function's
signature and every option's declaration; for paictl's thirty commands that was a fifth of `paictl --help` (and of
`--version`), and it meant importing every command module first. Of all that, a command line uses one command, and
the group's own help only each command's name and short help. So the group starts with stand-ins carrying just those
(what its help list, its "did you mean" suggestions and the completion of command names read), and a command's
click command is built from its typer declaration, exactly as typer builds it, when the command is looked up to run,
to show its help or to complete its arguments. A group of commands declared as a typer app (`paictl marketplace`,
`grass`, `openpai`) is built the same way (`lazy_group_from_info`): `paictl marketplace publish` builds `publish`
alone, and `paictl marketplace --help` none of the six.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable

from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typing import Any, Iterator

    import click
    from typer.models import CommandInfo, TyperInfo


class LazyGroup(TyperGroup):
    """A TyperGroup (as typer's `cls=`) whose subcommands are added with `add_lazily` and built on first lookup."""

    def __init__(self, **attrs) -> None:
        super().__init__(**attrs)
        self._builders: dict[str, Callable[[], click.Command]] = {}
        self._listing = False

    def add_lazily(self, name: str, build: Callable[[], click.Command], **listed: Any) -> None:
        """Add the command `name`, listed until `build()` makes its click command by a stand-in with the `listed`
        attributes a group's listing reads of its commands (short_help, help, hidden, deprecated, rich_help_panel)."""
        self.commands[name] = TyperCommand(name=name, **listed)
        self._builders[name] = build

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        build = None if self._listing else self._builders.pop(cmd_name, None)
        if build is not None:
            self.commands[cmd_name] = build()
        return super().get_command(ctx, cmd_name)

    @contextmanager
    def _only_listed(self) -> Iterator[None]:
        """While the commands are only listed (this group's help, completing a command name), stand-ins will do."""
        self._listing = True
        try:
            yield
        finally:
            self._listing = False

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with self._only_listed():
            super().format_help(ctx, formatter)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list:
        with self._only_listed():
            return super().shell_complete(ctx, incomplete)


def lazy_group_from_info(group_info: TyperInfo, *, pretty_exceptions_short: bool, suggest_commands: bool,
                         rich_markup_mode: str | None) -> TyperGroup:
    """typer's `get_group_from_info` for a group added with `add_typer`, but each of the group's commands (and
    groups) is built by typer when it is looked up. The group itself (its help, callback and options) is typer's own
    build of the same app without its commands. A group declared with a `cls` of its own is built by typer whole:
    that class, not LazyGroup, decides how its commands are found."""
    import copy

    import typer.main

    built = {"pretty_exceptions_short": pretty_exceptions_short, "rich_markup_mode": rich_markup_mode}
    if typer.main.solve_typer_info_defaults(group_info).cls not in (None, TyperGroup):
        return typer.main.get_group_from_info(group_info, suggest_commands=suggest_commands, **built)
    declared = group_info.typer_instance
    hollow = copy.copy(declared)
    hollow.registered_commands, hollow.registered_groups = [], []
    info = copy.copy(group_info)
    info.typer_instance, info.cls = hollow, LazyGroup
    group = typer.main.get_group_from_info(info, suggest_commands=suggest_commands, **built)
    for command_info in declared.registered_commands:  # typer's order: the commands, then the groups
        group.add_lazily(_command_name(command_info),
                         lambda command_info=command_info: typer.main.get_command_from_info(command_info, **built),
                         **_listed(command_info, help=_command_help(command_info)))
    for sub_info in declared.registered_groups:
        solved = typer.main.solve_typer_info_defaults(sub_info)
        group.add_lazily(solved.name, lambda sub_info=sub_info: lazy_group_from_info(
            sub_info, suggest_commands=suggest_commands, **built), **_listed(solved, help=solved.help))
    return group


def _listed(declared: CommandInfo | TyperInfo, *, help: str | None) -> dict:
    """What a group's listing reads of a command (click's and typer's help, completion of command names)."""
    return {"short_help": declared.short_help, "help": help, "hidden": declared.hidden,
            "deprecated": declared.deprecated, "rich_help_panel": declared.rich_help_panel}


def _command_name(command_info: CommandInfo) -> str:
    import typer.main

    return command_info.name or typer.main.get_command_name(command_info.callback.__name__)


def _command_help(command_info: CommandInfo) -> str | None:
    """The help typer's `get_command_from_info` gives the command."""
    import inspect

    text = command_info.help
    return inspect.getdoc(command_info.callback) if text is None else inspect.cleandoc(text)
