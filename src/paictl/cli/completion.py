"""Shell completion of option values (`paictl --install-completion`): targets, profiles, cluster aliases and files,
job names. Bounded: each reads at most a folder listing or one small local file, never a cluster or a server, so
a Tab press costs no more than `paictl --help`. Kubernetes, Grass and OpenPAI job names are therefore not offered:
only local runs' (their run folders)."""

from __future__ import annotations

import os

#: How many files a completion lists from one folder at most (a huge folder must not stall the shell).
_MAX_FILES = 200


def _matching(names, incomplete: str) -> list[str]:
    return sorted({name for name in names if name.startswith(incomplete)})


def _yaml_files(incomplete: str) -> list[str]:
    """YAML files next to what is typed (a profile or cluster file), from one folder listing."""
    folder, _, stem = incomplete.rpartition("/")
    try:
        with os.scandir(folder or ".") as entries:
            found = []
            for count, entry in enumerate(entries):
                if count >= _MAX_FILES:
                    break
                if entry.name.startswith(stem) and entry.name.endswith((".yaml", ".yml")):
                    found.append(f"{folder}/{entry.name}" if folder else entry.name)
    except OSError:
        return []
    return found


def complete_target(incomplete: str) -> list[str]:
    """Where `submit`, `status`, `stop` and `logs` run a job."""
    from paictl.targets import RUNS_ON

    return _matching(RUNS_ON, incomplete)


def complete_compile_target(incomplete: str) -> list[str]:
    from paictl.targets import TARGETS

    return _matching(TARGETS, incomplete)


def complete_profile(incomplete: str) -> list[str]:
    """The built-in profiles, then profile files."""
    from paictl.compiler.profiles import BUILTIN_PROFILES

    return _matching(BUILTIN_PROFILES, incomplete) + _yaml_files(incomplete)


def complete_cluster(incomplete: str) -> list[str]:
    """OpenPAI aliases from the clusters file (a small local file), then Grass cluster files."""
    from .openpai_cmd import cluster_aliases  # the OpenPAI target's own command module reads its clusters file

    return _matching(cluster_aliases(), incomplete) + _yaml_files(incomplete)


def complete_job(incomplete: str) -> list[str]:
    """Local runs by name (the run folders'); a cluster is never asked."""
    from paictl.targets import open_backend

    names = []
    for folder in getattr(open_backend("local"), "run_dirs", ()):
        try:
            with os.scandir(folder) as entries:
                names += [entry.name for count, entry in zip(range(_MAX_FILES), entries)
                          if not entry.name.startswith(".") and entry.is_dir()]
        except OSError:
            continue
    return _matching(names, incomplete)
