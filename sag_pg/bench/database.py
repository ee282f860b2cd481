"""A fresh database on the configured server (``SAG_DATABASE_URL`` or the embedded default), for one run.

``CREATE DATABASE sag_bench_<name>_<pid>`` through a maintenance connection to the configured database
(or, if that one does not exist yet, ``postgres``); dropped at the end unless kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..db.connection import raw_connect, redact
from ..errors import DatabaseError

__all__ = ["bench_database_name", "database_dsn", "temporary_database"]

_MAX_IDENTIFIER = 63


def bench_database_name(name: str, pid: int | None = None) -> str:
    """``sag_bench_<name>_<pid>``: lower-case letters, digits and ``_`` only, at most 63 characters."""
    suffix = f"_{os.getpid() if pid is None else pid}"
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "data"
    return "sag_bench_" + slug[: _MAX_IDENTIFIER - len("sag_bench_") - len(suffix)] + suffix


def database_dsn(dsn: str, dbname: str) -> str:
    """The same server, user and options as ``dsn``, another database."""
    return make_conninfo(dsn, dbname=dbname)


def _maintenance(dsn: str) -> psycopg.Connection:
    try:
        return psycopg.connect(dsn, autocommit=True)
    except psycopg.OperationalError as first:
        if conninfo_to_dict(dsn).get("dbname") in (None, "postgres"):
            raise DatabaseError(f"cannot connect to {redact(dsn)}: {str(first).strip()}") from first
        # The configured database may not exist yet: any database on the server can create another.
        return raw_connect(database_dsn(dsn, "postgres"), autocommit=True)


def drop_database(server_dsn: str, dbname: str) -> None:
    with _maintenance(server_dsn) as admin:
        admin.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(dbname)))


@contextmanager
def temporary_database(server_dsn: str, name: str, *, keep: bool = False) -> Iterator[str]:
    """Create ``sag_bench_<name>_<pid>`` next to the database of ``server_dsn`` and yield its DSN.

    A leftover database of that name (same pid, an earlier crash) is dropped first.  The database is
    dropped on exit, even after an error, unless ``keep``.
    """
    dbname = bench_database_name(name)
    ident = sql.Identifier(dbname)
    with _maintenance(server_dsn) as admin:
        admin.execute(sql.SQL("drop database if exists {} with (force)").format(ident))
        try:
            admin.execute(sql.SQL("create database {}").format(ident))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DatabaseError(f"cannot create database {dbname} on {redact(server_dsn)}: the benchmark needs "
                                f"a role with CREATEDB ({exc.diag.message_primary})") from exc
    try:
        yield database_dsn(server_dsn, dbname)
    finally:
        if not keep:
            drop_database(server_dsn, dbname)
