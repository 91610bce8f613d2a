"""An item file to diagnostics located where the problem is, and to a packed `Item` when there is none.

Three places a problem can sit, each reported with the protocol core's codes and positions:
- the item's own keys (the item schema, `schemas/marketplace-item.schema.json`, plus the visibility rules);
- a job given inline, as a mapping or as YAML text: located in the item file (lines of a literal block are shifted
  to where they sit in the item file);
- a file the item names (`{file: job.yaml}`): located in that file, which must stay inside the item's folder.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from paictl.errors import InputError, InvalidJobError
from paictl.protocol.codes import finding
from paictl.protocol.diagnostics import Anchor, Diagnostic, Finding
from paictl.protocol.loading import MAX_FILE_BYTES, Document, DocumentError, decode_source, load_located
from paictl.protocol.validate import ValidationResult, check_document, locate, validate_bytes, validate_text

from .rules import name_findings, size_findings
from .shape import looks_like_item

if TYPE_CHECKING:  # the packed item is made only when asked for: validating never imports it (nor dataclasses)
    from .item import Item

SCHEMA = "marketplace-item"

_ITEM_REQUIRED_HINTS = {
    "name": "add `name: <item name>`",
    "author": "add `author: <your OpenPAI user name>` (the server checks it against the token's user)",
    "type": "add `type: template` (or `data`, `old`)",
    "protocol": "add `protocol: {file: job.yaml}`, or the job itself",
    "dataType": "a data item says where its data lives: `dataType: blob` (or `github`)",
    "dataUrl": "a data item needs `dataUrl: <URL of the data>`",
}


class ItemCheck:
    """The diagnostics of one item file (as `paictl validate` reports them) and the packed item when it has no error.

    The packed item is built when asked for: a job given as a mapping is then written out as YAML text (a ruamel
    dump, read back to be sure), which validating alone never needs.
    """

    __slots__ = ("result", "_pack", "_item")

    def __init__(self, *, result: ValidationResult, item: Item | None = None,
                 pack: Callable[[], Item] | None = None):
        self.result = result
        self._pack = pack
        self._item = item

    @property
    def item(self) -> Item | None:
        if self._item is None and self._pack is not None:
            self._item, self._pack = self._pack(), None
        return self._item


def validate_if_item(data: dict[str, Any], text: str, path: str) -> ValidationResult | None:
    """The `paictl validate` hook (protocol.validate.OtherKinds): an item's result, or None for anything else."""
    if not looks_like_item(data):
        return None
    return check_item_text(text, path).result


def check_item_file(path: str | os.PathLike[str]) -> ItemCheck:
    from paictl.protocol import read_source

    return check_item_bytes(read_source(path), str(path))


def check_item_bytes(raw: bytes, path: str) -> ItemCheck:
    try:
        text = decode_source(raw, path)
    except DocumentError as exc:
        return ItemCheck(result=ValidationResult(path=path, diagnostics=tuple(exc.diagnostics), data=None), item=None)
    return check_item_text(text, path)


def load_item(path: str | os.PathLike[str]) -> Item:
    """The packed item of an item file, or InvalidJobError with every diagnostic (InputError if unreadable)."""
    check = check_item_file(path)
    if check.item is None:
        raise InvalidJobError(list(check.result.diagnostics))
    return check.item


def check_item_text(text: str, path: str) -> ItemCheck:
    """Files an item names are looked up beside `path` (the current folder for standard input)."""
    clean = _clean_fast(text, path)
    if clean is not None:
        return clean
    try:
        document = load_located(text, path, kind="marketplace-item")
    except DocumentError as exc:
        return ItemCheck(result=ValidationResult(path=path, diagnostics=tuple(exc.diagnostics), data=None), item=None)
    data = document.data
    from paictl.protocol.schema_check import check_schema

    findings = [_said_of_the_item(f) for f in check_schema(data, SCHEMA)] + _visibility_findings(data)
    findings += name_findings(data)
    diagnostics = [locate(f, document) for f in findings]
    base = Path(path).parent
    description, found = _description(data.get("description"), base, document)
    diagnostics += found
    protocol, found = _protocol(data.get("protocol"), base, document)
    diagnostics += found
    if protocol is not None:
        diagnostics += [locate(f, document) for f in size_findings(data, text, description, protocol)]
    diagnostics.sort(key=lambda d: (d.file != path, d.file, d.line or 0, d.column or 0, d.code))
    result = ValidationResult(path=path, diagnostics=tuple(diagnostics), data=data)
    if not result.ok or protocol is None:
        return ItemCheck(result=result)

    return ItemCheck(result=result, pack=_packer(data, description, protocol))


def _packer(data: dict[str, Any], description: str | None, protocol: str | Callable[[], str]) -> Callable[[], Item]:
    def pack() -> Item:
        from .item import item_from_document

        # The document with its description and job inlined is what `pack` writes and what the server stores.
        text = protocol if isinstance(protocol, str) else protocol()
        return item_from_document({**data, "description": description or "", "protocol": text})

    return pack


def _clean_fast(text: str, path: str) -> ItemCheck | None:
    """The check of an item with nothing to report, without the located loader; None when anything is to report
    (or the fast loader cannot read the text): the located path then finds and places every diagnostic.

    As `validate_text` does for jobs: most items are clean, and placing nothing costs a third of checking."""
    from paictl.protocol.loading import load_fast
    from paictl.schemas import fast_validator

    data = load_fast(text)
    if (data is None or not looks_like_item(data) or not fast_validator(SCHEMA).is_valid(data)
            or _visibility_findings(data) or name_findings(data)):
        return None
    unplaced = Document(path=path, text=text, data=data, positions={})
    base = Path(path).parent
    description, found = _description(data.get("description"), base, unplaced)
    if found:
        return None
    value = data.get("protocol")
    if isinstance(value, dict) and _reference(value) is None:
        if not fast_validator("job").is_valid(value):
            return None
        job = Document(path=path, text=text, data=value, positions={})
        if check_document(job, schema_valid_data=value):
            return None
        protocol: str | Callable[[], str] | None = _yaml_text_of(value)
    else:
        protocol, found = _protocol(value, base, unplaced)
        if found or protocol is None:
            return None
    if size_findings(data, text, description, protocol):
        return None
    return ItemCheck(result=ValidationResult(path=path, diagnostics=(), data=data),
                     pack=_packer(data, description, protocol))


def _said_of_the_item(f: Finding) -> Finding:
    """A missing key of an item gets the item's hint, not a job's."""
    if f.code != "E201":
        return f
    missing = re.search(r"required key '([^']+)'", f.message)
    return f._replace(hint=_ITEM_REQUIRED_HINTS.get(missing.group(1)) if missing else None)


def _visibility_findings(data: dict[str, Any]) -> list[Finding]:
    public, private, groups = data.get("isPublic"), data.get("isPrivate"), data.get("groupList")
    findings = []
    if public is True and private is True:
        findings.append(finding("E882", "/isPrivate", "the item is both public and private",
                                "keep one: `isPublic: true` for everyone, `isPrivate: true` for you alone"))
    if isinstance(groups, list) and groups and (private is True or public is not False):
        why = "private" if private is True else ("public" if public is True else "public (isPublic defaults to true)")
        findings.append(finding("W880", "/groupList", f"groupList is dropped: the item is {why}",
                                "to share with these groups only, set `isPublic: false` and `isPrivate: false`",
                                Anchor.KEY))
    elif isinstance(groups, list) and groups and public is False and private is not True:
        findings.append(finding("W881", "/groupList", "an item shared with groups only is never listed by the "
                                "server for non-admins (it reads `groupList` where its IDP answers `grouplist`)",
                                "group members can still open it by id, but nobody finds it by name, paictl "
                                "included: publishing it again creates a second item; make it public to have it found",
                                Anchor.KEY))
    return findings


# ----------------------------------------------------------------------------------------------------------------
# Files the item names


#: What no file name paictl reads may hold: a NUL (the OS cannot take it) and the other C0 controls and DEL.
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _reference(value: Any) -> str | None:
    """The path of a `{file: PATH}` reference, else None (the value is given inline)."""
    if isinstance(value, dict) and set(value) == {"file"} and isinstance(value["file"], str):
        return value["file"]
    return None


def _plainly_inside(base: Path, relative: str) -> str | None:
    """`base/relative` when no step of `relative` is `..` or a symlink (then it cannot leave `base`), else None.

    One lstat per step, where resolving both paths costs one per component of each (the benchmark's items sit
    five folders deep)."""
    parts = relative.split("/")
    if ".." in parts:
        return None
    current = os.fspath(base)
    for part in parts:
        if part in ("", "."):
            continue
        current = os.path.join(current, part)
        if os.path.islink(current):
            return None
    return current


def _read_beside(base: Path, relative: str, pointer: str, document: Document) -> tuple[bytes | None, list[Diagnostic]]:
    """The bytes of `relative`, resolved inside `base` (symlinks followed), or a located E881/E880."""
    def refused(code: str, message: str, hint: str | None = None) -> tuple[None, list[Diagnostic]]:
        return None, [locate(finding(code, pointer, message, hint), document)]

    if "\x00" in relative or _CONTROL.search(relative):  # the OS refuses a NUL (ValueError): say so first
        return refused("E880", f"{relative!r} is not a usable file name: it holds a control character",
                       "name a file inside the item's folder")
    if os.path.isabs(relative) or relative.startswith("~"):
        return refused("E881", f"{relative!r} is not a relative path", "name a file inside the item's folder")
    target = _plainly_inside(base, relative)
    if target is None:  # a `..` or a symlink on the way: resolve both and compare
        folder = os.path.realpath(base)
        target = os.path.realpath(os.path.join(folder, relative))
        escapes = os.path.commonpath([folder, target]) != folder
    else:
        escapes = False
    if escapes:
        return refused("E881", f"{relative!r} leads out of the item's folder (to {target})",
                       "keep every file the item names inside its folder (symlinks included)")
    try:
        status = os.stat(target)
        if stat.S_ISDIR(status.st_mode):
            return refused("E880", f"{relative!r} is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):  # a FIFO or a device would block or never end
            return refused("E880", f"{relative!r} is not a regular file")
        if status.st_size > MAX_FILE_BYTES:
            return refused("E880", f"{relative!r} is {status.st_size} bytes; the limit is {MAX_FILE_BYTES} bytes")
        try:
            from paictl.protocol.source import read_source

            data = read_source(target)  # bounded while reading: the file may have grown since the stat
        except InputError as exc:
            return refused("E880", f"{relative!r}: {exc}")
        if len(data) > MAX_FILE_BYTES:
            return refused("E880", f"{relative!r} is larger than the limit of {MAX_FILE_BYTES} bytes")
        return data, []
    except FileNotFoundError:
        return refused("E880", f"{relative!r}: no such file beside the item")
    except OSError as exc:
        return refused("E880", f"{relative!r}: cannot read: {exc.strerror or exc}")


def _description(value: Any, base: Path, document: Document) -> tuple[str | None, list[Diagnostic]]:
    relative = _reference(value)
    if relative is None:
        return (value if isinstance(value, str) else None), []
    raw, found = _read_beside(base, relative, "/description/file", document)
    if raw is None:
        return None, found
    try:
        return raw.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        return None, [locate(finding("E880", "/description/file", f"{relative!r} is not UTF-8 text"), document)]


def _protocol(value: Any, base: Path, document: Document) -> tuple[str | Callable[[], str] | None, list[Diagnostic]]:
    """The job as YAML text (or how to write it, for a mapping), and its diagnostics. None when it cannot be read."""
    relative = _reference(value)
    if relative is not None:
        raw, found = _read_beside(base, relative, "/protocol/file", document)
        if raw is None:
            return None, found
        shown = os.path.normpath(os.path.join(os.path.dirname(document.path), relative))
        result = validate_bytes(raw, shown)
        text = raw.decode("utf-8-sig") if result.data is not None else None
        return text, list(result.diagnostics)
    if isinstance(value, dict):
        return _inline_mapping(value, document)
    if isinstance(value, str):
        result = validate_text(value, document.path)
        shift = _shift_into_item(value, document)
        return (value if result.data is not None else None), [shift(d) for d in result.diagnostics]
    return None, []  # the schema phase has said what is wrong with it


def _inline_mapping(value: dict[str, Any], document: Document) -> tuple[Callable[[], str], list[Diagnostic]]:
    """The job's diagnostics, and how to write it as YAML text (only packing and publishing need that)."""
    prefix = "/protocol"
    positions = {pointer[len(prefix):]: position for pointer, position in (document.positions or {}).items()
                 if pointer == prefix or pointer.startswith(prefix + "/")}
    job = Document(path=document.path, text=document.text, data=value, positions=positions)
    diagnostics = [d._replace(pointer=prefix + d.pointer) for d in check_document(job)]
    return _yaml_text_of(value), diagnostics


def _yaml_text_of(value: dict[str, Any]) -> Callable[[], str]:
    def text() -> str:
        from .yamltext import dump_yaml

        return dump_yaml(value)

    return text


def _shift_into_item(protocol: str, document: Document) -> Callable[[Diagnostic], Diagnostic]:
    """Move a diagnostic of the embedded YAML text to where that text sits in the item file.

    Exact for a literal block (`protocol: |`) whose lines appear verbatim in the item; any other way of writing the
    string (quoted, folded, with escapes) gets the position of the value and the embedded line in the message.
    """
    _, _, value_line, value_column = (document.positions or {}).get("/protocol", (1, 1, 1, 1))
    lines = document.lines
    first, indent = _literal_block_start(protocol, lines, value_line, value_column)

    def shift(d: Diagnostic) -> Diagnostic:
        pointer = "/protocol" + d.pointer
        if first is not None and d.line is not None and d.column is not None:
            line = first + d.line - 1
            if 0 < line <= len(lines):
                return d._replace(
                    file=document.path, line=line, column=d.column + indent, pointer=pointer,
                    end_column=None if d.end_column is None else d.end_column + indent, source_line=lines[line - 1])
        where = f" (line {d.line} of the embedded protocol)" if d.line is not None else " (in the embedded protocol)"
        source = lines[value_line - 1] if 0 < value_line <= len(lines) else None
        return d._replace(file=document.path, line=value_line, column=value_column, end_column=None,
                          pointer=pointer, message=d.message + where, source_line=source)

    return shift


def _literal_block_start(protocol: str, lines: list[str], value_line: int, value_column: int) -> tuple[int | None, int]:
    """(first item line of the block's content, its indentation), or (None, 0) if the text is not written verbatim."""
    header = lines[value_line - 1][value_column - 1:] if 0 < value_line <= len(lines) else ""
    if not header.startswith("|"):
        return None, 0
    first = value_line + 1
    body = protocol.split("\n")
    if body and body[-1] == "":
        body.pop()
    indent = None
    for offset, text in enumerate(body):
        number = first + offset
        if number > len(lines):
            return None, 0
        actual = lines[number - 1]
        if text == "":
            if actual.strip():
                return None, 0
            continue
        if indent is None:
            indent = len(actual) - len(actual.lstrip(" "))
        if actual != " " * indent + text:
            return None, 0
    return first, indent or 0


