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
    from paictl.lsp.analysis import Settings
    from paictl.lsp.server import serve

    return serve(Settings(target=target, profile=profile))
