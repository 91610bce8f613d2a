"""The options every command that compiles a job shares (`compile`, `submit`, `sweep`), declared once for typer. The call
that turns them into `paictl.targets.compiled.compile_job`'s arguments is `compile_run.compile_for_command`.
"""

from __future__ import annotations

import typer

from .completion import complete_profile

JOB_ARGUMENT = typer.Argument(..., metavar="JOB", help="The job file, or - for standard input.")
PROFILE_OPTION = typer.Option("default", "--profile", metavar="FILE_OR_NAME", autocompletion=complete_profile,
                              help="Cluster profile: a built-in name (default, openpai) or a YAML file.")
USER_OPTION = typer.Option(None, "--user", help="OpenPAI user name (overrides the profile's).")
PARAMETER_OPTION = typer.Option([], "--parameter", "-p", metavar="KEY=VALUE",
                                help="Override a job parameter (repeatable).")
PARAMETERS_OPTION = typer.Option([], "--parameters", metavar="FILE",
                                 help="A YAML mapping of parameters to override (repeatable).")
SECRETS_FROM_OPTION = typer.Option(None, "--secrets-from", metavar="NAME",
                                   help="Use this existing Secret for the job's secrets (Kubernetes targets).")
STRICT_OPTION = typer.Option(False, "--strict", help="Warnings fail (exit 1), the target's too: e.g. what a "
                                                      "JobSet cannot express (W901-W904).")
STDIN_NAME_OPTION = typer.Option("<stdin>", "--stdin-name", metavar="NAME",
                                 help="File name to report for a job read from '-'.")
RUNTIME_OPTION = typer.Option(None, "--runtime", metavar="docker|host",
                              help="Local runs: each task in a container of its image (docker) or as a host process "
                                   "(host). Default: docker when an engine answers (DOCKER_HOST, else "
                                   "/var/run/docker.sock), else host.")
PULL_OPTION = typer.Option(None, "--pull", metavar="never|missing|always",
                           help="Local runs in docker: pull an image never, when missing (default) or always.")
# A sweep (`paictl sweep`, `compile --space`): the search space and how trials are drawn from it.
SPACE_OPTION = typer.Option([], "--space", metavar="FILE|KEY=V1,V2",
                            help="The search space: a file in NNI's search-space format (JSON or YAML; `_rows` for "
                                 "explicit rows), and/or key=v1,v2 (a choice). Repeatable.")
STRATEGY_OPTION = typer.Option(None, "--strategy", metavar="grid|random|list",
                               help="grid: every combination (choice, randint, quniform, qloguniform); random: "
                                    "--max-trials draws (--seed); list: the file's `_rows`. Default: grid, or list "
                                    "for a file of rows.")
SEED_OPTION = typer.Option(None, "--seed", help="Random strategy: the seed (the same seed draws the same trials).")
MAX_TRIALS_OPTION = typer.Option(None, "--max-trials", metavar="N",
                                 help="At most N trials (random: how many to draw; grid and list: the first N).")
