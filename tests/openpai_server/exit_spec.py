"""The exit specs the OpenPAI double puts into `appExitSpec` / `containerExitSpec`, as the real server answered them.

The entries for 0, 231 and -210, and the rule for a code the spec does not define (1 became the entry of 256,
`PAIRuntimeExitAbnormally`, with `code: 1`), are what recordings/openpai shows (job-succeeded, job-failed,
job-stopped, job-retried, hived-job). -220 and 137 are not in a recording; their entries hold the fields of the
server's spec (`k8s-job-exit-spec.yaml`, openpai.md d.3) in the same key order, for the tests that end a task with
them. A negative code the spec does not define gets -8000's entry the same way (by analogy: not recorded).
"""

from __future__ import annotations

import copy
from typing import Any, Optional

_ENTRIES: dict[int, dict[str, Any]] = {
    0: {"code": 0, "phrase": "Succeeded", "issuer": "USER_CONTAINER", "causer": "USER_CONTAINER",
        "type": "USER_SUCCESS", "stage": "COMPLETING", "behavior": "UNKNOWN", "reaction": "NEVER_RETRY",
        "repro": ["User program exits with exitcode 0"]},
    231: {"code": 231, "phrase": "ContainerSyntaxError", "issuer": "PAI_RUNTIME", "causer": "USER_CONTAINER",
          "type": "USER_FAILURE", "stage": "RUNNING", "behavior": "PERMANENT", "reaction": "NEVER_RETRY",
          "reason": "Container failed due to syntax error", "repro": ["User use invalid syntax in code"],
          "solution": ["Check the source code and correct the errors"],
          "pattern": {"runtimeContainerPatterns": [
              {"userLogRegex": "(?i)syntaxerror: invalid syntax"}, {"userLogRegex": "(?i)unpicklingerror"},
              {"userLogRegex": "(?i)assign requires shapes of both tensors to match"},
              {"userLogRegex": "(?mi)torch/install/share/lua.*c.* exception"},
              {"userLogRegex": "(?mi)attributeerror:.*has no attribute"},
              {"userLogRegex": "(?mi)nameerror: name.* is not defined"}]}},
    137: {"code": 137, "phrase": "ContainerSigKillReceived", "issuer": "PAI_OS", "causer": "PAI_OS",
          "type": "PLATFORM_FAILURE", "stage": "RUNNING", "behavior": "TRANSIENT", "reaction": "ALWAYS_RETRY",
          "reason": "Container killed by OS Signal: SIGKILL", "repro": ["Kill container process by SIGKILL"],
          "solution": ["Wait result from next retry", "Contact Cluster Admin"],
          "pattern": {"runtimeContainerPatterns": [{"exitCode": 137}]}},
    256: {"code": 256, "phrase": "PAIRuntimeExitAbnormally", "issuer": "PAI_RUNTIME", "causer": "PAI_RUNTIME",
          "type": "PLATFORM_FAILURE", "stage": "UNKNOWN", "behavior": "UNKNOWN", "reaction": "RETRY_TO_MAX",
          "reason": "PAI Runtime exit abnormally with undefined exitcode, it may have bugs",
          "repro": ["PAI Runtime exits with exitcode 1"], "solution": ["Contact PAI Dev to fix PAI Runtime bugs"]},
    -210: {"code": -210, "phrase": "StopFrameworkRequested", "issuer": "PAI_FC", "causer": "USER_STOP",
           "type": "USER_STOP", "stage": "UNKNOWN", "behavior": "PERMANENT", "reaction": "NEVER_RETRY",
           "reason": "User has requested to stop the job", "repro": ["Stop a job"]},
    -220: {"code": -220, "phrase": "FrameworkAttemptCompletion", "issuer": "PAI_FC", "causer": "USER_STOP",
           "type": "USER_STOP", "stage": "UNKNOWN", "behavior": "PERMANENT", "reaction": "NEVER_RETRY",
           "reason": "Stop to complete current job attempt", "repro": ["Stop a job with long running container"]},
    -8000: {"code": -8000, "phrase": "ContainerUndefinedNegativeExitCode", "issuer": "UNKNOWN", "causer": "UNKNOWN",
            "type": "UNKNOWN_FAILURE", "stage": "UNKNOWN", "behavior": "UNKNOWN", "reaction": "RETRY_TO_MAX",
            "reason": "Container exited with undefined negative exitcode",
            "repro": ["Remove code -100 in the spec, then repro -100"],
            "solution": ["Contact PAI Dev to recognize this exitcode"]},
}

#: Codes whose task ends STOPPED rather than FAILED: the platform stopped it (a stop, the attempt's completion).
STOPPED_CODES = frozenset({-210, -220, -230})


def exit_spec(code: Optional[int]) -> Optional[dict[str, Any]]:
    """The spec entry the server shows for an exit code (None for none)."""
    if code is None:
        return None
    entry = _ENTRIES.get(code) or _ENTRIES[256 if code > 0 else -8000]
    entry = copy.deepcopy(entry)
    entry["code"] = code
    return entry
