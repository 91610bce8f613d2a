"""What to look at when the exit rules say 255 PAIRuntimeUnknownFailed.

OpenPAI's exit spec has no rule for many everyday failures: a Python module missing from the image, a GPU out of
memory, an uncaught exception. Upstream's rules classify them 255 (unknown) too, and paictl keeps that verdict (the
code decides whether a task is retried, and must stay OpenPAI's). These hints are paictl's own reading of the log,
shown beside the verdict: the first log line each pattern matches, and what a user should check. First match of
each pattern, patterns in order; one regex pass per pattern over the log's tail.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Hint(NamedTuple):
    name: str
    line: int          # 1-based line of the log text given
    text: str          # that line, stripped
    advice: str


#: (name, pattern, advice), most specific first.
PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = tuple((name, re.compile(pattern, re.M), advice) for
                                                               name, pattern, advice in (
    ("missing Python module", r"^.*\b(?:ModuleNotFoundError: No module named|ImportError: No module named)\b.*$",
     "the image lacks a Python package the command imports: install it in the image (or `pip install` it in the "
     "commands before use), or check PYTHONPATH and the working folder"),
    ("Python import failed", r"^.*\bImportError: .*$",
     "a Python package failed to import: a version mismatch between packages, or a native library missing from "
     "the image"),
    ("GPU out of memory",
     r"^.*(?:CUDA out of memory|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|RESOURCE_EXHAUSTED: OOM"
     r"|OutOfMemoryError: CUDA).*$",
     "the GPU ran out of memory: lower the batch size or the model size, use gradient accumulation or mixed "
     "precision, or ask for GPUs with more memory (the task role's skuType)"),
    ("host out of memory", r"^.*(?:\bMemoryError\b|java\.lang\.OutOfMemoryError|std::bad_alloc).*$",
     "the process ran out of host memory: raise the task role's memoryMB, or load less data at once"),
    ("file not found", r"^.*(?:FileNotFoundError|No such file or directory).*$",
     "a file or folder the command reads is missing: check data paths, the storages mounted (extras.storages) "
     "and the working folder"),
    ("permission denied", r"^.*(?:PermissionError|Permission denied).*$",
     "the command may not read or write a path: check the storage's permissions and the user the image runs as"),
    ("uncaught Python exception", r"^Traceback \(most recent call last\):$",
     "the program raised an exception it did not catch: the last line of the traceback below names it"),
))


def hints(log: str) -> list[Hint]:
    """Every pattern's first match in `log`, in the order of PATTERNS."""
    found: list[Hint] = []
    for name, pattern, advice in PATTERNS:
        match = pattern.search(log)
        if match is not None:
            found.append(Hint(name=name, line=log.count("\n", 0, match.start()) + 1, text=match.group(0).strip(),
                              advice=advice))
    return found
