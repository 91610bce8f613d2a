"""A scratch copy of OpenPAI's rest-server with its npm dependencies, for the differential oracle.

The copy lives under ~/.cache/paictl-tests/openpai-oracle-<hash>, keyed by the upstream package files and the
Node major version, and is reused while they are unchanged. Upstream's `preinstall` step (copy the
database-controller's sdk to ./openpaidbsdk) is done here; npm reads upstream's yarn.lock for the pinned versions.
Run as a script (CI provisioning) it installs and prints the path; the tests call `oracle_dir()`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEER = REPO.parent / "shared" / "peers" / "openpai" / "src"
REST_SERVER = PEER / "rest-server"
SDK = PEER / "database-controller" / "sdk"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "paictl-tests"
# Bumped when the install steps below change.
RECIPE = "1"


def node_major() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().lstrip("v").split(".")[0]


def cache_key() -> str:
    digest = hashlib.sha256(RECIPE.encode())
    for path in (REST_SERVER / "package.json", REST_SERVER / "yarn.lock", SDK / "package.json"):
        digest.update(path.read_bytes())
    digest.update((node_major() or "none").encode())
    return digest.hexdigest()[:16]


def oracle_dir() -> Path:
    """The installed scratch copy's rest-server folder (installing it if absent)."""
    target = CACHE / f"openpai-oracle-{cache_key()}"
    done = target / ".installed"
    if done.exists():
        return target / "rest-server"
    CACHE.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="openpai-oracle-", dir=CACHE))
    try:
        rest = scratch / "rest-server"
        shutil.copytree(REST_SERVER, rest, ignore=shutil.ignore_patterns("node_modules", "test"))
        shutil.copytree(SDK, rest / "openpaidbsdk", ignore=shutil.ignore_patterns("node_modules"))
        for path in [rest, *rest.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)  # shared/ is read-only; the copy is ours
        subprocess.run(
            ["npm", "install", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=rest, check=True, stdout=subprocess.DEVNULL,
        )
        (scratch / ".installed").write_text(cache_key() + "\n")
        try:
            scratch.rename(target)
        except OSError:  # another process installed it first
            shutil.rmtree(scratch, ignore_errors=True)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return target / "rest-server"


if __name__ == "__main__":
    print(oracle_dir())
    sys.exit(0)
