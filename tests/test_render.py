"""Entrypoint rendering: byte-for-byte what OpenPAI's rest-server computes, and never more than text substitution.

Expected strings below were checked against mustache.js 2.3.2 driven by the rest-server's render loop.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from conftest import OPENPAI, corpus_files, needs_corpus
from paictl.protocol.jsstring import js_number, js_string
from paictl.compiler.render import output_tokens, render, render_entrypoint, render_with_secrets
from paictl.protocol import job_from_data, load_job, load_job_text
from paictl.protocol.templates import TemplateError


def make_job(commands: list[str], parameters: dict[str, Any] | None = None, **extra: Any):
    data: dict[str, Any] = {
        "protocolVersion": 2, "name": "t", "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "busybox"}, *extra.pop("prerequisites", [])],
        "taskRoles": {"main": {"dockerImage": "img", "resourcePerInstance": {"cpu": 1, "memoryMB": 512, "gpu": 0},
                               "commands": commands, **extra.pop("role", {})}},
        **extra,
    }
    if parameters is not None:
        data["parameters"] = parameters
    return job_from_data(data)


def entry(commands: list[str], parameters: dict[str, Any] | None = None, **extra: Any) -> str:
    return render_entrypoint(make_job(commands, parameters, **extra), "main")


# ---------------------------------------------------------------------------------------------------------------
# The upstream corpus


VALID = corpus_files("valid")


@needs_corpus
def test_every_valid_corpus_file_is_in_the_upstream_results():
    results = json.loads((OPENPAI / "UPSTREAM_RESULTS.json").read_text(encoding="utf-8"))
    assert VALID and all(results[path.name]["ok"] for path in VALID)


@needs_corpus
@pytest.mark.parametrize("path", VALID, ids=[p.name for p in VALID])
def test_entrypoints_match_upstream_byte_for_byte(path):
    expected = json.loads((OPENPAI / "UPSTREAM_RESULTS.json").read_text(encoding="utf-8"))[path.name]["entrypoints"]
    job = load_job(path)
    assert sorted(expected) == sorted(role.name for role in job.task_roles)
    for role in job.task_roles:
        assert render_entrypoint(job, role.name) == expected[role.name], role.name


# ---------------------------------------------------------------------------------------------------------------
# Commands, deployments, trimming


def test_commands_are_trimmed_joined_and_the_result_trimmed():
    assert entry(["  echo a  ", "\techo b\n", "", "\u00a0\ufeffecho c\u3000"]) == "echo a\necho b\n\necho c"


def test_trim_is_javascripts_not_pythons():
    # U+001C..U+001F and U+0085 are Python whitespace but not JavaScript's.
    assert entry(["\x1cecho\x85"]) == "\x1cecho\x85"


def test_default_deployment_wraps_the_commands():
    job = make_job(["train"], deployments=[
        {"name": "prod", "taskRoles": {"main": {"preCommands": [" pre1 ", "pre2"], "postCommands": ["post "]}}},
        {"name": "other", "taskRoles": {"main": {"preCommands": ["never"]}}},
    ], defaults={"deployment": "prod"})
    assert render_entrypoint(job, "main") == "pre1\npre2\ntrain\npost"


def test_deployment_without_this_role_or_not_chosen_changes_nothing():
    deployments = [{"name": "prod", "taskRoles": {"other": {"preCommands": ["never"]}}}]
    assert entry(["train"], deployments=deployments, defaults={"deployment": "prod"}) == "train"
    assert entry(["train"], deployments=[{"name": "prod", "taskRoles": {"main": {"preCommands": ["x"]}}}]) == "train"


def test_deployment_commands_are_rendered_too():
    job = make_job(["train"], {"v": 3}, deployments=[
        {"name": "d", "taskRoles": {"main": {"preCommands": ["pip install x==<% $parameters.v %>"]}}}],
        defaults={"deployment": "d"})
    assert render_entrypoint(job, "main") == "pip install x==3\ntrain"


def test_unknown_role_is_a_key_error():
    with pytest.raises(KeyError):
        render_entrypoint(make_job(["x"]), "nope")


# ---------------------------------------------------------------------------------------------------------------
# Names


def test_names_render_with_or_without_spaces():
    assert entry(["--lr <%$parameters.lr%> --n=<%  $parameters.n  %>"], {"lr": 0.01, "n": 4}) == "--lr 0.01 --n=4"


def test_nested_parameters_and_indexes():
    params = {"a": {"b": {"c": "deep"}}, "l": [10, [20, 30]]}
    assert entry(["<% $parameters.a.b.c %> <% $parameters.l[1][0] %> <% $parameters.l.1.1 %>"], params) == \
        "deep 20 30"


def test_missing_names_are_written_back_with_normalised_spacing():
    assert entry(["a <%$parameters.missing%> b <%   $parameters.l[5]   %> c <% $parameters.l[0].x %>"],
                 {"l": [1]}) == "a <% $parameters.missing %> b <% $parameters.l.5 %> c <% $parameters.l.0.x %>"


def test_null_values_are_written_back():
    assert entry(["<% $parameters.n %>|<% $parameters.n.deeper %>"], {"n": None}) == \
        "<% $parameters.n %>|<% $parameters.n.deeper %>"


def test_secrets_are_never_rendered_in_commands():
    job = make_job(["echo <% $secrets.token %>"], secrets={"token": "s3cret"})
    assert render_entrypoint(job, "main") == "echo <% $secrets.token %>"


def test_list_index_must_be_canonical():
    assert entry(["<% $parameters.l.01 %> <% $parameters.l.-1 %>"], {"l": [1, 2]}) == \
        "<% $parameters.l.01 %> <% $parameters.l.-1 %>"


def test_index_rewrite_is_ascii_only_like_javascript():
    assert entry(["<% $parameters.l[\u0661] %>"], {"l": [1, 2]}) == "<% $parameters.l[\u0661] %>"


def test_role_prerequisites_are_selected_by_name_and_type():
    prerequisites = [
        {"name": "ds", "type": "data", "uri": ["hdfs://a", "hdfs://b"], "version": 2},
        {"name": "ds", "type": "output", "uri": "hdfs://out"},
        {"name": "code", "type": "script", "uri": "https://git/x", "contributor": "me"},
        {"name": "other", "type": "data", "uri": ["never"]},
    ]
    got = entry(["<% $data.name %> <% $data.uri[1] %> <% $data.uri %> <% $data.version %> <% $output.uri %> "
                 "<% $script.contributor %>"], prerequisites=prerequisites,
                role={"data": "ds", "output": "ds", "script": "code"})
    assert got == "ds hdfs://b hdfs://a,hdfs://b 2 hdfs://out me"


def test_unselected_roots_stay_literal():
    assert entry(["<% $data.uri %> <% $script.name %>"]) == "<% $data.uri %> <% $script.name %>"


def test_a_role_without_the_field_selects_the_prerequisite_named_undefined():
    """Upstream renders with `prerequisites.script[role.script]`: an absent field is `undefined`, a key JavaScript
    writes as the text "undefined" (the role that names its own data keeps it)."""
    prerequisites = [{"name": "undefined", "type": "script", "uri": "s"},
                     {"name": "undefined", "type": "data", "uri": ["d"]}, {"name": "mine", "type": "data", "uri": ["m"]}]
    assert entry(["<% $script.uri %> <% $data.uri[0] %> <% $output.uri %>"], prerequisites=prerequisites) == \
        "s d <% $output.uri %>"
    assert entry(["<% $data.uri[0] %>"], prerequisites=prerequisites, role={"data": "mine"}) == "m"


def test_a_binary_value_counts_and_indexes_its_bytes():
    """A !!binary value is a Node Buffer: `.length` is its byte count, `.0` a byte's number (it prints as text)."""
    job = load_job_text("protocolVersion: 2\nname: t\ntype: job\nparameters: {b: !!binary w6k=}\nprerequisites:\n"
                        "  - {name: i, type: dockerimage, uri: x}\ntaskRoles:\n  m:\n    dockerImage: i\n"
                        "    resourcePerInstance: {cpu: 1, memoryMB: 1, gpu: 0}\n"
                        "    commands: ['<% $parameters.b %> <% $parameters.b.length %> <% $parameters.b.1 %> "
                        "<% $parameters.b.2 %>']\n")
    assert render_entrypoint(job, "m") == "\u00e9 2 169 <% $parameters.b.2 %>"


def test_whole_objects_print_as_javascript_does():
    assert entry(["<% $parameters.o %> <% $parameters %> <% . %>"], {"o": {"k": 1}}) == \
        "[object Object] [object Object] [object Object]"


def test_bare_parameters_root_without_parameters_stays_literal():
    assert entry(["<% $parameters %>"]) == "<% $parameters %>"


# ---------------------------------------------------------------------------------------------------------------
# What the renderer drops or leaves alone


def test_values_are_not_html_escaped():
    assert entry(["echo '<% $parameters.s %>'"], {"s": "a<b&\"c'>"}) == "echo 'a<b&\"c'>'"


def test_sections_are_dropped_with_their_content():
    assert entry(["a <%# $parameters.t %>inside <% $parameters.t %><%/ $parameters.t %>b",
                  "<%^ $parameters.f %>never<%/ $parameters.f %>c"], {"t": True, "f": False}) == "a b\nc"


def test_standalone_tag_lines_vanish_like_in_mustache():
    text = "a\n  <%# $parameters.t %>  \nb\n<%/ $parameters.t %>\nc\n<%! note %>\nd\n <%& $parameters.s %>\ne"
    assert render(text, {"$parameters": {"t": True, "s": "S"}}) == "a\nc\nd\n \ne"


def test_unescaped_comment_and_partial_tags_are_dropped():
    assert entry(["1<%& $parameters.s %>2<%{ $parameters.s }%>3<%! c %>4<%> p %>5"], {"s": "S"}) == "12345"


def test_curly_braces_are_untouched():
    assert entry(["echo {{ $parameters.s }} ${HOME} {%raw%}"], {"s": "S"}) == "echo {{ $parameters.s }} ${HOME} {%raw%}"


def test_delimiter_change_is_followed_as_mustache_does():
    assert entry(["<%={{ }}=%> {{ $parameters.s }} <% $parameters.s %>"], {"s": "S"}) == "S <% $parameters.s %>"


def test_unclosed_tag_raises_like_mustache():
    with pytest.raises(TemplateError):
        entry(["echo <% $parameters.s"], {"s": 1})


def test_output_tokens_are_text_and_names_only():
    tokens = output_tokens("a<%# s %>x<%/ s %><% n %>b")
    assert tokens[0] == "a" and tokens[1].name == "n" and tokens[2] == "b" and len(tokens) == 3


# ---------------------------------------------------------------------------------------------------------------
# JavaScript String()


@pytest.mark.parametrize(("value", "expected"), [
    (1.0, "1"), (0.1, "0.1"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (-0.0, "0"), (1e-7, "1e-7"),
    (1e-6, "0.000001"), (123456789.125, "123456789.125"), (0.1 + 0.2, "0.30000000000000004"),
    (1.5e300, "1.5e+300"), (5e-324, "5e-324"), (-2.5, "-2.5"), (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"), (float("nan"), "NaN"), (12345678901234567890, "12345678901234567000"),
    (2**53 + 1, "9007199254740992"), (10**21, "1e+21"), (-7, "-7"), (0, "0"), (10**400, "Infinity"),
])
def test_numbers_print_as_javascript(value, expected):
    assert js_number(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (True, "true"), (False, "false"), ("s", "s"),
    ([1, [2.0, [None, "x"]], {"a": 1}, True], "1,2,,x,[object Object],true"),
    ([], ""), ([None], ""), ({}, "[object Object]"), ((1, 2), "1,2"),
])
def test_values_print_as_javascript(value, expected):
    assert js_string(value) == expected


def test_cyclic_list_prints_empty_where_it_recurses():
    cycle: list[Any] = [1]
    cycle.append(cycle)
    assert js_string(cycle) == "1,"


def test_yaml_values_reach_the_command_as_javascript_prints_them():
    job = load_job_text("""\
protocolVersion: 2
name: t
type: job
parameters: {lr: 1.0, tiny: 1.0e-7, flag: true, big: 12345678901234567890, list: [1, 2.50, x], zero: -0.0}
prerequisites: [{name: img, type: dockerimage, uri: busybox}]
taskRoles:
  main:
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands:
      - run <% $parameters.lr %> <% $parameters.tiny %> <% $parameters.flag %> <% $parameters.big %>
      - run <% $parameters.list %> <% $parameters.zero %>
""")
    assert render_entrypoint(job, "main") == "run 1 1e-7 true 12345678901234567000\nrun 1,2.5,x 0"


# ---------------------------------------------------------------------------------------------------------------
# Parameter override and registry credentials


def test_parameter_override_wins_per_top_level_key():
    job = make_job(["<% $parameters.a %> <% $parameters.b.x %> <% $parameters.b.y %> <% $parameters.c %>"],
                   {"a": 1, "b": {"x": 1, "y": 2}})
    assert render_entrypoint(job, "main", {"b": {"x": 9}, "c": "new"}) == "1 9 <% $parameters.b.y %> new"
    assert render_entrypoint(job, "main") == "1 1 2 <% $parameters.c %>"  # the job itself is untouched


def test_override_accepts_read_only_mappings_and_tuples():
    from types import MappingProxyType

    job = make_job(["<% $parameters.m.k %> <% $parameters.t[1] %>"])
    assert render_entrypoint(job, "main", MappingProxyType({"m": MappingProxyType({"k": "v"}), "t": (1, 2)})) == "v 2"


def test_secrets_render_in_registry_credentials_only_with_secrets():
    secrets = {"pw": "p@ss<&>", "list": ["a", "b"]}
    assert render_with_secrets("<% $secrets.pw %>", secrets) == "p@ss<&>"
    assert render_with_secrets(" x<% $secrets.list[1] %> ", secrets) == " xb "
    assert render_with_secrets("<% $parameters.a %><% $secrets.nope %>", secrets) == \
        "<% $parameters.a %><% $secrets.nope %>"


# ---------------------------------------------------------------------------------------------------------------
# Injection: jinja syntax, Python attributes


PAYLOADS = [
    "{{ ''.__class__ }}", "{{ ''.__class__.__mro__[1].__subclasses__() }}", "{% for x in y %}{{ x }}{% endfor %}",
    "{# c #}", "<%= {{ }} =%>", "%> <%", "{%- raw -%}", "\ue000{%", "<% t[0] %>", "<% n(0) %>",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_jinja_syntax_in_parameter_values_stays_text(payload):
    assert entry(["echo <% $parameters.p %>"], {"p": payload}) == "echo " + payload


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if "<%" not in p and "%>" not in p])
def test_jinja_syntax_in_commands_stays_text(payload):
    assert entry([f"echo {payload} <% $parameters.p %>"], {"p": 1}) == f"echo {payload} 1"


def test_mustache_looking_command_text_is_parsed_by_mustache_rules_only():
    # `<% t[0] %>` and `<% n(0) %>` are the generated jinja source's shape; in a job they are just missing names.
    assert entry(["<% t[0] %> <% n(0) %> %> x"]) == "<% t.0 %> <% n(0) %> %> x"


@pytest.mark.parametrize("name", [
    "$parameters.__class__", "$parameters.a.__init__", "$parameters.a.__class__.__mro__", "$parameters.s.upper",
    "$parameters.l.append", "$parameters.l.__len__", "$parameters.a.keys", "$parameters.a.__globals__",
    "$parameters.__dict__", "__builtins__", "$parameters.s.__class__.__base__.__subclasses__",
])
def test_python_attributes_are_never_reachable(name):
    params = {"a": {"k": 1}, "s": "str", "l": [1]}
    assert entry([f"<% {name} %>"], params) == f"<% {name} %>"


def test_a_key_that_looks_like_an_attribute_is_just_a_key():
    assert entry(["<% $parameters.__class__ %>"], {"__class__": "plain"}) == "plain"


def test_a_text_is_split_once_and_a_name_looked_up_once_per_render(monkeypatch):
    """Commands repeat across task roles and instances: their tokens are cached per text, and a name used many
    times in one text is looked up once (the view cannot change during a render)."""
    import paictl.compiler.render as module

    calls = []
    real = module._name_value
    monkeypatch.setattr(module, "_name_value", lambda *a: calls.append(a[0].name) or real(*a))
    module._compile.cache_clear()
    text = "a <% $p %> b <% $p %> <% $q %>"
    assert render(text, {"$p": 1, "$q": None}) == "a 1 b 1 <% $q %>"
    assert render(text, {"$p": 2, "$q": "x"}) == "a 2 b 2 x"
    assert module._compile.cache_info().misses == 1
    assert len(calls) == 4  # `$p` and `$q` once per render


@pytest.mark.parametrize("count", [255, 256, 257, 5000])
def test_a_text_of_many_tags_renders_every_tag(count):
    # Sizes around 256 were the slice boundaries of the former jinja2 join; kept as plain many-tag cases.
    context = {"$parameters": {"a": 1, "b": "x y", "list": [True, None]}}
    names = ["$parameters.a", "$parameters.b", "$parameters.missing", "$parameters.list", "$parameters.list[0]"]
    pieces, expected = [], []
    for index in range(count):
        name = names[index % len(names)]
        pieces.append(f"t{index} <% {name} %>" if index % 3 else f"<% {name} %>")
        value = {0: "1", 1: "x y", 2: "<% $parameters.missing %>", 3: "true,", 4: "true"}[index % len(names)]
        expected.append(f"t{index} {value}" if index % 3 else value)
    assert render("".join(pieces), context) == "".join(expected)
