"""Serialising compiled objects the way kubectl reads and writes them.

Output must be byte-identical for identical input (it is diffed, reviewed and committed): block style, keys in the
order the compiler built them, no anchors or aliases, no line folding.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from paictl.protocol.jsonout import js_timestamp as _timestamp
from paictl.protocol.jsonout import strict_json  # noqa: F401 - every JSON printer imports it from here too


# Why not a YAML library: OpenPAI puts every task role's variables into every pod, so a Framework grows with the
# square of its task roles. For 100 roles (5.5 MB of YAML) ruamel's emitter took 16 s and PyYAML's (libyaml, through
# its Python representer) 2.3 s, against a 1 s budget; yaml-rs writes dates bare, which YAML 1.1 readers (kubectl)
# turn into timestamps. Compiled objects are JSON-like (dict, list, str, int, float, bool, None), so a small block
# emitter that quotes anything doubtful is enough; tests read its output back with a YAML 1.1 and a 1.2 reader.

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+=~-]*(?: [A-Za-z0-9_./@+=~-]+)*")
# Words YAML 1.1 or 1.2 readers take for booleans or null; anything starting with a digit, sign or dot is quoted too.
_RESERVED = {"y", "yes", "n", "no", "on", "off", "true", "false", "null", "nan", "inf"}
# Characters that must be escaped even inside a double-quoted scalar (JSON leaves them raw; YAML readers do not).
# U+FFFE, U+FFFF and lone surrogates are outside YAML's printable set: a reader refuses the stream even quoted.
_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_BLOCK_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]|[ \t]\n|[ \t]$|"
                           "\n[ \t]*$")


def _quoted(text: str) -> str:
    return _ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _float(value: float) -> str:
    """A float both YAML 1.1 and 1.2 readers read back as that float: 1.1 wants a dot in the mantissa and a signed
    exponent (Python's repr always signs it), and neither reads JSON's NaN or Infinity."""
    if value != value:
        return ".nan"
    if value in (_INF, -_INF):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text


_INF = float("inf")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, int):
        return json.dumps(value)
    if isinstance(value, datetime.datetime):
        return _timestamp(value)
    if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
        return value
    return _quoted(value)


def _block(text: str, indent: str) -> str | None:
    """A literal block (`|`) for multi-line text that a block can carry exactly, else None."""
    if "\n" not in text.rstrip("\n") or text[:1] in (" ", "\t", "\n") or _BLOCK_UNSAFE.search(text.rstrip("\n")):
        return None
    body = text.rstrip("\n")
    chomp = "-" if not text.endswith("\n") else ("" if text.count("\n", len(body)) == 1 else "+")
    lines = "\n".join(f"{indent}{line}" if line else "" for line in body.split("\n"))
    return f"|{chomp}\n{lines}" + "\n" * (text.count("\n", len(body)) - 1 if chomp == "+" else 0)


#: Pieces buffered before they are written out: output is streamed, so a 700 MB Framework never sits in memory.
_FLUSH_AT = 8192


class _Emitter:
    """Writes block YAML to `write`, object by object, in pieces.

    The output of a big job is mostly repetition: OpenPAI's per-pod environment puts the same few thousand
    `{name, value}` entries into every container. So the text of every scalar is computed once (`_scalar` and
    `_block` were called 349,000 times for 100 task roles), and a list entry that is a flat mapping of scalars is
    rendered once per object and indentation and then copied. The bytes are exactly those of the plain recursive
    emitter (tests/emit_reference.py, compared in tests/test_emit.py).
    """

    def __init__(self, write: Callable[[str], Any]) -> None:
        self.write = write
        self.parts: list[str] = []
        #: str key -> `key:`; single-line str value -> ` value\n`; (multi-line str, indent) -> ` |...\n`.
        self.keys: dict[str, str] = {}
        self.values: dict[str, str] = {}
        self.blocks: dict[tuple[str, str], str] = {}
        #: Per indentation, id of a flat list-entry mapping -> its text; per object, so an id always names a live
        #: object (one that is part of the object being written).
        self.entries: dict[str, dict[int, str]] = {}

    def document(self, obj: Mapping[str, Any]) -> None:
        self.parts.append("---")
        self.node(obj if type(obj) is dict else dict(obj), "")
        self.entries.clear()
        self.flush()

    def flush(self) -> None:
        if self.parts:
            self.write("".join(self.parts))
            self.parts.clear()

    def key(self, key: Any) -> str:
        if type(key) is not str:
            return f"{_scalar(str(key))}:"
        text = self.keys.get(key)
        if text is None:
            text = self.keys[key] = f"{_scalar(key)}:"
        return text

    def scalar(self, value: Any, indent: str) -> str | None:
        """` text\n` for a scalar value, None for a mapping or a list."""
        if type(value) is str:
            text = self.values.get(value)
            if text is not None:
                return text
            if "\n" not in value:
                text = self.values[value] = f" {_scalar(value)}\n"
                return text
            text = self.blocks.get((value, indent))
            if text is None:
                block = _block(value, indent)
                text = self.blocks[(value, indent)] = f" {block}\n" if block is not None else f" {_scalar(value)}\n"
            return text
        if isinstance(value, (dict, list)):
            return None
        data = getattr(value, "buffer_bytes", None)
        if data is not None:  # a !!binary value (protocol/yamltags.py): js-yaml reads this back as the same Buffer
            return f" !!binary {base64.b64encode(data).decode('ascii')}\n"
        block = _block(value, indent) if isinstance(value, str) else None
        return f" {block}\n" if block is not None else f" {_scalar(value)}\n"

    def node(self, value: Any, indent: str) -> None:
        """Append `value` as a block node whose own lines start at `indent`; the caller wrote what precedes it."""
        text = self.scalar(value, indent)
        if text is not None:
            self.parts.append(text)
        elif isinstance(value, dict):
            if not value:
                self.parts.append(" {}\n")
                return
            self.parts.append("\n")
            self.mapping(value, indent, first_inline=False)
        else:
            self.sequence(value, indent)

    def mapping(self, value: dict, indent: str, *, first_inline: bool) -> None:
        append = self.parts.append
        child = indent + "  "
        for key, item in value.items():
            if first_inline:
                append(" ")
                first_inline = False
            else:
                append(indent)
            append(self.key(key))
            self.node(item, child)

    def sequence(self, value: list, indent: str) -> None:
        parts = self.parts
        if not value:
            parts.append(" []\n")
            return
        parts.append("\n")
        dash = indent + "-"
        child = indent + "  "
        # id of a flat mapping entry -> its whole text from the dash on; the hot loop is one lookup and one append.
        known = self.entries.setdefault(dash, {})
        get = known.get
        append = parts.append
        for item in value:
            text = get(id(item))
            if text is not None:
                append(text)
                continue
            if type(item) is dict and item:
                text = self.flat_entry(item, child)
                if text is not None:
                    text = known[id(item)] = dash + text
                    append(text)
                    continue
            append(dash)
            if isinstance(item, dict) and item:
                self.mapping(item, child, first_inline=True)
            else:
                self.node(item, child)
            if len(parts) >= _FLUSH_AT:
                self.flush()
        if len(parts) >= _FLUSH_AT:
            self.flush()

    def flat_entry(self, item: dict, indent: str) -> str | None:
        """The text of a list entry whose values are all scalars (first key after the dash), else None."""
        pieces = []
        for key, value in item.items():
            text = self.scalar(value, indent + "  ")
            if text is None:
                return None
            pieces.append(f"{indent if pieces else ' '}{self.key(key)}{text}")
        return "".join(pieces)


def write_yaml(objects: Iterable[Mapping[str, Any]], write: Callable[[str], Any]) -> None:
    """Multi-document YAML, `---` before every object, ready for `kubectl apply -f -`, passed to `write` in pieces
    as it is made (e.g. `sys.stdout.write`): memory stays flat however large the output.

    Readable by YAML 1.1 readers (kubectl's) and YAML 1.2 readers alike: a string never looks like anything else.
    """
    emitter = _Emitter(write)
    for obj in objects:
        emitter.document(obj)


def to_yaml(objects: Iterable[Mapping[str, Any]]) -> str:
    """`write_yaml`'s output as one string."""
    chunks: list[str] = []
    write_yaml(objects, chunks.append)
    return "".join(chunks)


def to_yaml_document(data: Mapping[str, Any]) -> str:
    """One block YAML document without `---`, for YAML carried inside an object (a Secret's `secrets.yaml`, the
    masked job of the `config` annotation). Besides what `write_yaml` takes, its values may hold instants
    (`datetime`), written as timestamps; keys are written as strings, as JavaScript (upstream) holds them."""
    chunks: list[str] = []
    emitter = _Emitter(chunks.append)
    if data:
        emitter.mapping(data if type(data) is dict else dict(data), "", first_inline=False)
    else:
        emitter.parts.append("{}\n")
    emitter.flush()
    return "".join(chunks)


def to_json_list(objects: Iterable[Mapping[str, Any]]) -> str:
    """One `v1` `List`, as `kubectl get -o json` prints several objects."""
    return strict_json({"apiVersion": "v1", "kind": "List", "items": list(objects)}, indent=2, ensure_ascii=False)


def file_name(obj: Mapping[str, Any]) -> str:
    """`<kind>-<name>.yaml`, lower case: one file per object, stable across runs. A document with no kind (MARO's
    job deployment file, or the job protocol document the openpai target sends) is `job-<name>.yaml`."""
    if "kind" not in obj:
        return f"job-{obj['name']}.yaml"
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


_SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\.yaml")


def write_files(objects: Iterable[Mapping[str, Any]], directory: Path) -> list[Path]:
    """Write every object to its own file in `directory`, all or nothing as far as a file system allows.

    Every file is first written (and flushed to disk) in a temporary folder inside `directory`, then renamed into
    place: a reader never sees a partial file, a failure (a full disk, a read-only folder) leaves the previous set
    untouched, and a rename replaces a planted symlink instead of writing through it. Object files of the same job
    that this set no longer has (`<kind>-<job>[-<suffix>].yaml`, e.g. a registry Secret the job dropped) are removed,
    so `kubectl apply -f DIR` applies no stale object; other files are left alone. Secrets are readable by their
    owner only (0600).
    """
    import os
    import shutil
    import tempfile

    from paictl.errors import InputError

    objects = list(objects)
    names = [file_name(o) for o in objects]
    if len(set(names)) != len(names):
        raise ValueError("two objects would be written to the same file")
    for name in names:
        if not _SAFE_NAME.fullmatch(name):  # compiled names are DNS names; anything else is paictl's bug
            raise ValueError(f"refusing to write an object to the file name {name!r}")
    shown = _shown(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"{shown}: exists and is not a directory") from None
    except OSError as exc:
        raise InputError(f"{shown}: cannot create the directory: {exc.strerror or exc}") from None
    if not directory.is_dir():
        raise InputError(f"{shown}: exists and is not a directory")
    try:
        staging = Path(tempfile.mkdtemp(prefix=".paictl-tmp-", dir=directory))
    except OSError as exc:
        raise InputError(f"{shown}: cannot write here: {exc.strerror or exc}") from None
    try:
        for obj, name in zip(objects, names):
            _write_new(staging / name, to_yaml([obj]), 0o600 if obj.get("kind") == "Secret" else 0o644)
        for name in names:
            os.replace(staging / name, directory / name)
        for stale in _stale_files(directory, objects, set(names)):
            stale.unlink()
    except OSError as exc:
        raise InputError(f"{shown}: cannot write the objects: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [directory / name for name in names]


def _write_new(path: Path, text: str, mode: int) -> None:
    import os

    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())
    os.chmod(path, mode)  # the umask may have narrowed it; never widened beyond `mode`


#: The name suffixes of the objects that accompany a workload (targets/*/: secrets, registry auth, priority).
_COMPANION_SUFFIXES = ("configcred", "regcred", "usercred", "priority")


def _stale_files(directory: Path, objects: list[Mapping[str, Any]], written: set[str]) -> list[Path]:
    """Files of an earlier compile of the same job (named after its workload object) that this one did not write."""
    workloads = {o["metadata"]["name"] for o in objects
                 if "metadata" in o and o.get("kind") not in ("Secret", "PriorityClass")}
    if not workloads:
        return []
    # Only the workload itself and its companions: another job's name may start with this one's.
    alternatives = "|".join(re.escape(w) for w in sorted(workloads))
    pattern = re.compile(rf"[a-z]+-(?:{alternatives})\.yaml|(?:secret|priorityclass)-(?:{alternatives})-"
                         rf"(?:{'|'.join(_COMPANION_SUFFIXES)})\.yaml")
    return sorted(entry for entry in directory.iterdir()
                  if entry.name not in written and pattern.fullmatch(entry.name)
                  and (entry.is_symlink() or entry.is_file()))


def _shown(directory: Path) -> str:
    from paictl.protocol.diagnostics import one_line

    return one_line(str(directory))
