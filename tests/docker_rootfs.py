"""The root filesystem of the test engine's base image (docker_engine.py `DockerEngine.base_image`), assembled
from this machine's own programs, since no registry is reachable.

bash, dash as /bin/sh, coreutils, grep, sed and python3 with its standard library, plus every library `ldd` says
they load, in Debian's merged-/usr layout. The tarball is cached under ~/.cache/paictl-tests/, keyed by the
programs' paths, sizes and modification times, so a session builds it once per machine.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Optional

#: Bump to rebuild every cached root filesystem (the assembly below changed).
_ROOTFS_VERSION = 1
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "paictl-tests"
#: The programs of the base image (those found on this machine; bash, sh, cat and sleep are required).
PROGRAMS = ("bash", "sh", "env", "cat", "echo", "printf", "sleep", "true", "false", "ls", "mkdir", "rm", "cp",
            "mv", "touch", "id", "head", "tail", "wc", "tr", "seq", "date", "pwd", "test", "timeout", "kill",
            "grep", "sed", "stat", "sort", "uname", "nproc", "hostname", "dd", "python3")
_REQUIRED = ("bash", "sh", "cat", "sleep")
#: Parts of Python's standard library no test needs (a smaller image imports and starts faster).
_PYTHON_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "__pycache__",
                "config-3.11-x86_64-linux-gnu", "site-packages", "dist-packages"}


def _programs() -> dict[str, str]:
    found = {}
    for name in PROGRAMS:
        path = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
        if path is not None:
            found[name] = os.path.realpath(path)
    missing = [name for name in _REQUIRED if name not in found]
    if missing:
        raise RuntimeError(f"cannot assemble a base image: {', '.join(missing)} not found on this machine")
    return found


def _python_library(python: str) -> Optional[Path]:
    done = subprocess.run([python, "-I", "-S", "-c", "import os, sys; print(os.path.dirname(os.__file__))"],
                          capture_output=True, text=True)
    path = Path(done.stdout.strip()) if done.returncode == 0 else None
    return path if path is not None and path.is_dir() else None


def _libraries(files: list[str]) -> set[str]:
    """Every shared library `ldd` lists for `files` (the dynamic loader included), as absolute paths."""
    found: set[str] = set()
    for chunk in range(0, len(files), 50):
        done = subprocess.run(["ldd", *files[chunk:chunk + 50]], capture_output=True, text=True)
        for line in done.stdout.splitlines():
            for word in line.split():
                if word.startswith("/") and not word.endswith(":"):
                    found.add(word)
    return found


def _in_image(path: str) -> str:
    """Where a host file goes in the merged-/usr image: /lib/x.so and /usr/lib/x.so are one file."""
    for short in ("/bin/", "/sbin/", "/lib/", "/lib64/"):
        if path.startswith(short):
            return "usr" + path
    return path.lstrip("/")


def base_rootfs() -> Path:
    """The base image's root filesystem as a tarball, built once per machine (see the module docstring)."""
    programs = _programs()
    python = programs.get("python3")
    library = _python_library(python) if python else None
    key = hashlib.sha256(json.dumps([
        _ROOTFS_VERSION, sorted(programs.items()),
        [(p, os.stat(p).st_size, int(os.stat(p).st_mtime)) for p in sorted(programs.values())],
        str(library), int(library.stat().st_mtime) if library else 0,
    ]).encode()).hexdigest()[:16]
    tarball = _CACHE / f"rootfs-{key}.tar"
    if tarball.is_file():
        return tarball
    _CACHE.mkdir(parents=True, exist_ok=True)
    python_files: list[Path] = []
    if library is not None:
        for folder, subfolders, names in os.walk(library):
            subfolders[:] = [d for d in subfolders if d not in _PYTHON_SKIP]
            python_files += [Path(folder) / name for name in names]
    binaries = list(programs.values()) + [str(p) for p in python_files if p.suffix == ".so"]
    libraries = _libraries(binaries)
    handle, temporary = tempfile.mkstemp(dir=_CACHE, prefix=".rootfs-")
    os.close(handle)
    try:
        with tarfile.open(temporary, "w") as tar:
            def folder(name: str, mode: int = 0o755) -> None:
                info = tarfile.TarInfo(name)
                info.type, info.mode = tarfile.DIRTYPE, mode
                tar.addfile(info)

            def link(name: str, target: str) -> None:
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)

            for name in ("usr", "usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "usr/local", "usr/local/bin",
                         "etc", "root", "home", "opt", "var", "dev", "proc", "sys", "run"):
                folder(name)
            folder("tmp", 0o1777)
            for name in ("bin", "sbin", "lib", "lib64"):
                link(name, f"usr/{name}")
            added: set[str] = set()
            made = {"usr", "usr/bin", "usr/sbin", "usr/lib", "usr/lib64"}

            def add(host: str, name: str) -> None:
                if name in added:
                    return
                parts = Path(name).parts
                for depth in range(1, len(parts)):
                    parent = "/".join(parts[:depth])
                    if parent not in made:
                        folder(parent)
                        made.add(parent)
                info = tar.gettarinfo(os.path.realpath(host), arcname=name)
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                with open(os.path.realpath(host), "rb") as data:
                    tar.addfile(info, data)
                added.add(name)

            for name, path in programs.items():
                add(path, f"usr/bin/{name}")
            for path in sorted(libraries):
                add(path, _in_image(path))
                add(path, _in_image(os.path.realpath(path)))
            for path in python_files:
                add(str(path), _in_image(str(path)))
            for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"),
                               ("etc/group", "root:x:0:\n"), ("etc/os-release", "ID=paictl-test\n")):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(text), 0o644
                tar.addfile(info, io.BytesIO(text.encode()))
        os.replace(temporary, tarball)
    except BaseException:
        os.unlink(temporary)
        raise
    return tarball
