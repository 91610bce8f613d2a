"""One task instance of a local attempt, as the runner tracks it and the process keeper (run_processes) signals it.

Its own module because both of them hold it: the runner decides its state, the keeper owns its process group.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

from paictl.targets.local.policy import Outcome
from paictl.targets.local.target import NODE
from paictl.targets.states import TaskView


@dataclasses.dataclass(kw_only=True)
class TaskInstance:
    """A running task instance of a local attempt and the process group it owns."""
    role: dict[str, Any]
    index: int
    process: Any = None  # subprocess.Popen, or runtime.SpawnedTask (the same methods)
    log: Optional[Path] = None
    offset: int = 0
    state: str = "pending"
    attempt: int = 0
    accountable: int = 0
    exit_code: Optional[int] = None
    diagnosis: Optional[str] = None
    outcome: Optional[Outcome] = None
    rule: Any = None
    failed: list = dataclasses.field(default_factory=list)  # (attempt, exit code, diagnosis) of retried failures
    #: The shell has been reaped and its group killed: the pgid may belong to someone else from now on.
    group_gone: bool = True

    @property
    def label(self) -> str:
        return f"{self.role['name']}-{self.index}"

    def view(self) -> TaskView:
        return TaskView(role=self.role["name"], index=self.index, state=self.state, attempt=self.attempt,
                        node=NODE, exit_code=self.exit_code, diagnosis=self.diagnosis,
                        failed_attempts=tuple(self.failed))
