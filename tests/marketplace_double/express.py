"""What Express 4, its body parser and PostgreSQL put into the marketplace server's answers, as the recordings show.

The recordings (`../shared/reference/recordings/marketplace`) keep the `etag` of every answer, the exact text of a
JSON parse error (Node 20's `JSON.parse` message, passed through by body-parser) and express' HTML page for an
unknown route; a keyword search is PostgreSQL's `ILIKE`. Each is reproduced here, apart from the routes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import urllib.parse

#: express' `bodyParser.json()` default limit (100 kB); a longer body is 413 before any route runs.
BODY_LIMIT_BYTES = 100 * 1024


def etag(payload: bytes) -> str:
    """The `etag` package's weak tag, which `res.send` sets: length in hex, then 27 characters of base64 SHA-1."""
    digest = base64.b64encode(hashlib.sha1(payload).digest()).decode()[:27]  # noqa: S324 - what express computes
    return f'W/"{len(payload):x}-{digest}"'


def json_text(value: object) -> bytes:
    """`res.json(value)`: `JSON.stringify` without spaces, non-ASCII characters as they are."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def cannot_route(method: str, path: str) -> bytes:
    """finalhandler's 404 page for a route no handler took (no etag: it is not sent through `res.send`); the path
    as `encodeurl` then `escape-html` leave it."""
    encoded = urllib.parse.quote(re.sub(r"%(?![0-9A-Fa-f]{2})", "%25", path), safe="!%&'()*+,-./:;=?@[]_~")
    shown = encoded.replace("&", "&amp;").replace("'", "&#39;")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Error</title>\n</head>\n"
            f"<body>\n<pre>Cannot {method} {shown}</pre>\n</body>\n</html>\n").encode()


def parse_error(text: str) -> str | None:
    """V8's message for JSON text `JSON.parse` rejects (body-parser answers 400 with it), or None if it is JSON.

    The common cases are worded as Node 20 words them; `Expected property name or '}' in JSON at position 1` is
    the recorded one."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        position = error.pos
        if error.msg.startswith("Expecting property name"):
            return f"Expected property name or '}}' in JSON at position {position}"
        if error.msg.startswith("Expecting ':'"):
            return f"Expected ':' after property name in JSON at position {position}"
        if error.msg.startswith("Expecting ','"):
            closing = "}" if _innermost_open(text[:position]) == "{" else "]"
            after = "property value" if closing == "}" else "array element"
            return f"Expected ',' or '{closing}' after {after} in JSON at position {position}"
        if error.msg.startswith("Extra data"):
            return f"Unexpected non-whitespace character after JSON at position {position}"
        if error.msg.startswith("Unterminated string"):
            return f"Unterminated string in JSON at position {len(text)}"
        if error.msg.startswith("Invalid control character"):
            return f"Bad control character in string literal in JSON at position {position}"
        rest = text[position:]
        for literal in ("true", "false", "null"):  # V8 names the first character that leaves the literal
            matched = next((n for n in range(len(literal)) if rest[n:n + 1] != literal[n]), len(literal))
            if matched:
                position += matched
                break
        if position >= len(text.rstrip()):
            return "Unexpected end of JSON input"
        if text[position] == "-":
            return f"No number after minus sign in JSON at position {position + 1}"
        if text[position].isdigit():
            return f"Unexpected number in JSON at position {position}"
        shown = text if len(text) <= 30 else text[:30] + "..."
        return f"Unexpected token '{text[position]}', \"{shown}\" is not valid JSON"
    return None


def _innermost_open(text: str) -> str:
    """The bracket still open at the end of `text` (strings skipped): "{" or "["."""
    stack: list[str] = []
    for token in re.finditer(r'"(?:\\.|[^"\\])*"|[{}\[\]]', text):
        mark = token.group()
        if mark in "{[":
            stack.append(mark)
        elif mark in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else "{"


def ilike(pattern: str) -> re.Pattern[str]:
    """PostgreSQL's `ILIKE '%' || pattern || '%'`: `%` any run, `_` one character, backslash escapes the next."""
    parts, escaped = [], False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    if escaped:
        parts.append(re.escape("\\"))
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)
