"""MkDocs hooks: the home page and the command-line options page (below); and links. Pages link repository files
from the repository's root (`schemas/job.schema.json`), so that the same Markdown reads on GitHub, and the README
(the home page) links pages as `docs/<page>.md`. Links to pages are made relative to the page; a link to a
repository file that exists becomes its URL on the repository host; anything else is left for `mkdocs build
--strict` to report."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def on_page_read_source(page, config):
    """The home page is the README itself, and the command reference is generated from the typer app by typer's own
    docs generator (`typer ... utils docs`), so neither can drift."""
    if page.file.src_uri == "index.md":
        return (ROOT / "README.md").read_text(encoding="utf-8")
    if page.file.src_uri == "reference/cli.md":
        return command_reference()
    return None


def command_reference() -> str:
    import typer
    from typer.cli import get_docs_for_click

    from paictl.cli.app import app

    command = typer.main.get_command(app)
    intro = ("Every command and option, generated from the command-line app when the site is built (so it is what "
             "`paictl COMMAND --help` says). [Commands](commands.md) says what each command is for.\n\n")
    text = get_docs_for_click(obj=command, ctx=typer.Context(command), name="paictl", title="Command-line options")
    head, _, rest = text.partition("\n\n")
    return head + "\n\n" + intro + rest


def on_page_markdown(markdown, page, config, files):
    docs_dir = Path(config["docs_dir"])
    page_dir = posixpath.dirname(page.file.src_uri)
    blob = config["repo_url"].rstrip("/") + "/blob/main/"

    def rewrite(match: re.Match) -> str:
        target = match.group(2)
        if "://" in target or target.startswith("mailto:"):
            return match.group(0)
        if target.startswith("docs/"):
            target = posixpath.relpath(target[len("docs/"):], page_dir or ".")
        if (docs_dir / page_dir / target).exists():
            return match.group(1) + target + (match.group(3) or "") + match.group(4)
        if (ROOT / target).exists():
            return match.group(1) + blob + target + (match.group(3) or "") + match.group(4)
        return match.group(0)

    return LINK.sub(rewrite, markdown)
