"""A private PostgreSQL 15 cluster for the OpenPAI database-controller: own data folder, 127.0.0.1, a free port.

initdb refuses to run as root, so as root the cluster belongs to the `postgres` user (the Debian package creates
it) and every server command runs as that user; `--auth=trust` on loopback is all the harness needs.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional

BIN_CANDIDATES = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/14/bin")


def find_bin() -> Optional[Path]:
    for folder in BIN_CANDIDATES:
        if (Path(folder) / "initdb").is_file():
            return Path(folder)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Postgres:
    """`start()` then `url(database)`; `stop()` shuts it down fast (the data folder goes with the temp dir)."""

    def __init__(self, folder: Path, bin_dir: Path):
        self.folder, self.bin = folder, bin_dir
        self.data = folder / "pgdata"
        self.port = 0
        self._as_postgres = os.geteuid() == 0

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = list(args)
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:1])} failed ({result.returncode}): {result.stderr[-1500:]}")
        return result

    def start(self) -> "Postgres":
        self.folder.mkdir(parents=True, exist_ok=True)
        if self._as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
            os.chmod(self.folder, 0o700)
            for parent in self.folder.parents:  # postgres must be able to reach its folder
                if parent == Path("/") or parent == Path("/tmp"):
                    break
                os.chmod(parent, os.stat(parent).st_mode | 0o011)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8", "--locale=C")
        self.port = free_port()
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.folder} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.folder / "pg.log"),
                  "-w", "-t", "60", "start")
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "openpai")
        return self

    def sql(self, statement: str, database: str = "openpai") -> str:
        """Run one SQL text through psql (as fluentd's pgjson plugin writes rows the database-controller doesn't)."""
        result = subprocess.run([str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                                 "-d", database, "-v", "ON_ERROR_STOP=1", "-q", "-t"], input=statement,
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"psql: {result.stderr[-1000:]}")
        return result.stdout

    def url(self, database: str = "openpai") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.data.is_dir():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
