"""OpenPAI's task role name conversion.

The rest-server never uses a task role name as written: the Framework task role, log paths and the runtime's
environment variables all use the converted name. Two names that convert to the same string collide silently
(openpai-runtime#47), so checks need the exact upstream rule, not an approximation.
"""

from __future__ import annotations

import re

_NOT_LOWER_ALNUM = re.compile(r"[^a-z0-9]")


#: The one name upstream's regrouping cannot hold as a key. `protocolValidate` collects prerequisites and deployments
#: into plain objects (`prerequisites[type][name] = item`, `deployments[name] = item`, checked first with
#: `hasOwnProperty`); assigning `__proto__` sets the object's prototype instead of adding a key. So a second item of
#: this name is no duplicate (no 400), and the LAST one is what a lookup by the name finds.
PROTOTYPE_SETTER = "__proto__"


#: The name a task role without `script` (`data`, `output`) selects upstream: the rest-server indexes its regrouped
#: prerequisites with the field as it is, `prerequisites.script[undefined]`, and JavaScript makes the key the text
#: "undefined". So a prerequisite of that name is what `<% $script.uri %>` renders for every such task role.
ABSENT_SELECTION = "undefined"


def first_wins(name: object) -> bool:
    """Whether the first of several items of this name is the one upstream keeps (all but PROTOTYPE_SETTER)."""
    return name != PROTOTYPE_SETTER


def convert_name(name: str) -> str:
    """Upstream `convertName`: `s.toLowerCase().replace(/[^a-z0-9]/g, '')`.

    Only ASCII letters and digits survive. Python's `str.lower` and JavaScript's `toLowerCase` both apply
    Unicode's full default case mapping, so even the odd non-ASCII letters that lower to ASCII (the Kelvin sign
    becomes `k`) agree; task role names are ASCII by schema anyway.
    """
    return _NOT_LOWER_ALNUM.sub("", name.lower())
