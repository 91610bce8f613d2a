"""Registry packages as peers: js-yaml 3 from npm (the YAML reader OpenPAI's rest-server uses, reference/openpai.md)
run by jsyaml.js in one long-lived Node process.

Installed from the npm registry by `.ci/provision-npm-peers.sh` (which runs this file) with `npm ci` from the pinned
package.json and package-lock.json in npm/, into ~/.cache/paictl-tests/npm-peers-<hash> (reused while the lock file
and Node's major version are unchanged). Tests never install: a test must send nothing beyond loopback, so without
the provisioned folder they skip (under CI, where provisioning ran, they fail instead).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGES = HERE / "npm"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "paictl-tests"
IN_CI = bool(os.environ.get("CI"))


def _node_major() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().lstrip("v").split(".")[0]


def _target() -> Path:
    digest = hashlib.sha256((PACKAGES / "package-lock.json").read_bytes())
    digest.update((_node_major() or "none").encode())
    return CACHE / f"npm-peers-{digest.hexdigest()[:16]}"


def installed() -> Path | None:
    """The provisioned folder (holding node_modules), or None when node or the install is missing."""
    if shutil.which("node") is None:
        return None
    target = _target()
    return target if (target / ".installed").exists() else None


def install() -> Path:
    """`npm ci` of the pinned packages into the cache (the provisioning script's work; never called by a test)."""
    target = _target()
    if (target / ".installed").exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="npm-peers-", dir=CACHE))
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(PACKAGES / name, scratch / name)
        subprocess.run(["npm", "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=scratch, check=True, stdout=subprocess.DEVNULL)
        (scratch / ".installed").write_text("")
        try:
            scratch.rename(target)
        except OSError:  # another process installed it first
            shutil.rmtree(scratch, ignore_errors=True)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return target


def unavailable() -> str | None:
    """Why the js-yaml peer cannot run here (None when it can)."""
    if shutil.which("node") is None:
        return "node is not installed"
    if installed() is None:
        return "the npm peers are not provisioned (.ci/provision-npm-peers.sh)"
    return None


def required() -> Path:
    """The provisioned folder, for a test that needs a peer: it fails under CI without one, and skips elsewhere."""
    import pytest

    why = unavailable()
    if why is not None:
        if IN_CI:
            pytest.fail(f"the js-yaml peer cannot run in CI: {why}")
        pytest.skip(why)
    folder = installed()
    assert folder is not None
    return folder


class JsYaml:
    """`load(text)`: what js-yaml 3's safeLoad makes of a text, in plain_of()'s encoding, or ("error", message)."""

    def __init__(self, folder: Path):
        # TZ=UTC as in the rest-server's container: a Date used as a mapping key becomes its local-time text.
        env = {key: value for key, value in os.environ.items() if key in ("PATH", "HOME", "LANG")}
        env["TZ"] = "UTC"
        self._process = subprocess.Popen(["node", str(HERE / "jsyaml.js"), str(folder)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, env=env, text=True, encoding="utf-8")

    def load_many(self, texts: list[str], batch: int = 50) -> list[dict[str, Any]]:
        """The answers for `texts`, written `batch` at a time before their answers are read (one pipe round trip
        per batch, and never more in a pipe than it holds while the other side waits)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        answers = []
        for start in range(0, len(texts), batch):
            chunk = texts[start:start + batch]
            for text in chunk:
                self._process.stdin.write(json.dumps({"yaml": text}) + "\n")
            self._process.stdin.flush()
            for _ in chunk:
                line = self._process.stdout.readline()
                if not line:
                    raise RuntimeError(f"the js-yaml peer exited (code {self._process.poll()})")
                answers.append(json.loads(line))
        return answers

    def load(self, text: str) -> dict[str, Any]:
        return self.load_many([text])[0]

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def plain_of(value: Any) -> Any:
    """paictl's loaded data in jsyaml.js's encoding, to compare with js-yaml's answer."""
    from paictl.protocol.timestamps import Timestamp, iso_string
    from paictl.protocol.yamltags import JSBuffer

    if isinstance(value, JSBuffer):
        import base64

        return {"$binary": base64.b64encode(value.buffer_bytes).decode()}
    if isinstance(value, Timestamp):
        return {"$date": iso_string(value)}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        from paictl.protocol.jsstring import js_number

        if isinstance(value, float) and math.isnan(value):
            return {"$number": "NaN"}
        if isinstance(value, float) and math.isinf(value):
            return {"$number": "Infinity" if value > 0 else "-Infinity"}
        if abs(value) <= 2**53:
            return int(value) if isinstance(value, float) and value.is_integer() else value
        if isinstance(value, int) or value.is_integer():  # JavaScript holds the nearest double: its text, as jsyaml.js
            text = js_number(value)
            return {"$number": text} if text not in ("Infinity", "-Infinity") else {"$number": text}
        return value
    if isinstance(value, list):
        return [plain_of(v) for v in value]
    if isinstance(value, dict):
        return {"$map": {key: plain_of(v) for key, v in value.items()}}
    raise TypeError(f"paictl loaded a {type(value).__name__}: {value!r}")


if __name__ == "__main__":
    started = time.monotonic()
    folder = install()
    print(f"npm peers (js-yaml 3) in {folder}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    sys.exit(0)
