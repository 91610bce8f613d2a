"""The template scanner (a port of mustache.js `parseTemplate`), name lookup, and OpenPAI's name conversion."""

from __future__ import annotations

import pytest

from paictl.protocol.names import convert_name
from paictl.protocol.templates import TagKind, TemplateError, js_trim, lookup, name_path, resolve, scan_tags


# ----------------------------------------------------------------------------------------------------------------
# names

@pytest.mark.parametrize("name, converted", [
    ("worker", "worker"), ("Ps_Server", "psserver"), ("taskrole_1", "taskrole1"), ("A", "a"), ("___", ""),
])
def test_convert_name(name, converted):
    assert convert_name(name) == converted


# ----------------------------------------------------------------------------------------------------------------
# templates

@pytest.mark.parametrize("text, kind, name", [
    ("<% $parameters.a %>", TagKind.NAME, "$parameters.a"),
    ("<%# sec %>x<%/ sec %>", TagKind.SECTION, "sec"),
    ("<%^ sec %>x<%/ sec %>", TagKind.INVERTED, "sec"),
    ("<%& $secrets.a %>", TagKind.UNESCAPED, "$secrets.a"),
    ("<%{ $secrets.a }%>", TagKind.UNESCAPED, "$secrets.a"),
    ("<%! a comment %>", TagKind.COMMENT, "a comment"),
    ("<%> partial %>", TagKind.PARTIAL, "partial"),
    ("<%= [[ ]] =%>", TagKind.DELIMITERS, "[[ ]]"),
])
def test_tag_kinds(text, kind, name):
    first = next(scan_tags(text))
    assert (first.kind, first.name) == (kind, name)
    assert first.raw == text[first.start:first.end]


def test_scan_finds_every_tag_with_offsets_and_paths():
    text = "a <%$data.uri[0]%> b <%\n  $parameters.x[1][2].y %> c <% . %>"
    tags = list(scan_tags(text))
    assert [t.raw for t in tags] == ["<%$data.uri[0]%>", "<%\n  $parameters.x[1][2].y %>", "<% . %>"]
    assert tags[0].path == ("$data", "uri", "0")
    assert tags[1].path == ("$parameters", "x", "1", "2", "y")
    assert tags[2].path == ()
    assert [text[t.start:t.end] for t in tags] == [t.raw for t in tags]


def test_close_tags_are_yielded():
    kinds = [t.kind for t in scan_tags("<%# a %>in<%/ a %>")]
    assert kinds == [TagKind.SECTION, TagKind.CLOSE]


def test_delimiter_change_applies_to_the_rest_of_the_text():
    tags = list(scan_tags("<%= {{ }} =%> <% not a tag %> {{ $parameters.a }}"))
    assert [(t.kind, t.name) for t in tags] == [(TagKind.DELIMITERS, "{{ }}"), (TagKind.NAME, "$parameters.a")]


def test_names_are_split_like_mustache():
    assert name_path("$parameters.a[0].b") == ("$parameters", "a", "0", "b")
    assert name_path(".") == ()
    assert name_path(".hidden") == (".hidden",)  # mustache.js splits only when the first dot is not at 0
    assert name_path("plain") == ("plain",)


@pytest.mark.parametrize("text, fragment", [
    ("echo <% $parameters.a", "unclosed tag"),
    ("<%/ a %>", "no opening tag"),
    ("<%# a %>x<%/ b %>", "is closed by"),
    ("<%# a %>x", "never closed"),
    ("<%= x =%>", "invalid delimiter"),
])
def test_templates_mustache_rejects(text, fragment):
    with pytest.raises(TemplateError, match=fragment):
        list(scan_tags(text))


def test_tags_before_a_failure_are_still_yielded():
    seen = []
    with pytest.raises(TemplateError):
        for tag in scan_tags("<% $parameters.a %> <% $parameters.b"):
            seen.append(tag.name)
    assert seen == ["$parameters.a"]


def test_text_without_tags():
    assert list(scan_tags("")) == []
    assert list(scan_tags("echo {{ x }} %> 100%")) == []


def test_resolve_walks_dicts_and_lists():
    context = {"a": {"b": [{"c": 1}, None, "s"], "zero": 0, "empty": "", "none": None}}
    assert resolve(("a", "b", "0", "c"), context) == (True, 1)
    assert resolve(("a", "zero"), context) == (True, 0)
    assert resolve(("a", "empty"), context) == (True, "")
    assert resolve(("a", "none"), context) == (False, None)
    assert resolve(("a", "b", "1"), context) == (False, None)
    assert resolve(("a", "b", "3"), context) == (False, None)
    assert resolve(("a", "b", "01"), context) == (False, None)
    assert resolve(("a", "b", "2", "x"), context) == (False, None)
    assert resolve(("a", "missing"), context) == (False, None)
    assert resolve((), context) == (True, context)
    assert resolve((), None) == (False, None)


def test_lookup_reports_how_far_it_got():
    context = {"a": {"b": None, "c": [1]}}
    assert lookup(("a", "x", "y"), context) == (1, None)
    assert lookup(("a", "b", "y"), context) == (2, None)
    assert lookup(("a", "c", "0"), context) == (3, 1)


def test_js_trim_matches_javascript_whitespace():
    assert js_trim("\ufeff\u00a0 echo \n") == "echo"
    assert js_trim("\x1cecho\x85") == "\x1cecho\x85"  # not whitespace to JavaScript
