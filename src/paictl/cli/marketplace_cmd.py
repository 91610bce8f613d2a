"""`paictl marketplace ...`: validate, pack, publish, list, search and pull marketplace items.

TARGET (`--to`, `--from`) is a local index folder or a marketplace server URL (http:// or https://). A server
needs a bearer token: `--token`, or the environment variable PAICTL_MARKETPLACE_TOKEN; it is never printed.
As in kubectl, `-o/--output` is the output format (`--format` is a hidden alias); `--output-file FILE` writes a
file instead of standard output (no short form: kubectl's `-f` names an input).
Everything is imported when a command runs, so `paictl --help` and `paictl validate` pay nothing for it.
"""

import enum
from typing import Any, List, Optional

import typer

from paictl.errors import InvalidJobError, PaictlError

from .errors import error_line, fail, report_invalid

marketplace_app = typer.Typer(
    name="marketplace",
    help="Share job templates and data sets: validate, pack, publish, list, search and pull marketplace items.",
    no_args_is_help=True,
)


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    yaml = "yaml"


class ListFormat(str, enum.Enum):
    text = "text"
    json = "json"
    yaml = "yaml"
    name = "name"


class DocumentFormat(str, enum.Enum):
    yaml = "yaml"
    json = "json"


def _output_option(default: enum.Enum, what: str) -> Any:
    return typer.Option(default, "--output", "-o", metavar="FORMAT", help=what)


FORMAT_ALIAS = typer.Option(None, "--format", hidden=True, help="Alias of -o/--output.")
OUTPUT_FILE_OPTION = typer.Option(None, "--output-file", metavar="FILE", help="Write to FILE, not standard output.")
TOKEN_OPTION = typer.Option(None, "--token", metavar="TOKEN", show_default=False,
                            help="Bearer token for a server TARGET (default: $PAICTL_MARKETPLACE_TOKEN). Never printed.")
TIMEOUT_OPTION = typer.Option(30.0, "--request-timeout", metavar="SECONDS", min=0.1,
                              help="How long one request to a server may take.")
FROM_OPTION = typer.Option(..., "--from", metavar="TARGET", help="A local index folder or a marketplace server URL.")
TYPE_OPTION = typer.Option(None, "--type", help="Only items of this type: template, data, old (all: no filter).")
TAG_OPTION = typer.Option(None, "--tag", help="Only items with this tag (repeat for several: all must match).")
CATEGORY_OPTION = typer.Option(None, "--category", help="Only items in this category (repeatable, all must match).")
AUTHOR_OPTION = typer.Option(None, "--author", help="Only items by this author (exact).")


def _checks(paths: List[str]):
    from .marketplace_run import item_checks

    try:
        return item_checks(paths)
    except PaictlError as error:
        fail(error)


def _load_items(paths: List[str], strict: bool = False):
    """Every item, its warnings shown; else all errors on standard error and exit 1: nothing is published."""
    from paictl.protocol.validate import ValidationResult

    from .errors import report_warnings
    from .report import text_report

    items, failed, warnings = [], [], []
    for path, check in _checks(paths):
        warnings += [d for d in check.result.diagnostics if not d.is_error]
        if check.item is None:
            failed.append(ValidationResult(path=path, diagnostics=tuple(d for d in check.result.diagnostics
                                                                        if d.is_error), data=None))
        items.append(check.item)
    report_warnings(warnings)
    if failed:
        typer.echo(text_report(failed), err=True)
        raise typer.Exit(InvalidJobError.exit_code)
    if strict and warnings:
        typer.echo(error_line(f"{len(warnings)} warning(s) and --strict: nothing was published"), err=True)
        raise typer.Exit(InvalidJobError.exit_code)
    return items


def _store(target: str, token: Optional[str], timeout: float = 30.0):
    from paictl.marketplace.targets import open_target

    try:
        return open_target(target, token, timeout=timeout)
    except PaictlError as error:
        fail(error)


@marketplace_app.command("validate", short_help="Check marketplace item files.")
def validate_command(
    paths: List[str] = typer.Argument(..., metavar="PATH...", help="Item files, or folders searched for items."),
    output: Format = _output_option(Format.text, "text, json or yaml."),
    format_alias: Optional[Format] = FORMAT_ALIAS,
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as failures (exit 1)."),
) -> None:
    """Check item files: the item's keys, the files it names, its job with every job check, the server's limits.

    A folder is searched recursively for YAML files that are items (those with a `protocol` and an author or
    name; the job files items name are skipped, as any other YAML file)."""
    from .marketplace_run import run_marketplace_validate

    raise typer.Exit(run_marketplace_validate(paths, output=(format_alias or output).value, strict=strict,
                                              echo=typer.echo))


@marketplace_app.command("pack", short_help="Print one self-contained item.")
def pack_command(
    path: str = typer.Argument(..., metavar="ITEM", help="The item file."),
    output: DocumentFormat = _output_option(DocumentFormat.yaml, "yaml or json."),
    format_alias: Optional[DocumentFormat] = FORMAT_ALIAS,
    output_file: Optional[str] = OUTPUT_FILE_OPTION,
) -> None:
    """Print one self-contained item (description and job inlined, the job as YAML text), ready to publish.

    Deterministic: the same files give the same bytes. Invalid items exit 1 with their diagnostics.
    """
    from paictl.marketplace.pack import packed_json, packed_yaml

    output = format_alias or output
    (item,) = _load_items([path])
    _write_or_print(packed_json(item) if output is DocumentFormat.json else packed_yaml(item), output_file)


@marketplace_app.command("publish", short_help="Validate items, then create or update each one.")
def publish_command(
    paths: List[str] = typer.Argument(..., metavar="ITEM...", help="Item files or folders (all validated first)."),
    target: str = typer.Option(..., "--to", metavar="TARGET", help="A local index folder or a marketplace URL."),
    token: Optional[str] = TOKEN_OPTION,
    output: Format = _output_option(Format.text, "text, or json/yaml: one record per item, as each is done."),
    format_alias: Optional[Format] = FORMAT_ALIAS,
    strict: bool = typer.Option(False, "--strict", help="Warnings fail (exit 1) before anything is written."),
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Validate the items, then create each one, or replace the one with its name and author.

    Everything a server would refuse (a category only an admin can create, another user's item, the body size)
    is checked before the first write; a publication that fails midway is undone, or completed by the next run.
    CI: paictl marketplace publish items/ --to "$MARKETPLACE_URL" -o json (token in PAICTL_MARKETPLACE_TOKEN)
    """
    from paictl.marketplace.targets import publish

    output = format_alias or output
    items = _load_items(paths, strict)
    store = _store(target, token, timeout)
    for index, item in enumerate(items):
        record = {"action": None, "id": None, "name": item.name, "author": item.author, "target": str(store)}
        try:
            record["action"], record["id"] = publish(store, item)
        except PaictlError as error:
            # Something may be left on the server (a partly updated item, or one whose undo failed): say which.
            left = getattr(error, "item_id", None)
            _emit(output, {**record, "action": "failed", "id": left, "error": str(error)})
            for later in items[index + 1:]:
                _emit(output, {**record, "name": later.name, "author": later.author, "action": "not attempted"})
            if isinstance(error, InvalidJobError):
                report_invalid(error)
            fail(error)
        _emit(output, record)


def _emit(output: Format, record: dict) -> None:
    """One record, written (and flushed) as soon as its item is done: JSON Lines, or one YAML document each."""
    from paictl.protocol.diagnostics import one_line

    if output is Format.json:
        typer.echo(_json_text(record, ensure_ascii=False))
    elif output is Format.yaml:
        typer.echo("---\n" + _yaml_text(record), nl=False)
    elif record["action"] in ("created", "updated"):
        typer.echo(f"{record['action']} {one_line(record['name'])} by {one_line(record['author'])} in "
                   f"{record['target']} (id {record['id']})")


@marketplace_app.command("list", short_help="List a target's items, filtered.")
def list_command(
    target: str = FROM_OPTION,
    item_type: Optional[str] = TYPE_OPTION,
    tag: Optional[List[str]] = TAG_OPTION,
    category: Optional[List[str]] = CATEGORY_OPTION,
    author: Optional[str] = AUTHOR_OPTION,
    keyword: Optional[str] = typer.Option(None, "--keyword", "-k", help="Case-insensitive plain text, in name, author "
                                          "or summary (no wildcards: every character means itself)."),
    token: Optional[str] = TOKEN_OPTION,
    output: ListFormat = _output_option(ListFormat.text, "text (a table), json, yaml, or name (one per line)."),
    format_alias: Optional[ListFormat] = FORMAT_ALIAS,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """List the items of a TARGET, filtered as the marketplace server filters."""
    _list(target, token, format_alias or output, timeout, item_type=item_type, tags=tag, categories=category,
          author=author, keyword=keyword)


@marketplace_app.command("search", short_help="Find items by keyword (and the list filters).")
def search_command(
    keyword: str = typer.Argument(..., help="Case-insensitive plain text to find in an item's name, author or summary "
                                  "(no wildcards)."),
    target: str = FROM_OPTION,
    item_type: Optional[str] = TYPE_OPTION,
    tag: Optional[List[str]] = TAG_OPTION,
    category: Optional[List[str]] = CATEGORY_OPTION,
    author: Optional[str] = AUTHOR_OPTION,
    token: Optional[str] = TOKEN_OPTION,
    output: ListFormat = _output_option(ListFormat.text, "text (a table), json, yaml, or name (one per line)."),
    format_alias: Optional[ListFormat] = FORMAT_ALIAS,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Find items by keyword (and the list filters)."""
    _list(target, token, format_alias or output, timeout, item_type=item_type, tags=tag, categories=category,
          author=author, keyword=keyword)


def _list(target: str, token: Optional[str], output: ListFormat, timeout: float, *, item_type, tags, categories,
          author, keyword) -> None:
    from paictl.marketplace.query import ItemQuery, summary_of
    from paictl.protocol.diagnostics import one_line

    try:
        query = ItemQuery(type=item_type, tags=tuple(tags or ()), categories=tuple(categories or ()), author=author,
                          keyword=keyword)
        found = _store(target, token, timeout).query(query)
    except PaictlError as error:
        fail(error)
    if output is ListFormat.name:
        if found:
            typer.echo("\n".join(one_line(str(record.get("name"))) for record in found))
        return
    found = [summary_of(d) for d in found]
    if output is ListFormat.json:
        typer.echo(_json_text(found, indent=2, ensure_ascii=False))
    elif output is ListFormat.yaml:
        typer.echo(_yaml_text(found), nl=False)
    elif found:
        lines = []  # written at once: a listing may have 100,000 lines
        for record in found:
            tags_text = ",".join(record["tags"]) or "-"
            fields = (record["name"], record["author"], record["type"], tags_text, record["summary"] or "")
            lines.append("\t".join(one_line(str(field)).replace("\t", "\\t") for field in fields))
        typer.echo("\n".join(lines))


@marketplace_app.command("pull", short_help="Print an item's job, or the whole item.")
def pull_command(
    name: str = typer.Argument(..., help="The item's name."),
    target: str = FROM_OPTION,
    author: Optional[str] = typer.Option(None, "--author", help="The item's author (needed when names clash)."),
    output: DocumentFormat = _output_option(DocumentFormat.yaml, "yaml (the job, or with --item the packed item) or "
                                            "json (the item as the target stores it, id included)."),
    format_alias: Optional[DocumentFormat] = FORMAT_ALIAS,
    output_file: Optional[str] = OUTPUT_FILE_OPTION,
    whole_item: bool = typer.Option(False, "--item", help="The whole packed item, not only its job."),
    token: Optional[str] = TOKEN_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Print an item's job (as `paictl validate` and `paictl compile` take it), or with --item the whole item."""
    from paictl.marketplace.item import item_from_document
    from paictl.marketplace.pack import packed_json, packed_yaml

    output = format_alias or output
    try:
        document = _store(target, token, timeout).fetch(name, author)
    except PaictlError as error:
        fail(error)
    item = item_from_document(document)
    if output is DocumentFormat.json:
        from .report import json_escaped

        text = json_escaped(packed_json(item)) if whole_item else _json_text(
            {"id": document.get("id"), **item.to_document()}, indent=2, ensure_ascii=False) + "\n"
    elif whole_item:
        text = packed_yaml(item)
    else:
        text = item.protocol if item.protocol.endswith("\n") else item.protocol + "\n"
        _warn_unless_yaml(item.protocol, name)
    _write_or_print(text, output_file)


def _warn_unless_yaml(protocol: str, name: str) -> None:
    """A target may hold a job that is not YAML (a server takes any text another client sent): it is still printed
    as stored, but `validate` and `compile` would refuse it, so say so first."""
    from paictl.protocol.diagnostics import one_line
    from paictl.protocol.loading import DocumentError, load_data

    try:
        load_data(protocol, "<job>")
    except DocumentError as error:
        first = error.diagnostics[0]
        where = f"line {first.line}: " if first.line else ""
        typer.echo(f"paictl: warning: the job of item {one_line(repr(name))} is not a YAML job ({where}"
                   f"{one_line(first.message)}); printed as the target stores it", err=True)


def _write_or_print(text: str, output_file: Optional[str]) -> None:
    if output_file is None or output_file == "-":
        typer.echo(text, nl=False)
        return
    from paictl.marketplace.local_index import write_atomically

    try:
        write_atomically(output_file, text)
    except PaictlError as error:
        fail(error)


def _json_text(data, **options) -> str:
    """json.dumps, imported when JSON is printed (every command module is imported for `paictl --help`), with the
    characters a terminal acts on that JSON may carry raw (C1 controls, bidi overrides) written as escapes."""
    from paictl.compiler.emit import strict_json

    from .report import json_escaped

    return json_escaped(strict_json(data, **options))


def _yaml_text(data) -> str:
    from paictl.marketplace.yamltext import dump_any

    return dump_any(data)
