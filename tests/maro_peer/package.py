"""MARO as its users install it: PyPI `pymaro` in a virtual environment of its own, made once per machine.

The release has wheels for CPython 3.7-3.9 only (../shared/reference/peers.md, "Where peers come from"), so the
environment is built on a CPython 3.9 when one is here (pyenv's: `~/.pyenv/versions/3.9.*`, or `python3.9` on
PATH), and MARO's services run under it exactly as a MARO master or node would run them. Without a 3.9, the
environment is built on the Python running this code instead: the services' dependencies from PyPI as usual, and
the 3.9 wheel unpacked into it by pip (`--target`, `--python-version 3.9`); the Grass services and the
ResourceController are pure Python and run there too, but MARO's compiled simulator backends in the same wheel do
not (nothing here uses them). Which of the two was built is in the environment's name.

Everything is pinned (PINS), and the environment is cached under ~/.cache/paictl-tests in a folder named after the
pins and the interpreter, so a change of either builds a new one; .ci/provision-grass.sh builds it on CI, tests
and benchmarks reuse it (and build it on first use elsewhere). Only `pip` talks to PyPI, and only here.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

#: The release (October 2023). It declares no dependencies.
MARO = "pymaro==0.3.2a4"
#: What MARO's own init_master.py and join_cluster.py install (unpinned there) for the services, and numpy for
#: `import maro`; pinned here to versions that install as wheels under CPython 3.9 (without --only-binary a newest
#: sdist wants Rust). numpy stays below 2: the release's compiled backends (maro.backends.frame) were built against
#: numpy 1 and fail to import under numpy 2.
REQUIREMENTS = ("redis==7.0.1", "flask==3.1.3", "gunicorn==23.0.0", "pyjwt==2.15.1", "cryptography==50.0.2",
                "requests==2.32.5", "pyyaml==6.0.3", "deepdiff==8.6.2", "psutil==7.2.2", "numpy==1.26.4")
PINS = (MARO, *REQUIREMENTS)
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "paictl-tests"
_WHEEL_TAGS = ("--python-version", "3.9", "--implementation", "cp", "--abi", "cp39",
               "--platform", "manylinux2014_x86_64", "--only-binary=:all:")


class Unavailable(Exception):
    """The package cannot be installed here (no PyPI, no wheel for this machine): tests skip, CI fails."""


def interpreter() -> tuple[Path, bool]:
    """The Python to build the environment on, and whether it is a CPython 3.9 (the release's own)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = sorted(glob.glob(str(pyenv / "versions" / "3.9.*" / "bin" / "python3.9")),
                   key=lambda path: tuple(int(part) for part in Path(path).parts[-3].split(".") if part.isdigit()))
    if found:
        return Path(found[-1]), True
    on_path = shutil.which("python3.9")
    if on_path:
        return Path(on_path), True
    return Path(sys.executable), False


def venv_path() -> Path:
    python, native = interpreter()
    version = subprocess.run([str(python), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    key = hashlib.sha256("\n".join((*PINS, version, str(native))).encode()).hexdigest()[:10]
    mode = "cp39" if native else f"py{version}-unpacked"
    return CACHE / f"maro-{MARO.replace('==', '-')}-{mode}-{key}"


def _pip(python: Path, *args: str) -> None:
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise Unavailable(f"pip install {' '.join(args)} failed: {done.stderr.strip()[-1500:]}")


def ensure_venv() -> Path:
    """The environment's folder, built (about a minute) unless a complete one is cached; one builder at a time
    (test sessions side by side share the cache)."""
    venv = venv_path()
    if (venv / ".complete").exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            _build(venv)
    return venv


def _build(venv: Path) -> None:
    base, native = interpreter()
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([str(base), "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    if native:
        _pip(python, "--only-binary=:all:", *PINS)
    else:
        _pip(python, "--only-binary=:all:", *REQUIREMENTS)
        _pip(python, "--no-deps", *_WHEEL_TAGS, "--target", str(_site_packages(venv)), MARO)
    if not (_site_packages(venv) / "maro" / "cli" / "grass" / "lib").is_dir():
        raise Unavailable(f"{MARO} installed, but without maro/cli/grass/lib")
    (venv / ".complete").write_text("\n".join(PINS) + "\n")


def _site_packages(venv: Path) -> Path:
    (found,) = glob.glob(str(venv / "lib" / "python3.*" / "site-packages"))
    return Path(found)


def installed() -> Optional[Path]:
    """The cached environment when it is complete, without building it (None otherwise)."""
    venv = venv_path()
    return venv if (venv / ".complete").exists() else None


def python(venv: Path) -> Path:
    return venv / "bin" / "python"


def grass_lib(venv: Path) -> Path:
    """The installed package's maro/cli/grass/lib: where MARO's services are run from (their working directory, as
    their systemd units have it)."""
    return _site_packages(venv) / "maro" / "cli" / "grass" / "lib"


def resource_controller(venv: Path):
    """MARO's ResourceController and resource classes from the installed package's master agent, imported into this
    process (pure Python: a placement comparison times both sides under one interpreter). Nothing is written into
    the environment (no bytecode)."""
    lib = str(grass_lib(venv))
    writes = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    sys.path.insert(0, lib)
    try:
        from services.master_agent.agent import ResourceController
        from services.utils.resource import ContainerResource, NodeResource
    finally:
        sys.path.remove(lib)
        sys.dont_write_bytecode = writes
    source = Path(sys.modules[ResourceController.__module__].__file__)
    if not source.is_relative_to(lib):  # a `services` package from elsewhere was imported first
        raise ImportError(f"MARO's ResourceController came from {source}, not from {lib}")
    return ResourceController, ContainerResource, NodeResource


if __name__ == "__main__":  # .ci/provision-grass.sh
    print(ensure_venv())
