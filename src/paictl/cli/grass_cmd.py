"""`paictl grass ...`: the agents of a Grass cluster (master, node) and the plan of a job on it."""

import enum
from pathlib import Path
from typing import List, Optional

import typer

from paictl.errors import InvalidJobError, PaictlError

grass_app = typer.Typer(name="grass", no_args_is_help=True,
                        help="MARO Grass clusters: run the master or a node agent; show where a job would land.")

CLUSTER_OPTION = typer.Option(..., "--cluster", metavar="FILE",
                              help="The cluster file (repeatable: MARO's create file and node-join files).")
INTERVAL_OPTION = typer.Option(None, "--interval", metavar="SECONDS",
                               help="Seconds between passes (default: the cluster file's agents.check_interval, "
                                    "else MARO's 5).")


class Engine(str, enum.Enum):
    auto = "auto"
    docker = "docker"
    process = "process"


class PlanFormat(str, enum.Enum):
    text = "text"
    json = "json"


def _logging(verbose: bool) -> None:
    import logging

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="paictl grass: %(message)s")


def _stop_on_sigterm():
    """From here on SIGTERM only sets the returned flag, which `_serve` reads as "close the agent, exit 0". Taken
    before the agent starts: a SIGTERM that arrives while it starts (a supervisor stopping a node it just launched)
    still closes it, and the node is marked Stopped, where paictl's default handler would end the process at once
    with 130 and leave its record saying Running. The flag also means a signal arriving while the agent closes
    cannot cut the closing short."""
    import signal
    import threading

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    return stopping


def _serve(agent, stopping, *, started: bool = False) -> None:
    """Serve until SIGTERM (exit 0) or Ctrl-C (130), then close the agent (a node marks itself Stopped)."""
    import signal

    interrupted = False
    try:
        if not started:
            agent.start()
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        agent.close()
    if interrupted:
        raise typer.Exit(130)


@grass_app.command("master", short_help="Run the master loops against the cluster's Redis.")
def master_command(cluster: List[str] = CLUSTER_OPTION, interval: Optional[float] = INTERVAL_OPTION,
                   verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every request.")) -> None:
    """Run MARO's master loops against the cluster's Redis: place pending jobs, stop killed ones, track status.

    Runs until SIGTERM (exit 0) or Ctrl-C (130); 2 for a bad cluster file.
    """
    from paictl.targets import get_target

    from .errors import check_seconds, fail, report_invalid

    _logging(verbose)
    stopping = _stop_on_sigterm()
    try:
        agent = get_target("grass").master_agent(cluster, interval=check_seconds(interval, "--interval"))
    except InvalidJobError as error:
        report_invalid(error)
    except PaictlError as error:
        fail(error)
    typer.echo(f"paictl: grass master of {agent.cluster.name} on redis {agent.cluster.redis_address}, "
               f"every {agent.interval:g} s", err=True)
    _serve(agent, stopping)


@grass_app.command("node", short_help="Run a node agent and its node API.")
def node_command(cluster: List[str] = CLUSTER_OPTION,
                 name: str = typer.Option(..., "--name", metavar="NODE", help="This node's name in the cluster file."),
                 interval: Optional[float] = INTERVAL_OPTION,
                 engine: Engine = typer.Option(Engine.auto, "--containers",
                                               help="docker (the engine DOCKER_HOST names), process (host "
                                                    "processes), or auto: docker when `docker info` answers."),
                 work_dir: Path = typer.Option(Path(".paictl/grass"), "--work-dir", metavar="DIR",
                                               help="Where host-process containers keep their logs."),
                 verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every request.")) -> None:
    """Run a node agent: publish the node's record and heartbeat, serve MARO's node API, run containers.

    Runs until SIGTERM (exit 0; the node is marked Stopped and its host-process containers stopped) or Ctrl-C
    (130); 2 for a bad cluster file or a node it does not name; 3 when the API's address cannot be bound.
    """
    from paictl.targets import get_target

    from .errors import check_seconds, fail, report_invalid

    _logging(verbose)
    stopping = _stop_on_sigterm()
    try:
        agent = get_target("grass").node_agent(cluster, name, work_dir=work_dir,
                                               interval=check_seconds(interval, "--interval"),
                                               engine=engine.value)
        agent.start()
    except InvalidJobError as error:
        report_invalid(error)
    except OSError as error:
        typer.echo(f"paictl: error: node {name}: cannot serve its API: {error.strerror or error}", err=True)
        raise typer.Exit(3)
    except PaictlError as error:
        fail(error)
    host, port = agent.address
    typer.echo(f"paictl: grass node {name}: API on {host}:{port} ({agent.runtime.kind} containers), "
               f"record every {agent.interval:g} s", err=True)
    _serve(agent, stopping, started=True)


@grass_app.command("plan", short_help="Show where each container of a job would land.")
def plan_command(job_path: str = typer.Argument(..., metavar="JOB", help="The job file, or - for standard input."),
                 cluster: List[str] = CLUSTER_OPTION,
                 output_format: PlanFormat = typer.Option(PlanFormat.text, "--output", "-o", "--format",
                                                           help="text or json.")
                 ) -> None:
    """Where each container of JOB would land on the cluster's idle nodes, with MARO's placement.

    Exit status: 0; 1 invalid job; 2 bad cluster file; 3 the job does not fit (the error says what fell short).
    """
    from paictl.compiler.emit import strict_json

    from paictl.targets.compiled import compile_job

    from .errors import fail, report_invalid

    try:
        compiled = compile_job(job_path, target="grass", cluster=cluster)
    except InvalidJobError as error:
        report_invalid(error)
    except PaictlError as error:
        fail(error)
    plan = compiled.objects[-1]
    if output_format is PlanFormat.json:
        typer.echo(strict_json(plan, indent=2))
        return
    typer.echo(f"{plan['metadata']['name']} on {plan['cluster']['name']}: {plan['allocation']['mode']} on "
               f"{plan['allocation']['metric']} (job, component and container ids are drawn at submit)")
    for note in plan["notes"]:
        typer.echo(f"  note: {note}")
    for item in plan["containers"]:
        resources = item["resources"]
        typer.echo(f"  {item['task']}  {item['node']} ({item['hostname']})  cpu "
                   f"{resources['cpu']} memory {resources['memory']} gpu {resources['gpu']}")
