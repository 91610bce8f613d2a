"""`paictl lsp` and `paictl fix`: the editor-facing commands. Registered in app.py; neither module is imported on
the start-up path of `validate`, `compile` or `submit` (entry.py runs those without typer)."""

from __future__ import annotations

from typing import List, Optional

import typer

def lsp_command(
    stdio: bool = typer.Option(True, "--stdio", help="Talk LSP over standard input and output (the only transport; "
                                                     "accepted because editors pass it)."),
    target: Optional[str] = typer.Option(None, "--target", "-t",
                                         help="Also show this target's diagnostics (framework, jobset, mars...), "
                                              "as `paictl compile --target` reports them. Editors can set it too."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Cluster profile the target compiles against."),
) -> None:
    """Run the language server: diagnostics as you type, hover, completion, quick fixes, go to definition.

    For job files and marketplace items in any editor with an LSP client (README, "Editor integration").
    Exit status: 0 after the client's shutdown and exit requests; 1 on exit without shutdown, or when the client
    closes either stream first; 2 if pygls (`pip install 'paictl[lsp]'`) is missing, or for an unknown --target or
    --profile.
    """
    from .lsp_run import run_lsp

    del stdio
    raise typer.Exit(run_lsp(target=target, profile=profile, echo=typer.echo))



def fix_command(
    paths: List[str] = typer.Argument(..., metavar="PATH...",
                                      help="Job files, item files, directories (searched for *.yaml/*.yml), or - "
                                           "for stdin (the fixed text goes to stdout)."),
    diff: bool = typer.Option(False, "--diff", help="Print the changes as a unified diff; write nothing."),
    unsafe_fixes: bool = typer.Option(False, "--unsafe-fixes",
                                      help="Also add missing keys whose values paictl makes up (TODO, 0)."),
    output_format: str = typer.Option("text", "--output", "-o", "--format", help="text or json."),
    strict: bool = typer.Option(False, "--strict", help="Treat remaining warnings as failures (exit 1)."),
    stdin_name: str = typer.Option("<stdin>", "--stdin-name", metavar="NAME",
                                   help="File name to report for input read from '-'."),
) -> None:
    """Apply the fixes the diagnostics state: did-you-mean renames, quoting unquoted dates, missing required keys
    whose value the hint gives. Comments, quoting and layout are kept; running it again changes nothing.

    Exit status (as validate's, for the fixed files): 0 all valid; 1 any still invalid; 2 usage or I/O error.
    """
    from paictl.errors import UsageError

    from .errors import fail
    from .fix_cmd import run_fix

    if output_format not in ("text", "json"):
        fail(UsageError(f"unknown output format {output_format!r}; use text or json"))
    raise typer.Exit(run_fix(paths, diff=diff, unsafe=unsafe_fixes, json_output=output_format == "json",
                             strict=strict, stdin_name=stdin_name, echo=typer.echo))
