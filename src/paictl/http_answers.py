"""What paictl's two HTTP clients (the OpenPAI REST client, the marketplace client) share in reading an answer.

- `read_within`: an answer's whole body by a deadline. httpx's timeouts bound each socket read, not the answer, so a
  server or proxy that trickles a byte every few seconds would hold a command forever; the deadline makes "how long
  one request may take" true of the whole answer.
- `page_text`: an answer body as one short line of text. A proxy in front of a server answers its own HTML page (a
  502 from nginx, a login page), whose first line is `<html>`: the words of the page are what a user needs to see.
"""

from __future__ import annotations

import html
import re
import time
from typing import Any

#: The most of a page an error line quotes.
PAGE_TEXT_LIMIT = 200
#: How much of a page is looked at for its words (an unclosed `<script` repeated over megabytes costs the hidden-part
#: pattern quadratic time).
_PAGE_READ = 8 * 1024
_TAG = re.compile(r"<[^>]*>")
_PRE = re.compile(r"<pre>(.*?)</pre>", re.S | re.I)
_TITLE = re.compile(r"<title>(.*?)</title>", re.S | re.I)
_HIDDEN = re.compile(r"<(script|style|head)\b.*?</\1\s*>", re.S | re.I)


def read_within(response: Any, deadline: float) -> bytes:
    """The whole body of a streamed httpx response; httpx.ReadTimeout when it has not all arrived by `deadline`
    (`time.monotonic()`). One read may still take the client's read timeout, so the answer is bounded by the
    deadline plus one read."""
    import httpx

    chunks = []
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("the answer was still arriving when the time allowed for it ran out",
                                    request=response.request)
    return b"".join(chunks)


def decoded(response: Any, body: bytes) -> str:
    """`body` as text, in the charset the answer names (UTF-8 when it names none), never failing."""
    try:
        return body.decode(response.charset_encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def page_text(text: str) -> str:
    """An answer body as one line: an HTML page becomes its words (express' error page: its <pre> message, `Cannot
    GET /x`; another page: its title, else its visible text), anything else its first non-empty line; at most
    PAGE_TEXT_LIMIT characters."""
    text = (text or "")[:_PAGE_READ].strip()  # the words are at the top; the regexes never see a huge page
    if text.startswith("<"):
        chosen = _PRE.search(text) or _TITLE.search(text)
        text = chosen.group(1) if chosen else _HIDDEN.sub(" ", text)
        text = html.unescape(_TAG.sub(" ", text))
        line = " ".join(text.split())
    else:
        line = next((" ".join(row.split()) for row in text.splitlines() if row.strip()), "")
    return line if len(line) <= PAGE_TEXT_LIMIT else line[:PAGE_TEXT_LIMIT - 3] + "..."
