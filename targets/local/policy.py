"""FrameworkController's retry and completion rules, as pure functions the local runner applies.

frameworkcontroller.md c (`RetryPolicySpec.ShouldRetry`, `CompletionPolicySpec`) and openpai.md c.3 (how OpenPAI
fills them in). Kept apart from the processes so each rule can be read, and tested, on its own.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, Mapping, Optional, Sequence

from paictl.compiler.exit_rules import Rule, should_retry

#: FC never retries what a stop caused: StopFrameworkRequested, FrameworkAttemptCompletion, DeleteTaskRequested.
STOP_REQUESTED = -210
ATTEMPT_COMPLETION = -220
_STOP_CODES = frozenset({STOP_REQUESTED, ATTEMPT_COMPLETION, -230})
PHRASES = {STOP_REQUESTED: "StopFrameworkRequested", ATTEMPT_COMPLETION: "FrameworkAttemptCompletion"}
#: FC's unlimited values for maxRetryCount: -1 retries failures without end, -2 retries even a success.
UNLIMITED, ALWAYS = -1, -2

Outcome = Literal["succeeded", "failed"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """The retry and completion rules of a local attempt, as FrameworkController applies them."""
    fancy: bool
    max_retry_count: int

    @classmethod
    def from_plan(cls, data: Mapping[str, object]) -> "RetryPolicy":
        return cls(fancy=bool(data["fancyRetryPolicy"]), max_retry_count=int(data["maxRetryCount"]))  # type: ignore


@dataclasses.dataclass(frozen=True, kw_only=True)
class RetryDecision:
    """What the policy decided after a task failed: retry it or not, whether that retry counts, and why."""
    retry: bool
    #: Whether the retry counts against maxRetryCount (a transient failure under the fancy policy does not).
    accountable: bool = False
    reason: str = ""


def decide_retry(policy: RetryPolicy, *, succeeded: bool, rule: Optional[Rule],
                 accountable_retries: int) -> RetryDecision:
    """`RetryPolicySpec.ShouldRetry` for a task attempt or a job attempt that completed with `rule`'s code.

    The fancy policy reads the failure's reaction from the exit rules (should_retry): ALWAYS_RETRY (transient, e.g.
    SIGKILL 137) is retried without counting, NEVER_RETRY (permanent, e.g. 231 ContainerSyntaxError) never is, and
    RETRY_TO_MAX falls through to maxRetryCount, as any failure does under the plain policy.
    """
    if rule is not None and rule.code in _STOP_CODES:
        return RetryDecision(retry=False, reason=f"{rule.code} is never retried")
    count = policy.max_retry_count
    if policy.fancy and not succeeded and rule is not None and rule.reaction != "RETRY_TO_MAX":
        left = 1 if count == UNLIMITED else count - accountable_retries
        if should_retry(rule, left):
            return RetryDecision(retry=True, reason=f"{rule.phrase} is transient ({rule.reaction})")
        return RetryDecision(retry=False, reason=f"{rule.phrase} is permanent ({rule.reaction}): never retried")
    if count == ALWAYS or (not succeeded and (count == UNLIMITED or accountable_retries < count)):
        return RetryDecision(retry=True, accountable=True,
                             reason=f"retry {accountable_retries + 1} of {'unlimited' if count < 0 else count}")
    if succeeded:
        return RetryDecision(retry=False)
    return RetryDecision(retry=False, reason=f"no retry left (maxRetryCount {count})")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Completion:
    """A job attempt's verdict: `trigger` is the (role, index) whose completion decided it (None: all completed)."""

    outcome: Outcome
    message: str
    trigger: Optional[tuple[str, int]] = None


def attempt_completion(role: str, index: int, outcomes: Mapping[str, Sequence[Optional[Outcome]]],
                       policies: Mapping[str, tuple[int, int]]) -> Optional[Completion]:
    """`CompletionPolicySpec` checked when task `role`-`index` has just completed (`outcomes[role][index]` set).

    `outcomes` maps every task role to its tasks' outcomes (None while not completed); `policies` maps a role to
    (minFailedTaskCount, minSucceededTaskCount), where only values >= 1 ever trigger (-1: never).
    """
    return CompletionTally(outcomes).completion(role, index, outcomes[role][index], policies[role])


class CompletionTally:
    """Completed tasks counted as they complete, so that checking `CompletionPolicySpec` when one task completes
    costs the same whatever the number of tasks (a runner of 200 instances that counted every role's outcomes
    at each completion did 40,000 steps per attempt). `outcomes`: what has completed so far, as
    `attempt_completion` takes it."""

    def __init__(self, outcomes: Mapping[str, Sequence[Optional[Outcome]]]) -> None:
        self.total = sum(len(tasks) for tasks in outcomes.values())
        self.completed = sum(1 for tasks in outcomes.values() for o in tasks if o is not None)
        self.counts = {role: {"failed": sum(1 for o in tasks if o == "failed"),
                              "succeeded": sum(1 for o in tasks if o == "succeeded")}
                       for role, tasks in outcomes.items()}

    def complete(self, role: str, index: int, outcome: Outcome, policy: tuple[int, int]) -> Optional[Completion]:
        """Count task `role`-`index`'s completion and check the policy (minFailed, minSucceeded) of its role."""
        self.completed += 1
        self.counts[role][outcome] += 1
        return self.completion(role, index, outcome, policy)

    def completion(self, role: str, index: int, own: Optional[Outcome], policy: tuple[int, int]) -> \
            Optional[Completion]:
        min_failed, min_succeeded = policy
        failed, succeeded = self.counts[role]["failed"], self.counts[role]["succeeded"]
        if own == "failed" and min_failed >= 1 and failed >= min_failed:
            return Completion(outcome="failed", trigger=(role, index),
                              message=f"FailedTaskCount {failed} has reached MinFailedTaskCount {min_failed} in "
                                      f"TaskRole {role}")
        if own == "succeeded" and min_succeeded >= 1 and succeeded >= min_succeeded:
            return Completion(outcome="succeeded", trigger=(role, index),
                              message=f"SucceededTaskCount {succeeded} has reached MinSucceededTaskCount "
                                      f"{min_succeeded} in TaskRole {role}")
        if self.completed == self.total:
            return Completion(outcome="succeeded",
                              message=f"CompletedTaskCount {self.completed} has reached TotalTaskCount {self.total} "
                                      "and no completion condition was triggered")
        return None
