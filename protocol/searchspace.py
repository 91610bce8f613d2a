"""A sweep's search space, in NNI's search-space format, read and checked like a job: located diagnostics.

NNI's `search_space.json` maps each parameter to `{"_type": ..., "_value": [...]}`; paictl reads the same files (JSON
or YAML, through the job's own located loader and its limits), plus explicit rows for the list strategy
(`{"_rows": [{name: value, ...}, ...]}`), plus `--space key=v1,v2` on the command line (a choice). Against the job
it is checked as a submission would be: every key must be one of the job's `parameters` (did-you-mean otherwise,
E851), a parameter no command uses is a warning (W852, decided by the caller, which renders the commands), and
every value the space can give must be of the kind the job's default is (E853: a number, a string, a boolean, a
list or a mapping; integers and reals are one kind, as JavaScript and so OpenPAI read `1.0` as `1`): a sweep that
would only fail at run time, trial after trial, is refused before any trial is compiled. A value written as an
integer in the space stays one (`randint`, and quantized types whose bounds and q are integers).

The types and their arguments are NNI's (`nni/docs/en_US/Tutorial/SearchSpaceSpec`): choice (any values), randint
[lower, upper) integers, uniform [low, high], quniform [low, high, q], loguniform [low, high], qloguniform
[low, high, q], normal [mu, sigma], qnormal [mu, sigma, q], lognormal [mu, sigma], qlognormal [mu, sigma, q].
Sampling them is `paictl.compiler.trials`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, Mapping, Optional

from .codes import finding
from .diagnostics import Anchor, Diagnostic, Finding, pointer_of

TYPES = ("choice", "randint", "uniform", "quniform", "loguniform", "qloguniform", "normal", "qnormal", "lognormal",
         "qlognormal")
QUANTIZED = frozenset({"quniform", "qloguniform", "qnormal", "qlognormal"})
#: What a grid can enumerate: finite sets. (NNI's GridSearch tuner, since v2.6, also halves continuous ranges epoch
#: after epoch without end, nni/algorithms/hpo/gridsearch_tuner.py; a sweep of jobs needs a finite plan: E855.)
GRID_TYPES = frozenset({"choice", "randint", "quniform", "qloguniform"})
STRATEGIES = ("grid", "random", "list")
ROWS_KEY = "_rows"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Dimension:
    """One parameter's distribution: `kind` is NNI's `_type`, `arguments` its `_value`."""

    name: str
    kind: str
    arguments: tuple[Any, ...]

    @property
    def integral(self) -> bool:
        """Whether every value it gives is an integer: randint, quantized types whose bounds and q are written
        as integers (NNI gives floats there; paictl gives `32`, not `32.0`, to a command expecting an integer)."""
        if self.kind == "randint":
            return True
        if self.kind in ("qnormal", "qlognormal"):  # round(x / q) * q, unclipped: only q matters
            return _is_int(self.arguments[2])
        return self.kind in QUANTIZED and all(_is_int(a) for a in self.arguments)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchSpace:
    """A checked space: `dimensions` (grid and random), or `rows` (list), never both. `path` names its source."""

    path: str
    dimensions: tuple[Dimension, ...] = ()
    rows: Optional[tuple[dict[str, Any], ...]] = None

    @property
    def names(self) -> tuple[str, ...]:
        if self.rows is not None:
            return tuple(dict.fromkeys(key for row in self.rows for key in row))
        return tuple(d.name for d in self.dimensions)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def space_from_data(data: Mapping[str, Any], path: str) -> SearchSpace:
    """The model of data that passed `space_findings` without errors."""
    if ROWS_KEY in data:
        return SearchSpace(path=path, rows=tuple(dict(row) for row in data[ROWS_KEY]))
    return SearchSpace(path=path, dimensions=tuple(
        Dimension(name=name, kind=spec["_type"], arguments=tuple(spec["_value"])) for name, spec in data.items()))


def choices_data(pairs: Iterable[tuple[str, list[Any]]]) -> dict[str, Any]:
    """`--space key=v1,v2` as the space data a file would hold: a choice per key."""
    return {key: {"_type": "choice", "_value": list(values)} for key, values in pairs}


# ------------------------------------------------------------------------------------------------------------------
# Checks

def space_findings(data: Any, *, parameters: Optional[Mapping[str, Any]], used: Optional[frozenset[str]],
                   strategy: Optional[str]) -> list[Finding]:
    """Every problem of a space against a job whose `parameters` are given (None: no job known, e.g. an editor
    with the space file alone: the file's own problems only); `used` is the set of parameters the commands use
    (None: unknown, no W852); `strategy` the one asked for (None: the space's own)."""
    from .schema_check import check_schema

    schema = check_schema(data, "search-space")  # its root called "the search space" (schema_check.ROOTS)
    if any(f.severity.value == "error" for f in schema):
        return schema
    findings: list[Finding] = list(schema)
    if ROWS_KEY in data:
        if strategy not in (None, "list"):
            findings.append(finding("E855", pointer_of(ROWS_KEY), f"explicit rows are the list strategy's; "
                                    f"--strategy {strategy} needs distributions", hint="use --strategy list",
                                    anchor=Anchor.KEY))
        seen: set[str] = set()
        for index, row in enumerate(data[ROWS_KEY]):
            for name, value in row.items():
                pointer = pointer_of(ROWS_KEY, index, name)
                if _name_findings(name, pointer, parameters, used, report_unused=name not in seen, out=findings):
                    findings += _fit(name, [(pointer, value)], parameters)
                seen.add(name)
        return findings
    if strategy == "list":
        findings.append(finding("E855", "", "--strategy list takes explicit rows (`_rows: [{name: value}, ...]`), "
                                "not distributions", hint="use --strategy grid or random"))
    for name, spec in data.items():
        known = _name_findings(name, pointer_of(name), parameters, used, report_unused=True, out=findings)
        if parameters is not None and not known:
            continue
        kind, arguments = spec["_type"], spec["_value"]
        if strategy in (None, "grid") and kind not in GRID_TYPES:  # grid is the default
            findings.append(finding("E855", pointer_of(name, "_type"),
                                    f"grid cannot enumerate {name!r}: {kind} has no finite set of values",
                                    hint="use --strategy random, or choice, randint, quniform or qloguniform"))
        problem = _range_problem(kind, arguments)
        if problem is not None:
            findings.append(finding("E854", pointer_of(name, "_value"), f"{name}: {problem}"))
            continue
        if not known:
            continue
        if kind == "choice":
            findings += _fit(name, [(pointer_of(name, "_value", i), v) for i, v in enumerate(arguments)], parameters)
        else:
            findings += _fit_distribution(name, kind, arguments, parameters)
    return findings


def _name_findings(name: str, pointer: str, parameters: Optional[Mapping[str, Any]],
                   used: Optional[frozenset[str]], *, report_unused: bool, out: list[Finding]) -> bool:
    """E851 or W852 for a name (appended to `out`); whether the name's values can be checked against the job's
    default (it is one of the job's parameters)."""
    from .suggest import did_you_mean

    if parameters is None:
        return False
    if name not in parameters:
        guess = did_you_mean(name, parameters)
        defined = ", ".join(map(str, parameters)) or "none"
        out.append(finding("E851", pointer, f"{name!r} is not a parameter of the job (its parameters: {defined})",
                           hint=f"did you mean {guess!r}?" if guess else "add it to the job's `parameters`",
                           anchor=Anchor.KEY))
        return False
    if report_unused and used is not None and name not in used:
        out.append(finding("W852", pointer, f"parameter {name!r} is never used by the job's commands: every trial "
                           "runs the same commands", hint=f"use `<% $parameters.{name} %>` in a command",
                           anchor=Anchor.KEY))
    return True


def _range_problem(kind: str, arguments: list[Any]) -> Optional[str]:
    if kind == "choice":
        return None
    if not all(math.isfinite(a) for a in arguments):
        return "the arguments must be finite numbers"
    if kind in ("randint", "uniform", "quniform", "loguniform", "qloguniform"):
        low, high = arguments[0], arguments[1]
        if kind == "randint" and not low < high:
            return f"randint [{low}, {high}) holds no integer: lower must be below upper"
        if kind != "randint" and not low < high:
            return f"{kind} needs low < high, not [{low}, {high}]"
        if kind in ("loguniform", "qloguniform") and low <= 0:
            return f"{kind} samples on a log scale: low must be above 0, not {low}"
    elif arguments[1] <= 0:
        return f"{kind} needs sigma > 0, not {arguments[1]}"
    if kind in QUANTIZED and arguments[2] <= 0:
        return f"{kind} needs q > 0, not {arguments[2]}"
    return _overflow_problem(kind, arguments)


#: How many sigmas from mu a normal draw can land: CPython's `random.gauss` (Box-Muller on a 53-bit `random()`)
#: gives at most sqrt(-2 ln 2**-53) = 8.58; 10 leaves room.
NORMAL_REACH = 10.0


def _overflow_problem(kind: str, arguments: list[Any]) -> Optional[str]:
    """Why a draw could overflow a float (None if it cannot): a uniform across more than the largest float, a
    normal's mu +- 10 sigma, exp() of a lognormal beyond about 709.78, or a value over q beyond the largest float.
    NNI's samplers overflow there too (numpy refuses the uniform, math.exp raises); a trial given `Infinity` or a
    sweep that fails halfway is worse than a refusal before any trial is compiled."""
    shown = f"{kind} [{', '.join(map(str, arguments))}]"
    if kind in ("lognormal", "qlognormal") and arguments[0] + NORMAL_REACH * arguments[1] > math.log(_FLOAT_MAX):
        return (f"{shown} can give values beyond the largest float: mu + {NORMAL_REACH:g} sigma must stay below "
                f"{math.log(_FLOAT_MAX):.2f} (exp overflows)")
    if kind in ("uniform", "quniform"):
        extremes = (arguments[0], arguments[1], arguments[1] - arguments[0])
    elif kind in ("loguniform", "qloguniform"):
        extremes = (arguments[0], arguments[1])
    elif kind in ("normal", "qnormal"):
        extremes = (arguments[0] - NORMAL_REACH * arguments[1], arguments[0] + NORMAL_REACH * arguments[1])
    elif kind in ("lognormal", "qlognormal"):
        extremes = (math.exp(arguments[0] + NORMAL_REACH * arguments[1]),)
    else:  # randint: integers, exact
        return None
    if not all(math.isfinite(x) for x in extremes):
        return f"{shown} can give values beyond the largest float ({_FLOAT_MAX:.3g})"
    if kind in QUANTIZED and not all(math.isfinite(x / arguments[2]) for x in extremes):
        return f"{shown}: q is too small for the range, value / q overflows a float"
    return None


_FLOAT_MAX = 1.7976931348623157e308


#: The kind of a job's default, as E853 names it, and whether a value is of that kind.
def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if _is_int(value):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return "null"


def _fits(value: Any, default: Any) -> bool:
    wanted = _kind(default)
    if wanted == "null":
        return True  # a parameter declared without a value takes anything
    if wanted in ("number", "integer"):  # JavaScript has one number type: OpenPAI's `1.0` is `1`
        return _is_number(value)
    return _kind(value) == wanted


def _fit(name: str, values: list[tuple[str, Any]], parameters: Mapping[str, Any]) -> list[Finding]:
    default = parameters[name]
    for pointer, value in values:
        if isinstance(value, dict) and "_name" in value:
            return [finding("E853", pointer, f"{name}: nested search spaces (a choice of `_name` mappings) are not "
                            "supported: a job parameter takes one value", hint="give plain values")]
        if not _fits(value, default):
            return [finding("E853", pointer, f"{name}: {_kind(value)} {_shown(value)} does not fit the job's "
                            f"default {_shown(default)}, {_article(_kind(default))}",
                            hint=f"give {_article(_kind(default))}, or change the job's default")]
    return []


def _fit_distribution(name: str, kind: str, arguments: list[Any], parameters: Mapping[str, Any]) -> list[Finding]:
    default = parameters[name]
    wanted = _kind(default)
    if wanted in ("null", "number", "integer"):
        return []
    gives = "integers" if Dimension(name=name, kind=kind, arguments=tuple(arguments)).integral else "numbers"
    return [finding("E853", pointer_of(name, "_type"), f"{name}: {kind} gives {gives}; the job's default "
                    f"{_shown(default)} is {_article(wanted)}",
                    hint="use choice with values of that kind, or change the job's default")]


def _article(kind: str) -> str:
    return {"integer": "an integer", "mapping": "a mapping", "list": "a list", "null": "null"}.get(kind, f"a {kind}")


def _shown(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------------------------------------------------------------
# Reading

def load_space_document(text: str, path: str):
    """The located document of a space file; raises DocumentError as the job loader does. JSON indented with tabs
    (valid JSON, not valid YAML indentation) is read with each tab as one space: outside strings a tab is only
    whitespace in JSON, and one character for one keeps every position."""
    from .loading import Document, DocumentError, load_located

    try:
        return load_located(text, path, kind="search-space")
    except DocumentError:
        if "\t" not in text or not text.lstrip().startswith("{") or not _is_json(text):
            raise
    document = load_located(text.replace("\t", " "), path, kind="search-space")
    return Document(path=path, text=text, data=document.data, positions=document.positions)


def _is_json(text: str) -> bool:
    import json

    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def check_space_text(text: str, path: str, *, parameters: Optional[Mapping[str, Any]],
                     used: Optional[frozenset[str]], strategy: Optional[str]
                     ) -> tuple[Optional[SearchSpace], list[Diagnostic]]:
    """The space (None when it has errors) and every diagnostic, located in `path`, in the file's order."""
    from .loading import DocumentError
    from .validate import locate

    try:
        document = load_space_document(text, path)
    except DocumentError as error:
        return None, list(error.diagnostics)
    diagnostics = sorted((locate(f, document) for f in space_findings(document.data, parameters=parameters,
                                                                        used=used, strategy=strategy)),
                         key=lambda d: (d.line or 0, d.column or 0, d.code))
    if any(d.is_error for d in diagnostics):
        return None, diagnostics
    return space_from_data(document.data, path), diagnostics


def check_space_data(data: Mapping[str, Any], source: str, *, parameters: Mapping[str, Any],
                     used: Optional[frozenset[str]], strategy: Optional[str]
                     ) -> tuple[Optional[SearchSpace], list[Diagnostic]]:
    """A space given as data (`--space key=v1,v2`, the Python API): diagnostics name `source` and the pointer."""
    findings = space_findings(dict(data), parameters=parameters, used=used, strategy=strategy)
    diagnostics = [Diagnostic(code=f.code, severity=f.severity, message=f.message, file=source, pointer=f.pointer,
                              hint=f.hint) for f in findings]
    if any(d.is_error for d in diagnostics):
        return None, diagnostics
    return space_from_data(data, source), diagnostics
