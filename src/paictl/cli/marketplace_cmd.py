"""`paictl marketplace ...`: validate, pack, publish, list, search and pull marketplace items.

TARGET (`--to`, `--from`) is a local index folder or a marketplace server URL (http:// or https://). A server
needs a bearer token: `--token`, or the environment variable PAICTL_MARKETPLACE_TOKEN; it is never printed.
Everything is imported when a command runs, so `paictl --help` and `paictl validate` pay nothing for it.
"""

import enum
from typing import Any, List, Optional

import typer

from paictl.errors import InvalidJobError, PaictlError

from .errors import fail, report_invalid

marketplace_app = typer.Typer(
    name="marketplace",
    help="Share job templates and data sets: validate, pack, publish, list, search and pull marketplace items.",
    no_args_is_help=True,
)


class Format(str, enum.Enum):
    text = "text"
    json = "json"


class PackFormat(str, enum.Enum):
    yaml = "yaml"
    json = "json"


FORMAT_OPTION = typer.Option(Format.text, "--format", help="text, or json (records for scripts).")
TOKEN_OPTION = typer.Option(None, "--token", metavar="TOKEN", show_default=False,
                            help="Bearer token for a server TARGET (default: $PAICTL_MARKETPLACE_TOKEN). Never printed.")
FROM_OPTION = typer.Option(..., "--from", metavar="TARGET", help="A local index folder or a marketplace server URL.")
TYPE_OPTION = typer.Option(None, "--type", help="Only items of this type: template, data, old (all: no filter).")
TAG_OPTION = typer.Option(None, "--tag", help="Only items with this tag (repeat for several: all must match).")
CATEGORY_OPTION = typer.Option(None, "--category", help="Only items in this category (repeatable, all must match).")
AUTHOR_OPTION = typer.Option(None, "--author", help="Only items by this author (exact).")


def _load_items(paths: List[str]):
    """Every item, or all their diagnostics on standard error and exit 1: nothing is published if one is invalid."""
    from paictl.marketplace.checking import check_item_file
    from paictl.protocol.validate import ValidationResult

    from .report import text_report

    items, failed = [], []
    for path in paths:
        try:
            check = check_item_file(path)
        except PaictlError as error:
            fail(error)
        if check.item is None:
            failed.append(ValidationResult(path=path, diagnostics=tuple(d for d in check.result.diagnostics
                                                                        if d.is_error), data=None))
        items.append(check.item)
    if failed:
        typer.echo(text_report(failed), err=True)
        raise typer.Exit(InvalidJobError.exit_code)
    return items


def _store(target: str, token: Optional[str]):
    from paictl.marketplace.targets import open_target

    try:
        return open_target(target, token)
    except PaictlError as error:
        fail(error)


@marketplace_app.command("validate")
def validate_command(
    paths: List[str] = typer.Argument(..., metavar="ITEM...", help="Item files."),
    output_format: Format = FORMAT_OPTION,
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as failures (exit 1)."),
) -> None:
    """Check item files: the item's keys, the files it names, and its job with every job check."""
    from paictl.marketplace.checking import check_item_file
    from paictl.protocol.diagnostics import Diagnostic, Severity

    from .report import json_report, summary_line, text_report

    results = []
    for path in paths:
        try:
            check = check_item_file(path)
        except PaictlError as error:
            fail(error)
        result = check.result
        if result.data is not None and "protocol" not in result.data:
            not_item = Diagnostic(code="E201", severity=Severity.ERROR, file=path, line=1, column=1,
                                  message="not a marketplace item: it has no `protocol` (use `paictl validate` for a job)")
            result = type(result)(path=path, diagnostics=(not_item,), data=result.data)
        results.append(result)
    if output_format is Format.json:
        typer.echo(json_report(results, strict))
    else:
        report = text_report(results)
        if report:
            typer.echo(report)
        typer.echo(summary_line(results, strict))
    raise typer.Exit(1 if any(not r.ok or (strict and r.warnings) for r in results) else 0)


@marketplace_app.command("pack")
def pack_command(
    path: str = typer.Argument(..., metavar="ITEM", help="The item file."),
    output_format: PackFormat = typer.Option(PackFormat.yaml, "--format", help="yaml or json."),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write to FILE, not stdout."),
) -> None:
    """Print one self-contained item (description and job inlined, the job as YAML text), ready to publish.

    Deterministic: the same files give the same bytes. Invalid items exit 1 with their diagnostics.
    """
    from paictl.marketplace.pack import packed_json, packed_yaml

    (item,) = _load_items([path])
    text = packed_json(item) if output_format is PackFormat.json else packed_yaml(item)
    _write_or_print(text, output)


@marketplace_app.command("publish")
def publish_command(
    paths: List[str] = typer.Argument(..., metavar="ITEM...", help="Item files (all are validated first)."),
    target: str = typer.Option(..., "--to", metavar="TARGET", help="A local index folder or a marketplace URL."),
    token: Optional[str] = TOKEN_OPTION,
    output_format: Format = FORMAT_OPTION,
) -> None:
    """Validate the items, then create each one, or update it if an item with its name and author exists.

    CI: paictl marketplace publish items/*.yaml --to "$MARKETPLACE_URL" (token in PAICTL_MARKETPLACE_TOKEN)
    """
    from paictl.marketplace.targets import publish

    items = _load_items(paths)
    store = _store(target, token)
    records = []
    for item in items:
        try:
            action, item_id = publish(store, item)
        except InvalidJobError as error:
            report_invalid(error)
        except PaictlError as error:
            fail(error)
        records.append({"action": action, "id": item_id, "name": item.name, "author": item.author,
                        "target": str(store)})
        if output_format is Format.text:
            typer.echo(f"{action} {item.name} by {item.author} in {store} (id {item_id})")
    if output_format is Format.json:
        typer.echo(_json_text(records, indent=2, ensure_ascii=False))


@marketplace_app.command("list")
def list_command(
    target: str = FROM_OPTION,
    item_type: Optional[str] = TYPE_OPTION,
    tag: Optional[List[str]] = TAG_OPTION,
    category: Optional[List[str]] = CATEGORY_OPTION,
    author: Optional[str] = AUTHOR_OPTION,
    keyword: Optional[str] = typer.Option(None, "--keyword", "-k", help="Case-insensitive, in name, author, summary."),
    token: Optional[str] = TOKEN_OPTION,
    output_format: Format = FORMAT_OPTION,
) -> None:
    """List the items of a TARGET, filtered as the marketplace server filters."""
    _list(target, token, output_format, item_type=item_type, tags=tag, categories=category, author=author,
          keyword=keyword)


@marketplace_app.command("search")
def search_command(
    keyword: str = typer.Argument(..., help="Case-insensitive text to find in an item's name, author or summary."),
    target: str = FROM_OPTION,
    item_type: Optional[str] = TYPE_OPTION,
    tag: Optional[List[str]] = TAG_OPTION,
    category: Optional[List[str]] = CATEGORY_OPTION,
    author: Optional[str] = AUTHOR_OPTION,
    token: Optional[str] = TOKEN_OPTION,
    output_format: Format = FORMAT_OPTION,
) -> None:
    """Find items by keyword (and the list filters)."""
    _list(target, token, output_format, item_type=item_type, tags=tag, categories=category, author=author,
          keyword=keyword)


def _list(target: str, token: Optional[str], output_format: Format, *, item_type, tags, categories, author,
          keyword) -> None:
    from paictl.marketplace.query import ItemQuery, summary_of

    query = ItemQuery(type=item_type, tags=tuple(tags or ()), categories=tuple(categories or ()), author=author,
                      keyword=keyword)
    try:
        found = [summary_of(d) for d in _store(target, token).query(query)]
    except PaictlError as error:
        fail(error)
    if output_format is Format.json:
        typer.echo(_json_text(found, indent=2, ensure_ascii=False))
        return
    for record in found:
        tags_text = ",".join(record["tags"]) or "-"
        typer.echo(f"{record['name']}\t{record['author']}\t{record['type']}\t{tags_text}\t{record['summary'] or ''}")


@marketplace_app.command("pull")
def pull_command(
    name: str = typer.Argument(..., help="The item's name."),
    target: str = FROM_OPTION,
    author: Optional[str] = typer.Option(None, "--author", help="The item's author (needed when names clash)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write to FILE, not stdout."),
    whole_item: bool = typer.Option(False, "--item", help="Write the whole packed item, not only its job."),
    token: Optional[str] = TOKEN_OPTION,
    output_format: Format = FORMAT_OPTION,
) -> None:
    """Write an item's job (as `paictl validate` and `paictl compile` take it), or with --item the whole item.

    --format json prints the item as JSON (or, with -o, a record of what was written).
    """
    from paictl.marketplace.item import item_from_document
    from paictl.marketplace.pack import packed_json, packed_yaml

    try:
        document = _store(target, token).fetch(name, author)
    except PaictlError as error:
        fail(error)
    item = item_from_document(document)
    if whole_item:
        text = packed_json(item) if output_format is Format.json and output is None else packed_yaml(item)
    elif output_format is Format.json and output is None:
        text = _json_text({"id": document.get("id"), **item.to_document()}, indent=2, ensure_ascii=False) + "\n"
    else:
        text = item.protocol if item.protocol.endswith("\n") else item.protocol + "\n"
    _write_or_print(text, output)
    if output is not None and output_format is Format.json:
        typer.echo(_json_text({"id": document.get("id"), "name": item.name, "author": item.author,
                               "file": output, "content": "item" if whole_item else "job"}, indent=2))


def _write_or_print(text: str, output: Optional[str]) -> None:
    if output is None or output == "-":
        typer.echo(text, nl=False)
        return
    from paictl.marketplace.local_index import write_atomically

    try:
        write_atomically(output, text)
    except PaictlError as error:
        fail(error)


def _json_text(data, **options) -> str:
    """json.dumps, imported when JSON is printed: every command module is imported for `paictl --help`."""
    from paictl.compiler.emit import strict_json

    return strict_json(data, **options)
