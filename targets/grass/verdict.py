"""A Grass job's verdict from facts: its containers' real states and exit statuses, and OpenPAI's completion rules.

Neither master's `status` is a verdict. MARO's `finish` comes from a tracker that cannot take most exit codes and
reads container records it never cleans (maro.md D.3; a stopped job flips back to `running`), so the verdict is
decided here, the same way for both masters and for `paictl status`:

- **Facts** (`facts`). A container's state is its node's record, which the node agent rewrites every interval
  from the engine; `name_to_container_details` and the job's `containers` only say which containers existed (MARO
  never removes an entry). A container that no node reports any more was removed; one on a node the master marked
  `Lost` while it ran is lost. Its exit status is the one the command's wrapper recorded in
  `paictl:job:<id>:exits` (wrapper.py: the true one, whatever MARO was shown), else the engine's.
- **Tasks.** Each (role, index) is its newest container (restart index, then start time).
- **Verdict** (`decide`). Tasks that completed are taken in the order they finished through FrameworkController's
  completion policy (targets/local/policy.py, as OpenPAI configures it: minFailedInstances default 1,
  minSucceededInstances default the role's instances; read from the job's PAI_* table). A lost or removed task
  failed, unless the job was stopped. A stop (paictl's stop marker, or the master's `killed`) makes the job stopped
  unless a verdict was already reached; the job is `stopping` while any of its containers still runs.

TaskView states: running, exited, lost (its node stopped reporting), removed (no node reports it), pending (no
container yet, or one the engine created and has not started).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Optional

from paictl.targets.states import JobState, TaskView


#: The statuses of a container that has not ended: it runs, or the engine created it and may still start it.
LIVE = ("running", "pending")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fact:
    """One container of the job as the facts say: `status` pending (created, not started) / running / exited / lost /
    removed."""
    name: str
    role: str
    index: int
    restart: int
    node: str
    status: str
    exit_code: Optional[int] = None
    started: str = ""
    finished: str = ""
    recorded: bool = False  # the exit status is the one the wrapper recorded
    engine_code: Optional[int] = None  # what the engine reported (the master restarts on this one)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Decision:
    state: JobState
    tasks: tuple[TaskView, ...]
    latest: dict[tuple[str, int], Fact]
    code: Optional[int] = None
    trigger: Optional[tuple[str, int]] = None
    message: str = ""
    #: The verdict is a node's refusal to create the trigger's container: its reason is the diagnosis.
    refused: bool = False

    @property
    def live(self) -> list[Fact]:
        """Containers that run or may still start (created, not started): a stop has to end them."""
        return [fact for fact in self.latest.values() if fact.status in LIVE]


def _int(value: Any, default: Optional[int] = None) -> Optional[int]:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 12:
        return int(value)
    return default


def facts(job: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]],
          known: Iterable[tuple[str, Mapping[str, Any]]], exits: Mapping[str, Any]) -> list[Fact]:
    """Every container of `job` (by its id): its state from its node's record; `known` are (name, labels) pairs
    from the records that remember containers (name_to_container_details, the job's containers); `exits` the
    wrapper's records. Records are assumed checked for shape (redis_records)."""
    job_id = job.get("id")
    components = job.get("components") or {}
    found: dict[str, Fact] = {}

    def fact(name: str, labels: Mapping[str, Any], node: str, status: str, state: Mapping[str, Any]) -> None:
        role = labels.get("component_type")
        index = _int(labels.get("component_index"))
        if role not in components or index is None or labels.get("job_id") != job_id:
            return
        code = engine = _int(state.get("ExitCode")) if status == "exited" else None
        recorded = _int(exits.get(name))
        if recorded is not None and status in ("pending", "running", "exited"):
            status, code = "exited", recorded  # the commands ended; the engine may not have seen the exit yet
        found[name] = Fact(name=name, role=str(role), index=index, restart=_int(labels.get("restart_index"), 0) or 0,
                           node=node, status=status, exit_code=code, started=str(state.get("StartedAt") or ""),
                           finished=str(state.get("FinishedAt") or ""), recorded=recorded is not None,
                           engine_code=engine)

    for node_name, record in nodes.items():
        lost = (record.get("state") or {}).get("status") == "Lost"
        for name, labels in (record.get("containers") or {}).items():
            state = labels.get("state") or {}
            status = engine_status(state)
            if status in LIVE and lost:
                status = "lost"
            fact(name, labels, str(labels.get("node_name") or node_name), status, state)
    for name, labels in known:
        if name not in found:
            recorded = _int(exits.get(name))
            state = {"ExitCode": recorded} if recorded is not None else {}
            fact(name, labels, str(labels.get("node_name") or ""), "exited" if recorded is not None else "removed",
                 {**(labels.get("state") or {}), **state})
    return sorted(found.values(), key=lambda f: f.name)


def engine_status(state: Mapping[str, Any]) -> str:
    """running / pending / exited / lost from a `docker inspect` State as a node recorded it. Docker shows a container
    it has created but not yet started (`docker run` creates, then starts) as `created` with Running false and
    ExitCode 0: that is no exit, or a job would read as succeeded before its commands ran. A start that failed
    leaves it `created` with an Error and a non-zero ExitCode: an exit."""
    engine = state.get("Status")
    if engine == "lost":  # paictl's master marks them so in its flattened records
        return "lost"
    if state.get("Running") is True or engine in ("running", "paused", "restarting"):
        return "running"
    if engine == "created":
        return "exited" if state.get("Error") and _int(state.get("ExitCode")) else "pending"
    return "exited"


def policies(job: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """(minFailedTaskCount, minSucceededTaskCount) of each role, from the job's PAI_* table (OpenPAI's defaults)."""
    from .env import parse_table
    from .wrapper import ENV_TAG

    tags = job.get("tags") if isinstance(job.get("tags"), Mapping) else {}
    table = parse_table(tags.get(ENV_TAG))
    out = {}
    for role, details in (job.get("components") or {}).items():
        num = _int(details.get("num"), 1) or 1
        out[role] = (_int(table.get(f"PAI_MIN_FAILED_TASK_COUNT_{role}"), 1) or 1,
                     _int(table.get(f"PAI_MIN_SUCCEEDED_TASK_COUNT_{role}"), num) or num)
    return out


def rejoin(job: Mapping[str, Any], runtime: Mapping[str, str], counts: Mapping[str, str], *,
           registered: Mapping[str, str]):
    """MARO's fault tolerance (maro.md A.10), as a test of whether a failed container will be restarted: the job's
    Proxy enabled `rejoin`, the container's Proxy registered it (`registered`: MARO's
    `job:<id>:rejoin_component_name_to_container_name`; MARO's master restarts no container missing from it, e.g.
    one that failed before its Proxy joined), the engine's exit code is not 0, 64 or 65, and its component has
    restarts left."""
    if runtime.get("rejoin:enable") != "1":
        return lambda fact: False
    names = set(registered.values())
    limit = _int(runtime.get("rejoin:max_restart_times"), 1 << 62)
    ids = {role: details.get("id") for role, details in (job.get("components") or {}).items()}

    def restartable(fact: Fact) -> bool:
        return (fact.status == "exited" and fact.engine_code not in (None, 0, 64, 65) and fact.name in names
                and (_int(counts.get(str(ids.get(fact.role))), 0) or 0) < (limit or 0))
    return restartable


def decide(job: Mapping[str, Any], found: Iterable[Fact], *, stopped_at: Optional[float] = None,
           master_status: str = "", master_message: str = "", restartable=None,
           refusals: Optional[Mapping[str, Mapping[str, Any]]] = None) -> Decision:
    """The job's state, tasks and verdict from `found` (see the module docstring). `stopped_at` (epoch seconds):
    when a stop was asked for; a task that failed after it was ended by the stop, which decides nothing.
    `refusals`: containers a node refused to create (redis_records.REFUSALS); the first one fails the job, as a task
    that cannot start fails an OpenPAI job, unless a stop came first."""
    from paictl.targets.local.policy import attempt_completion

    latest: dict[tuple[str, int], Fact] = {}
    for item in found:
        key = (item.role, item.index)
        if key not in latest or (item.restart, item.started) > (latest[key].restart, latest[key].started):
            latest[key] = item
    components = job.get("components") or {}
    tasks = []
    outcomes: dict[str, list[Optional[str]]] = {}
    for role, details in components.items():
        outcomes[role] = []
        for index in range(_int(details.get("num"), 0) or 0):
            item = latest.get((role, index))
            if item is None:
                tasks.append(TaskView(role=role, index=index, state="pending"))
                outcomes[role].append(None)
                continue
            tasks.append(TaskView(role=role, index=index, state=item.status, attempt=item.restart, node=item.node,
                                  exit_code=item.exit_code))
            if restartable is not None and restartable(item) and stopped_at is None:
                outcomes[role].append(None)  # the master restarts it: not completed
            elif item.status == "exited" and item.exit_code == 0:
                outcomes[role].append("succeeded")
            elif item.status == "exited" and not _after(item.finished, stopped_at):
                outcomes[role].append("failed")
            elif item.status in ("lost", "removed"):
                outcomes[role].append(None if stopped_at is not None else "failed")
            else:
                outcomes[role].append(None)
    running = any(item.status == "running" for item in latest.values())
    live = any(item.status in LIVE for item in latest.values())
    refused = _first_refusal(refusals or {}, stopped_at)
    if refused is not None:
        name, record = refused
        trigger = (str(record["role"]), int(record["index"]))
        tasks = [dataclasses.replace(task, diagnosis=str(record["reason"])) if (task.role, task.index) == trigger
                 else task for task in tasks]
        return Decision(state=JobState.FAILED, tasks=tuple(tasks), latest=latest, trigger=trigger, refused=True,
                        message=f"{trigger[0]}-{trigger[1]} (container {name}) could not be created on node "
                                f"{record['node']}: {record['reason']}; the job failed"
                                + ("; its other containers are being stopped" if live else ""))
    verdict = _completion(latest, outcomes, policies(job), attempt_completion)
    if verdict is not None:
        outcome, trigger, message = verdict
        item = latest.get(trigger) if trigger else None
        code = 0 if outcome == "succeeded" else (item.exit_code if item is not None else None)
        state = JobState.SUCCEEDED if outcome == "succeeded" else JobState.FAILED
        return Decision(state=state, tasks=tuple(tasks), latest=latest, code=code,
                        trigger=trigger if state is JobState.FAILED else None,
                        message=_reason(state, item, message))
    if stopped_at is not None or master_status == "killed":
        return Decision(state=JobState.STOPPING if live else JobState.STOPPED, tasks=tuple(tasks), latest=latest,
                        message="stopped on request" + ("; containers still running" if live else ""))
    if master_status == "failed" and not latest:
        return Decision(state=JobState.FAILED, tasks=tuple(tasks), latest=latest,
                        message=master_message or "the master could not start the job")
    if running or any(o is not None for roles in outcomes.values() for o in roles):
        return Decision(state=JobState.RUNNING, tasks=tuple(tasks), latest=latest, message="running")
    if live:
        created = sorted(f"{item.role}-{item.index}" for item in latest.values() if item.status == "pending")
        return Decision(state=JobState.PENDING, tasks=tuple(tasks), latest=latest,
                        message=f"starting: the engine has created {', '.join(created)} and not started it yet")
    return Decision(state=JobState.PENDING, tasks=tuple(tasks), latest=latest,
                    message=master_message or "waiting for the master to place it")


def _first_refusal(refusals: Mapping[str, Mapping[str, Any]],
                   stopped_at: Optional[float]) -> Optional[tuple[str, Mapping[str, Any]]]:
    """The earliest refusal that came before any stop (a container refused while the job was being stopped decides
    nothing)."""
    early = [(float(r.get("time") or 0), name, r) for name, r in refusals.items()
             if stopped_at is None or float(r.get("time") or 0) < stopped_at]
    if not early:
        return None
    _, name, record = min(early, key=lambda item: (item[0], item[1]))
    return name, record


def _completion(latest, outcomes, rules, attempt_completion):
    """FrameworkController's completion check, replayed in the order the tasks completed."""
    done = sorted(((item.finished or "~", item.role, item.index) for item in latest.values()
                   if outcomes[item.role][item.index] is not None))
    replay = {role: [None] * len(values) for role, values in outcomes.items()}
    for _, role, index in done:
        replay[role][index] = outcomes[role][index]
        completion = attempt_completion(role, index, replay, rules)
        if completion is not None:
            return completion.outcome, completion.trigger, completion.message
    return None


def _after(finished: str, stopped_at: Optional[float]) -> bool:
    """Whether a container that finished at `finished` (docker's RFC 3339, nanoseconds) ended after the stop."""
    import datetime

    if stopped_at is None:
        return False
    if not finished or finished.startswith("0001-"):
        return True
    head, _, fraction = finished.rstrip("Z").partition(".")
    try:
        moment = datetime.datetime.fromisoformat(head).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return True
    return moment.timestamp() + float("0." + (fraction[:6] or "0")) >= stopped_at - 1.0


def _reason(state: JobState, item: Optional[Fact], policy: str) -> str:
    if state is JobState.SUCCEEDED or item is None:
        return policy
    who = f"{item.role}-{item.index} (container {item.name} on node {item.node or '?'})"
    if item.status == "lost":
        return f"{who} was lost: its node stopped reporting; {policy}"
    if item.status == "removed":
        return f"{who} was removed before it ended; {policy}"
    return f"{who} exited {item.exit_code}; {policy}"
