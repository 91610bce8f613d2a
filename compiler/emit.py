"""Serialising compiled objects the way kubectl reads and writes them.

Output must be byte-identical for identical input (it is diffed, reviewed and committed): block style, keys in the
order the compiler built them, no anchors or aliases, no line folding.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping


# Why not a YAML library: OpenPAI puts every task role's variables into every pod, so a Framework grows with the
# square of its task roles. For 100 roles (5.5 MB of YAML) ruamel's emitter took 16 s and PyYAML's (libyaml, through
# its Python representer) 2.3 s, against a 1 s budget; yaml-rs writes dates bare, which YAML 1.1 readers (kubectl)
# turn into timestamps. Compiled objects are JSON-like (dict, list, str, int, float, bool, None), so a small block
# emitter that quotes anything doubtful is enough; tests read its output back with a YAML 1.1 and a 1.2 reader.

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+=~-]*(?: [A-Za-z0-9_./@+=~-]+)*")
# Words YAML 1.1 or 1.2 readers take for booleans or null; anything starting with a digit, sign or dot is quoted too.
_RESERVED = {"y", "yes", "n", "no", "on", "off", "true", "false", "null", "nan", "inf"}
# Characters that must be escaped even inside a double-quoted scalar (JSON leaves them raw; YAML readers do not).
_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff]")
_BLOCK_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]|[ \t]\n|[ \t]$|\n[ \t]*$")


def _quoted(text: str) -> str:
    return _ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
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


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Append `value` as a block node whose own lines start at `indent`; the caller wrote what precedes it."""
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n")
            return
        out.append("\n")
        for key, item in value.items():
            out.append(f"{indent}{_scalar(str(key))}:")
            _emit(item, indent + "  ", out)
    elif isinstance(value, list):
        if not value:
            out.append(" []\n")
            return
        out.append("\n")
        for item in value:
            out.append(f"{indent}-")
            _emit_item(item, indent + "  ", out)
    else:
        block = _block(value, indent) if isinstance(value, str) else None
        out.append(f" {block}\n" if block is not None else f" {_scalar(value)}\n")


def _emit_item(item: Any, indent: str, out: list[str]) -> None:
    if isinstance(item, dict) and item:
        first = True
        for key, value in item.items():
            out.append(f" {_scalar(str(key))}:" if first else f"{indent}{_scalar(str(key))}:")
            _emit(value, indent + "  ", out)
            first = False
    else:
        _emit(item, indent, out)


def to_yaml(objects: Iterable[Mapping[str, Any]]) -> str:
    """Multi-document YAML, `---` before every object, ready for `kubectl apply -f -`.

    Readable by YAML 1.1 readers (kubectl's) and YAML 1.2 readers alike: a string never looks like anything else.
    """
    out: list[str] = []
    for obj in objects:
        out.append("---")
        _emit(dict(obj), "", out)
    return "".join(out)


def to_json_list(objects: Iterable[Mapping[str, Any]]) -> str:
    """One `v1` `List`, as `kubectl get -o json` prints several objects."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}, indent=2, ensure_ascii=False)


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
    workloads = {o["metadata"]["name"] for o in objects if o.get("kind") not in ("Secret", "PriorityClass")}
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
