"""Find the database (external DSN or embedded), connect, and keep its schema honest."""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from pgvector.psycopg import register_vector

from ..config import Settings
from ..errors import ConfigError, DatabaseError, EmbedderMismatchError
from . import embedded, migrate

log = logging.getLogger(__name__)


def redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password=)\S+", r"\1***", dsn)


def resolve_dsn(settings: Settings) -> str:
    if settings.database_url:
        check_dsn(settings.database_url)
        return settings.database_url
    return embedded.ensure_server(settings.home)


def check_dsn(dsn: str) -> None:
    """Raise ConfigError unless ``dsn`` parses as a libpq connection string (URI or key=value pairs)."""
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(
            f"SAG_DATABASE_URL / --dsn is not a PostgreSQL connection string ({str(exc).strip()}): expected "
            "postgresql://user:password@host:port/dbname or 'host=... dbname=...'") from None


def raw_connect(dsn: str, **kwargs: object) -> psycopg.Connection:
    check_dsn(dsn)
    try:
        return psycopg.connect(dsn, **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to {redact(dsn)}: {str(exc).strip()}") from exc


class Database:
    """A sag-pg database: a DSN whose schema has been checked, and connections to it."""

    def __init__(self, dsn: str, *, auto_upgrade: bool = True) -> None:
        self.dsn = dsn
        # One idle connection kept for searches: connecting and registering pgvector cost 4-13 ms, a
        # quarter of a fast search.  Owned by the process that opened it (never shared across a fork).
        self._idle: psycopg.Connection | None = None
        self._idle_pid = os.getpid()
        self._idle_lock = threading.Lock()
        with raw_connect(dsn, autocommit=True) as conn:
            status = migrate.schema_status(conn)
        if status.state is migrate.SchemaState.EMPTY:
            if not auto_upgrade:
                raise DatabaseError(f"{redact(dsn)} has no sag schema: run `sag-pg db upgrade`")
            print(f"sag-pg: creating the schema in {redact(dsn)} (revision {status.head})", file=sys.stderr)
            migrate.upgrade(dsn)
        else:
            with raw_connect(dsn, autocommit=True) as conn:
                migrate.require_current(conn)

    @classmethod
    def from_settings(cls, settings: Settings, *, auto_upgrade: bool = True) -> Database:
        return cls(resolve_dsn(settings), auto_upgrade=auto_upgrade)

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection:
        conn = raw_connect(self.dsn, autocommit=autocommit)
        register_vector(conn)
        return conn

    @contextmanager
    def session(self) -> Iterator[psycopg.Connection]:
        """A connection for one unit of short work (a search), reused from the previous call when possible.

        Committed when the block ends; closed instead of kept after any error.  Concurrent callers each get
        their own connection; one is kept idle for the next call.  A kept connection that the server has
        closed meanwhile (restart, idle timeout) is noticed with a ping and replaced.
        """
        conn = self._take_idle()
        if conn is None:
            conn = self.connect()
        try:
            yield conn
            conn.commit()
        except BaseException:
            conn.close()
            raise
        with self._idle_lock:
            if (self._idle is None and self._idle_pid == os.getpid()
                    and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE):
                self._idle, conn = conn, None
        if conn is not None:
            conn.close()

    def _take_idle(self) -> psycopg.Connection | None:
        with self._idle_lock:
            if self._idle_pid != os.getpid():  # a forked child: the parent's socket is not ours to use
                self._idle, self._idle_pid = None, os.getpid()
            conn, self._idle = self._idle, None
        if conn is None or conn.closed:
            return None
        try:
            conn.execute("select 1")
            conn.commit()
        except psycopg.Error:
            conn.close()
            return None
        return conn

    def close(self) -> None:
        """Close the kept search connection (if any)."""
        with self._idle_lock:
            conn, self._idle = self._idle, None
        if conn is not None and self._idle_pid == os.getpid():
            conn.close()

    def __del__(self) -> None:
        # A client dropped without close(): close the kept connection rather than leave it to psycopg's
        # finaliser (which warns about an unclosed connection).
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: nothing left to report to
            pass

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        """A connection inside one transaction: committed on success, rolled back on any error."""
        with self.connect() as conn, conn.transaction():
            yield conn

    def bind_embedder(self, name: str, dimension: int) -> None:
        with self.connect(autocommit=True) as conn:
            try:
                conn.execute("select sag.bind_embedder(%s, %s)", [name, dimension])
            except psycopg.errors.InvalidParameterValue as exc:
                diag = exc.diag
                msg = diag.message_primary or str(exc)
                hint = f" {diag.message_hint}" if diag.message_hint else ""
                raise EmbedderMismatchError(f"{msg}.{hint}") from exc
