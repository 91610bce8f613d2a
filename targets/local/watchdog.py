"""The watchdog of a local run: if the process running the tasks dies, even by SIGKILL, no task survives it.

Started by the runner in a session of its own (Ctrl-C on the terminal does not reach it), with a pipe as standard
input whose only writer is the runner. The runner writes `<pgid>` when a task's process group starts and
`-<pgid>` once it has killed what was left of it. End of file means the runner is gone, whatever the cause: every
group still listed gets SIGKILL. When the runner ends normally the list is empty and the watchdog just exits.
SIGTERM (a session being torn down) does the same as end of file.

Every task runs in its own process group (`start_new_session`), so a group holds the task's shell and everything it
started, unless a command deliberately moved to another session (`setsid`), which no container runtime would let
outlive the container either.

Deliberately stdlib-only and tiny: it runs as `python -I -S <this file>`, which starts in a few milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys


def _kill_all(groups: set[int]) -> None:
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def main() -> None:
    groups: set[int] = set()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def on_term(signum: int, frame: object) -> None:
        _kill_all(groups)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    for line in sys.stdin:
        line = line.strip()
        if line.startswith("-"):
            groups.discard(int(line[1:]))
        elif line:
            groups.add(int(line))
    _kill_all(groups)


if __name__ == "__main__":
    main()
