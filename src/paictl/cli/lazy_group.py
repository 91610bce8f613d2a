"""A typer group that builds a subcommand only when it is used.

typer turns every command of an app into a click command before it parses anything, reading each function's
signature and every option's declaration; for paictl's thirty commands that was a fifth of `paictl --help` (and of
`--version`), and it meant importing every command module first. Of all that, a command line uses one command, and
the group's own help only each command's name and short help. So the group starts with stand-ins carrying just those
(what its help list, its "did you mean" suggestions and the completion of command names read), and a command's
click command is built from its typer declaration, exactly as typer builds it, when the command is looked up to run,
to show its help or to complete its arguments.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable

from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typing import Iterator

    import click


class LazyGroup(TyperGroup):
    """A TyperGroup (as typer's `cls=`) whose subcommands are added with `add_lazily` and built on first lookup."""

    def __init__(self, **attrs) -> None:
        super().__init__(**attrs)
        self._builders: dict[str, Callable[[], click.Command]] = {}
        self._listing = False

    def add_lazily(self, name: str, short_help: str, build: Callable[[], click.Command]) -> None:
        """Add the command `name`, listed with `short_help` until `build()` makes its click command."""
        self.commands[name] = TyperCommand(name=name, short_help=short_help)
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
