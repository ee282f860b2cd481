"""Alembic environment for sag-pg.

Revisions apply their ``sql/incremental`` file; the functions (``sql/idempotent``) are applied after the
last revision, when the database is at head and their fingerprint differs: they are written against the
newest schema and would not compile against an older one.

The DSN comes from ``config.attributes["dsn"]`` (set by ``sag_pg.db.migrate``) or, when alembic is run
by hand from a checkout, from ``SAG_DATABASE_URL``.  One advisory lock serialises concurrent upgrades.
"""

from __future__ import annotations

import os
import sys

import psycopg
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from alembic import context
from alembic.script import ScriptDirectory
from sag_pg.db.sqlfiles import ensure_idempotent, prepare_migration_session

MIGRATION_LOCK = 7_265_371_001  # arbitrary, fixed: pg_advisory_xact_lock key for "sag-pg schema upgrade"


def _dsn() -> str:
    dsn = context.config.attributes.get("dsn") or os.environ.get("SAG_DATABASE_URL")
    if not dsn:
        raise RuntimeError("set SAG_DATABASE_URL (or use `sag-pg db upgrade`, which finds the database itself)")
    return str(dsn)


def _report(diagnostic: psycopg.errors.Diagnostic) -> None:
    # Migrations announce long steps with NOTICEs starting "sag-pg: "; other notices (e.g. "does not exist,
    # skipping" from re-applied functions) are noise here.
    message = diagnostic.message_primary or ""
    if message.startswith("sag-pg: "):
        print(message, file=sys.stderr, flush=True)


def _connect(dsn: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn)
    conn.add_notice_handler(_report)
    return conn


def run_migrations_online() -> None:
    dsn = _dsn()
    # psycopg parses every libpq DSN form (URIs with ?host=/socket/dir included); SQLAlchemy only wraps it.
    engine = create_engine("postgresql+psycopg://", creator=lambda: _connect(dsn), poolclass=NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=None,
            version_table_schema="sag",
            transactional_ddl=True,
            transaction_per_migration=False,
        )
        with context.begin_transaction():
            # Taken before alembic reads its version table, so a second upgrader waits and then sees head.
            context.execute(f"select pg_advisory_xact_lock({MIGRATION_LOCK})")
            context.execute("create schema if not exists sag")
            # The extensions, and a search_path of pg_catalog and their schemas for this transaction (issue #36).
            prepare_migration_session(connection.connection.driver_connection)
            context.run_migrations()
            head = ScriptDirectory.from_config(context.config).get_current_head()
            if context.get_context().get_current_revision() == head:
                ensure_idempotent(connection.connection.driver_connection)


if context.is_offline_mode():
    raise RuntimeError("sag-pg migrations run online only")
run_migrations_online()
