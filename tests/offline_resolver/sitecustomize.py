"""Loaded at start-up by every Python process the test suite starts (conftest.py puts this folder first on
PYTHONPATH): names under the domains reserved for tests are answered in the process (by `socket`'s resolver
functions and `_socket`'s under them), never by the machine's resolver, so an "unknown host" test sends no DNS query off the machine (issue 38).

`.invalid`, `.test` and `.example` (RFC 2606, RFC 6761) never exist: the answer is the one a resolver gives for a
name that does not exist (EAI_NONAME, "Name or service not known"), at once. Every other name goes to the real
getaddrinfo unchanged (`localhost` and literal addresses are resolved on the machine without a query).
"""

from __future__ import annotations

import socket

RESERVED_DOMAINS = ("invalid", "test", "example")


def is_reserved(host: object) -> bool:
    if isinstance(host, (bytes, bytearray)):
        host = bytes(host).decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    label = host.rstrip(".").rpartition(".")[2].lower()
    return label in RESERVED_DOMAINS


def install() -> None:
    """Answer reserved names in this process (idempotent)."""
    if getattr(socket.getaddrinfo, "answers_reserved_names", False):
        return
    import _socket

    def answering_reserved_names(real):
        def resolve(host, *args, **kwargs):
            if is_reserved(host):
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return real(host, *args, **kwargs)
        resolve.answers_reserved_names = True  # type: ignore[attr-defined]
        return resolve

    # socket's resolver functions, and _socket's under them: paictl's early answer for an unreachable OpenPAI
    # cluster (targets/openpai/reach.py) resolves through the C module itself, `socket` being too slow to import
    for module in (socket, _socket):
        for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
            setattr(module, name, answering_reserved_names(getattr(module, name)))


def _run_the_next_sitecustomize() -> None:
    """This file shadows any sitecustomize later on sys.path (a distribution's): run that one too, once."""
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [path for path in sys.path if os.path.abspath(path or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != os.path.abspath(__file__):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


install()
if __name__ == "sitecustomize":  # imported at start-up (conftest.py runs this file by path instead)
    _run_the_next_sitecustomize()
