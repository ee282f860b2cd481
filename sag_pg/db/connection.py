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
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg import sql
from psycopg.types import TypeInfo

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


# Every statement sag-pg sends runs under these ceilings (issue #15: a search waited 100 s behind an index drop,
# and backends kept waiting after their clients were killed).  Searches lower the statement timeout to their
# own (search/engine.py); index builds raise it for their one statement (db/ingest.py).
STATEMENT_TIMEOUT_S = 900  # a document's store, a deletion, a clustering step: minutes at most
LOCK_TIMEOUT_S = 60  # waiting for another client's rows, tables or index build
CONNECT_TIMEOUT_S = 30
# PostgreSQL 14+: a backend whose client is gone notices within this time, even in a long query or lock wait.
CLIENT_CHECK_MS = 1000
# Every sag-pg session resolves names in pg_catalog only (issue #36): a schema where other roles may create
# objects (``public`` before PostgreSQL 15) could otherwise hold an exact-type overload of a built-in
# (``public.array_agg(bigint)``) that a superuser's command would run.  sag's objects are named ``sag.*``,
# pgvector's types are registered by their qualified names (:func:`register_pgvector`).
SESSION_SEARCH_PATH = "pg_catalog, pg_temp"


def raw_connect(dsn: str, **kwargs: object) -> psycopg.Connection:
    check_dsn(dsn)
    try:
        conn = psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to {redact(dsn)}: {str(exc).strip()}") from exc
    set_timeouts(conn)
    return conn


def set_timeouts(conn: psycopg.Connection) -> None:
    """The session ceilings above (session-wide, so a later commit or rollback keeps them)."""
    check = str(CLIENT_CHECK_MS) if conn.info.server_version >= 140000 else None
    conn.execute("select pg_catalog.set_config('search_path', %s, false),"
                 " pg_catalog.set_config('statement_timeout', %s, false),"
                 " pg_catalog.set_config('lock_timeout', %s, false),"
                 " case when %s::text is not null"
                 " then pg_catalog.set_config('client_connection_check_interval', %s::text, false) end",
                 [SESSION_SEARCH_PATH, f"{STATEMENT_TIMEOUT_S}s", f"{LOCK_TIMEOUT_S}s", check, check])
    if not conn.autocommit:
        conn.commit()


def fetch_pgvector_types(conn: psycopg.Connection) -> list[TypeInfo]:
    """pgvector's vector and halfvec types, looked up by their qualified names (the session's search_path does
    not include the extension's schema)."""
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    row = conn.execute("select n.nspname from pg_catalog.pg_extension e join pg_catalog.pg_namespace n"
                       " on n.oid = e.extnamespace where e.extname = 'vector'").fetchone()
    if row is None:
        raise DatabaseError("the vector extension (pgvector) is not installed in this database: "
                            "run `sag-pg db upgrade` as a role that may create it")
    infos = [TypeInfo.fetch(conn, sql.Identifier(row[0], name)) for name in ("vector", "halfvec")]
    if idle and not conn.autocommit:  # the transaction these lookups opened, not the caller's
        conn.commit()
    return [info for info in infos if info is not None]


def register_pgvector(conn: psycopg.Connection, infos: list[TypeInfo] | None = None) -> None:
    """pgvector's dumpers and loaders on ``conn`` (numpy arrays are sent as ``vector``)."""
    for info in infos if infos is not None else fetch_pgvector_types(conn):
        (register_halfvec_info if info.name == "halfvec" else register_vector_info)(conn, info)


@contextmanager
def timeouts_as_errors() -> Iterator[None]:
    """The session ceilings, when hit, as a DatabaseError that says which one (the CLI prints it in one line)."""
    try:
        yield
    except psycopg.errors.LockNotAvailable as exc:
        raise DatabaseError(f"gave up waiting for another client's lock after lock_timeout ({LOCK_TIMEOUT_S} s): "
                            f"{str(exc).strip()}") from exc
    except psycopg.errors.QueryCanceled as exc:
        raise DatabaseError(f"a statement was cancelled after statement_timeout ({STATEMENT_TIMEOUT_S} s): "
                            f"{str(exc).strip()}") from exc


def settle(conn: psycopg.Connection) -> bool:
    """Bring back a connection that a Ctrl-C left in the middle of a command.

    psycopg cancels the statement a KeyboardInterrupt stops, but an interrupt landing between its steps can
    leave the command running, and every later one fails with "another command is already in progress" (a
    bulk ingest stopped so could not rebuild the vector indexes it had dropped, though its session still held
    the lock to do it).  Cancels the command, reads its results and rolls back; True when the connection is idle
    again.
    """
    pgconn = conn.pgconn
    if conn.closed or conn.broken:
        return False
    if pgconn.transaction_status == psycopg.pq.TransactionStatus.ACTIVE:
        try:
            conn.cancel_safe(timeout=10.0)
            while pgconn.get_result() is not None:  # (blocks until the server has answered)
                pass
        except (psycopg.Error, OSError):
            return False
    if pgconn.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        try:
            conn.rollback()
        except psycopg.Error:
            return False
    return pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


class Database:
    """A sag-pg database: a DSN whose schema has been checked, and connections to it."""

    def __init__(self, dsn: str, *, auto_upgrade: bool = True) -> None:
        self.dsn = dsn
        # One idle connection kept for searches: connecting and registering pgvector cost 4-13 ms, a
        # quarter of a fast search.  Owned by the process that opened it (never shared across a fork).
        self._idle: psycopg.Connection | None = None
        self._idle_pid = os.getpid()
        self._idle_lock = threading.Lock()
        self._vector_types: list[TypeInfo] | None = None  # fetched by the first connect(), reused after
        with timeouts_as_errors(), raw_connect(dsn, autocommit=True) as conn:
            status = migrate.schema_status(conn)
        if status.state is migrate.SchemaState.EMPTY:
            if not auto_upgrade:
                raise DatabaseError(f"{redact(dsn)} has no sag schema: run `sag-pg db upgrade`")
            print(f"sag-pg: creating the schema in {redact(dsn)} (revision {status.head})", file=sys.stderr)
            migrate.upgrade(dsn)
        else:
            with timeouts_as_errors(), raw_connect(dsn, autocommit=True) as conn:
                migrate.require_current(conn)

    @classmethod
    def from_settings(cls, settings: Settings, *, auto_upgrade: bool = True) -> Database:
        return cls(resolve_dsn(settings), auto_upgrade=auto_upgrade)

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection:
        conn = raw_connect(self.dsn, autocommit=autocommit)
        if self._vector_types is None:
            self._vector_types = fetch_pgvector_types(conn)
        register_pgvector(conn, self._vector_types)
        return conn

    @contextmanager
    def session(self, *, autocommit: bool = False) -> Iterator[psycopg.Connection]:
        """A connection for one unit of short work (a search), reused from the previous call when possible.

        Committed when the block ends; closed instead of kept after any error.  ``autocommit``: every
        statement commits by itself (reads need no BEGIN and COMMIT round trips).  Concurrent callers each
        get their own connection; one is kept idle for the next call.  A kept connection that the server has
        closed meanwhile (restart, idle timeout) is noticed with a ping and replaced.
        """
        conn = self._take_idle(autocommit)
        if conn is None:
            conn = self.connect(autocommit=autocommit)
        try:
            with timeouts_as_errors():
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

    def _take_idle(self, autocommit: bool) -> psycopg.Connection | None:
        with self._idle_lock:
            if self._idle_pid != os.getpid():  # a forked child: the parent's socket is not ours to use
                self._idle, self._idle_pid = None, os.getpid()
            conn, self._idle = self._idle, None
        if conn is None or conn.closed:
            return None
        try:
            conn.autocommit = autocommit  # (kept idle: no transaction is open)
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
        with timeouts_as_errors(), self.connect() as conn, conn.transaction():
            yield conn

    def bind_embedder(self, name: str, dimension: int) -> None:
        """Check (or, on a new database, record) the embedder.  Only a first binding writes anything:
        ``sag.bind_embedder`` also rebuilds missing vector indexes, which is the next writer's job
        (``sag.repair_vector_indexes``), never a reader's (issue #15: searches deadlocked with a bulk load)."""
        with timeouts_as_errors(), self.connect(autocommit=True) as conn:
            row = conn.execute("select sag.bound_embedder()").fetchone()
            bound = row[0] if row else None
            if bound and bound.get("name") == name and bound.get("dimension") == dimension:
                return
            try:
                conn.execute("select sag.bind_embedder(%s, %s)", [name, dimension])
            except psycopg.errors.InvalidParameterValue as exc:
                diag = exc.diag
                msg = diag.message_primary or str(exc)
                hint = f" {diag.message_hint}" if diag.message_hint else ""
                # The way forward without another SAG_HOME (issue #37 item 6).
                raise EmbedderMismatchError(f"{msg}.{hint} Or switch it to this embedder: `sag-pg db reembed` "
                                            "re-embeds every source (resumable).") from exc
