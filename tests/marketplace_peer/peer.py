"""The unchanged OpenPAI marketplace server (`../shared/peers/openpaimarketplace/rest_server`) on 127.0.0.1.

What runs, as `../shared/reference/peers.md` B records (everything here is environment; upstream code is not touched,
only copied to a scratch folder at test time):

- its npm dependencies from its own lock file (`npm ci --omit=dev --ignore-scripts`), plus `pg@8.0.3` installed
  without saving (the locked pg 7.14.0 never completes a connection on Node 20), cached under
  `~/.cache/paictl-tests/marketplace-<hash of the lock file and that pg>` and reused while the lock file is the same;
- PostgreSQL 15, its own cluster in a temporary folder (`initdb --auth=trust`, run as user `postgres` when we are
  root, since initdb refuses root), listening on 127.0.0.1 at a port found free and on a private socket folder;
- `node -r bind_loopback.js src/index.js` with PORT=0: the preload makes `app.listen` bind 127.0.0.1 and reports
  the port the kernel chose;
- `IDP_URL` pointing at the session's real OpenPAI rest-server (`tests/openpai_peer`), through a fault proxy
  (`idp.py`): users, groups and tokens are made there, as OpenPAI makes them;
- the seed examples: upstream seeds from `examples/examples.js`, which is not part of `../shared/peers` (only
  `rest_server/` is). The scratch copy gets a generated `examples/examples.js` listing the upstream item protocols
  of `../shared/corpus/openpai/valid/openpaimarketplace__examples__item_protocols__*` (names are the file names,
  author `OpenPAI`, category `official example`, tag `seed`), so the seeding code runs as upstream's does and the
  admin-only `official example` category exists.

One server per test session (`tests/marketplace/conftest.py`); tests keep apart by using their own users (authors),
tags and categories.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from .idp import OpenPaiIdentity

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = ROOT.parent / "shared"
UPSTREAM = SHARED / "peers" / "openpaimarketplace" / "rest_server"
CORPUS = SHARED / "corpus" / "openpai" / "valid"
SEED_PREFIX = "openpaimarketplace__examples__item_protocols__"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
#: Node 20 needs it (peers.md B); installed beside the locked tree, the lock file unchanged.
PG_FIX = "pg@8.0.3"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "paictl-tests"
OFFICIAL_EXAMPLE = "official example"


class PeerUnavailable(Exception):
    """Something the harness needs is missing (../shared, node, npm, PostgreSQL): tests skip, or fail under CI."""


def missing() -> str | None:
    """Why the real server cannot run here, or None."""
    if not UPSTREAM.is_dir():
        return "../shared/peers/openpaimarketplace is not beside this checkout"
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not (PG_BIN / "initdb").exists():
        return f"PostgreSQL 15 is not installed ({PG_BIN})"
    return None


def _cache_key() -> str:
    digest = hashlib.sha256((UPSTREAM / "package-lock.json").read_bytes() + PG_FIX.encode())
    return f"marketplace-{digest.hexdigest()[:16]}"


def provision(quiet: bool = True) -> Path:
    """The cached `node_modules` folder for the server's lock file, installed once (under a lock) if absent."""
    target = CACHE / _cache_key()
    if (target / ".complete").exists():
        return target / "node_modules"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return target / "node_modules"
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=CACHE))
        try:
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(UPSTREAM / name, staging / name)
            quiet_flags = ["--no-audit", "--no-fund", "--loglevel=error"]
            for command in (["npm", "ci", "--omit=dev", "--ignore-scripts", *quiet_flags],
                            ["npm", "install", "--no-save", "--omit=dev", "--ignore-scripts", *quiet_flags, PG_FIX]):
                done = subprocess.run(command, cwd=staging, capture_output=True, text=True, timeout=900)
                if done.returncode != 0:
                    raise PeerUnavailable(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
            (staging / ".complete").write_text(PG_FIX + "\n")
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target / "node_modules"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Postgres:
    """A PostgreSQL 15 cluster of its own in `folder`, trust auth, on 127.0.0.1:port and a private socket."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.data = folder / "data"
        self.socket_dir = folder / "socket"
        self.port = 0
        self._as_postgres = os.geteuid() == 0

    def _run(self, *command: str | os.PathLike[str], timeout: float = 60) -> subprocess.CompletedProcess:
        argv = [str(c) for c in command]
        if self._as_postgres:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise PeerUnavailable(f"{argv[argv.index('--') + 1] if '--' in argv else argv[0]} failed: "
                                  f"{(done.stderr or done.stdout).strip()[-400:]}")
        return done

    def start(self) -> None:
        self.socket_dir.mkdir(parents=True)
        if self._as_postgres:
            self.folder.parent.chmod(0o711)  # mkdtemp's folder: postgres must be able to pass through
            shutil.chown(self.folder, "postgres")
            shutil.chown(self.socket_dir, "postgres")
        self._run(PG_BIN / "initdb", "-D", self.data, "--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8",
                  "--locale=C.UTF-8")
        for _ in range(5):
            self.port = free_port()
            try:
                self._run(PG_BIN / "pg_ctl", "-D", self.data, "-w", "-l", self.folder / "postgres.log", "-o",
                          f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                          "-c max_connections=60", "start")
                break
            except PeerUnavailable:
                if "could not bind" not in (self.folder / "postgres.log").read_text(errors="replace"):
                    raise
        self._run(PG_BIN / "createdb", "-h", self.socket_dir, "-p", str(self.port), "-U", "postgres", "marketplace")

    def psql(self, sql: str) -> str:
        """Run SQL in the marketplace database; the unaligned, tuples-only output."""
        return self._run(PG_BIN / "psql", "-h", self.socket_dir, "-p", str(self.port), "-U", "postgres", "-d",
                         "marketplace", "-v", "ON_ERROR_STOP=1", "-At", "-c", sql).stdout

    def stop(self) -> None:
        with contextlib.suppress(PeerUnavailable, subprocess.TimeoutExpired):
            self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "stop")


def _write_seed(scratch: Path) -> int:
    """The generated `examples/` the seeding code reads (see the module docstring); the number of seed items."""
    examples = scratch / "examples"
    (examples / "item_protocols" / "old_templates").mkdir(parents=True)
    (examples / "item_descriptions").mkdir()
    seeds = []
    for path in sorted(CORPUS.glob(SEED_PREFIX + "*.yaml")):
        relative = path.name[len(SEED_PREFIX):].replace("__", "/")
        old = relative.startswith("old_templates/")
        name = Path(relative).stem
        shutil.copyfile(path, examples / "item_protocols" / relative)
        seed = {"name": name, "author": "OpenPAI", "type": "old" if old else "template",
                "categories": OFFICIAL_EXAMPLE, "tags": ["seed"], "summary": f"{name} (seeded example)",
                "protocol": Path(relative).name}
        if not old:
            (examples / "item_descriptions" / f"{name}.md").write_text(f"# {name}\n")
            seed["description"] = f"{name}.md"
        seeds.append(seed)
    (examples / "examples.js").write_text(
        "// Generated by paictl's test harness (tests/marketplace_peer/peer.py): upstream's examples.js is not\n"
        "// part of ../shared/peers. The protocols are upstream's, from ../shared/corpus.\n"
        f"module.exports = {{ EXAMPLE_LIST: {json.dumps(seeds, indent=2)} }};\n")
    return len(seeds)


class MarketplacePeer:
    """The real marketplace server, its database and its IDP (the OpenPAI `stack`'s rest-server); `url`, `idp`,
    `pg`, and users for tests."""

    def __init__(self, stack: object) -> None:
        self.idp = OpenPaiIdentity(stack)
        self.folder = Path(tempfile.mkdtemp(prefix="paictl-marketplace-"))
        self.pg = Postgres(self.folder / "pg")
        self.url = ""
        self.seeds = 0
        self._node: subprocess.Popen | None = None
        self._names = itertools.count(1)
        self.admin_token = ""

    def __enter__(self) -> "MarketplacePeer":
        try:
            modules = provision()
            self.idp.__enter__()
            self.pg.start()
            scratch = self.folder / "scratch"
            shutil.copytree(UPSTREAM, scratch / "rest_server", ignore=shutil.ignore_patterns("node_modules"))
            for path in (scratch / "rest_server").rglob("*"):
                path.chmod(path.stat().st_mode | 0o200)
            (scratch / "rest_server" / "node_modules").symlink_to(modules)
            self.seeds = _write_seed(scratch)
            self._start_node(scratch / "rest_server")
            self.admin_token = self.idp.add_user("marketplace-admin", admin=True)
            self._seed()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start_node(self, server: Path) -> None:
        port_file = self.folder / "port"
        env = {"PATH": os.environ["PATH"], "HOME": str(self.folder), "PORT": "0", "IDP_URL": self.idp.url,
               "DB_USERNAME": "postgres", "DB_PASSWORD": "", "DATABASE": "marketplace", "DB_HOST": "127.0.0.1",
               "DB_PORT": str(self.pg.port), "PAICTL_TEST_PORT_FILE": str(port_file)}
        log = open(self.folder / "node.log", "wb")
        self._node = subprocess.Popen(["node", "-r", str(HERE / "bind_loopback.js"), "src/index.js"], cwd=server,
                                      env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while not port_file.exists():
            if self._node.poll() is not None or time.monotonic() > deadline:
                raise PeerUnavailable(f"the marketplace server did not start: {self.log_tail()}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def _seed(self) -> None:
        """The first query seeds the examples; their tag and category links are written without waiting: wait."""
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        deadline = time.monotonic() + 60
        while True:
            answer = httpx.get(f"{self.url}/items", headers=headers, params={"category": OFFICIAL_EXAMPLE},
                               timeout=30)
            tagged = httpx.get(f"{self.url}/items", headers=headers, params={"tag": "seed"}, timeout=30)
            if (answer.status_code == tagged.status_code == 200 and len(answer.json()) == self.seeds
                    and len(tagged.json()) == self.seeds):
                return
            if time.monotonic() > deadline:
                raise PeerUnavailable(f"the seed examples never appeared: {answer.status_code} {answer.text[:200]}")
            time.sleep(0.2)

    def log_tail(self, size: int = 1500) -> str:
        path = self.folder / "node.log"
        return path.read_text(errors="replace")[-size:] if path.exists() else ""

    def __exit__(self, *exc: object) -> None:
        if self._node is not None and self._node.poll() is None:
            self._node.terminate()
            try:
                self._node.wait(10)
            except subprocess.TimeoutExpired:
                self._node.kill()
                self._node.wait()
        self.pg.stop()
        with contextlib.suppress(Exception):
            self.idp.__exit__(None, None, None)
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- for tests ------------------------------------------------------------------------------------------

    def user(self, prefix: str = "user", *, admin: bool = False, groups: list[str] | None = None,
             exact: bool = False) -> tuple[str, str]:
        """A user of the IDP, unique in this session unless `exact` (then named `prefix`): (name, token)."""
        name = prefix if exact else f"{prefix}{next(self._names)}"
        return name, self.idp.add_user(name, admin=admin, groups=groups)

    def items_of(self, author: str) -> list[dict]:
        """Every item of `author` as the database holds it (private and group-only ones included), with links."""
        rows = self.pg.psql(
            "SELECT row_to_json(t) FROM (SELECT i.*, "
            "(SELECT coalesce(array_agg(g.name ORDER BY g.name), '{}') FROM \"ItemTagRelation\" r "
            " JOIN \"ItemTags\" g ON g.id = r.\"ItemTagId\" WHERE r.\"MarketplaceItemId\" = i.id) AS linked_tags, "
            "(SELECT coalesce(array_agg(c.name ORDER BY c.name), '{}') FROM \"ItemCategoryRelation\" r "
            " JOIN \"ItemCategories\" c ON c.id = r.\"ItemCategoryId\" WHERE r.\"MarketplaceItemId\" = i.id) "
            " AS linked_categories "
            f"FROM \"MarketplaceItems\" i WHERE i.author = '{author.replace(chr(39), chr(39) * 2)}' "
            "ORDER BY i.\"createdAt\") t")
        return [json.loads(line) for line in rows.splitlines() if line.strip()]

    def forget(self, author: str) -> None:
        """Delete every item of `author` (the README's examples are alice's: tests that publish them start clean)."""
        quoted = author.replace("'", "''")
        ids = f"SELECT id FROM \"MarketplaceItems\" WHERE author = '{quoted}'"
        self.pg.psql(f'DELETE FROM "ItemTagRelation" WHERE "MarketplaceItemId" IN ({ids}); '
                     f'DELETE FROM "ItemCategoryRelation" WHERE "MarketplaceItemId" IN ({ids}); '
                     f"DELETE FROM \"MarketplaceItems\" WHERE author = '{quoted}'")

    def count(self, table: str, where: str = "true") -> int:
        return int(self.pg.psql(f'SELECT count(*) FROM "{table}" WHERE {where}').strip())
