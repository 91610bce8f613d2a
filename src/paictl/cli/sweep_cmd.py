"""`paictl sweep`: the typer declaration (help, options); what it does is `sweep.run_sweep`, typer-free, which also
holds the sweep parts of `compile --space`, `status --sweep`, `stop --sweep` and `logs --sweep`.
"""

from pathlib import Path
from typing import List, Optional

import typer

from paictl.errors import PaictlError

from .completion import complete_target
from .jobinput import (MAX_TRIALS_OPTION, PROFILE_OPTION, PULL_OPTION, RUNTIME_OPTION, SECRETS_FROM_OPTION,
                       SEED_OPTION, SPACE_OPTION, STDIN_NAME_OPTION, STRATEGY_OPTION, STRICT_OPTION, USER_OPTION)

def sweep_command(
    job_path: Optional[str] = typer.Argument(None, metavar="[JOB]", help="The job file (omit with --resume)."),
    space: List[str] = SPACE_OPTION,
    target: Optional[str] = typer.Option(None, "--target", "-t", metavar="TARGET", autocompletion=complete_target,
                                         help="Where the trials run: local, framework, jobset, mars, grass, "
                                              "openpai (default: as for submit)."),
    strategy: Optional[str] = STRATEGY_OPTION,
    max_trials: Optional[int] = MAX_TRIALS_OPTION,
    parallel: int = typer.Option(1, "--parallel", "-k", metavar="K", help="At most K trials running at once."),
    seed: Optional[int] = SEED_OPTION,
    metric: Optional[str] = typer.Option(None, "--metric", metavar="NAME",
                                         help="A trial's metric: the last NAME=<number> (or JSON line with key NAME) "
                                              "it prints."),
    goal: Optional[str] = typer.Option(None, "--goal", metavar="min|max",
                                       help="Sort the trials by metric and mark the best (needs --metric)."),
    stop_when: Optional[str] = typer.Option(None, "--stop-when", metavar="EXPR",
                                            help="Stop the remaining trials once one's metric meets EXPR, e.g. "
                                                 "'metric<0.1'."),
    resume: Optional[str] = typer.Option(None, "--resume", metavar="ID",
                                         help="Pick up an interrupted sweep: follow its trials, submit those it has "
                                              "not (never one twice)."),
    sweep_id: Optional[str] = typer.Option(None, "--id", metavar="ID",
                                           help="The sweep's id (default: 6 random letters and digits)."),
    output_format: str = typer.Option("text", "--output", "-o", "--format", metavar="FORMAT",
                                      help="text: a live table (one line per change when not a terminal); json: "
                                           "JSON lines; yaml: one document per record."),
    profile: str = PROFILE_OPTION,
    user: Optional[str] = USER_OPTION,
    secrets_from: Optional[str] = SECRETS_FROM_OPTION,
    context: Optional[str] = typer.Option(None, "--context", help="The kubeconfig context (as kubectl --context)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace (Kubernetes)."),
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", metavar="FILE", help="The kubeconfig file."),
    cluster: Optional[List[str]] = typer.Option(None, "--cluster", metavar="FILE_OR_ALIAS",
                                                help="grass: the cluster file; openpai: the cluster alias."),
    virtual_cluster: Optional[str] = typer.Option(None, "--virtual-cluster", metavar="VC",
                                                  help="OpenPAI: the virtual cluster."),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", metavar="DIR", help="Where local runs keep their state."),
    exit_spec: Optional[Path] = typer.Option(None, "--exit-spec", metavar="FILE",
                                             help="Failure-analysis rules replacing the built-in ones."),
    runtime: Optional[str] = RUNTIME_OPTION,
    pull: Optional[str] = PULL_OPTION,
    strict: bool = STRICT_OPTION,
    stdin_name: str = STDIN_NAME_OPTION,
) -> None:
    """Run a job once per parameter set of a search space (NNI's format), K at a time, and compare the trials.

    Every trial is compiled first (nothing is submitted if one fails). Trials are named <job>-<id>-<n>; the sweep's
    record ($XDG_STATE_HOME/paictl/sweeps/<id>) lets `--resume ID` continue after Ctrl-C or a lost connection.
    Exit status: 0 every trial succeeded (or --stop-when was met); 1 a trial failed, or an invalid job or space; 2
    usage error; 3 cluster error; 4 stopped (`paictl stop --sweep`); 130 interrupted (the trials go on running).
    """
    from .errors import print_error
    from .sweep import run_sweep

    given = {"context": context, "namespace": namespace, "kubeconfig": kubeconfig, "cluster": cluster,
             "run_dir": None if run_dir is None else str(run_dir.resolve()),
             "exit_spec": None if exit_spec is None else str(exit_spec.resolve()),
             "virtual_cluster": virtual_cluster, "runtime": runtime, "pull": pull}
    try:
        code = run_sweep(job_path=job_path, specs=space, target=target, strategy=strategy, max_trials=max_trials,
                         parallel=parallel, seed=seed, metric=metric, goal=goal, stop_when=stop_when, resume=resume,
                         sweep_id=sweep_id, output_format=output_format, given=given,
                         # --cluster names the place to submit to; only Grass compiles against it (its cluster
                         # file), as `submit` does: an OpenPAI alias is no cluster file
                         compile_options={"profile": profile, "user": user, "secrets_from": secrets_from,
                                          "cluster": cluster if target == "grass" else None},
                         strict=strict, stdin_name=stdin_name)
    except PaictlError as error:  # an invalid job or space: its located report, as `validate` prints it
        code = print_error(error, typer.echo)
    if code:
        raise typer.Exit(code)


