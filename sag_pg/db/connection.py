"""Find the database (external DSN or embedded), connect, and keep its schema honest."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from pgvector.psycopg import register_vector

from ..config import Settings
from ..errors import DatabaseError, EmbedderMismatchError
from . import embedded, migrate

log = logging.getLogger(__name__)


def redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password=)\S+", r"\1***", dsn)


def resolve_dsn(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    return embedded.ensure_server(settings.home)


def raw_connect(dsn: str, **kwargs: object) -> psycopg.Connection:
    try:
        return psycopg.connect(dsn, **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to {redact(dsn)}: {str(exc).strip()}") from exc


class Database:
    """A sag-pg database: a DSN whose schema has been checked, and connections to it."""

    def __init__(self, dsn: str, *, auto_upgrade: bool = True) -> None:
        self.dsn = dsn
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
    def transaction(self) -> Iterator[psycopg.Connection]:
        """A connection inside one transaction: committed on success, rolled back on any error."""
        with self.connect() as conn:
            with conn.transaction():
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
