"""The environment's configuration files (a kubeconfig, the OpenPAI clusters file): one loader for all of them, so
that a broken one is the same one located line and exit 3 whichever command reads it.

They are read as a job is (protocol's bounded reading and located loader: the size, depth and alias limits hold,
a NUL, a tab or an unclosed bracket is located), but the answer is a `ConfigFileError`: the file the environment
points at is broken, not the job or the command line. The message is `file:line:col: the <what> is not valid
YAML: <problem>` and never the offending line, which may be a token. It lives in targets/, not protocol/, because
only the targets read such files, and protocol must stay free of them.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Optional

from paictl.errors import ConfigFileError, InputError


class ConfigDocument(NamedTuple):
    """A configuration file's data and where each JSON pointer sits (None when the fast path read it)."""

    data: Any
    positions: Optional[dict]
    shown: str

    def where(self, pointer: str) -> str:
        """`file:line:col` of the value at `pointer`, else `file`: for errors about a value."""
        position = (self.positions or {}).get(pointer)
        return f"{self.shown}:{position[2]}:{position[3]}" if position else self.shown


def load_config_file(path: str | os.PathLike[str], what: str, *, located: bool = False) -> ConfigDocument:
    """The data of the configuration file at `path` (an empty file or one of comments only is an empty mapping),
    or ConfigFileError (exit 3) saying where and what is wrong. `what` names the file in messages ("kubeconfig").
    `located`: read it with positions, for errors about its values (slower: the located loader always runs)."""
    from paictl.protocol.diagnostics import one_line
    from paictl.protocol.loading import DocumentError, decode_source, load_fast, load_located
    from paictl.protocol.source import read_source

    shown = one_line(os.fspath(path))
    try:
        raw = read_source(path, thing=None)
    except InputError as error:
        raise ConfigFileError(f"cannot read the {what}: {error}") from None
    try:
        text = decode_source(raw, shown)
        if not located:
            data = load_fast(text)
            if data is not None:
                return ConfigDocument(data=data, positions=None, shown=shown)
        document = load_located(text, shown)
        return ConfigDocument(data=document.data, positions=document.positions, shown=shown)
    except DocumentError as error:
        problem = error.diagnostics[0]
        if problem.code == "E107":  # the size limit: no question of YAML
            raise ConfigFileError(f"{shown}: the {what} {problem.message.removeprefix('file ')}") from None
        if problem.code == "E104":
            if "empty" in problem.message:
                return ConfigDocument(data={}, positions=None, shown=shown)
            kind = problem.message.split("; ")[0].removeprefix("the document is ")
            raise ConfigFileError(f"{shown}:1:1: the {what} is {kind}; expected a YAML mapping") from None
        where = f"{shown}:{problem.line}:{problem.column}" if problem.line else shown
        message = problem.message.removeprefix("YAML syntax error: ")
        raise ConfigFileError(f"{where}: the {what} is not valid YAML: {message}") from None
