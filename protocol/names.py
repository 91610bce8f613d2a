"""OpenPAI's task role name conversion.

The rest-server never uses a task role name as written: the Framework task role, log paths and the runtime's
environment variables all use the converted name. Two names that convert to the same string collide silently
(openpai-runtime#47), so checks need the exact upstream rule, not an approximation.
"""

from __future__ import annotations

import re

_NOT_LOWER_ALNUM = re.compile(r"[^a-z0-9]")


def convert_name(name: str) -> str:
    """Upstream `convertName`: `s.toLowerCase().replace(/[^a-z0-9]/g, '')`.

    Only ASCII letters and digits survive. Python's `str.lower` and JavaScript's `toLowerCase` both apply
    Unicode's full default case mapping, so even the odd non-ASCII letters that lower to ASCII (the Kelvin sign
    becomes `k`) agree; task role names are ASCII by schema anyway.
    """
    return _NOT_LOWER_ALNUM.sub("", name.lower())
