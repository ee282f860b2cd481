"""Apply the files under ``sql/``: incremental ones once (by alembic), idempotent ones on every upgrade."""

from __future__ import annotations

import hashlib

import psycopg
from psycopg.types.json import Jsonb

from .._resources import idempotent_sql_files, incremental_sql


def idempotent_hash() -> str:
    digest = hashlib.sha256()
    for path in idempotent_sql_files():
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def apply_incremental(conn: psycopg.Connection, filename: str) -> None:
    # No parameters: psycopg sends the file with the simple query protocol, many statements at once.
    conn.execute(incremental_sql(filename))  # type: ignore[arg-type]


def apply_idempotent(conn: psycopg.Connection) -> str:
    for path in idempotent_sql_files():
        conn.execute(path.read_text(encoding="utf-8"))  # type: ignore[arg-type]
    fingerprint = idempotent_hash()
    conn.execute(
        "insert into sag.settings (name, value) values ('functions', %s) "
        "on conflict (name) do update set value = excluded.value, updated_at = now()",
        [Jsonb({"hash": fingerprint})],
    )
    return fingerprint


def ensure_idempotent(conn: psycopg.Connection) -> bool:
    """Apply the idempotent files unless the database already has these very files; True if applied."""
    row = conn.execute("select value->>'hash' from sag.settings where name = 'functions'").fetchone()
    if row and row[0] == idempotent_hash():
        return False
    apply_idempotent(conn)
    return True
