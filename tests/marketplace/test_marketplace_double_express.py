"""The double's copies of what Express, body-parser, Node and PostgreSQL put into answers, checked against facts.

The JSON messages are what Node 20's `JSON.parse` says (observed with Node v20.20.2, the version the recordings'
server ran on); body-parser answers 400 with them. The etags are recorded ones (`recordings/marketplace`).
"""

from __future__ import annotations

import pytest
from marketplace_double.express import cannot_route, etag, ilike, parse_error

NODE_20_JSON_PARSE = [
    ('{not json', "Expected property name or '}' in JSON at position 1"),
    ('{"a" 1}', "Expected ':' after property name in JSON at position 5"),
    ('{"a":1 "b":2}', "Expected ',' or '}' after property value in JSON at position 7"),
    ('[1 2]', "Expected ',' or ']' after array element in JSON at position 3"),
    ('{"a": [1, {"b": 2 3]}', "Expected ',' or '}' after property value in JSON at position 18"),
    ('{"a":1}x', "Unexpected non-whitespace character after JSON at position 7"),
    ('{"a":"b', "Unterminated string in JSON at position 7"),
    ('{"a":"\x01"}', "Bad control character in string literal in JSON at position 6"),
    ('{"a":', "Unexpected end of JSON input"),
    ('{"a":tr', "Unexpected end of JSON input"),
    ('{"a":tru}', 'Unexpected token \'}\', "{"a":tru}" is not valid JSON'),
    ('{"a":nul}', 'Unexpected token \'}\', "{"a":nul}" is not valid JSON'),
    ('{"a":f1}', "Unexpected number in JSON at position 6"),
    ('[tx]', 'Unexpected token \'x\', "[tx]" is not valid JSON'),
    ('{"a":x}', 'Unexpected token \'x\', "{"a":x}" is not valid JSON'),
    ('{"a":-}', "No number after minus sign in JSON at position 6"),
    ('#', 'Unexpected token \'#\', "#" is not valid JSON'),
]


@pytest.mark.parametrize(("text", "message"), NODE_20_JSON_PARSE)
def test_json_errors_read_as_node_words_them(text, message):
    assert parse_error(text) == message


def test_valid_json_is_no_error():
    assert parse_error('{"a": [1, true, null, "x"]}') is None


def test_etags_are_express_weak_etags():
    assert etag(b"Authentication token is missing or invalid") == 'W/"2a-aojcW/8SiYiP59O7TKzRewIth6M"'
    assert etag(b"updated") == 'W/"7-E6GJGvdcZCMGpraVN30W5KkfDhs"'
    assert etag(b"[]") == 'W/"2-l9Fw4VUO7kr8CvBlt4zaMCqXZ0w"'


def test_the_404_page_names_method_and_path():
    assert b"<pre>Cannot GET /nope</pre>" in cannot_route("GET", "/nope")
    assert b"<pre>Cannot POST /a%3Cb&amp;c&#39;%25zz%41</pre>" in cannot_route("POST", "/a<b&c'%zz%41")


@pytest.mark.parametrize(("pattern", "text", "found"), [
    ("cifar", "CIFAR-10 Single Node", True),
    ("c_far", "Chainer CIFAR", True),
    ("c%node", "CIFAR-10 Single Node", True),
    ("c\\_far", "Chainer CIFAR", False),
    ("a\\_b", "x A_B y", True),
    ("100\\%", "100% synthetic", True),
    ("100\\%", "1000 synthetic", False),
    ("\\\\", "C:\\data", True),
    ("_", "", False),
])
def test_keywords_are_ilike_patterns(pattern, text, found):
    assert bool(ilike(pattern).search(text)) is found
