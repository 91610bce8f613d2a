"""The detached supervisor of a local run: `python -m paictl.targets.local.supervisor RUN_FOLDER`.

`paictl submit --target local` without `--follow` returns at once; this process, started in a session of its own
(closing the terminal or Ctrl-C there does not touch it), owns the tasks until the verdict. Its settings arrive as
one JSON object on standard input, `{"work_dir", "exit_spec", "secrets"}`, so secret values are never written to
disk or put on a command line; the plan is read from the run folder. `"lock"` is the descriptor of the run's lock
(store.lock_run), inherited from `submit`: holding it is what makes the run active. SIGTERM and SIGINT stop the
job as `paictl stop` does. Its own messages (a run folder that filled up or vanished) go to `supervisor.log`.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path


class _Signalled(KeyboardInterrupt):
    """A KeyboardInterrupt, so that a second signal during the grace period skips it, as a second Ctrl-C does."""


def _raise(signum: int, frame: object) -> None:
    raise _Signalled(signal.Signals(signum).name)


def main(argv: list[str]) -> int:
    from paictl.compiler.exit_rules import load_rule_set

    from paictl.errors import PaictlError
    from paictl.targets.local.runner import LocalRunner
    from paictl.targets.local.store import read_plan

    folder = Path(argv[0])
    settings = json.loads(sys.stdin.read())
    sys.stdin.close()
    runner = LocalRunner(folder, read_plan(folder), secrets=settings["secrets"],
                         rules=load_rule_set(settings["exit_spec"]), work_dir=settings["work_dir"],
                         lock=settings.get("lock"))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _raise)
    signal.signal(signal.SIGINT, _raise)
    try:
        for _ in runner.views():
            pass
    except _Signalled as exc:
        runner.interrupt(f"stopped: the supervisor received {exc}")
    except PaictlError as error:  # every task is already stopped
        print(f"paictl: error: {error}", flush=True)
        return error.exit_code
    finally:
        runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
