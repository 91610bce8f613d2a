"""`paictl lsp`'s body without typer: entry.py starts the server before typer is imported (an editor starts it
every time it opens a job; pygls and lsprotocol are most of the start-up, typer would be a fifth of it)."""

from __future__ import annotations

from typing import Optional

#: `paictl lsp` without pygls installed (it is the optional `lsp` extra): one line on standard error, this status.
EXIT_LSP_UNAVAILABLE = 2


def run_lsp(*, target: Optional[str], profile: Optional[str], echo) -> int:
    """The server's whole run, typer-free (entry.py starts it before typer is imported); its exit status."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        echo("paictl: error: `paictl lsp` needs pygls: pip install 'paictl[lsp]'", err=True)
        return EXIT_LSP_UNAVAILABLE
    from paictl.errors import InvalidJobError, PaictlError

    from .errors import error_line

    try:  # a misspelt --target or --profile is the command line's error, said before the editor talks to the server
        _check_settings(target, profile)
    except InvalidJobError:
        pass  # a profile file with problems: the server shows them to the editor's user, as for a setting it is sent
    except PaictlError as error:
        echo(error_line(error), err=True)
        return error.exit_code
    from paictl.lsp.analysis import Settings
    from paictl.lsp.server import serve

    return serve(Settings(target=target, profile=profile))


def _check_settings(target: Optional[str], profile: Optional[str]) -> None:
    """UsageError for a target paictl does not have or a profile that is neither built in nor a file (exit 2): the
    server would only say so once a job is opened, and `paictl lsp --target nope` run by hand exited 1 silently."""
    if target is not None:
        from paictl.errors import UsageError
        from paictl.targets import TARGETS

        if target not in TARGETS:
            raise UsageError(f"unknown target {target!r}; available: {', '.join(TARGETS)}")
    if profile is not None:
        from paictl.compiler.profiles import load_profile

        load_profile(profile)
