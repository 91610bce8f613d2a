"""The bounds FrameworkController and Kubernetes set on what a job asks for.

Why a module of their own: the compile checks (protocol/compile_checks.py) report a job past them, and validate's
one-walk screen (protocol/clean_screen.py) must know them to vouch that a job is within them; both read them here.
"""

from __future__ import annotations

import re

#: FrameworkController's limit on a task role's task number (and so a sane bound for `--target local`).
MAX_INSTANCES = 10_000
#: FrameworkController's counts are int32.
MAX_INT32 = 2 ** 31 - 1
#: The least maxRetryCount FrameworkController's CRD takes (-1: no limit, -2: always retry).
MIN_RETRY_COUNT = -2
#: The largest cpu, gpu and memoryMB whose Kubernetes quantity fits its int64 unit (milli-units for cpu and
#: extended resources such as GPUs, bytes for memory); JavaScript also prints memoryMB from 1e21 on as "1e+21Mi",
#: which is no quantity at all.
RESOURCE_BOUNDS = (("cpu", (2 ** 63 - 1) // 1000, "milli-cores"), ("gpu", (2 ** 63 - 1) // 1000, "milli-units"),
                   ("memoryMB", (2 ** 63 - 1) // 2 ** 20, "bytes"))
#: A Kubernetes label value (the virtual cluster becomes the `virtualCluster` label of the Framework and its pods).
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
