"""paictl against OpenPAI's unchanged rest-server code: template names, as mustache.js's Context.lookup finds them
in JavaScript values and as JavaScript prints what it finds (issue 13's template-name class).

The expected values are upstream's behaviour, obtained as tests/test_openpai_alignment.py describes (the
rest-server's own code under Node 20). Apart from that file because these tests hold the JavaScript value model
(protocol/jsvalues.py, rendered through compiler/render.py) to upstream name by name, plus two property tests that
no Python object is ever reached; the other classes there compile whole jobs.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings, strategies as st

from paictl.compiler.render import render
from paictl.errors import InvalidJobError
from paictl.protocol.loading import load_located
from paictl.protocol.templates import TemplateError
from paictl.protocol.validate import validate_text
from paictl.targets.compiled import compile_job
from test_openpai_alignment import BASE

PARAMETERS = """\
x: hello
n: 42
f: 1.5
t: true
nul: null
arr: [1, two, null, {k: 1}]
obj: {a: 1}
bad: {toString: s}
u: "h\\u00e9\\U0001F600"
d: 2020-01-01
constructor: own
"""
THROWS = "throws"


@pytest.mark.parametrize("name, expected", [
    ("$parameters.x.length", "5"), ("$parameters.x.0", "h"), ("$parameters.x.5", "<% $parameters.x.5 %>"),
    ("$parameters.x.1.0", "e"), ("$parameters.u.length", "4"), ("$parameters.arr.length", "4"),
    ("$parameters.arr.1", "two"), ("$parameters.arr[3].k", "1"), ("$parameters.arr", "1,two,,[object Object]"),
    ("$parameters.obj", "[object Object]"), ("$parameters.f", "1.5"),
    ("$parameters.constructor", "own"),  # an own key wins over the prototype's
    ("$parameters.obj.constructor", "[object Object]"), ("$parameters.obj.constructor.name", "Object"),
    ("$parameters.x.constructor", ""), ("$parameters.x.constructor.name", "String"),
    ("$parameters.n.constructor", "0"), ("$parameters.t.constructor", "false"), ("$parameters.arr.constructor", ""),
    ("$parameters.__proto__", "[object Object]"), ("$parameters.x.__proto__", ""), ("$parameters.n.__proto__", "0"),
    ("$parameters.x.__proto__.__proto__", "[object Object]"), ("$parameters.toString", "[object Object]"),
    ("$parameters.hasOwnProperty", "false"), ("$parameters.valueOf", "[object Object]"),
    ("$parameters.x.toUpperCase", "[OBJECT OBJECT]"), ("$parameters.x.charAt", "["),
    ("$parameters.x.bold", "<b>[object Object]</b>"), ("$parameters.x.localeCompare", "-1"),
    ("$parameters.x.matchAll", "[object RegExp String Iterator]"), ("$parameters.arr.join", ""),
    ("$parameters.arr.push", "0"), ("$parameters.arr.pop", "<% $parameters.arr.pop %>"),
    ("$parameters.arr.entries", "[object Array Iterator]"), ("$parameters.arr.toString", "[object Object]"),
    ("$parameters.x.constructor.constructor", "function anonymous(\n) {\n\n}"),
    ("$parameters.x.trimLeft.name", "trimStart"), ("$parameters.x.charAt.length", "1"),
    ("$parameters.x.constructor.length", "1"), ("$parameters.x.constructor.prototype", ""),
    ("$parameters.x.constructor.__proto__", "<% $parameters.x.constructor.__proto__ %>"),
    ("$parameters.x.__proto__.constructor.name", "String"), ("$parameters.arr.__proto__.length", "0"),
    ("$parameters.d", "Wed Jan 01 2020 00:00:00 GMT+0000 (Coordinated Universal Time)"),
    ("$parameters.d.length", "<% $parameters.d.length %>"),
    ("__proto__", "[object Object]"), ("toString", "[object Object]"), ("hasOwnProperty", "false"),
    (".", "[object Object]"), ("$parameters.missing", "<% $parameters.missing %>"),
    ("$parameters.nul", "<% $parameters.nul %>"), ("$parameters.nul.x", "<% $parameters.nul.x %>"),
    ("$parameters.x.__class__", "<% $parameters.x.__class__ %>"), ("$parameters.__class__",
                                                                     "<% $parameters.__class__ %>"),
    # upstream's render throws on these: the submission fails
    ("$parameters.bad", THROWS), ("$parameters.arr.map", THROWS), ("$parameters.n.toFixed", THROWS),
    ("$parameters.x.toString", THROWS), ("$parameters.t.valueOf", THROWS), ("$parameters.d.getTime", THROWS),
    ("$parameters.x.constructor.caller", THROWS), ("$parameters.obj.__defineGetter__", THROWS),
])
def test_a_name_renders_as_mustache_js_renders_it(name, expected):
    params = load_located(PARAMETERS, "p.yaml").data
    view = {"$parameters": params, "$script": None, "$output": None, "$data": None}
    if expected is THROWS:
        with pytest.raises(TemplateError, match="throws|cannot be converted|may not be accessed"):
            render(f"<% {name} %>", view)
    else:
        assert render(f"<% {name} %>", view) == expected


@pytest.mark.parametrize("command", ["echo <% $parameters.x.toString %>", "echo <% $parameters.p.constructor.keys %>",
                                     "echo <% $parameters.x.constructor.fromCharCode %>"])
def test_a_name_upstream_throws_on_or_paictl_does_not_model_is_a_located_refusal(command):
    text = BASE.replace("commands: [echo hi]", f"commands: ['{command}']") + "parameters: {x: a, p: {}}\n"
    # upstream's validate passes and its render fails: paictl's validate refuses it as compile does
    assert {d.code for d in validate_text(text, "job.yaml").errors} == {"E810"}
    with pytest.raises(InvalidJobError) as caught:
        compile_job(text.encode(), target="framework", profile="openpai", name="job.yaml")
    [error] = caught.value.diagnostics
    assert error.code == "E810" and error.line == 11 and error.end_column is not None


_DATA = {"a": {"b": [1, {"c": "x"}], "": "empty"}, "s": "text", "n": 3, "l": [True, None, 2.5]}
_SEGMENTS = st.sampled_from(["a", "b", "c", "0", "1", "2", "", "s", "n", "l", "length", "constructor", "__proto__",
                             "toString", "name", "__class__", "__globals__", "__dict__", "mro", "__init__",
                             "format", "join", "keys", "items", "prototype", "call", "apply"])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(_SEGMENTS, min_size=1, max_size=5))
def test_any_name_renders_from_the_data_and_javascript_tables_only(path):
    """Whatever the name, the output comes from the job's data or the JavaScript model: no Python object, method
    or repr is ever reached (`__class__`, `__globals__`, `format`, `items` are not found), or the render is
    refused where JavaScript throws."""
    name = ".".join(["$parameters", *path])
    try:
        out = render(f"<% {name} %>", {"$parameters": _DATA})
    except TemplateError:
        return
    assert "<class" not in out and "<bound" not in out and "built-in" not in out and "object at 0x" not in out
    if any(s.startswith("__") and s != "__proto__" for s in path) or path[0] in ("items", "format", "keys", "mro"):
        assert out == f"<% {name} %>"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(string.ascii_letters, max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.text(string.ascii_lowercase, min_size=1, max_size=2), inner, max_size=3), max_leaves=8),
       st.data())
def test_a_path_of_own_keys_and_indexes_renders_the_value_there(value, data):
    """JavaScript finds own properties first: a name made of the data's own keys and indexes is its value."""
    from paictl.protocol.jsstring import js_string

    path: list[str] = []
    here = {"v": value}
    node = here["v"]
    path.append("v")
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
        path.append(str(key))
        node = node[key]
    name = ".".join(["$parameters", *path])
    expected = f"<% {name} %>" if node is None else js_string(node)
    assert render(f"<% {name} %>", {"$parameters": here}) == expected
