"""Install the unchanged OpenPAI REST server and database-controller (../shared/peers/openpai) into a scratch copy.

The copy lives in `~/.cache/paictl-tests/openpai-rest-server-<hash>`, the hash taken over the package and lock
files it is built from (and this recipe), so CI and repeated test sessions install once. Stdlib only: `.ci/
provision-openpai.sh` runs it before the test venv exists (`python3 tests/openpai_peer/install.py`).

Upstream builds these with yarn on Node 10; here it is npm on Node 20. Three packaging differences follow from that
(none is a change to upstream code; see ../shared/reference/peers.md A):
1. `models/token.js` calls `require('uuid')()`, the uuid@3 API; npm hoists uuid@8, so uuid@3 is installed on top.
2. sequelize loads pg@7, which never completes a connection on Node >= 14; the pg@8.3.2 that openpaidbsdk's lock
   resolves is installed instead.
3. database-controller's `require('sequelize')` from `src/` finds the sdk's sequelize (a symlink).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

RECIPE = "2026-11-27.1"  # change when the steps below change: a new cache folder is built
SHARED = Path(__file__).resolve().parents[3] / "shared"
PEER = SHARED / "peers" / "openpai" / "src"
PARTS = ("rest-server", "database-controller/src", "database-controller/sdk")
NPM_FLAGS = ("--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", "--no-save")
#: What each part gets on top of its own package.json (the packaging differences above).
EXTRA = {"rest-server": ("uuid@3.4.0", "pg@8.3.2"), "database-controller/sdk": ("pg@8.3.2",)}


def peer_root(shared: Path = SHARED) -> Path:
    return shared / "peers" / "openpai" / "src"


def cache_key(source: Path) -> str:
    digest = hashlib.sha256(RECIPE.encode())
    for part in PARTS:
        for name in ("package.json", "yarn.lock", "package-lock.json"):
            path = source / part / name
            if path.is_file():
                digest.update(f"{part}/{name}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir(source: Path) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "paictl-tests" / f"openpai-rest-server-{cache_key(source)}"


def ensure_installed(source: Path = PEER, *, quiet: bool = True) -> Path:
    """The installed copy (building it first when absent); concurrent callers wait on one lock."""
    target = cache_dir(source)
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return target
        building = target.with_name(target.name + f".building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        try:
            _build(source, building, quiet=quiet)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(building, target)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return target


def _build(source: Path, into: Path, *, quiet: bool) -> None:
    ignore = shutil.ignore_patterns("node_modules", ".git")
    shutil.copytree(source / "rest-server", into / "rest-server", ignore=ignore)
    shutil.copytree(source / "database-controller", into / "database-controller", ignore=ignore)
    # upstream's `preinstall`: the sdk is copied into the rest-server as `openpaidbsdk`
    shutil.copytree(source / "database-controller" / "sdk", into / "rest-server" / "openpaidbsdk", ignore=ignore)
    # k8s-job-exit-spec: the rest-server reads the exit spec from PAI_REST_SERVER_EXIT_SPEC_PATH
    shutil.copytree(source / "k8s-job-exit-spec", into / "k8s-job-exit-spec", ignore=ignore)
    for part in ("database-controller/sdk", "database-controller/src", "rest-server/openpaidbsdk", "rest-server"):
        extra = EXTRA.get(part, EXTRA.get(part.replace("rest-server/openpaidbsdk", "database-controller/sdk"), ()))
        _npm(into / part, extra, quiet=quiet)
    sequelize = into / "database-controller" / "src" / "node_modules" / "sequelize"
    if not sequelize.exists():
        sequelize.symlink_to(Path("..", "..", "sdk", "node_modules", "sequelize"))  # relative: the folder is renamed
    (into / ".complete").write_text(RECIPE + "\n")


def _npm(folder: Path, extra: tuple[str, ...], *, quiet: bool) -> None:
    command = ["npm", "install", *NPM_FLAGS, *extra]
    result = subprocess.run(command, cwd=folder, capture_output=quiet, text=True,
                            env={**os.environ, "npm_config_update_notifier": "false"})
    if result.returncode != 0:
        detail = (result.stderr or "")[-2000:] if quiet else ""
        raise RuntimeError(f"`{' '.join(command)}` failed in {folder} (exit {result.returncode}): {detail}")


if __name__ == "__main__":
    if not PEER.is_dir():
        print(f"no OpenPAI peer at {PEER}: nothing to install", file=sys.stderr)
        sys.exit(0)
    print(ensure_installed(PEER, quiet="-v" not in sys.argv))
