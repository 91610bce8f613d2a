"""Jobs for the differential test: the upstream corpus's valid jobs, mutated by hypothesis strategies.

A mutation picks a place in a real job and changes it the way people and tools get jobs wrong: another value of
another shape (null, false, 0, "", a list, a mapping, an unquoted date, a huge or non-finite number), a key removed,
a known key added where it does not belong, placeholders and mustache tags written into its strings, a list written
as a mapping or a mapping as a list (taskRoles as a list of roles, prerequisites keyed by name, ...), and a key
renamed to a name only JavaScript's Object prototype has (`__proto__`, `constructor`, `toString`, ...) wherever
upstream builds objects from keys or looks names up while rendering. The result is
written back as YAML text (PyYAML keeps a date unquoted, so js-yaml reads it as a Date again).

`yaml_mutated_jobs` then changes how the text is written, not what the job says, or says it with YAML's own means:
anchors, aliases and merge keys across sections, a second document, a duplicate key, CRLF line breaks, a BOM, tabs and
white-space-only lines, scalars in every radix and case (`0X1f`, `.INF`, `~`, `y`, `off`, long strings), complex and
tagged keys, deep flow nesting. Raw YAML is placed with markers the dump writes as plain words (`__RAW3__`).
"""

from __future__ import annotations

import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "openpai" / "valid"



@lru_cache(maxsize=None)
def corpus_jobs() -> tuple[tuple[str, str], ...]:
    """(file name, text) of every valid corpus job, sorted by name."""
    if not CORPUS.is_dir():
        return ()
    return tuple((path.name, path.read_text(encoding="utf-8"))
                 for path in sorted(CORPUS.iterdir()) if path.suffix in (".yaml", ".yml"))


@lru_cache(maxsize=None)
def corpus_data(name: str) -> Any:
    return yaml.safe_load(dict(corpus_jobs())[name])


#: Values of other shapes; each is tried where any value can stand.
SCALARS = st.sampled_from([
    None, False, True, 0, 1, -1, 2, "", "x", "0", "null", 2 ** 31, 2 ** 53 + 1, 1e30, 0.5, -0.0,
    float("nan"), float("inf"), datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1, 12, 30),
    "2020-01-01", "__proto__", "constructor", "toString", "a b", "ä", "<% $parameters.a %>",
    b"hello", b"\xff",  # written as !!binary: a Node Buffer for js-yaml
])
#: Names an empty JavaScript object already answers (Object.prototype's members, and `__proto__` itself).
PROTOTYPE_NAMES = st.sampled_from([
    "__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf",
    "propertyIsEnumerable", "toLocaleString", "__defineGetter__", "__lookupGetter__", "length", "name",
])
#: Keys people add, misplace or misspell.
KEYS = st.sampled_from([
    "ports", "auth", "secrets", "parameters", "completion", "extras", "name", "uri", "instances", "taskRetryCount",
    "jobRetryCount", "gpu", "cpu", "memoryMB", "commands", "deployment", "virtualCluster", "hivedScheduler",
    "gangAllocation", "storages", "com.microsoft.pai.runtimeplugin", "__proto__", "toString", "a", "skuType",
    "shmMB", "infiniband", "minFailedInstances", "minSucceededInstances", "preCommands", "postCommands",
])
#: Text placed into strings: placeholders of every root, sections and parse errors of mustache.
SNIPPETS = st.sampled_from([
    "<% $parameters.a %>", "<% $parameters %>", "<% $parameters.a.length %>", "<% $script.uri %>",
    "<% $data.uri[0] %>", "<% $output %>", "<% $secrets.a %>", "<% #$parameters.a %>", "<% /$parameters.a %>",
    "<% ^$parameters.a %>", "<% !note %>", "<% >p %>", "<%& $parameters.a %>", "<%={{ }}=%>", "<% . %>",
    "<%", "%>", "<% %>", "{{ x }}", "\t", "\n", " ", "$", "\\", "'", '"', "#", ": ", "- ",
    "<% $parameters.__proto__ %>", "<% $parameters.constructor %>", "<% $parameters.toString %>",
    "<% $parameters.hasOwnProperty %>", "<% $parameters.constructor.name %>", "<% $secrets.__proto__ %>",
    "<% $script.constructor %>", "<% $data.__proto__ %>",
    "<% #$parameters.constructor %>x<% /$parameters.constructor %>",
    "<% $parameters.__proto__.toString %>", "<% $parameters.a.constructor %>",
])


def values(depth: int = 2) -> st.SearchStrategy[Any]:
    if depth <= 0:
        return SCALARS
    inner = values(depth - 1)
    return st.one_of(
        SCALARS,
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(KEYS, st.sampled_from(["a", "b", "1"])), inner, max_size=3),
    )


def _places(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in the data (the root excluded), depth-first in document order."""
    found: list[tuple[Any, ...]] = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found.append((*path, key))
        found += _places(value, (*path, key))
    return found


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


#: Where upstream builds objects from a job's keys or iterates its lists: a swap or a rename is aimed at one of these
#: half of the time (`*` is any key or index), so each class is drawn often enough in a run of 1,500 jobs.
SHAPED = [("taskRoles",), ("parameters",), ("secrets",), ("prerequisites",), ("deployments",), ("extras",),
          ("extras", "com.microsoft.pai.runtimeplugin"), ("extras", "storages"), ("extras", "hivedScheduler"),
          ("taskRoles", "*", "resourcePerInstance", "ports"), ("taskRoles", "*", "commands"),
          ("taskRoles", "*", "completion"), ("deployments", "*", "taskRoles")]


def _matches(path: tuple[Any, ...], pattern: tuple[Any, ...]) -> bool:
    return len(path) == len(pattern) and all(p == "*" or p == k for k, p in zip(path, pattern))


@st.composite
def mutate_once(draw: st.DrawFn, data: Any) -> Any:
    places = _places(data)
    if not places:
        return data
    operation = draw(st.sampled_from(["replace", "replace", "delete", "add", "snippet", "snippet", "wrap", "swap",
                                      "rename"]))
    aimed = [p for p in places if any(_matches(p, pattern) for pattern in SHAPED)]
    if operation in ("swap", "rename") and aimed and draw(st.booleans()):
        path = draw(st.sampled_from(aimed))
    else:
        path = draw(st.sampled_from(places))
    parent, key = _parent(data, path), path[-1]
    if operation == "replace":
        parent[key] = draw(values())
    elif operation == "delete":
        del parent[key]
    elif operation == "add":
        target = parent[key] if isinstance(parent[key], dict) else parent
        if isinstance(target, dict):
            target[draw(KEYS)] = draw(values())
        else:
            target.insert(draw(st.integers(0, len(target))), draw(values()))
    elif operation == "snippet":
        value = parent[key]
        text = value if isinstance(value, str) else ""
        at = draw(st.integers(0, len(text)))
        parent[key] = text[:at] + draw(SNIPPETS) + text[at:]
    elif operation == "swap":  # a mapping written as a list, a list as a mapping
        parent[key] = _swapped(parent[key])
    elif operation == "rename":  # a key (or the name a list item gives itself) only the Object prototype has
        target = parent[key]
        name = draw(PROTOTYPE_NAMES)
        if isinstance(target, dict) and target:
            old = draw(st.sampled_from(list(target)))
            renamed = {(name if k == old else k): v for k, v in target.items()}
            target.clear()
            target.update(renamed)
        elif isinstance(target, dict) or not isinstance(target, list):
            parent[key] = name if isinstance(target, str) else {name: target}
        elif target and isinstance(target[0], dict):
            target[draw(st.integers(0, len(target) - 1))]["name"] = name
    else:  # wrap: the value one level deeper or shallower, a common indentation slip
        value = parent[key]
        parent[key] = draw(st.sampled_from([[value], {"a": value}]))
    return data


def _swapped(value: Any) -> Any:
    """A mapping as the list of its values; a list as a mapping, keyed by its items' names where they have them
    (prerequisites, deployments), else by their indexes."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        names = [item.get("name") for item in value if isinstance(item, dict)]
        if len(names) == len(value) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
            return dict(zip(names, value))
        return {str(index): item for index, item in enumerate(value)}
    return [value]


@st.composite
def mutated_jobs(draw: st.DrawFn) -> tuple[str, str]:
    """(description, YAML text) of a corpus job with one to three mutations."""
    jobs = corpus_jobs()
    name = draw(st.sampled_from([n for n, _ in jobs]))
    data = yaml.safe_load(dict(jobs)[name])
    for _ in range(draw(st.integers(1, 3))):
        data = draw(mutate_once(data))
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
    return name, text


# --- YAML-level operators -----------------------------------------------------------------------------------------

#: Scalars as written, in every radix and case, and the YAML 1.1 words YAML 1.2 (and js-yaml) read as strings.
RAW_SCALARS = st.sampled_from([
    "0X1f", "0x1F", "0O17", "0o17", "0B11", "0b11", "017", "08", "1_000", "1:30", "+12", "-0", "-0.0", "1e3", "1E3",
    ".inf", ".Inf", ".INF", "-.inf", ".iNf", ".nan", ".NaN", "~", "null", "Null", "NULL", "nUll", "true", "True",
    "TRUE", "tRue", "y", "Y", "n", "yes", "No", "on", "OFF", "2020-01-01", "2020-01-01 12:30:00", "99999999999999999999",
    "!!str 1", "!!int '7'", "!!float 1", "!!binary aGk=", "!!timestamp 2020-01-01", "'x' ", "x" * 2000,
])
#: Keys as written: complex (a flow list or mapping, stringified by js-yaml), tagged, and scalars that are no string.
RAW_KEYS = st.sampled_from([
    "[a, b]", "{x: 1}", "[1, ~, 2.0]", "!!binary aGk=", "!!str 1", "1.5", "~", "true", "0X1f", "0x1F", ".inf",
    "2020-01-01", "'quoted'", '"a\\tb"', "[a, [b]]", "k" * 1100, "!!merge <<", "&k x", "y", "off",
])
#: Where raw values and keys go: sections whose values upstream passes on as written.
FREE_FORM = [("extras",), ("parameters",), ("taskRoles", "*", "resourcePerInstance"), ("taskRoles", "*"),
             ("taskRoles", "*", "commands")]


def _free_form_places(data: Any) -> list[tuple[Any, ...]]:
    return [p for p in _places(data) if any(_matches(p, pattern) for pattern in FREE_FORM)]


@st.composite
def yaml_mutated_jobs(draw: st.DrawFn) -> tuple[str, str]:
    """(description, text) of a mutated corpus job whose text is then rewritten by one to three YAML operators."""
    name, _ = draw(mutated_jobs())
    jobs = corpus_jobs()
    data = yaml.safe_load(dict(jobs)[name])
    for _ in range(draw(st.integers(0, 2))):
        data = draw(mutate_once(data))
    raws: dict[str, str] = {}
    operators = draw(st.lists(st.sampled_from(
        ["scalar", "scalar", "key", "key", "anchor", "merge", "nesting", "duplicate", "document", "crlf", "bom",
         "blank_lines", "date_comment"]), min_size=1, max_size=3))
    for operator in operators:
        if operator in ("scalar", "key", "anchor", "merge", "nesting"):
            data = _data_operator(draw, operator, data, raws)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
    for marker, raw in raws.items():
        text = text.replace(marker, raw)
    for operator in sorted(operators, key=lambda o: o == "bom"):  # a byte-order mark opens the file
        text = _text_operator(draw, operator, text)
    return f"{name} + {'+'.join(operators)}", text


def _marker(raws: dict[str, str], raw: str) -> str:
    marker = f"__RAW{len(raws)}__"
    raws[marker] = raw
    return marker


def _data_operator(draw: st.DrawFn, operator: str, data: Any, raws: dict[str, str]) -> Any:
    places = _free_form_places(data) or _places(data)
    if not places:
        return data
    path = draw(st.sampled_from(places))
    parent, key = _parent(data, path), path[-1]
    target = parent[key]
    if operator == "scalar":
        parent[key] = _marker(raws, draw(RAW_SCALARS))
    elif operator == "key" and isinstance(target, dict):
        target[_marker(raws, draw(RAW_KEYS))] = "v"
    elif operator == "anchor":  # the same node under two keys: PyYAML writes an anchor and an alias
        mappings = [p for p in _places(data) if isinstance(_parent(data, p)[p[-1]], (dict, list))
                    and not _holds(_parent(data, p)[p[-1]], parent)]  # no node inside itself
        if mappings:
            source = draw(st.sampled_from(mappings))
            parent[key] = _parent(data, source)[source[-1]]
    elif operator == "merge" and isinstance(target, dict):  # `<<: *alias` of another mapping, across sections
        mappings = [p for p in _places(data) if isinstance(_parent(data, p)[p[-1]], dict)
                    and not _holds(_parent(data, p)[p[-1]], parent)]
        if mappings:
            source = draw(st.sampled_from(mappings))
            merged = {_marker(raws, "<<"): _parent(data, source)[source[-1]]}
            merged.update(target)
            parent[key] = merged
    elif operator == "nesting":
        depth = draw(st.sampled_from([2, 20, 99, 101, 300, 1000, 1100]))
        opening, closing = draw(st.sampled_from([("[", "]"), ("{a: ", "}")]))
        parent[key] = _marker(raws, opening * depth + "x" + closing * depth)
    return data


def _holds(node: Any, wanted: Any) -> bool:
    """Whether `wanted` (by identity) is `node` or inside it: sharing it there would make a cycle."""
    pending, seen = [node], set()
    while pending:
        item = pending.pop()
        if item is wanted:
            return True
        if id(item) in seen:
            continue
        seen.add(id(item))
        pending.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
    return False


def _text_operator(draw: st.DrawFn, operator: str, text: str) -> str:
    lines = text.split("\n")
    if operator == "duplicate":  # a top-level line written twice (js-yaml and paictl refuse duplicate keys)
        top = [line for line in lines if line and not line.startswith((" ", "-"))]
        return text + draw(st.sampled_from(top)) + "\n" if top else text
    if operator == "document":
        return draw(st.sampled_from(["---\n" + text, text + "---\nname: second\n", text + "...\n",
                                     "%YAML 1.2\n---\n" + text]))
    if operator == "crlf":
        return text.replace("\n", "\r\n")
    if operator == "bom":
        return "\ufeff" + text
    if operator == "blank_lines":
        at = draw(st.integers(1, max(1, len(lines) - 1)))
        blank = draw(st.sampled_from(["", "  ", "\t", " \t ", "\t# note", "   # note"]))
        return "\n".join(lines[:at] + [blank] + lines[at:])
    if operator == "date_comment":  # sends the file down the located loader: the meaning must not change
        return "# written 2020-01-01\n" + text
    return text
